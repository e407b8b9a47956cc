/*
 * `cuscope run -- CMD`: an armed launch with no viewer. In the foreground (the form for job
 * scripts and `srun`, where a command that returns at once ends the step) cuscope waits for CMD,
 * passes its signals on and returns its exit code; `--detached` returns at once. Either way
 * `cuscope attach PID` shows the recent past while CMD runs.
 */
#include "cuscope/clock.h"
#include "cuscope/cli.h"
#include "cuscope/launch.h"
#include "cuscope/log.h"
#include "cuscope/session.h"
#include "cuscope/tap.h"
#include "cuscope/watch.h"
#include "livekeep.h"
#include "trighook.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static volatile sig_atomic_t run_caught_int, run_caught_stop;

static void run_on_signal(int sig)
{
	if (sig == SIGINT)
		run_caught_int++;
	else
		run_caught_stop++;
}

/*
 * Waits for the launched target: each SIGINT goes on to its process group (a Ctrl-C in a
 * terminal, where the target sits in a group of its own); SIGTERM and SIGHUP go on as SIGTERM (a
 * job step's cancellation), and a target still there after the same grace as record's gets
 * SIGKILL. Returns the target's exit code (128 + signal when a signal ended it).
 */
static int run_wait(struct launch *launch)
{
	struct sigaction sa, old[3];
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = run_on_signal;
	sigemptyset(&sa.sa_mask);
	static const int caught[3] = {SIGINT, SIGTERM, SIGHUP};
	for (int i = 0; i < 3; i++)
		sigaction(caught[i], &sa, &old[i]);
	sig_atomic_t ints_seen = 0, stops_seen = 0;
	uint64_t stop_ns = 0;
	int killed = 0;
	while (launch_poll(launch)) {
		if (run_caught_int != ints_seen) {
			ints_seen = run_caught_int;
			launch_signal(launch, SIGINT);
		}
		if (run_caught_stop != stops_seen) {
			stops_seen = run_caught_stop;
			launch_signal(launch, SIGTERM);
			if (!stop_ns)
				stop_ns = clock_mono_ns();
		}
		if (stop_ns && !killed && clock_mono_ns() - stop_ns > watch_record_policy.kill_after_ns) {
			log_error("run: pid %d still running %.0f s after SIGTERM; sending SIGKILL",
			          (int)launch->pid, (double)watch_record_policy.kill_after_ns / 1e9);
			launch_signal(launch, SIGKILL);
			killed = 1;
		}
		/* A signal cuts the sleep short; 50 ms bounds how late an exit is noticed. */
		struct timespec pause = {0, 50 * 1000 * 1000};
		nanosleep(&pause, NULL);
	}
	for (int i = 0; i < 3; i++)
		sigaction(caught[i], &old[i], NULL);
	return launch_exit_code(launch);
}

/* run --trigger: the frames of the session go to the dump source file and the triggers. */
struct run_watch {
	struct live_keep keep; /* the file dumps are cut from (bounded by --disk-mb's default) */
	struct trig_hook *trig;
};

static int run_frame(void *ctx, int source, uint32_t type, const void *payload, uint32_t length)
{
	struct run_watch *rw = ctx;
	if (source < 0)
		return -1;
	live_keep_frame(&rw->keep, source, type, payload, length);
	trig_hook_frame(rw->trig, source, type, payload, length);
	return 0;
}

static void run_error(void *ctx, int source, pid_t pid, const char *message)
{
	(void)ctx;
	(void)source;
	log_error("pid %d: %s", (int)pid, message);
}

/*
 * Foreground run with triggers: a headless viewer stays attached (the collector never evaluates
 * triggers), evaluates them over its own store and writes each firing's window into --dump-dir.
 * Signals go to the target as record's do; returns the target's exit code.
 */
static int run_watch(struct launch *launch, struct trig_hook *trig)
{
	static struct run_watch rw;
	rw.trig = trig;
	/* In our own session directory: the target's could hold links its user planted. */
	live_keep_open(&rw.keep, launch->session_dir, 0);
	if (!rw.keep.writer)
		log_warn("run: cannot create the capture file dumps are cut from: firings are only logged");
	struct tap_callbacks cb = {.ctx = &rw, .frame = run_frame, .error = run_error};
	struct watch w;
	struct watch_policy policy = watch_record_policy;
	policy.verb = "run";
	if (watch_start(&w, launch, &policy, &cb) != 0) {
		live_keep_close(&rw.keep);
		return run_wait(launch);
	}
	for (;;) {
		int step = watch_step(&w);
		if (step & WATCH_FLUSH) {
			unsigned rotations = rw.keep.rotations;
			live_keep_flush(&rw.keep, trig->store, NULL);
			if (rw.keep.rotations != rotations)
				trig_hook_file_restarted(trig);
		}
		trig_hook_step(trig, rw.keep.writer);
		if (step & WATCH_KILLED)
			log_warn("run: pid %d ignored the stop signal; killing it", (int)launch->pid);
		if (step & WATCH_LEAVE)
			break;
	}
	watch_finish(&w);
	trig_hook_finish(trig, rw.keep.writer);
	trig_hook_fini(trig);
	live_keep_close(&rw.keep);
	while (launch_poll(launch)) {
		struct timespec pause = {0, 10 * 1000 * 1000};
		nanosleep(&pause, NULL);
	}
	return launch_exit_code(launch);
}

int cli_run(int argc, char **argv)
{
	struct cli_args args = {.launch = {.log_output = 1, .wait_viewer_ms = 0}};
	int rc = cli_parse_options(CLI_RUN, argc, argv, &args);
	if (rc >= 0)
		return rc;
	if (args.first >= argc) {
		log_error("run: no command given (cuscope run [--detached] -- COMMAND ...)");
		return CLI_EXIT_USAGE;
	}
	if (args.detached && args.triggers.count) {
		log_error("run: --trigger needs the foreground (a cuscope process stays attached to evaluate "
		          "them); drop --detached");
		return CLI_EXIT_USAGE;
	}
	static struct trig_hook trig;
	rc = trig_hook_init(&trig, &args.triggers, args.ui.gap_ms, NULL, 0, "run");
	if (rc)
		return rc;
	if (args.triggers.count && !args.triggers.dump_dir)
		log_warn("run: no --dump-dir: firings are only logged");
	/* In the foreground the output stays on cuscope's own stdout and stderr (the job's log). */
	if (!args.detached)
		args.launch.log_output = 0;
	struct launch launch;
	char msg[1024];
	session_sweep();
	rc = launch_start(&launch, argv + args.first, &args.launch, msg, sizeof msg);
	if (rc) {
		log_error("%s", msg);
		return rc;
	}
	if (args.detached) {
		printf("pid %d armed; output in %s\nwatch it with: cuscope attach %d\n", (int)launch.pid,
		       launch.log_path, (int)launch.pid);
		return 0;
	}
	int code;
	if (trig_hook_on(&trig)) {
		log_error("pid %d armed; %zu trigger%s evaluated here", (int)launch.pid, args.triggers.count,
		          args.triggers.count == 1 ? "" : "s");
		code = run_watch(&launch, &trig);
	} else {
		log_error("pid %d armed; watch it with: cuscope attach %d", (int)launch.pid, (int)launch.pid);
		code = run_wait(&launch);
	}
	launch_cleanup(&launch);
	return code;
}
