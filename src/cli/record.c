/* `cuscope record`: launch, follow the session, stream every frame into a capture file. */
#include "cuscope/capture.h"
#include "cuscope/clock.h"
#include "cuscope/cli.h"
#include "cuscope/launch.h"
#include "cuscope/log.h"
#include "cuscope/tap.h"
#include "cuscope/wire.h"
#include "cuscope/xalloc.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#ifndef CUSCOPE_VERSION
#define CUSCOPE_VERSION "0.0.0"
#endif

#define RECORD_FLUSH_NS 250000000ull
#define RECORD_DRAIN_NS 3000000000ull /* after the target exits, wait this long for its data */
#define RECORD_KILL_NS  5000000000ull /* after forwarding a stop signal, wait this long before SIGKILL */

static volatile sig_atomic_t record_stop_signal;

static void record_on_signal(int sig)
{
	record_stop_signal = sig;
}

struct recorder {
	struct capture_writer *writer;
	int write_error;
	int protocol_error;
	pid_t source_pid[4096];   /* pid behind each source, for messages */
	uint8_t source_bye[4096]; /* the source's final counts and BYE arrived */
	char *runtime_manifest;   /* key=value lines reported by collectors (GPU runtime versions) */
	char *said[32];           /* warnings already printed */
	size_t said_count;
};

/* One recording per process; its callbacks receive it as ctx. */
static struct recorder the_recorder;

/* Prints a collector's notice (e.g. GPU tracing unavailable) once, as a warning line. */
static void record_notice(struct recorder *rec, int source, const void *payload)
{
	struct wire_notice n;
	memcpy(&n, payload, sizeof n);
	pid_t pid = source >= 0 && source < 4096 ? rec->source_pid[source] : 0;
	const char *text = (const char *)payload + sizeof n;
	if (n.level == WIRE_NOTICE_INFO) {
		/* Informational notices are key=value facts for the manifest (e.g. CUDA versions). */
		char *next = xasprintf("%s%.*s\n", rec->runtime_manifest ? rec->runtime_manifest : "",
		                       (int)n.length, text);
		free(rec->runtime_manifest);
		rec->runtime_manifest = next;
		return;
	}
	/* A forked child inherits its parent's conditions (and notices): say each thing once. */
	for (size_t i = 0; i < rec->said_count; i++)
		if (strlen(rec->said[i]) == n.length && memcmp(rec->said[i], text, n.length) == 0)
			return;
	if (rec->said_count < sizeof rec->said / sizeof rec->said[0])
		rec->said[rec->said_count++] = xstrndup(text, n.length);
	log_warn("pid %d: %.*s", (int)pid, (int)n.length, text);
}

static int record_frame(void *ctx, int source, uint32_t type, const void *payload, uint32_t length)
{
	struct recorder *rec = ctx;
	if (type == WIRE_FRAME_HELLO && source >= 0 && source < 4096) {
		struct wire_hello hello;
		memcpy(&hello, payload, sizeof hello);
		rec->source_pid[source] = hello.pid;
	}
	if (type == WIRE_FRAME_BYE && source >= 0 && source < 4096)
		rec->source_bye[source] = 1;
	if (type == WIRE_FRAME_NOTICE)
		record_notice(rec, source, payload);
	if (rec->write_error)
		return 0;
	int rc = capture_writer_frame(rec->writer, (uint32_t)source, type, payload, length);
	if (rc) {
		rec->write_error = rc;
		log_error("record: cannot write capture: %s", strerror(-rc));
	}
	return 0;
}

/*
 * After the session: records how the launched process ended (an EXIT frame in its stream) and
 * says once which processes left no final counts (their losses are unknown).
 */
