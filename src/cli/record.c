/* `cuscope record`: launch, follow the session, stream every frame into a capture file. */
#include "cuscope/attach.h"
#include "cuscope/capture.h"
#include "cuscope/clock.h"
#include "cuscope/cli.h"
#include "cuscope/launch.h"
#include "cuscope/log.h"
#include "cuscope/manifest.h"
#include "cuscope/outpattern.h"
#include "cuscope/session.h"
#include "cuscope/tap.h"
#include "cuscope/watch.h"
#include "cuscope/wire.h"
#include "cuscope/xalloc.h"
#include "trighook.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* One stream (a process, or its image before an exec). */
struct record_source {
	pid_t pid;         /* from its HELLO, for messages; 0 before it */
	uint8_t bye;       /* its final counts and BYE arrived */
	uint8_t continued; /* the process went on in a later stream (exec): this is not its end */
};

struct recorder {
	struct capture_writer *writer;
	int write_error;
	int protocol_error;
	struct record_source *sources; /* by source number, grown with the sources seen */
	size_t source_cap;
	char *runtime_manifest; /* key=value lines reported by collectors (GPU runtime versions) */
	char *said[32];         /* warnings already printed */
	size_t said_count;
	int attached;           /* recording an attached target (its handshake has a deadline) */
	char *runtime_facts;    /* Python/PyTorch versions read from the target's mappings */
	int unanswered;         /* collectors that did not answer the detach in time */
	struct trig_hook *trig; /* the triggers evaluated while recording */
};

/* One recording per process; its callbacks receive it as ctx. */
static struct recorder the_recorder;

/* Prints a collector's notice (e.g. GPU tracing unavailable) once, as a warning line. */
/* The bookkeeping of source (grown on first sight; sources are numbered densely from 0). */
static struct record_source *record_source(struct recorder *rec, int source)
{
	size_t cap = rec->source_cap;
	if ((size_t)source >= cap) {
		xgrow((void **)&rec->sources, &cap, (size_t)source + 1, sizeof *rec->sources);
		memset(&rec->sources[rec->source_cap], 0, (cap - rec->source_cap) * sizeof *rec->sources);
		rec->source_cap = cap;
	}
	return &rec->sources[source];
}

