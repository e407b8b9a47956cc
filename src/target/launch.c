#include "cuscope/launch.h"
#include "cuscope/byteq.h"
#include "cuscope/log.h"
#include "cuscope/perfmap.h"
#include "cuscope/session.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

int launch_find_collector(char *out, size_t size)
{
	const char *env = getenv("CUSCOPE_COLLECTOR");
	if (env && *env) {
		if (!realpath(env, out) || access(out, R_OK) != 0)
			return -ENOENT;
		return 0;
	}
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n <= 0)
		return -ENOENT;
	exe[n] = '\0';
	char *slash = strrchr(exe, '/');
	if (!slash)
		return -ENOENT;
	*slash = '\0';
	char candidate[PATH_MAX + 64];
	/* Same relative layout in the build tree, `make install` and `make dist`. */
	snprintf(candidate, sizeof candidate, "%s/../lib/cuscope/libcuscope.so", exe);
	if (!realpath(candidate, out) || access(out, R_OK) != 0)
		return -ENOENT;
	(void)size;
	return 0;
}

/* Resolves a command like execvp would; returns 0, -ENOENT or -EACCES. */
static int launch_resolve(const char *cmd, char *out, size_t size)
{
	struct stat st;
	if (strchr(cmd, '/')) {
		if (stat(cmd, &st) != 0)
			return -errno;
		if (S_ISDIR(st.st_mode) || access(cmd, X_OK) != 0)
			return -EACCES;
		snprintf(out, size, "%s", cmd);
		return 0;
	}
	const char *path = getenv("PATH");
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	int denied = 0;
	while (*path) {
		const char *end = strchr(path, ':');
		size_t len = end ? (size_t)(end - path) : strlen(path);
		snprintf(out, size, "%.*s/%s", (int)len, len ? path : ".", cmd);
		if (stat(out, &st) == 0) {
			if (!S_ISDIR(st.st_mode) && access(out, X_OK) == 0)
				return 0;
			denied = 1;
		}
		path += len + (end ? 1 : 0);
	}
	return denied ? -EACCES : -ENOENT;
}

static void launch_setenv_number(const char *name, unsigned value)
{
	char buf[32];
	snprintf(buf, sizeof buf, "%u", value);
	setenv(name, buf, 1);
}

