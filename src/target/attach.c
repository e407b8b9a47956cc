/*
 * Reaching a process that is already running (`cuscope attach PID`). An armed process (started
 * under cuscope, or with the collector preloaded and CUSCOPE_ARM=1) has a socket already; any
 * other gets the collector injected with ptrace (remote.c), configured through a rendezvous file
 * the collector reads and removes.
 */
#include "cuscope/attach.h"
#include "cuscope/launch.h"
#include "cuscope/log.h"
#include "remote.h"
#include "cuscope/safefs.h"
#include "cuscope/session.h"
#include "cuscope/xalloc.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Long: giving up restores registers in the middle of dlopen, which is worse than waiting. */
#define ATTACH_CALL_TIMEOUT_MS 60000
#define ATTACH_SOCKET_WAIT_NS  5000000000ull
/* The whole handshake (reading the target's files and memory, the session, the connection, the
 * collector's HELLO) has this long, besides the injected call's own limit: nothing the target
 * does (a FIFO, a stalled mount, a socket that never answers) keeps root's attach forever. */
#define ATTACH_HANDSHAKE_S 20

/* Where the target's /tmp is seen from here: "" or /proc/PID/root in another mount namespace. */
static char attach_root[64];

/* The injected session we made, removed after the run; -1/"" when the target was armed. */
static int attach_base_fd = -1;
static char attach_session_name[128];

/* What the deadline handler needs, prepared beforehand (it may only make system calls). */
static char attach_deadline_line[256];
static char attach_deadline_partial[PATH_MAX + 16];
static char attach_deadline_rendezvous[64];

/* The handshake ran out of time: one line, nothing of ours left behind, exit 1. */
static void attach_on_deadline(int sig)
{
	(void)sig;
	/* A borrowed thread runs our call: remote_call puts it back within its own limit. */
	if (remote_busy()) {
		alarm(1);
		return;
	}
	ssize_t ignored = write(STDERR_FILENO, attach_deadline_line, strlen(attach_deadline_line));
	(void)ignored;
	if (attach_deadline_partial[0])
		unlink(attach_deadline_partial);
	if (attach_base_fd >= 0) {
		unlinkat(attach_base_fd, attach_deadline_rendezvous, 0);
		if (attach_session_name[0])
			unlinkat(attach_base_fd, attach_session_name, AT_REMOVEDIR);
	}
	_exit(1);
}

/* Starts the handshake's deadline for pid. */
static void attach_deadline_start(pid_t pid)
{
	snprintf(attach_deadline_line, sizeof attach_deadline_line,
	         "cuscope: attach: pid %d did not complete the handshake within %d s (its files, memory "
	         "or socket do not answer); nothing was recorded\n",
	         (int)pid, ATTACH_HANDSHAKE_S);
	snprintf(attach_deadline_rendezvous, sizeof attach_deadline_rendezvous, "attach-%d.env", (int)pid);
	struct sigaction sa = {0};
	sa.sa_handler = attach_on_deadline; /* no SA_RESTART: a blocked wait returns EINTR */
	sigaction(SIGALRM, &sa, NULL);
	alarm(ATTACH_HANDSHAKE_S);
}

/* Gives the deadline s more seconds (for a step bounded on its own, the injected call). */
static void attach_deadline_extend(unsigned s)
{
	unsigned left = alarm(0);
	if (left)
		alarm(left + s);
}

void attach_handshake_done(void)
{
	alarm(0);
	attach_deadline_partial[0] = '\0';
}

/* Whether base/name/PID.sock exists: a directory and socket of uid, reached only by fd. */
static int attach_armed_in(int base, const char *name, uid_t uid, pid_t pid)
{
	int fd = safefs_open_dir_at(base, name, uid, SAFEFS_PRIVATE);
	if (fd < 0)
		return 0;
	char sock[32];
	struct stat st;
	snprintf(sock, sizeof sock, "%d.sock", (int)pid);
	int found =
	    fstatat(fd, sock, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISSOCK(st.st_mode) && st.st_uid == uid;
	close(fd);
	return found;
}

/*
 * Looks for PID.sock in the session directories under base, a private directory of uid (another
 * user may have made /tmp/cuscope-UID first: then nothing in it is trusted); copies the
 * session directory into out.
 */
static int attach_find_armed(const char *base, uid_t uid, pid_t pid, char *out, size_t size)
{
	int fd = safefs_open_dir(base, uid, SAFEFS_PRIVATE);
	if (fd < 0)
		return 0;
	DIR *d = safefs_opendir(fd);
	if (!d) {
		close(fd);
		return 0;
	}
	struct dirent *de;
	int found = 0;
	while (!found && (de = readdir(d))) {
		if (de->d_name[0] == '.' || !attach_armed_in(fd, de->d_name, uid, pid))
			continue;
		found = snprintf(out, size, "%s/%s", base, de->d_name) < (int)size;
	}
	closedir(d);
	close(fd);
	return found;
}

static uid_t attach_process_uid(pid_t pid)
{
	char path[64];
	struct stat st;
	snprintf(path, sizeof path, "/proc/%d", (int)pid);
	return stat(path, &st) == 0 ? st.st_uid : (uid_t)-1;
}

/* Reads a /proc/PID file into buf; bytes or -1. */
static ssize_t attach_read_proc(pid_t pid, const char *file, char *buf, size_t size)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, file);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, size - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return n;
}