static void record_ends(struct recorder *rec, const struct launch *launch)
{
	int launched_source = -1, missing = 0, first_missing = 0;
	for (int s = 0; s < 4096; s++) {
		pid_t pid = rec->source_pid[s];
		if (!pid)
			continue;
		int later = 0; /* the same pid streamed again (exec): the newest stream counts */
		for (int t = s + 1; t < 4096 && !later; t++)
			later = rec->source_pid[t] == pid;
		if (later)
			continue;
		if (!launch->attached && pid == launch->pid)
			launched_source = s;
		if (!rec->source_bye[s] && missing++ == 0)
			first_missing = pid;
	}
	if (launched_source >= 0 && !rec->write_error) {
		struct wire_exit ex = {launch->pid, -1, 0, 0};
		if (WIFSIGNALED(launch->status))
			ex.signal = WTERMSIG(launch->status);
		else if (WIFEXITED(launch->status))
			ex.exit_code = WEXITSTATUS(launch->status);
		capture_writer_frame(rec->writer, (uint32_t)launched_source, WIRE_FRAME_EXIT, &ex, sizeof ex);
	}
	if (missing)
		log_warn("record: %d process%s (pid %d%s) ended without final counts: the capture is "
		         "incomplete and their losses unknown",
		         missing, missing == 1 ? "" : "es", (int)first_missing, missing > 1 ? ", ..." : "");
}

static void record_error(void *ctx, int source, pid_t pid, const char *message)
{
	struct recorder *rec = ctx;
	(void)source;
	rec->protocol_error = 1;
	log_error("pid %d: %s", (int)pid, message);
}

