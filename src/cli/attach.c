/*
 * `cuscope attach PID` and `cuscope run --detached`: watch a process that is already running.
 * An armed process (started under cuscope, or with the collector preloaded and CUSCOPE_ARM=1)
 * has a socket already; any other gets the collector injected with ptrace (remote.c), configured
 * through a rendezvous file the collector reads and removes.
 */
#include "cuscope/capture.h"
#include "cuscope/cli.h"
#include "cuscope/launch.h"
#include "cuscope/log.h"
#include "cuscope/remote.h"
#include "cuscope/session.h"
#include "cuscope/ui.h"
#include "cuscope/xalloc.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
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

/* Looks for PID.sock in the session directories under base; copies the directory into out. */
static int attach_find_armed(const char *base, pid_t pid, char *out, size_t size)
{
	DIR *d = opendir(base);
	if (!d)
		return 0;
	struct dirent *de;
	int found = 0;
	while (!found && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		char path[1024];
		struct stat st;
		snprintf(path, sizeof path, "%s/%s/%d.sock", base, de->d_name, (int)pid);
		if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode)) {
			snprintf(out, size, "%s/%s", base, de->d_name);
			found = 1;
		}
	}
	closedir(d);
	return found;
}

static uid_t attach_process_uid(pid_t pid)
{
	char path[64];
	struct stat st;
	snprintf(path, sizeof path, "/proc/%d", (int)pid);
	return stat(path, &st) == 0 ? st.st_uid : (uid_t)-1;
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

/* The target's command line, for the status line and the manifest. */
static char *attach_cmdline(pid_t pid)
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

/* Creates dir (0700) owned by uid; 0 or -errno. */
static int attach_private_dir(const char *dir, uid_t uid)
{
	if (mkdir(dir, 0700) != 0 && errno != EEXIST)
		return -errno;
	/* The directory may have been made by the target's user: never follow a link planted there. */
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	int rc = 0;
	if (fstat(fd, &st) != 0)
		rc = -errno;
	else if ((st.st_uid != uid && st.st_uid != getuid()) || (st.st_mode & 0077))
		rc = -EPERM;
	else if (getuid() == 0 && st.st_uid != uid && fchown(fd, uid, (gid_t)-1) != 0)
		rc = -errno;
	close(fd);
	return rc;
}

/* Writes the rendezvous file the collector reads at its start (0600, owned by the target's user). */
static int attach_write_rendezvous(const char *path, uid_t uid, const char *session,
                                   const struct launch_options *o)
{
	char text[2048];
	int n = snprintf(text, sizeof text, "CUSCOPE_SESSION=%s\n%s%s%s%s%s%s%s%s%s", session,
	                 o->sample_hz ? "CUSCOPE_SAMPLE_HZ=" : "", o->sample_hz ? o->sample_hz : "",
	                 o->sample_hz ? "\n" : "", o->osrt_threshold_us ? "CUSCOPE_OSRT_THRESHOLD_US=" : "",
	                 o->osrt_threshold_us ? o->osrt_threshold_us : "", o->osrt_threshold_us ? "\n" : "",
	                 o->counters ? "CUSCOPE_COUNTERS=" : "", o->counters ? o->counters : "",
	                 o->counters ? "\n" : "");
	if (o->buffer_mb)
		n += snprintf(text + n, sizeof text - (size_t)n, "CUSCOPE_BUFFER_MB=%u\n", o->buffer_mb);
	/* A fresh file, never through a link: the directory belongs to the target's user. */
	unlink(path);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	int rc = write(fd, text, (size_t)n) == n ? 0 : -EIO;
	if (getuid() == 0 && fchown(fd, uid, (gid_t)-1) != 0)
		rc = -errno;
	close(fd);
	return rc;
}

/* Injects (or wakes) the collector in pid; on success session names the directory to follow. */
static int attach_inject(pid_t pid, const struct launch_options *opts, char *session, size_t session_size)
{
	uid_t uid = attach_process_uid(pid);
	if (getuid() != 0 && uid != getuid()) {
		log_error("attach: not permitted: pid %d belongs to another user (uid %u); attach as that "
		          "user or as root",
		          (int)pid, (unsigned)uid);
		return 1;
	}
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
	char base[128], rendezvous[256];
	snprintf(base, sizeof base, "/tmp/cuscope-%u", (unsigned)uid);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	snprintf(session, session_size, "%s/attach-%d-%lx", base, (int)pid, (unsigned long)ts.tv_nsec);
	snprintf(rendezvous, sizeof rendezvous, "%s/attach-%d.env", base, (int)pid);
	int rc = attach_private_dir(base, uid);
	if (!rc)
		rc = attach_private_dir(session, uid);
	if (!rc)
		rc = attach_write_rendezvous(rendezvous, uid, session, opts);
	if (rc) {
		log_error("attach: cannot prepare the session in %s: %s", base, strerror(-rc));
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
			unlink(rendezvous);
			log_error("attach: no dlopen in pid %d's C library (%s)", (int)pid, libc.path);
			return 1;
		}
	}
	pid_t tid = remote_pick_thread(pid);
	char err[256];
	uint64_t ret = 0;
	rc = already_loaded
	         ? remote_call(pid, tid, func, 0, 0, NULL, 0, &ret, ATTACH_CALL_TIMEOUT_MS, err, sizeof err)
	         : remote_call(pid, tid, func, REMOTE_ARG_DATA, arg2, collector, strlen(collector) + 1, &ret,
	                       ATTACH_CALL_TIMEOUT_MS, err, sizeof err);
	if (rc) {
		unlink(rendezvous);
		rmdir(session);
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
		unlink(rendezvous);
		rmdir(session);
		if (already_loaded)
			log_error("attach: pid %d's collector did not restart (see its stderr)", (int)pid);
		else
			log_error("attach: loading %s into pid %d failed (dlopen returned NULL)", collector,
			          (int)pid);
		return 1;
	}
	return 0;
}