/* A number after "key:" in /proc/PID/status, or -1. */
static long attach_status_field(const char *status, const char *key)
{
	size_t len = strlen(key);
	for (const char *p = status; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (strncmp(p, key, len) == 0 && p[len] == ':')
			return strtol(p + len + 1, NULL, 10);
	return -1;
}

/*
 * Refuses, with one line, a process that cannot run the collector: a zombie, a stopped one (it
 * would never run our call or its sender; continuing it is not ours to decide) or one another
 * tracer holds. Returns 0 when pid can be attached.
 */
static int attach_check_state(pid_t pid)
{
	char stat_text[1024], status[4096];
	/* Unreadable (hidepid): the permission checks that follow say what is wrong. */
	if (attach_read_proc(pid, "stat", stat_text, sizeof stat_text) <= 0 ||
	    attach_read_proc(pid, "status", status, sizeof status) <= 0)
		return 0;
	const char *paren = strrchr(stat_text, ')');
	char state = paren && paren[1] == ' ' ? paren[2] : '?';
	long threads = attach_status_field(status, "Threads");
	long tracer = attach_status_field(status, "TracerPid");
	/* A leader that left with pthread_exit shows Z while its other threads run on. */
	if ((state == 'Z' && threads <= 1) || state == 'X') {
		log_error("attach: pid %d is a zombie: it has exited and waits for its parent to reap it; "
		          "there is nothing to attach to",
		          (int)pid);
		return 1;
	}
	if (tracer > 0) {
		log_error("attach: pid %d is being traced by pid %ld (a debugger?); detach that first",
		          (int)pid, tracer);
		return 1;
	}
	if (state == 'T' || state == 't') {
		log_error("attach: pid %d is stopped; resume it first (kill -CONT %d): a stopped process "
		          "cannot run the collector",
		          (int)pid, (int)pid);
		return 1;
	}
	return 0;
}

/* Whether two paths name the same file (dev and inode). */
static int attach_same_file(const char *a, const char *b)
{
	struct stat sa, sb;
	return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* Whether pid shares our namespace of a kind ("mnt", "pid", "user"); unknown counts as shared. */
static int attach_same_ns(pid_t pid, const char *kind)
{
	char mine[64], theirs[64];
	snprintf(mine, sizeof mine, "/proc/self/ns/%s", kind);
	snprintf(theirs, sizeof theirs, "/proc/%d/ns/%s", (int)pid, kind);
	struct stat sa, sb;
	if (stat(mine, &sa) != 0 || stat(theirs, &sb) != 0)
		return 1;
	return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/*
 * A target in another namespace (a container): its pids and uids must be ours, and the files
 * we hand it must be the same in both views; its /tmp is then reached through /proc/PID/root.
 * Returns 0, or 1 after one line.
 */
static int attach_check_namespaces(pid_t pid, const char *collector)
{
	attach_root[0] = '\0';
	if (!attach_same_ns(pid, "pid") || !attach_same_ns(pid, "user")) {
		log_error("attach: pid %d runs in another PID or user namespace (a container?); run cuscope "
		          "inside it",
		          (int)pid);
		return 1;
	}
	if (attach_same_ns(pid, "mnt"))
		return 0;
	snprintf(attach_root, sizeof attach_root, "/proc/%d/root", (int)pid);
	/* The collector is loaded by path there: it must be the same file in both views. Its C
	 * library is read through the mapping itself (remote_open_mapping), whatever its path. */
	char theirs[sizeof attach_root + PATH_MAX];
	snprintf(theirs, sizeof theirs, "%s%s", attach_root, collector);
	if (!attach_same_file(collector, theirs)) {
		log_error("attach: pid %d runs in another mount namespace (a container?) that does not see "
		          "%s as we do; run cuscope inside it",
		          (int)pid, collector);
		return 1;
	}
	return 0;
}

static int attach_yama_scope(void)
{
	FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "r");
	int scope = 0;
	if (f) {
		if (fscanf(f, "%d", &scope) != 1)
			scope = 0;
		fclose(f);
	}
	return scope;
}

char *attach_cmdline(pid_t pid)
{
	char path[64], buf[4096];
	snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return xasprintf("pid %d", (int)pid);
	for (ssize_t i = 0; i < n; i++)
		if (buf[i] == '\0')
			buf[i] = ' ';
	while (n > 0 && buf[n - 1] == ' ')
		n--;
	buf[n] = '\0';
	return xstrdup(buf);
}

/* Writes the rendezvous file the collector reads at its start (0600, owned by the target's user). */
static int attach_write_rendezvous(int base, const char *name, uid_t uid, const char *session,
                                   const struct launch_options *o)
{
	char text[4096];
	int n = snprintf(text, sizeof text, "CUSCOPE_SESSION=%s\n%s%s%s%s%s%s%s%s%s", session,
	                 o->sample_hz ? "CUSCOPE_SAMPLE_HZ=" : "", o->sample_hz ? o->sample_hz : "",
	                 o->sample_hz ? "\n" : "", o->osrt_threshold_us ? "CUSCOPE_OSRT_THRESHOLD_US=" : "",
	                 o->osrt_threshold_us ? o->osrt_threshold_us : "", o->osrt_threshold_us ? "\n" : "",
	                 o->counters ? "CUSCOPE_COUNTERS=" : "", o->counters ? o->counters : "",
	                 o->counters ? "\n" : "");
	if (o->buffer_mb)
		n += snprintf(text + n, sizeof text - (size_t)n, "CUSCOPE_BUFFER_MB=%u\n", o->buffer_mb);
	if (o->overhead_budget)
		n += snprintf(text + n, sizeof text - (size_t)n, "CUSCOPE_OVERHEAD_BUDGET=%s\n",
		              o->overhead_budget);
	if (o->gpu_metrics && n >= 0 && (size_t)n < sizeof text)
		n += snprintf(text + n, sizeof text - (size_t)n, "CUSCOPE_GPU_METRICS=%s\n", o->gpu_metrics);
	if (o->gpu_metrics_hz && n >= 0 && (size_t)n < sizeof text)
		n += snprintf(text + n, sizeof text - (size_t)n, "CUSCOPE_GPU_METRICS_HZ=%s\n",
		              o->gpu_metrics_hz);
	/* Cut settings would be wrong settings. */
	if (n < 0 || (size_t)n >= sizeof text)
		return -ENAMETOOLONG;
	/* A fresh file in the verified directory, never through a link. */
	unlinkat(base, name, 0);
	int fd = openat(base, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	int rc = write(fd, text, (size_t)n) == n ? 0 : -EIO;
	if (!rc && getuid() != uid && fchown(fd, uid, (gid_t)-1) != 0)
		rc = -errno;
	close(fd);
	return rc;
}

/* Removes the session attach_inject made (when the collector has left it) and its fds. */
static void attach_forget_session(pid_t pid, int remove_rendezvous)
{
	if (attach_base_fd < 0)
		return;
	if (remove_rendezvous) {
		char name[64];
		snprintf(name, sizeof name, "attach-%d.env", (int)pid);
		unlinkat(attach_base_fd, name, 0);
	}
	if (attach_session_name[0]) {
		/* The collector removes its socket when it sees the viewer go: give it a moment. */
		for (int i = 0; i < 50; i++) {
			if (unlinkat(attach_base_fd, attach_session_name, AT_REMOVEDIR) == 0 ||
			    errno != ENOTEMPTY)
				break;
			struct timespec step = {0, 20000000};
			nanosleep(&step, NULL);
		}
		attach_session_name[0] = '\0';
	}
	close(attach_base_fd);
	attach_base_fd = -1;
}

/* Injects (or wakes) the collector in pid; on success session names the directory to follow. */
static int attach_inject(pid_t pid, const struct launch_options *opts, char *session, size_t session_size)
{
	uid_t uid = attach_process_uid(pid);
	struct remote_module libc;
	if (remote_find_module(pid, "libc.so", &libc) != 0) {
		log_error("attach: pid %d is statically linked (no libc.so mapped): the collector cannot be "
		          "loaded into it",
		          (int)pid);
		return 1;
	}
	char collector[4096];
	if (launch_find_collector(collector, sizeof collector) != 0) {
		log_error(
		    "attach: collector libcuscope.so not found next to this binary; set CUSCOPE_COLLECTOR");
		return 2;
	}
	/* The target's /tmp (through /proc/PID/root in another mount namespace), verified; then the
	 * user's base in it and our session, each created or checked through the fd above it. */
	char tmp[128], base_name[64], rendezvous[64], their_session[256];
	snprintf(tmp, sizeof tmp, "%s/tmp", attach_root);
	snprintf(base_name, sizeof base_name, "cuscope-%u", (unsigned)uid);
	snprintf(rendezvous, sizeof rendezvous, "attach-%d.env", (int)pid);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	snprintf(attach_session_name, sizeof attach_session_name, "attach-%d-%lx", (int)pid,
	         (unsigned long)ts.tv_nsec);
	snprintf(their_session, sizeof their_session, "/tmp/%s/%s", base_name, attach_session_name);
	snprintf(session, session_size, "%s%s", attach_root, their_session);
	int tmp_fd = safefs_open_dir(tmp, uid, 0);
	int rc = tmp_fd < 0 ? tmp_fd : 0;
	if (!rc) {
		attach_base_fd = safefs_mkdir_private_at(tmp_fd, base_name, uid);
		rc = attach_base_fd < 0 ? attach_base_fd : 0;
		close(tmp_fd);
	}
	if (!rc) {
		int fd = safefs_mkdir_private_at(attach_base_fd, attach_session_name, uid);
		rc = fd < 0 ? fd : 0;
		if (fd >= 0)
			close(fd);
	}
	if (!rc)
		rc = attach_write_rendezvous(attach_base_fd, rendezvous, uid, their_session, opts);
	if (rc) {
		if (rc == -EPERM || rc == -ENOTDIR)
			log_error(
			    "attach: %s/%s is not a private directory of uid %u (made by another user?); "
			    "nothing was done",
			    tmp, base_name, (unsigned)uid);
		else
			log_error("attach: cannot prepare the session in %s/%s: %s", tmp, base_name,
			          strerror(-rc));
		if (attach_base_fd >= 0)
			unlinkat(attach_base_fd, attach_session_name, AT_REMOVEDIR);
		attach_session_name[0] = '\0';
		attach_forget_session(pid, 0);
		return 2;
	}
	uint64_t func = 0;
	int already_loaded = remote_symbol(pid, "libcuscope.so", "cuscope_attach_start", &func) == 0;
	uint64_t arg2 = 0;
	if (!already_loaded) {
		/* glibc >= 2.34 exports dlopen from libc; older ones from libdl or as __libc_dlopen_mode. */
		if (remote_symbol(pid, "libc.so", "dlopen", &func) == 0 ||
		    remote_symbol(pid, "libdl.so", "dlopen", &func) == 0) {
			arg2 = RTLD_NOW;
		} else if (remote_symbol(pid, "libc.so", "__libc_dlopen_mode", &func) == 0) {
			arg2 = RTLD_NOW | 0x80000000u; /* __RTLD_DLOPEN */
		} else {
			attach_forget_session(pid, 1);
			log_error("attach: no dlopen in pid %d's C library (%s)", (int)pid, libc.path);
			return 1;
		}
	}
	pid_t tid = remote_pick_thread(pid);
	char err[256];
	uint64_t ret = 0;
	attach_deadline_extend(ATTACH_CALL_TIMEOUT_MS / 1000 + 5);
	rc = already_loaded
	         ? remote_call(pid, tid, func, 0, 0, NULL, 0, &ret, ATTACH_CALL_TIMEOUT_MS, err, sizeof err)
	         : remote_call(pid, tid, func, REMOTE_ARG_DATA, arg2, collector, strlen(collector) + 1, &ret,
	                       ATTACH_CALL_TIMEOUT_MS, err, sizeof err);
	if (rc) {
		attach_forget_session(pid, 1);
		if (rc == -EPERM) {
			int scope = attach_yama_scope();
			log_error("attach: not permitted to trace pid %d (ptrace: %s%s%s)", (int)pid,
			          strerror(EPERM), scope ? "; Yama ptrace_scope is " : "",
			          scope ? (scope == 1 ? "1: attach as root" : ">= 2") : "");
		} else if (rc == -ESRCH) {
			log_error("attach: pid %d exited during attach", (int)pid);
		} else {
			log_error("attach: pid %d: %s", (int)pid, err);
		}
		return 1;
	}
	if (ret == 0) {
		attach_forget_session(pid, 1);
		if (already_loaded)
			log_error("attach: pid %d's collector did not restart (see its stderr)", (int)pid);
		else
			log_error("attach: loading %s into pid %d failed (dlopen returned NULL)", collector,
			          (int)pid);
		return 1;
	}
	return 0;
}

/* Waits until the collector's socket shows up in dir (a private directory of uid). */
static int attach_wait_socket(const char *dir, uid_t uid, pid_t pid)
{
	int fd = session_open(dir, uid);
	if (fd < 0)
		return fd;
	char name[32];
	snprintf(name, sizeof name, "%d.sock", (int)pid);
	struct timespec start, now, step = {0, 10000000};
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		struct stat st;
		if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISSOCK(st.st_mode))
			break;
		int rc = 0;
		if (kill(pid, 0) != 0 && errno == ESRCH)
			rc = -ESRCH;
		clock_gettime(CLOCK_MONOTONIC, &now);
		uint64_t waited = (uint64_t)(now.tv_sec - start.tv_sec) * 1000000000ull +
		                  (uint64_t)now.tv_nsec - (uint64_t)start.tv_nsec;
		if (!rc && waited > ATTACH_SOCKET_WAIT_NS)
			rc = -ETIMEDOUT;
		if (rc) {
			close(fd);
			return rc;
		}
		nanosleep(&step, NULL);
	}
	close(fd);
	return 0;
}

int attach_begin(pid_t pid)
{
	attach_deadline_start(pid);
	if (attach_check_state(pid) != 0)
		return 1;
	uid_t uid = attach_process_uid(pid);
	if (getuid() != 0 && uid != getuid()) {
		log_error("attach: not permitted: pid %d belongs to another user (uid %u); attach as that "
		          "user or as root",
		          (int)pid, (unsigned)uid);
		return 1;
	}
	char collector[4096];
	if (launch_find_collector(collector, sizeof collector) == 0 &&
	    attach_check_namespaces(pid, collector) != 0)
		return 1;
	return 0;
}

void attach_remove_on_deadline(const char *path)
{
	snprintf(attach_deadline_partial, sizeof attach_deadline_partial, "%s", path ? path : "");
}

int attach_connect(pid_t pid, const struct launch_options *opts, struct launch *target)
{
	uid_t uid = attach_process_uid(pid);
	memset(target, 0, sizeof *target);
	target->pid = pid;
	target->attached = 1;
	target->running = 1;
	char base[PATH_MAX];
	int armed = 0;
	/* An armed process's session: in our own root, or in its user's /tmp base (never in one
	 * that someone else made). */
	if (session_root(base, sizeof base) == 0 &&
	    attach_find_armed(base, getuid(), pid, target->session_dir, sizeof target->session_dir))
		armed = 1, target->session_uid = getuid();
	snprintf(base, sizeof base, "%s/tmp/cuscope-%u", attach_root, (unsigned)uid);
	if (!armed && attach_find_armed(base, uid, pid, target->session_dir, sizeof target->session_dir))
		armed = 1, target->session_uid = uid;
	/* The usual $XDG_RUNTIME_DIR of the target's user (its environment is not ours to trust). */
	snprintf(base, sizeof base, "%s/run/user/%u/cuscope", attach_root, (unsigned)uid);
	if (!armed && attach_find_armed(base, uid, pid, target->session_dir, sizeof target->session_dir))
		armed = 1, target->session_uid = uid;
	int rc = 0;
	if (!armed) {
		target->session_uid = uid;
		rc = attach_inject(pid, opts, target->session_dir, sizeof target->session_dir);
	}
	if (!rc) {
		rc = attach_wait_socket(target->session_dir, target->session_uid, pid);
		if (rc == -ESRCH)
			log_error("attach: pid %d exited during attach", (int)pid);
		else if (rc)
			log_error("attach: pid %d's collector did not open its socket in %s", (int)pid,
			          target->session_dir);
		/* Nothing may be left for a later process with the same pid to pick up. */
		if (rc)
			attach_forget_session(pid, 1);
		rc = rc ? 1 : 0;
	}
	return rc;
}

void attach_end(pid_t pid)
{
	attach_forget_session(pid, 0);
}