/* Appends "key=value\n" to *text (value's newlines flattened). */
static void manifest_add(char **text, const char *key, const char *value)
{
	char *flat = xstrdup(value ? value : "");
	for (char *p = flat; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	char *next = xasprintf("%s%s=%s\n", *text, key, flat);
	free(flat);
	free(*text);
	*text = next;
}

/* Runs a command with a time limit and appends each output line as key=line. */
static void manifest_add_command(char **text, const char *key, const char *command)
{
	char *cmd = xasprintf("timeout 15 %s 2>/dev/null", command);
	FILE *p = popen(cmd, "r");
	free(cmd);
	if (!p)
		return;
	char line[1024];
	while (fgets(line, sizeof line, p)) {
		line[strcspn(line, "\n")] = '\0';
		if (line[0])
			manifest_add(text, key, line);
	}
	pclose(p);
}

/* Shell-quotes s for popen (single quotes). */
static char *shell_quote(const char *s)
{
	char *out = xstrdup("'");
	for (; *s; s++) {
		char *next = *s == '\'' ? xasprintf("%s'\\''", out) : xasprintf("%s%c", out, *s);
		free(out);
		out = next;
	}
	char *next = xasprintf("%s'", out);
	free(out);
	return next;
}

/*
 * The environment manifest: what a capture needs to be understood and reproduced elsewhere.
 * GPU runtime versions arrive later from the collector and go into a second MANIFEST chunk.
 */
static void record_manifest(struct capture_writer *w, char **argv)
{
	extern char **environ;
	static const char *const env_prefixes[] = {"CUDA_",       "NCCL_",  "PYTHON", "CONDA_", "LD_",
	                                           "VIRTUAL_ENV", "TORCH_", "OMP_",   "NVIDIA_"};
	char *text = xstrdup("");
	char cwd[PATH_MAX] = "", host[256] = "";
	struct utsname un;
	if (!getcwd(cwd, sizeof cwd))
		cwd[0] = '\0';
	gethostname(host, sizeof host - 1);
	uname(&un);
	char *cmd = xstrdup("");
	for (char **a = argv; *a; a++) {
		char *next = xasprintf("%s%s%s", cmd, a == argv ? "" : " ", *a);
		free(cmd);
		cmd = next;
	}
	char buf[512];
	manifest_add(&text, "cuscope_version", CUSCOPE_VERSION);
	manifest_add(&text, "command", cmd);
	manifest_add(&text, "cwd", cwd);
	manifest_add(&text, "host", host);
	snprintf(buf, sizeof buf, "%s %s %s %s", un.sysname, un.release, un.version, un.machine);
	manifest_add(&text, "kernel", buf);
	snprintf(buf, sizeof buf, "%llu", (unsigned long long)clock_real_ns());
	manifest_add(&text, "recorded_real_ns", buf);
	FILE *cpu = fopen("/proc/cpuinfo", "r");
	if (cpu) {
		char line[512];
		while (fgets(line, sizeof line, cpu)) {
			if (strncmp(line, "model name", 10) == 0 && strchr(line, ':')) {
				manifest_add(&text, "cpu_model", strchr(line, ':') + 2);
				break;
			}
		}
		fclose(cpu);
	}
	snprintf(buf, sizeof buf, "%ld", sysconf(_SC_NPROCESSORS_ONLN));
	manifest_add(&text, "cpu_count", buf);
	for (char **e = environ; *e; e++) {
		for (size_t i = 0; i < sizeof env_prefixes / sizeof env_prefixes[0]; i++) {
			if (strncmp(*e, env_prefixes[i], strlen(env_prefixes[i])) == 0) {
				char *eq = strchr(*e, '=');
				if (!eq)
					break;
				char *key = xasprintf("env.%.*s", (int)(eq - *e), *e);
				manifest_add(&text, key, eq + 1);
				free(key);
				break;
			}
		}
	}
	manifest_add_command(&text, "gpu",
	                     "nvidia-smi --query-gpu=index,name,uuid,driver_version --format=csv,noheader");
	/* The Python environment's packages, when the command is a Python interpreter or one is active. */
	const char *base = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
	const char *python = strncmp(base, "python", 6) == 0                     ? argv[0]
	                     : (getenv("VIRTUAL_ENV") || getenv("CONDA_PREFIX")) ? "python3"
	                                                                         : NULL;
	if (python) {
		char *quoted = shell_quote(python);
		char *pip = xasprintf("%s -m pip list --format=freeze --disable-pip-version-check", quoted);
		char *ver = xasprintf("%s --version", quoted);
		manifest_add_command(&text, "python_version", ver);
		manifest_add_command(&text, "python_package", pip);
		free(pip);
		free(ver);
		free(quoted);
	}
	capture_writer_manifest(w, text, strlen(text));
	free(cmd);
	free(text);
}

int cli_record(int argc, char **argv)
{
	static const struct option options[] = {
	    {"output", required_argument, NULL, 'o'},
	    {"duration", required_argument, NULL, 'd'},
	    {"buffer-mb", required_argument, NULL, 'b'},
	    {"help", no_argument, NULL, 'h'},
	    LAUNCH_LONG_OPTIONS,
	    {0},
	};
	struct launch_options lopts = {.log_output = 0, .wait_viewer_ms = 3000};
	const char *output = NULL;
	double duration_s = 0;
	unsigned buffer_mb = 0;
	int opt;
	optind = 1;
	optopt = 0;
	while ((opt = getopt_long(argc, argv, "+o:d:h", options, NULL)) != -1) {
		switch (opt) {
		case 'o':
			output = optarg;
			break;
		case 'd':
			if (cli_parse_seconds(optarg, &duration_s) != 0) {
				log_error("record: --duration needs a positive number of seconds, not '%s'",
				          optarg);
				return CLI_EXIT_USAGE;
			}
			break;
		case 'b':
			if (cli_parse_buffer_mb(optarg, &buffer_mb) != 0)
				return CLI_EXIT_USAGE;
			break;
		case 'h':
			cli_usage("record");
			return 0;
		default: {
			int rc = launch_parse_option(&lopts, opt, optarg);
			if (rc < 0)
				return CLI_EXIT_USAGE;
			if (rc == 0)
				return cli_bad_option("record", argv);
		}
		}
	}
	if (!output) {
		log_error("record: -o FILE is required (see cuscope record --help)");
		return CLI_EXIT_USAGE;
	}
	if (optind >= argc) {
		log_error("record: no command given (cuscope record -o FILE -- COMMAND ...)");
		return CLI_EXIT_USAGE;
	}
	char **command = argv + optind;

	int err = 0;
	const char *cause = NULL;
	the_recorder.writer = capture_writer_open(output, &err, &cause);
	if (!the_recorder.writer) {
		log_error("record: %s %s: %s", cause, output, strerror(-err));
		return CLI_EXIT_USAGE;
	}

	struct launch launch;
	lopts.buffer_mb = buffer_mb;
	char msg[1024];
	int rc = launch_start(&launch, command, &lopts, msg, sizeof msg);
	if (rc) {
		log_error("%s", msg);
		capture_writer_close(the_recorder.writer);
		unlink(output);
		return rc;
	}
	return record_run(&launch, the_recorder.writer, output, command, duration_s);
}

int record_run(struct launch *target, struct capture_writer *writer, const char *output, char **command,
               double duration_s)
{
	struct launch launch = *target;
	the_recorder.writer = writer;
	struct sigaction sa = {0};
	sa.sa_handler = record_on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	struct tap_callbacks cb = {.ctx = &the_recorder, .frame = record_frame, .error = record_error};
	struct tap *tap = tap_new(launch.session_dir, &cb);
	/* The manifest (nvidia-smi, pip take a moment) is gathered once the first collector is
	 * connected, so its start-up data is safely flowing first; collectors queue meanwhile. */
	int manifest_done = 0;

	uint64_t start = clock_mono_ns();
	uint64_t last_flush = start, exited_at = 0, stop_sent_at = 0;
	int forwarded = 0, connected_once = 0;
	for (;;) {
		tap_pump(tap, 20, -1);
		uint64_t now = clock_mono_ns();
		if (now - last_flush >= RECORD_FLUSH_NS) {
			last_flush = now;
			capture_writer_flush(the_recorder.writer);
		}
		connected_once |= tap_connection_count(tap) > 0;
		if (!manifest_done && (connected_once || now - start > 2000000000ull)) {
			record_manifest(the_recorder.writer, command);
			manifest_done = 1;
		}
		if (!launch_poll(&launch) && !exited_at)
			exited_at = now;
		if (exited_at) {
			/* The target is gone: stop once its collectors said goodbye, or after a grace period.
			 */
			if (tap_connection_count(tap) == 0 || now - exited_at > RECORD_DRAIN_NS)
				break;
			continue;
		}
		int stop_sig = record_stop_signal;
		if (!stop_sig && duration_s > 0 && now - start >= (uint64_t)(duration_s * 1e9))
			stop_sig = SIGTERM;
		/* An attached target is never signalled: the recording just ends and we detach. */
		if (stop_sig && launch.attached)
			break;
		if (launch.attached && connected_once && tap_connection_count(tap) == 0)
			break; /* its collector went away (detached elsewhere or exiting) */
		if (stop_sig && !forwarded) {
			launch_signal(&launch, stop_sig == SIGHUP ? SIGTERM : stop_sig);
			forwarded = 1;
			stop_sent_at = now;
		}
		if (forwarded && now - stop_sent_at > RECORD_KILL_NS) {
			log_warn("record: pid %d ignored the stop signal; killing it", (int)launch.pid);
			launch_signal(&launch, SIGKILL);
			stop_sent_at = now;
		}
	}
	tap_finish(tap);
	tap_free(tap);
	record_ends(&the_recorder, &launch);
	if (!manifest_done)
		record_manifest(the_recorder.writer, command);
	if (the_recorder.runtime_manifest) {
		capture_writer_manifest(the_recorder.writer, the_recorder.runtime_manifest,
		                        strlen(the_recorder.runtime_manifest));
		free(the_recorder.runtime_manifest);
	}
	int close_rc = capture_writer_close(the_recorder.writer);
	if (close_rc && !the_recorder.write_error)
		log_error("record: cannot finish %s: %s", output, strerror(-close_rc));
	launch_cleanup(&launch);
	if (the_recorder.protocol_error || the_recorder.write_error || close_rc)
		return launch.attached ? 1 : CLI_EXIT_USAGE;
	if (launch.attached && !connected_once) {
		log_error("record: pid %d's collector never answered", (int)launch.pid);
		return 1;
	}
	return launch_exit_code(&launch);
}