/* Waits until the collector's socket shows up in dir. */
static int attach_wait_socket(const char *dir, pid_t pid)
{
	char path[1024];
	snprintf(path, sizeof path, "%s/%d.sock", dir, (int)pid);
	struct timespec start, now, step = {0, 10000000};
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		struct stat st;
		if (lstat(path, &st) == 0)
			return 0;
		if (kill(pid, 0) != 0 && errno == ESRCH)
			return -ESRCH;
		clock_gettime(CLOCK_MONOTONIC, &now);
		uint64_t waited = (uint64_t)(now.tv_sec - start.tv_sec) * 1000000000ull +
		                  (uint64_t)now.tv_nsec - (uint64_t)start.tv_nsec;
		if (waited > ATTACH_SOCKET_WAIT_NS)
			return -ETIMEDOUT;
		nanosleep(&step, NULL);
	}
}

int cli_attach(int argc, char **argv)
{
	static const struct option options[] = {
	    {"record", no_argument, NULL, 'r'},
	    {"output", required_argument, NULL, 'o'},
	    {"duration", required_argument, NULL, 'd'},
	    {"buffer-mb", required_argument, NULL, 'b'},
	    {"help", no_argument, NULL, 'h'},
	    CLI_UI_LONG_OPTIONS,
	    LAUNCH_LONG_OPTIONS,
	    {0},
	};
	struct launch_options lopts = {0};
	struct ui_options ui_opts = {.window_s = 10.0};
	int record = 0;
	const char *output = NULL;
	double duration_s = 0;
	int opt;
	optind = 1;
	optopt = 0;
	while ((opt = getopt_long(argc, argv, "+ro:d:h", options, NULL)) != -1) {
		switch (opt) {
		case 'r':
			record = 1;
			break;
		case 'o':
			output = optarg;
			break;
		case 'd':
			if (cli_parse_seconds(optarg, &duration_s) != 0) {
				log_error("attach: --duration needs a positive number of seconds, not '%s'",
				          optarg);
				return CLI_EXIT_USAGE;
			}
			break;
		case 'b':
			if (cli_parse_buffer_mb(optarg, &lopts.buffer_mb) != 0)
				return CLI_EXIT_USAGE;
			break;
		case 'h':
			cli_usage("attach");
			return 0;
		default: {
			int urc = cli_parse_ui_option(&ui_opts, opt, optarg);
			if (urc < 0)
				return CLI_EXIT_USAGE;
			if (urc > 0)
				break;
			int lrc = launch_parse_option(&lopts, opt, optarg);
			if (lrc < 0)
				return CLI_EXIT_USAGE;
			if (lrc == 0)
				return cli_bad_option("attach", argv);
		}
		}
	}
	if (optind != argc - 1) {
		log_error(
		    "attach: expected one process id (cuscope attach [--record -o FILE --duration S] PID)");
		return CLI_EXIT_USAGE;
	}
	char *end;
	long pid_value = strtol(argv[optind], &end, 10);
	if (*end || pid_value <= 0 || pid_value > 0x3fffffff) {
		log_error("attach: '%s' is not a process id", argv[optind]);
		return CLI_EXIT_USAGE;
	}
	pid_t pid = (pid_t)pid_value;
	if (record && !output) {
		log_error("attach: --record needs -o FILE");
		return CLI_EXIT_USAGE;
	}
	if (kill(pid, 0) != 0 && errno == ESRCH) {
		log_error("attach: no such process: %d", (int)pid);
		return 1;
	}
	if (!record && (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO))) {
		log_error(
		    "attach: the live view needs a terminal; use `cuscope attach --record -o FILE PID`");
		return CLI_EXIT_USAGE;
	}
	struct capture_writer *writer = NULL;
	if (record) {
		int err = 0;
		const char *cause = NULL;
		writer = capture_writer_open(output, &err, &cause);
		if (!writer) {
			log_error("attach: %s %s: %s", cause, output, strerror(-err));
			return CLI_EXIT_USAGE;
		}
	}
	struct launch target;
	memset(&target, 0, sizeof target);
	target.pid = pid;
	target.attached = 1;
	target.running = 1;
	char base[256];
	int armed = 0;
	if (session_base_dir(base, sizeof base) == 0)
		armed = attach_find_armed(base, pid, target.session_dir, sizeof target.session_dir);
	if (!armed) {
		snprintf(base, sizeof base, "/tmp/cuscope-%u", (unsigned)attach_process_uid(pid));
		armed = attach_find_armed(base, pid, target.session_dir, sizeof target.session_dir);
	}
	int rc = 0;
	if (!armed)
		rc = attach_inject(pid, &lopts, target.session_dir, sizeof target.session_dir);
	if (!rc) {
		rc = attach_wait_socket(target.session_dir, pid);
		if (rc == -ESRCH)
			log_error("attach: pid %d exited during attach", (int)pid);
		else if (rc)
			log_error("attach: pid %d's collector did not open its socket in %s", (int)pid,
			          target.session_dir);
		if (rc && !armed) {
			/* Nothing may be left for a later process with the same pid to pick up. */
			char rendezvous[300];
			snprintf(rendezvous, sizeof rendezvous, "/tmp/cuscope-%u/attach-%d.env",
			         (unsigned)attach_process_uid(pid), (int)pid);
			unlink(rendezvous);
			rmdir(target.session_dir);
		}
		rc = rc ? 1 : 0;
	}
	if (rc) {
		if (writer) {
			capture_writer_close(writer);
			unlink(output);
		}
		return rc;
	}
	char *cmdline = attach_cmdline(pid);
	if (record) {
		char *manifest_argv[] = {cmdline, NULL};
		rc = record_run(&target, writer, output, manifest_argv, duration_s);
	} else {
		rc = live_run(&target, cmdline, &ui_opts);
	}
	free(cmdline);
	return rc;
}

