#include "cuscope/launch.h"
#include "cuscope/session.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

const char launch_options_help[] =
    "      --sample-hz N      CPU stack samples per thread CPU-second (default 1000; max 10000; 0 = off)\n"
    "      --osrt-threshold-us N  record blocking calls longer than N µs (default 100; off = none)\n"
    "      --counters LIST    per-thread counters: comma list of perf/libpfm4 event names\n"
    "                         (default task-clock,context-switches,page-faults,cycles,instructions,\n"
    "                         LLC-load-misses; none = off)\n"
    "      --python-perf      start CPython >= 3.12 with perf trampolines so stacks show Python functions\n"
    "      --no-gpu           do not trace GPU activity (CUPTI)\n"
    "      --follow WHICH     descendants traced: all (default), none (only COMMAND), or EXE,... (COMMAND\n"
    "                         and descendants whose executable or argv[0] has one of these base names)\n";

static int launch_number_option(const char *name, const char *arg, int allow_off)
{
	char *end;
	unsigned long v = strtoul(arg, &end, 10);
	if ((allow_off && strcmp(arg, "off") == 0) || (*arg && !*end && v <= 100000000ul))
		return 0;
	fprintf(stderr, "cuscope: --%s needs a number%s, not '%s'\n", name, allow_off ? " or 'off'" : "",
	        arg);
	return -1;
}

/* 0 if arg is a --follow value: all, none, or non-empty base names separated by commas. */
static int launch_follow_check(const char *arg)
{
	if (strcmp(arg, "all") == 0 || strcmp(arg, "none") == 0)
		return 0;
	/* The collector compares names of at most NAME_MAX bytes; the whole list travels in the
	 * environment. */
	if (!*arg || strlen(arg) > 1000 || strchr(arg, '/'))
		return -1;
	for (const char *p = arg; *p;) {
		size_t len = strcspn(p, ",");
		if (len == 0 || len > NAME_MAX)
			return -1;
		p += len;
		if (*p == ',' && !*++p)
			return -1; /* a trailing comma */
	}
	return 0;
}

int launch_parse_option(struct launch_options *options, int opt, const char *arg)
{
	switch (opt - LAUNCH_OPTION_IDS_BASE) {
	case 0:
		/* Above this a sample every period would cost more than the program's own work. */
		if (launch_number_option("sample-hz", arg, 0) != 0 || strtoul(arg, NULL, 10) > 10000) {
			if (strtoul(arg, NULL, 10) > 10000)
				fprintf(stderr, "cuscope: --sample-hz at most 10000\n");
			return -1;
		}
		options->sample_hz = arg;
		return 1;
	case 1:
		if (launch_number_option("osrt-threshold-us", arg, 1) != 0)
			return -1;
		options->osrt_threshold_us = arg;
		return 1;
	case 2:
		if (!*arg || strlen(arg) > 500) {
			fprintf(stderr, "cuscope: --counters needs a comma list of event names (or none)\n");
			return -1;
		}
		options->counters = arg;
		return 1;
	case 3:
		options->python_perf = 1;
		return 1;
	case 4:
		options->no_gpu = 1;
		return 1;
	case 5:
		if (launch_follow_check(arg) != 0) {
			fprintf(stderr,
			        "cuscope: --follow needs all, none or a comma list of executable names (no "
			        "'/'), not '%s'\n",
			        arg);
			return -1;
		}
		options->follow = arg;
		return 1;
	default:
		return 0;
	}
}

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
                         int error_pipe)
{
	setpgid(0, 0);
	if (options->log_output) {
		int log_fd = open(launch->log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
		int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (log_fd >= 0) {
			dup2(log_fd, STDOUT_FILENO);
			dup2(log_fd, STDERR_FILENO);
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
	if (options->no_gpu)
		setenv("CUSCOPE_NO_GPU", "1", 1);
	if (options->python_perf)
		setenv("PYTHONPERFSUPPORT", "1", 1);
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

int launch_start(struct launch *launch, char *const argv[], const struct launch_options *options, char *msg,
                 size_t msg_size)
{
	memset(launch, 0, sizeof *launch);
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
	int pipe_fd[2];
	if (pipe2(pipe_fd, O_CLOEXEC) != 0) {
		snprintf(msg, msg_size, "pipe: %s", strerror(errno));
		return 2;
	}
	pid_t pid = fork();
	if (pid < 0) {
		snprintf(msg, msg_size, "fork: %s", strerror(errno));
		close(pipe_fd[0]);
		close(pipe_fd[1]);
		return 2;
	}
	if (pid == 0) {
		close(pipe_fd[0]);
		launch_child(launch, argv, options, pipe_fd[1]);
	}
	close(pipe_fd[1]);
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

void launch_replay_log(const struct launch *launch, int fd)
{
	int in = open(launch->log_path, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return;
	char buf[65536];
	ssize_t n;
	while ((n = read(in, buf, sizeof buf)) > 0) {
		if (write(fd, buf, (size_t)n) < 0)
			break;
	}
	close(in);
}