static void record_notice(struct recorder *rec, int source, const void *payload)
{
	struct wire_notice n;
	memcpy(&n, payload, sizeof n);
	pid_t pid = record_source(rec, source)->pid;
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

/*
 * For tests only: CUSCOPE_TEST_REALTIME_SHIFT_NS=N (signed) moves the REALTIME half of every
 * process's clock anchor by N ns, as if this host's wall clock were N ns off, so a test can plant
 * an offset between captures and check that reading them together (cli_load_captures) honours it.
 */
static int64_t record_test_realtime_shift(void)
{
	static int parsed;
	static int64_t shift;
	if (!parsed) {
		parsed = 1;
		const char *text = getenv("CUSCOPE_TEST_REALTIME_SHIFT_NS");
		if (text && *text) {
			char *end;
			errno = 0;
			long long v = strtoll(text, &end, 10);
			if (errno || *end)
				log_warn("CUSCOPE_TEST_REALTIME_SHIFT_NS=%s is not a number of ns: ignored",
				         text);
			else
				shift = v;
		}
	}
	return shift;
}

static int record_frame(void *ctx, int source, uint32_t type, const void *payload, uint32_t length)
{
	uint8_t *shifted = NULL; /* a HELLO with a planted anchor (record_test_realtime_shift) */
	struct recorder *rec = ctx;
	if (source < 0)
		return -1;
	if (type == WIRE_FRAME_HELLO) {
		struct wire_hello hello;
		memcpy(&hello, payload, sizeof hello);
		record_source(rec, source)->pid = hello.pid;
		if (rec->attached)
			attach_handshake_done();
		int64_t shift = record_test_realtime_shift();
		if (shift && hello.anchor_real_ns) {
			hello.anchor_real_ns += (uint64_t)shift;
			shifted = xmalloc(length);
			memcpy(shifted, payload, length);
			memcpy(shifted + offsetof(struct wire_hello, anchor_real_ns), &hello.anchor_real_ns,
			       sizeof hello.anchor_real_ns);
			payload = shifted;
		}
	}
	if (type == WIRE_FRAME_BYE)
		record_source(rec, source)->bye = 1;
	if (type == WIRE_FRAME_NOTICE)
		record_notice(rec, source, payload);
	int rc =
	    rec->write_error ? 0 : capture_writer_frame(rec->writer, (uint32_t)source, type, payload, length);
	if (rec->trig)
		trig_hook_frame(rec->trig, source, type, payload, length);
	free(shifted);
	if (rc) {
		rec->write_error = rc;
		log_error("record: cannot write capture: %s", strerror(-rc));
	}
	return 0;
}

/* Writes the environment manifest (see manifest.h) into the capture. */
static void record_manifest(struct capture_writer *w, char **argv)
{
	char *text = manifest_environment(argv);
	capture_writer_manifest(w, text, strlen(text));
	free(text);
}

/*
 * After the session: records how the launched process ended (an EXIT frame in its stream) and
 * says once which processes left no final counts (their losses are unknown).
 */
static void record_ends(struct recorder *rec, const struct launch *launch)
{
	int launched_source = -1, missing = 0, first_missing = 0;
	/* Each stream on its own: only an exec continues a process in a later stream (the tap
	 * says which); a pid that a new process got again is another process. */
	for (size_t s = 0; s < rec->source_cap; s++) {
		const struct record_source *src = &rec->sources[s];
		if (!src->pid || src->continued)
			continue;
		if (!launch->attached && src->pid == launch->pid)
			launched_source = (int)s;
		if (!src->bye && missing++ == 0)
			first_missing = src->pid;
	}
	if (launched_source >= 0 && !rec->write_error) {
		struct wire_exit ex = {launch->pid, -1, 0, 0};
		if (WIFSIGNALED(launch->status))
			ex.signal = WTERMSIG(launch->status);
		else if (WIFEXITED(launch->status))
			ex.exit_code = WEXITSTATUS(launch->status);
		capture_writer_frame(rec->writer, (uint32_t)launched_source, WIRE_FRAME_EXIT, &ex, sizeof ex);
	}
	if (missing && rec->unanswered)
		log_warn("record: %d process%s (pid %d%s) did not send final counts within %d ms of the "
		         "detach (stopped?): the capture is incomplete and their losses unknown",
		         missing, missing == 1 ? "" : "es", (int)first_missing, missing > 1 ? ", ..." : "",
		         WATCH_DETACH_MS);
	else if (missing)
		log_warn("record: %d process%s (pid %d%s) ended without final counts: the capture is "
		         "incomplete and their losses unknown",
		         missing, missing == 1 ? "" : "es", (int)first_missing, missing > 1 ? ", ..." : "");
}

static void record_continued(void *ctx, int source)
{
	record_source(ctx, source)->continued = 1;
}

static void record_error(void *ctx, int source, pid_t pid, const char *message)
{
	struct recorder *rec = ctx;
	(void)source;
	rec->protocol_error = 1;
	log_error("pid %d: %s", (int)pid, message);
}

static const char *record_getenv(const char *name, void *ctx)
{
	(void)ctx;
	return getenv(name);
}

/* Expands -o's patterns (pid for %p) from our own environment into out; 0, or 2 after one line. */
static int record_expand_output(const char *pattern, pid_t pid, char *out, size_t size)
{
	char host[256] = "", cause[512];
	gethostname(host, sizeof host - 1);
	struct outpattern_vars vars = {.get = record_getenv, .pid = pid, .host = host};
	if (outpattern_expand(pattern, &vars, out, size, cause, sizeof cause) != 0) {
		log_error("record: -o %s: %s", pattern, cause);
		return CLI_EXIT_USAGE;
	}
	if (strcmp(out, "-") == 0) {
		log_error("record: -o - would mix the capture with the program's own output; name a file");
		return CLI_EXIT_USAGE;
	}
	return 0;
}

/*
 * For a name opened only once the program started (%p): its folder is checked now, so that the
 * usual mistake (a missing or unwritable folder) stops cuscope before anything runs.
 */
static int record_check_output_dir(const char *path)
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof dir, "%s", path);
	char *slash = strrchr(dir, '/');
	if (!slash)
		snprintf(dir, sizeof dir, ".");
	else if (slash == dir)
		slash[1] = '\0';
	else
		*slash = '\0';
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || faccessat(fd, ".", W_OK | X_OK, AT_EACCESS) != 0) {
		log_error("record: cannot create %s in %s: %s", path, dir, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

int cli_record(int argc, char **argv)
{
	struct cli_args args = {.launch = {.log_output = 0, .wait_viewer_ms = 3000}};
	int rc = cli_parse_options(CLI_RECORD, argc, argv, &args);
	if (rc >= 0)
		return rc;
	const char *output = args.output;
	if (!output) {
		log_error("record: -o FILE is required (see cuscope record --help)");
		return CLI_EXIT_USAGE;
	}
	if (args.first >= argc) {
		log_error("record: no command given (cuscope record -o FILE -- COMMAND ...)");
		return CLI_EXIT_USAGE;
	}
	char **command = argv + args.first;
	if (strcmp(output, "-") == 0) {
		log_error("record: -o - would mix the capture with the program's own output; name a file");
		return CLI_EXIT_USAGE;
	}
	static struct trig_hook trig;
	rc = trig_hook_init(&trig, &args.triggers, args.ui.gap_ms, NULL, 0, "record");
	if (rc)
		return rc;

	/* Patterns are expanded, and every error in them said, before anything runs; a name with the
	 * program's pid (%p) is opened once it started. */
	static char expanded[PATH_MAX];
	rc = record_expand_output(output, 1, expanded, sizeof expanded);
	if (rc)
		return rc;
	int late = outpattern_uses_pid(output);
	const char *pattern = output;
	output = expanded;
	if (!late) {
		the_recorder.writer = record_open_output("record", output);
		if (!the_recorder.writer)
			return CLI_EXIT_USAGE;
	} else if (record_check_output_dir(output) != 0) {
		return CLI_EXIT_USAGE;
	}

	struct launch launch;
	char msg[1024];
	session_sweep();
	rc = launch_start(&launch, command, &args.launch, msg, sizeof msg);
	if (rc) {
		log_error("%s", msg);
		/* Nothing was recorded: whatever output named before stays as it was. */
		if (the_recorder.writer)
			capture_writer_abandon(the_recorder.writer);
		return rc;
	}
	if (late) {
		if (record_expand_output(pattern, launch.pid, expanded, sizeof expanded) == 0)
			the_recorder.writer = record_open_output("record", output);
		if (!the_recorder.writer) {
			/* The name of its capture could not be opened: the program is stopped at once. */
			launch_signal(&launch, SIGKILL);
			while (launch_poll(&launch))
				usleep(10000);
			launch_cleanup(&launch);
			return CLI_EXIT_USAGE;
		}
	}
	record_say_partial(the_recorder.writer, output);
	return record_run(&launch, the_recorder.writer, output, command, args.duration_s, &trig);
}

struct capture_writer *record_open_output(const char *verb, const char *output)
{
	int err = 0;
	const char *cause = NULL;
	struct capture_writer *w = capture_writer_open(output, &err, &cause);
	if (w)
		return w;
	if (err == -EEXIST)
		log_error("%s: %s.partial already exists (left by an interrupted recording?); move it away "
		          "or remove it first",
		          verb, output);
	else
		log_error("%s: %s %s: %s", verb, cause, output, strerror(-err));
	return NULL;
}

void record_say_partial(struct capture_writer *w, const char *output)
{
	/* For whoever may interrupt it: where the data is until the recording completes. */
	const char *partial = capture_writer_partial_path(w);
	if (partial && isatty(STDERR_FILENO))
		log_error("recording into %s (renamed to %s when complete)", partial, output);
}

int record_run(struct launch *target, struct capture_writer *writer, const char *output, char **command,
               double duration_s, struct trig_hook *trig)
{
	struct launch launch = *target;
	the_recorder.writer = writer;
	the_recorder.trig = trig && trig_hook_on(trig) ? trig : NULL;
	the_recorder.attached = launch.attached;
	struct watch_policy policy = watch_record_policy;
	policy.duration_ns = (uint64_t)(duration_s * 1e9);
	struct tap_callbacks cb = {.ctx = &the_recorder,
	                           .frame = record_frame,
	                           .error = record_error,
	                           .continued = record_continued};
	struct watch w;
	if (watch_start(&w, &launch, &policy, &cb) != 0) {
		if (!launch.attached)
			launch_signal(&launch, SIGTERM);
		capture_writer_abandon(the_recorder.writer);
		return 1;
	}
	/* The manifest (nvidia-smi, pip take a moment) is gathered once the first collector is
	 * connected, so its start-up data is safely flowing first; collectors queue meanwhile. */
	int manifest_done = 0;
	if (launch.running)
		manifest_facts_start(launch.pid);
	for (;;) {
		int step = watch_step(&w);
		if (step & WATCH_FLUSH)
			capture_writer_flush(the_recorder.writer);
		if (!manifest_done &&
		    (w.state.connected_once || clock_mono_ns() - w.state.start_ns > 2000000000ull)) {
			record_manifest(the_recorder.writer, command);
			manifest_done = 1;
		}
		if (step & WATCH_KILLED)
			log_warn("record: pid %d ignored the stop signal; killing it", (int)launch.pid);
		if (the_recorder.trig)
			trig_hook_step(the_recorder.trig,
			               the_recorder.write_error ? NULL : the_recorder.writer);
		if (step & WATCH_LEAVE)
			break;
	}
	/* Leaving a process that runs on: its collector's counts up to now, or a bounded wait. */
	watch_finish(&w);
	/* The last firings (a hang judged at the stream's end) and their dumps, before the close. */
	if (the_recorder.trig) {
		trig_hook_finish(the_recorder.trig, the_recorder.write_error ? NULL : the_recorder.writer);
		trig_hook_fini(the_recorder.trig);
		the_recorder.trig = NULL;
	}
	the_recorder.unanswered = w.unanswered;
	the_recorder.runtime_facts = manifest_facts_take();
	if (launch.attached && (w.state.refused || !w.state.connected_once)) {
		/* Nothing was recorded: whatever output named before stays as it was. */
		capture_writer_abandon(the_recorder.writer);
		free(the_recorder.runtime_facts);
		free(the_recorder.runtime_manifest);
		if (w.state.refused)
			watch_say_refused(&w);
		else
			log_error("record: pid %d's collector never answered", (int)launch.pid);
		return watch_exit_code(&(struct watch_end){
		    .attached = 1, .refused = w.state.refused, .never_connected = !w.state.connected_once});
	}
	record_ends(&the_recorder, &launch);
	if (!manifest_done)
		record_manifest(the_recorder.writer, command);
	if (the_recorder.runtime_facts) {
		char *next =
		    xasprintf("%s%s", the_recorder.runtime_manifest ? the_recorder.runtime_manifest : "",
		              the_recorder.runtime_facts);
		free(the_recorder.runtime_manifest);
		free(the_recorder.runtime_facts);
		the_recorder.runtime_manifest = next;
		the_recorder.runtime_facts = NULL;
	}
	if (the_recorder.runtime_manifest) {
		capture_writer_manifest(the_recorder.writer, the_recorder.runtime_manifest,
		                        strlen(the_recorder.runtime_manifest));
		free(the_recorder.runtime_manifest);
	}
	char partial[PATH_MAX + 16] = "";
	if (capture_writer_partial_path(the_recorder.writer))
		snprintf(partial, sizeof partial, "%s", capture_writer_partial_path(the_recorder.writer));
	int close_rc = capture_writer_close(the_recorder.writer);
	if (close_rc && !the_recorder.write_error)
		log_error("record: cannot finish %s: %s%s%s", output, strerror(-close_rc),
		          partial[0] ? "; what was recorded is in " : "", partial);
	else if (close_rc && partial[0])
		log_error("record: what was recorded is in %s; %s is unchanged", partial, output);
	/* An attached target's session is its own (or attach.c's to remove). */
	if (!launch.attached)
		launch_cleanup(&launch);
	/* A stream that broke the protocol leaves the capture incomplete, as a failed write does. */
	struct watch_end end = {.attached = launch.attached,
	                        .output_error =
	                            the_recorder.protocol_error || the_recorder.write_error || close_rc,
	                        .target_code = launch_exit_code(&launch)};
	return watch_exit_code(&end);
}