int cli_run(int argc, char **argv)
{
	static const struct option options[] = {
	    {"detached", no_argument, NULL, 'D'},
	    {"buffer-mb", required_argument, NULL, 'b'},
	    {"help", no_argument, NULL, 'h'},
	    LAUNCH_LONG_OPTIONS,
	    {0},
	};
	struct launch_options lopts = {.log_output = 1, .wait_viewer_ms = 0};
	int detached = 0, opt;
	optind = 1;
	optopt = 0;
	while ((opt = getopt_long(argc, argv, "+h", options, NULL)) != -1) {
		switch (opt) {
		case 'D':
			detached = 1;
			break;
		case 'b':
			if (cli_parse_buffer_mb(optarg, &lopts.buffer_mb) != 0)
				return CLI_EXIT_USAGE;
			break;
		case 'h':
			cli_usage("run");
			return 0;
		default: {
			int lrc = launch_parse_option(&lopts, opt, optarg);
			if (lrc < 0)
				return CLI_EXIT_USAGE;
			if (lrc == 0)
				return cli_bad_option("run", argv);
		}
		}
	}
	if (!detached) {
		log_error("run: only --detached is supported (for a live view use `cuscope -- COMMAND`)");
		return CLI_EXIT_USAGE;
	}
	if (optind >= argc) {
		log_error("run: no command given (cuscope run --detached -- COMMAND ...)");
		return CLI_EXIT_USAGE;
	}
	struct launch launch;
	char msg[1024];
	int rc = launch_start(&launch, argv + optind, &lopts, msg, sizeof msg);
	if (rc) {
		log_error("%s", msg);
		return rc;
	}
	printf("pid %d armed; output in %s\nwatch it with: cuscope attach %d\n", (int)launch.pid,
	       launch.log_path, (int)launch.pid);
	return 0;
}
