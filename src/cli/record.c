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
#define RECORD_KILL_NS 5000000000ull  /* after forwarding a stop signal, wait this long before SIGKILL */

static volatile sig_atomic_t record_stop_signal;

static void record_on_signal(int sig)
{
	record_stop_signal = sig;
}

struct recorder {
	struct capture_writer *writer;
	int write_error;
	int protocol_error;
	pid_t source_pid[4096]; /* pid behind each source, for messages */
};

/* Prints a collector's notice (e.g. GPU tracing unavailable) once, as a warning line. */
static void record_notice(const struct recorder *rec, int source, const void *payload)
{
	struct wire_notice n;
	memcpy(&n, payload, sizeof n);
	pid_t pid = source >= 0 && source < 4096 ? rec->source_pid[source] : 0;
	log_warn("pid %d: %.*s", (int)pid, (int)n.length, (const char *)payload + sizeof n);
}

static int record_frame(void *ctx, int source, uint32_t type, const void *payload, uint32_t length)
{
	struct recorder *rec = ctx;
	if (type == WIRE_FRAME_HELLO && source >= 0 && source < 4096) {
		struct wire_hello hello;
		memcpy(&hello, payload, sizeof hello);
		rec->source_pid[source] = hello.pid;
	}
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

static void record_error(void *ctx, int source, pid_t pid, const char *message)
{
	struct recorder *rec = ctx;
	(void)source;
	rec->protocol_error = 1;
	log_error("pid %d: %s", (int)pid, message);
}

/* The manifest: what a capture needs to be understood elsewhere (extended by later issues). */
static void record_manifest(struct capture_writer *w, char **argv)
{
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
	free(text);
	text = xasprintf("cuscope_version=%s\ncommand=%s\ncwd=%s\nhost=%s\nkernel=%s %s %s\nrecorded_real_ns=%llu\n",
			 CUSCOPE_VERSION, cmd, cwd, host, un.sysname, un.release, un.machine,
			 (unsigned long long)clock_real_ns());
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
		{0},
	};
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
				log_error("record: --duration needs a positive number of seconds, not '%s'", optarg);
				return CLI_EXIT_USAGE;
			}
			break;
		case 'b': {
			char *end;
			unsigned long v = strtoul(optarg, &end, 10);
			if (*end || v == 0 || v > 65536) {
				log_error("record: --buffer-mb needs a size in MiB (1-65536), not '%s'", optarg);
				return CLI_EXIT_USAGE;
			}
			buffer_mb = (unsigned)v;
			break;
		}
		case 'h':
			cli_usage("record");
			return 0;
		default:
			return cli_bad_option("record", argv);
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
	static struct recorder rec;
	rec.writer = capture_writer_open(output, &err, &cause);
	if (!rec.writer) {
		log_error("record: %s %s: %s", cause, output, strerror(-err));
		return CLI_EXIT_USAGE;
	}
	record_manifest(rec.writer, command);

	struct sigaction sa = {0};
	sa.sa_handler = record_on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);

	struct launch launch;
	struct launch_options lopts = {.log_output = 0, .buffer_mb = buffer_mb, .wait_viewer_ms = 3000};
	char msg[1024];
	int rc = launch_start(&launch, command, &lopts, msg, sizeof msg);
	if (rc) {
		log_error("%s", msg);
		capture_writer_close(rec.writer);
		unlink(output);
		return rc;
	}
	struct tap_callbacks cb = {.ctx = &rec, .frame = record_frame, .error = record_error};
	struct tap *tap = tap_new(launch.session_dir, &cb);

	uint64_t start = clock_mono_ns();
	uint64_t last_flush = start, exited_at = 0, stop_sent_at = 0;
	int forwarded = 0;
	for (;;) {
		tap_pump(tap, 20, -1);
		uint64_t now = clock_mono_ns();
		if (now - last_flush >= RECORD_FLUSH_NS) {
			last_flush = now;
			capture_writer_flush(rec.writer);
		}
		if (!launch_poll(&launch) && !exited_at)
			exited_at = now;
		if (exited_at) {
			/* The target is gone: stop once its collectors said goodbye, or after a grace period. */
			if (tap_connection_count(tap) == 0 || now - exited_at > RECORD_DRAIN_NS)
				break;
			continue;
		}
		int stop_sig = record_stop_signal;
		if (!stop_sig && duration_s > 0 && now - start >= (uint64_t)(duration_s * 1e9))
			stop_sig = SIGTERM;
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
	tap_free(tap);
	int close_rc = capture_writer_close(rec.writer);
	if (close_rc && !rec.write_error)
		log_error("record: cannot finish %s: %s", output, strerror(-close_rc));
	launch_cleanup(&launch);
	if (rec.protocol_error)
		return CLI_EXIT_USAGE;
	return launch_exit_code(&launch);
}