/* Child side, between fork and exec: never returns. */
static void launch_child(struct launch *launch, char *const argv[], const struct launch_options *options,
                         int error_pipe, int output_fd)
{
	setpgid(0, 0);
	if (options->log_output) {
		int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (output_fd >= 0) {
			dup2(output_fd, STDOUT_FILENO);
			dup2(output_fd, STDERR_FILENO);
		}
		if (null_fd >= 0)
			dup2(null_fd, STDIN_FILENO);
	}
	/* The environment contract with the collector (see session.h). */
	const char *old_preload = getenv("LD_PRELOAD");
	char preload[8192];
	if (old_preload && *old_preload)
		snprintf(preload, sizeof preload, "%s:%s", launch->collector, old_preload);
	else
		snprintf(preload, sizeof preload, "%s", launch->collector);
	setenv("LD_PRELOAD", preload, 1);
	setenv("NVTX_INJECTION64_PATH", launch->collector, 1);
	setenv("CUDA_INJECTION64_PATH", launch->collector, 1);
	setenv(SESSION_ENV, launch->session_dir, 1);
	if (options->buffer_mb)
		launch_setenv_number(SESSION_ENV_BUFFER_MB, options->buffer_mb);
	launch_setenv_number(SESSION_ENV_WAIT_VIEWER_MS, options->wait_viewer_ms);
	if (options->sample_hz)
		setenv("CUSCOPE_SAMPLE_HZ", options->sample_hz, 1);
	if (options->osrt_threshold_us)
		setenv("CUSCOPE_OSRT_THRESHOLD_US", options->osrt_threshold_us, 1);
	if (options->counters)
		setenv("CUSCOPE_COUNTERS", options->counters, 1);
	if (options->overhead_budget)
		setenv("CUSCOPE_OVERHEAD_BUDGET", options->overhead_budget, 1);
	if (options->gpu_metrics)
		setenv("CUSCOPE_GPU_METRICS", options->gpu_metrics, 1);
	if (options->gpu_metrics_hz)
		setenv("CUSCOPE_GPU_METRICS_HZ", options->gpu_metrics_hz, 1);
	if (options->no_gpu)
		setenv("CUSCOPE_NO_GPU", "1", 1);
	if (options->python_perf)
		setenv("PYTHONPERFSUPPORT", "1", 1);
	if (options->torch)
		setenv("CUSCOPE_TORCH", "1", 1);
	else
		unsetenv("CUSCOPE_TORCH"); /* a cuscope run under a --torch one decides for itself */
	/* --follow: the collector traces this process (whatever it execs) and the descendants the
	 * list names; the others stay inert but pass the environment on. */
	if (options->follow && strcmp(options->follow, "all") != 0) {
		setenv("CUSCOPE_FOLLOW", options->follow, 1);
		launch_setenv_number("CUSCOPE_LAUNCHED_PID", (unsigned)getpid());
	} else {
		unsetenv("CUSCOPE_FOLLOW");
		unsetenv("CUSCOPE_LAUNCHED_PID");
	}
	/* The GC hook: our sitecustomize first on PYTHONPATH (it chains to any other). */
	char pyhook[4200];
	snprintf(pyhook, sizeof pyhook, "%s", launch->collector);
	char *slash = strrchr(pyhook, '/');
	if (slash) {
		snprintf(slash, sizeof pyhook - (size_t)(slash - pyhook), "/python");
		const char *old_path = getenv("PYTHONPATH");
		char pythonpath[8192];
		if (old_path && *old_path)
			snprintf(pythonpath, sizeof pythonpath, "%s:%s", pyhook, old_path);
		else
			snprintf(pythonpath, sizeof pythonpath, "%s", pyhook);
		setenv("PYTHONPATH", pythonpath, 1);
	}
	/* The target starts with default signal handling, whatever the viewer set up. */
	for (int sig = 1; sig < NSIG; sig++)
		signal(sig, SIG_DFL);
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	execvp(argv[0], argv);
	int err = errno;
	if (write(error_pipe, &err, sizeof err) < 0) {
		/* the parent sees EOF and reports a generic failure */
	}
	_exit(127);
}

/* ---- the log keeper ---- */

#define LOG_NOTE_LEN   120 /* bytes of the note line at the top of a capped log */
#define LOG_BUF        65536
#define LOG_PIPE_BYTES (1 << 20) /* room for bursts while the keeper writes */
/* Output held in memory while the disk is slow; past it, new output is dropped and counted. */
#define LOG_QUEUE_BYTES (16u << 20)

struct log_keeper {
	int fd;           /* the log file, -1 when it could not be created */
	uint64_t cap;     /* bytes, note included */
	uint64_t base;    /* where output starts in the file: 0, or LOG_NOTE_LEN once capped */
	uint64_t content; /* output bytes in the file after base */
	struct launch_log_stats *stats;
};

static void log_count_drop(struct log_keeper *k, uint64_t n)
{
	__atomic_fetch_add(&k->stats->bytes_dropped, n, __ATOMIC_RELAXED);
}

/* pwrite of all of buf; 0 or -errno. */
static int log_pwrite(int fd, const void *buf, size_t n, uint64_t off)
{
	const char *p = buf;
	while (n) {
		ssize_t w = pwrite(fd, p, n, (off_t)off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		p += w;
		n -= (size_t)w;
		off += (uint64_t)w;
	}
	return 0;
}

/* Rewrites the fixed-size note at the top of a capped log. */
static void log_write_note(struct log_keeper *k)
{
	char note[LOG_NOTE_LEN + 1];
	int n = snprintf(note, sizeof note,
	                 "[cuscope: output log capped at %llu MiB; %llu earlier bytes dropped]",
	                 (unsigned long long)(k->cap >> 20),
	                 (unsigned long long)__atomic_load_n(&k->stats->bytes_dropped, __ATOMIC_RELAXED));
	if (n < 0 || n >= LOG_NOTE_LEN)
		n = LOG_NOTE_LEN - 1;
	memset(note + n, ' ', (size_t)(LOG_NOTE_LEN - 1 - n));
	note[LOG_NOTE_LEN - 1] = '\n';
	(void)log_pwrite(k->fd, note, LOG_NOTE_LEN, 0);
}

/*
 * Makes room for n more bytes in a log at its cap: the newest half of the output moves to just
 * below the note (a forward copy: it only ever moves down), the rest is dropped and counted.
 */
static void log_make_room(struct log_keeper *k, uint64_t n)
{
	uint64_t limit = k->cap - LOG_NOTE_LEN;
	uint64_t keep = n >= limit / 2 ? 0 : limit / 2;
	if (keep > k->content)
		keep = k->content;
	uint64_t src = k->base + k->content - keep;
	if (src < LOG_NOTE_LEN) { /* never copy upwards over what is still to be read */
		uint64_t short_by = LOG_NOTE_LEN - src;
		keep = keep > short_by ? keep - short_by : 0;
		src = LOG_NOTE_LEN;
	}
	char buf[LOG_BUF];
	uint64_t done = 0;
	while (done < keep) {
		size_t step = keep - done < sizeof buf ? (size_t)(keep - done) : sizeof buf;
		ssize_t r = pread(k->fd, buf, step, (off_t)(src + done));
		if (r <= 0 || log_pwrite(k->fd, buf, (size_t)r, LOG_NOTE_LEN + done) != 0)
			break;
		done += (uint64_t)r;
	}
	log_count_drop(k, k->content - done);
	k->base = LOG_NOTE_LEN;
	k->content = done;
	if (ftruncate(k->fd, (off_t)(k->base + k->content)) != 0) {
		/* the file only stays longer than its content: still bounded by the cap */
	}
	__atomic_store_n(&k->stats->capped, 1, __ATOMIC_RELAXED);
	log_write_note(k);
}

/* Appends what the program wrote; past the cap the oldest output gives way, counted. */
static void log_append(struct log_keeper *k, const char *buf, uint64_t n)
{
	if (k->fd < 0) {
		log_count_drop(k, n);
		return;
	}
	uint64_t limit = k->cap - LOG_NOTE_LEN;
	if (n > limit / 2) { /* only the newest half of the cap can stay anyway */
		log_count_drop(k, n - limit / 2);
		buf += n - limit / 2;
		n = limit / 2;
	}
	if (k->base + k->content + n > (k->base ? k->cap : limit))
		log_make_room(k, n);
	int rc = log_pwrite(k->fd, buf, (size_t)n, k->base + k->content);
	if (rc != 0) {
		/* A full disk or a quota: this output is lost, counted; later output tries again. */
		__atomic_store_n(&k->stats->write_errno, (uint32_t)-rc, __ATOMIC_RELAXED);
		log_count_drop(k, n);
		struct stat st;
		if (fstat(k->fd, &st) == 0 && (uint64_t)st.st_size > k->base + k->content &&
		    ftruncate(k->fd, (off_t)(k->base + k->content)) != 0) {
			/* a partial write stays past the end: overwritten by the next one */
		}
		return;
	}
	k->content += n;
	if (k->base)
		log_write_note(k);
}

static struct byteq *log_queue;

/* The log keeper's writer thread: from the queue to the log file, as fast as the disk allows. */
static void *log_writer_main(void *arg)
{
	struct log_keeper *k = arg;
	static char chunk[LOG_BUF];
	size_t n;
	while ((n = byteq_take(log_queue, chunk, sizeof chunk)) > 0)
		log_append(k, chunk, (uint64_t)n);
	return NULL;
}

/*
 * The log keeper, between fork and _exit: drains the program's output pipe into the log until
 * every writer has closed it. It runs in its own session and is no child of the viewer, so the
 * viewer's terminal hanging up, Ctrl-C or the viewer's own end never stop it, and the program's
 * writes never fail because of us. done_fd closes when it ends (the viewer waits on it).
 */
static void launch_log_keeper(int in, int log_fd, int done_fd, uint64_t cap, struct launch_log_stats *stats)
{
	setsid();
	prctl(PR_SET_NAME, "cuscope-log", 0, 0, 0); /* told apart from the viewer in ps/top */
	static const int ignored[] = {SIGHUP, SIGINT, SIGQUIT, SIGPIPE, SIGTSTP, SIGTTIN, SIGTTOU};
	for (size_t i = 0; i < sizeof ignored / sizeof ignored[0]; i++)
		signal(ignored[i], SIG_IGN);
	int null_fd = open("/dev/null", O_RDWR);
	long max_fd = sysconf(_SC_OPEN_MAX);
	if (max_fd < 0 || max_fd > 65536)
		max_fd = 65536;
	/* Only the pipe, the log and done_fd stay open: no terminal, no socket, no caller's pipe. */
	for (int fd = 0; fd < max_fd; fd++) {
		if (fd == in || fd == log_fd || fd == null_fd || fd == done_fd)
			continue;
		if (fd <= STDERR_FILENO && null_fd >= 0)
			dup2(null_fd, fd);
		else
			close(fd);
	}
	if (null_fd > STDERR_FILENO)
		close(null_fd);
	static struct log_keeper k;
	k = (struct log_keeper){.fd = log_fd, .cap = cap, .stats = stats};
	static char buf[LOG_BUF];
	/* The pipe is drained by this thread, which never touches the disk; a writer thread writes
	 * the log. A slow disk then fills the queue (bounded, the excess dropped and counted), never
	 * the pipe, so the program's writes never wait on us. */
	static struct byteq queue;
	pthread_t writer;
	log_queue = &queue;
	int threaded = byteq_init(&queue, LOG_QUEUE_BYTES) == 0 &&
	               pthread_create(&writer, NULL, log_writer_main, &k) == 0;
	for (;;) {
		ssize_t n = read(in, buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		__atomic_fetch_add(&stats->bytes_in, (uint64_t)n, __ATOMIC_RELAXED);
		if (!threaded) {
			log_append(&k, buf, (uint64_t)n);
			continue;
		}
		size_t queued = byteq_put(&queue, buf, (size_t)n);
		if (queued < (size_t)n)
			log_count_drop(&k, (uint64_t)n - queued);
	}
	if (threaded) {
		byteq_close(&queue);
		pthread_join(writer, NULL);
	}
	_exit(0);
}

/*
 * Creates the output log and starts its keeper (forked twice: it belongs to no one's process
 * list); on return *output_fd is the pipe's write end for the target's stdout/stderr. 0, or
 * -errno with msg set.
 */
static int launch_start_log_keeper(struct launch *launch, const struct launch_options *options,
                                   int *output_fd, char *msg, size_t msg_size)
{
	launch->log_mb = options->log_mb ? options->log_mb : LAUNCH_LOG_MB_DEFAULT;
	void *shared =
	    mmap(NULL, sizeof *launch->log_stats, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (shared == MAP_FAILED) {
		snprintf(msg, msg_size, "mmap: %s", strerror(errno));
		return -errno;
	}
	launch->log_stats = shared;
	int pipe_fd[2], done[2];
	if (pipe2(pipe_fd, O_CLOEXEC) != 0) {
		snprintf(msg, msg_size, "pipe: %s", strerror(errno));
		return -errno;
	}
	if (pipe2(done, O_CLOEXEC) != 0) {
		snprintf(msg, msg_size, "pipe: %s", strerror(errno));
		close(pipe_fd[0]);
		close(pipe_fd[1]);
		return -errno;
	}
	(void)fcntl(pipe_fd[1], F_SETPIPE_SZ, LOG_PIPE_BYTES);
	/* A log that cannot be created (full disk) still gets drained: the output is counted as dropped. */
	int log_fd = open(launch->log_path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (log_fd < 0)
		launch->log_stats->write_errno = (uint32_t)errno;
	pid_t pid = fork();
	if (pid == 0) {
		if (fork() == 0)
			launch_log_keeper(pipe_fd[0], log_fd, done[1], (uint64_t)launch->log_mb << 20,
			                  launch->log_stats);
		_exit(0);
	}
	int err = errno;
	if (pid > 0)
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
	close(pipe_fd[0]);
	close(done[1]);
	if (log_fd >= 0)
		close(log_fd);
	if (pid < 0) {
		snprintf(msg, msg_size, "fork: %s", strerror(err));
		close(pipe_fd[1]);
		close(done[0]);
		return -err;
	}
	launch->log_done_fd = done[0];
	*output_fd = pipe_fd[1];
	return 0;
}

int launch_start(struct launch *launch, char *const argv[], const struct launch_options *options, char *msg,
                 size_t msg_size)
{
	memset(launch, 0, sizeof *launch);
	launch->perf_maps_ours = perfmap_ours(options->python_perf);
	char resolved[PATH_MAX];
	int rc = launch_resolve(argv[0], resolved, sizeof resolved);
	if (rc == -ENOENT) {
		snprintf(msg, msg_size, "cannot run '%s': command not found", argv[0]);
		return 127;
	}
	if (rc) {
		snprintf(msg, msg_size, "cannot run '%s': %s", argv[0],
		         rc == -EACCES ? "permission denied (not an executable file)" : strerror(-rc));
		return 126;
	}
	if (launch_find_collector(launch->collector, sizeof launch->collector) != 0) {
		snprintf(msg, msg_size,
		         "collector libcuscope.so not found next to this binary (../lib/cuscope/); "
		         "set CUSCOPE_COLLECTOR to its path");
		return 2;
	}
	const char *cause = NULL;
	rc = session_create(launch->session_dir, sizeof launch->session_dir, &cause);
	if (rc) {
		char base[256] = "";
		const char *root = getenv("CUSCOPE_SESSION_ROOT");
		if (root && *root)
			snprintf(base, sizeof base, "%s", root);
		else
			session_base_dir(base, sizeof base);
		snprintf(msg, msg_size, "%s %s: %s", cause, base, strerror(-rc));
		return 2;
	}
	snprintf(launch->log_path, sizeof launch->log_path, "%s/output.log", launch->session_dir);
	int output_fd = -1;
	if (options->log_output && launch_start_log_keeper(launch, options, &output_fd, msg, msg_size) != 0)
		return 2;
	int pipe_fd[2];
	if (pipe2(pipe_fd, O_CLOEXEC) != 0) {
		snprintf(msg, msg_size, "pipe: %s", strerror(errno));
		if (output_fd >= 0)
			close(output_fd);
		return 2;
	}
	pid_t pid = fork();
	if (pid < 0) {
		snprintf(msg, msg_size, "fork: %s", strerror(errno));
		close(pipe_fd[0]);
		close(pipe_fd[1]);
		if (output_fd >= 0)
			close(output_fd);
		return 2;
	}
	if (pid == 0) {
		close(pipe_fd[0]);
		launch_child(launch, argv, options, pipe_fd[1], output_fd);
	}
	close(pipe_fd[1]);
	/* Only the target (and its descendants) write the pipe: the keeper ends when they are gone. */
	if (output_fd >= 0)
		close(output_fd);
	/* Set the group from both sides so signals reach it whichever runs first. */
	setpgid(pid, pid);
	launch->pid = pid;
	launch->running = 1;
	int err = 0;
	ssize_t n;
	do
		n = read(pipe_fd[0], &err, sizeof err);
	while (n < 0 && errno == EINTR);
	close(pipe_fd[0]);
	if (n == (ssize_t)sizeof err) {
		waitpid(pid, &launch->status, 0);
		launch->running = 0;
		snprintf(msg, msg_size, "cannot run '%s': %s", argv[0], strerror(err));
		launch_cleanup(launch);
		return err == ENOENT ? 127 : 126;
	}
	return 0;
}

/* Waits up to wait_ms for the log keeper to end (it outlives the target while a descendant of it
 * holds the pipe); 1 once it has ended. */
static int launch_log_keeper_wait(struct launch *launch, int wait_ms)
{
	if (launch->log_done_fd <= 0)
		return 1;
	struct pollfd p = {.fd = launch->log_done_fd, .events = POLLIN};
	int rc;
	do
		rc = poll(&p, 1, wait_ms);
	while (rc < 0 && errno == EINTR);
	if (rc <= 0)
		return 0;
	close(launch->log_done_fd);
	launch->log_done_fd = -1;
	return 1;
}

int launch_poll(struct launch *launch)
{
	if (!launch->running)
		return 0;
	if (launch->attached) {
		if (kill(launch->pid, 0) != 0 && errno == ESRCH)
			launch->running = 0;
		return launch->running;
	}
	int status;
	pid_t r = waitpid(launch->pid, &status, WNOHANG);
	if (r == launch->pid) {
		launch->status = status;
		launch->running = 0;
	} else if (r < 0 && errno == ECHILD) {
		launch->running = 0;
	}
	return launch->running;
}

int launch_exit_code(const struct launch *launch)
{
	if (launch->attached)
		return 0;
	if (WIFEXITED(launch->status))
		return WEXITSTATUS(launch->status);
	if (WIFSIGNALED(launch->status))
		return 128 + WTERMSIG(launch->status);
	return 1;
}

void launch_signal(const struct launch *launch, int sig)
{
	if (launch->pid > 0 && launch->running)
		kill(launch->attached ? launch->pid : -launch->pid, sig);
}

void launch_cleanup(struct launch *launch)
{
	if (!launch->session_dir[0] || (launch->running && !launch->attached))
		return;
	/* Through verified directory fds: a path swapped for a link removes nothing elsewhere. */
	session_remove(launch->session_dir, launch->attached ? launch->session_uid : getuid());
}

void launch_replay_log(struct launch *launch, int fd)
{
	launch_log_keeper_wait(launch, 2000);
	int in = open(launch->log_path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (in >= 0) {
		char buf[65536];
		ssize_t n;
		while ((n = read(in, buf, sizeof buf)) > 0) {
			if (write(fd, buf, (size_t)n) < 0)
				break;
		}
		close(in);
	}
	char note[256];
	launch_log_note(launch, note, sizeof note);
	if (*note)
		log_error("output %s (of the oldest output)", note);
}

void launch_log_note(const struct launch *launch, char *buf, size_t size)
{
	*buf = '\0';
	const struct launch_log_stats *s = launch->log_stats;
	if (!s)
		return;
	uint64_t dropped = __atomic_load_n(&s->bytes_dropped, __ATOMIC_RELAXED);
	uint32_t err = __atomic_load_n(&s->write_errno, __ATOMIC_RELAXED);
	if (!dropped)
		return;
	if (err)
		snprintf(buf, size, "log: %.1f MB dropped (%s)", (double)dropped / 1e6, strerror((int)err));
	else
		snprintf(buf, size, "log capped at %u MiB: %.1f MB dropped", launch->log_mb,
		         (double)dropped / 1e6);
}
