/* Live mode: launch the target, follow its session, feed the store and drive the ncurses UI. */
#include "cuscope/clock.h"
#include "cuscope/cli.h"
#include "cuscope/launch.h"
#include "cuscope/log.h"
#include "cuscope/session.h"
#include "cuscope/store.h"
#include "cuscope/trigger.h"
#include "cuscope/tap.h"
#include "cuscope/u64.h"
#include "cuscope/ui.h"
#include "cuscope/watch.h"
#include "cuscope/wire.h"
#include "cuscope/xalloc.h"
#include "livekeep.h"
#include "trighook.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LIVE_FRAME_NS 33000000ull /* at most ~30 frames per second */

/*
 * Event-to-screen latency (CUSCOPE_LATENCY=1): for GPU records, the time from the GPU end
 * timestamp (CLOCK_MONOTONIC, same clock as ours) to the end of the first frame drawn after the
 * record was ingested. Reported on stderr at exit.
 */
#define LATENCY_PENDING_MAX 4096
#define LATENCY_SAMPLES_MAX 200000

struct latency {
	int enabled;
	uint64_t pending[LATENCY_PENDING_MAX]; /* end_ns of records ingested since the last frame */
	size_t pending_count;
	uint64_t *samples; /* ns */
	size_t sample_count;
};

struct live {
	struct store *store;
	struct ui *ui;
	int protocol_error;
	struct latency latency;
	struct live_keep keep;  /* the live capture file `d` dumps are cut from */
	struct trig_hook *trig; /* --trigger: evaluated over the store, firings pause the view */
};

static void latency_note_frame(struct latency *lat, uint32_t type, const void *payload, uint32_t length)
{
	if (!lat->enabled || type != WIRE_FRAME_GPU)
		return;
	const char *bytes = payload;
	for (size_t i = 0;
	     i < length / sizeof(struct wire_gpu_event) && lat->pending_count < LATENCY_PENDING_MAX; i++) {
		struct wire_gpu_event ev;
		memcpy(&ev, bytes + i * sizeof ev, sizeof ev);
		if ((ev.kind == WIRE_GPU_KERNEL || ev.kind == WIRE_GPU_MEMCPY ||
		     ev.kind == WIRE_GPU_MEMSET) &&
		    ev.end_ns)
			lat->pending[lat->pending_count++] = ev.end_ns;
	}
}

static void latency_frame_drawn(struct latency *lat, uint64_t drawn_ns)
{
	for (size_t i = 0; i < lat->pending_count && lat->sample_count < LATENCY_SAMPLES_MAX; i++)
		if (drawn_ns > lat->pending[i])
			lat->samples[lat->sample_count++] = drawn_ns - lat->pending[i];
	lat->pending_count = 0;
}

static void latency_report(struct latency *lat)
{
	if (!lat->enabled)
		return;
	if (!lat->sample_count) {
		log_error("latency: no GPU records were drawn");
		return;
	}
	u64_sort(lat->samples, lat->sample_count);
	size_t n = lat->sample_count;
	log_error("latency: GPU end -> drawn: p50 %.1f ms  p99 %.1f ms  max %.1f ms  (%zu records)",
	          (double)u64_percentile(lat->samples, n, 0.50) / 1e6,
	          (double)u64_percentile(lat->samples, n, 0.99) / 1e6, (double)lat->samples[n - 1] / 1e6, n);
}

static int live_frame(void *ctx, int source, uint32_t type, const void *payload, uint32_t length)
{
	struct live *lv = ctx;
	const char *cause = NULL;
	latency_note_frame(&lv->latency, type, payload, length);
	live_keep_frame(&lv->keep, source, type, payload, length);
	if (lv->trig)
		trig_hook_frame(lv->trig, source, type, payload, length);
	if (store_feed(lv->store, source, type, payload, length, &cause) != 0) {
		char line[256];
		snprintf(line, sizeof line, "dropped a connection: %s", cause);
		if (lv->ui)
			ui_message(lv->ui, line);
		return -1;
	}
	return 0;
}

static void live_closed(void *ctx, int source)
{
	struct live *lv = ctx;
	store_source_closed(lv->store, source);
}

static void live_error(void *ctx, int source, pid_t pid, const char *message)
{
	struct live *lv = ctx;
	(void)source;
	lv->protocol_error = 1;
	log_error("pid %d: %s", (int)pid, message);
}

/*
 * The command as the status line shows it: the program's base name and its arguments, so a long
 * install path never pushes the pid, the LIVE mark and the counters off the line.
 */
static char *live_join(char **argv)
{
	char *out = xstrdup("");
	for (char **a = argv; *a; a++) {
		const char *word = *a;
		if (a == argv && strrchr(word, '/') && strrchr(word, '/')[1])
			word = strrchr(word, '/') + 1;
		char *next = xasprintf("%s%s%s", out, a == argv ? "" : " ", word);
		free(out);
		out = next;
	}
	return out;
}

int cli_live(int argc, char **argv)
{
	struct cli_args args = {.launch = {.log_output = 1, .wait_viewer_ms = 3000},
	                        .ui = {.window_s = 10.0}};
	int rc = cli_parse_options(CLI_LIVE, argc, argv, &args);
	if (rc >= 0)
		return rc;
	if (args.first >= argc) {
		log_error("no command given (usage: cuscope [OPTIONS] -- COMMAND [ARGS...]; cuscope --help)");
		return CLI_EXIT_USAGE;
	}
	char **command = argv + args.first;
	if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
		log_error("live mode needs a terminal; use `cuscope record -o FILE -- COMMAND` instead");
		return CLI_EXIT_USAGE;
	}

	static struct trig_hook trig;
	rc = trig_hook_init(&trig, &args.triggers, args.ui.gap_ms, NULL, args.ui.memory_mb, "");
	if (rc)
		return rc;

	struct launch launch;
	char msg[1024];
	session_sweep();
	rc = launch_start(&launch, command, &args.launch, msg, sizeof msg);
	if (rc) {
		log_error("%s", msg);
		return rc;
	}

	char *command_line = live_join(command);
	rc = live_run(&launch, command_line, &args.ui, &trig);
	free(command_line);
	return rc;
}

/* The store (bounded by --memory-mb) and the live capture file dumps are cut from. */
static void live_open(struct live *lv, const struct launch *launch, const struct ui_options *ui_opts)
{
	lv->store = store_new();
	store_set_memory_limit(
	    lv->store, (size_t)(ui_opts->memory_mb ? ui_opts->memory_mb : UI_MEMORY_MB_DEFAULT) << 20);
	/* The keep file is ours: in our own session, never in an attached target's (its user could
	 * plant links there), created 0600 without following any. */
	live_keep_open(&lv->keep, launch->attached ? NULL : launch->session_dir, ui_opts->disk_mb);
	const char *latency_env = getenv("CUSCOPE_LATENCY");
	lv->latency.enabled = latency_env && *latency_env == '1';
	if (lv->latency.enabled)
		lv->latency.samples = xcalloc(LATENCY_SAMPLES_MAX, sizeof *lv->latency.samples);
}

/* Frees what live_open made (the keep file is removed). */
static void live_close(struct live *lv)
{
	live_keep_close(&lv->keep);
	free(lv->latency.samples);
	lv->latency.samples = NULL;
	store_free(lv->store);
	lv->store = NULL;
}

/* New firings of the triggers go to the view (the first one pauses it there). */
static void live_triggers(struct live *lv)
{
	size_t before = trig_hook_firing_count(lv->trig);
	trig_hook_step(lv->trig, lv->keep.writer);
	for (size_t i = before; i < trig_hook_firing_count(lv->trig); i++) {
		const struct trigger_firing *f = trig_hook_firing(lv->trig, i);
		ui_trigger_fired(lv->ui, f->time_ns, trig_hook_expr(lv->trig, f));
	}
}

/* The view's loop: a watch step, the user's keys, dumps, the keep file, a frame; until leaving. */
static void live_loop(struct live *lv, struct watch *w, struct launch *launch, struct ui_status *status)
{
	char log_note[256] = "";
	uint64_t rate_start = clock_mono_ns(), rate_events = 0, last_draw = 0;
	ui_draw(lv->ui, status, 1);
	for (;;) {
		int step = watch_step(w);
		uint64_t now = clock_mono_ns();
		if (step & WATCH_EXITED) {
			status->target_alive = 0;
			status->exit_code = launch_exit_code(launch);
			status->exit_signal = status->exit_code > 128 ? status->exit_code - 128 : 0;
			store_process_set_exit(lv->store, launch->pid, status->exit_code);
		}
		if (step & WATCH_LEAVE)
			return;
		int actions = ui_handle_input(lv->ui, status);
		if (actions & UI_ACTION_INTERRUPT) {
			watch_forward(w, SIGINT);
			if (w->leave)
				return;
		}
		if (actions & UI_ACTION_DETACH) {
			watch_leave(w, WATCH_LEAVE_DETACHED);
			return;
		}
		if ((actions & UI_ACTION_STOP) && status->target_alive && !w->state.stop_sent) {
			watch_stop(w, SIGTERM);
			ui_message(lv->ui, "stopping the target (SIGTERM to its process group)...");
		}
		if ((actions & UI_ACTION_QUIT) && !status->target_alive) {
			watch_leave(w, WATCH_LEAVE_EXITED);
			return;
		}
		if (now - rate_start >= 1000000000ull) {
			uint64_t events = store_event_count(lv->store);
			status->events_per_s =
			    (double)(events - rate_events) * 1e9 / (double)(now - rate_start);
			rate_events = events;
			rate_start = now;
		}
		if (lv->trig)
			live_triggers(lv);
		live_keep_dump(&lv->keep, lv->ui, now);
		if (step & WATCH_FLUSH) {
			unsigned rotations = lv->keep.rotations;
			live_keep_flush(&lv->keep, lv->store, lv->ui);
			if (lv->trig && lv->keep.rotations != rotations)
				trig_hook_file_restarted(lv->trig);
		}
		if (now - last_draw >= LIVE_FRAME_NS) {
			status->now_ns = now;
			launch_log_note(launch, log_note, sizeof log_note);
			status->log_note = log_note[0] ? log_note : NULL;
			ui_draw(lv->ui, status, 0);
			last_draw = now;
			latency_frame_drawn(&lv->latency, clock_mono_ns());
		}
	}
}

/* After the view closed: says how the target was left, replays its output; the exit status. */
static int live_end(struct live *lv, struct watch *w, struct launch *launch)
{
	/* A launched target left running by a detach (a signal or the user) runs on. On a hangup
	 * the terminal is gone: nothing is said or replayed. */
	int runs_on = w->leave == WATCH_LEAVE_DETACHED && w->state.alive;
	int hangup = w->leave_signal == SIGHUP;
	struct watch_end end = {.attached = launch->attached,
	                        .refused = w->state.refused,
	                        .runs_on = runs_on,
	                        .stream_error = lv->protocol_error};
	if (w->state.refused) {
		watch_say_refused(w);
	} else if (launch->attached) {
		/* Attach: our side ends here; the collector stops when it sees the viewer go. Its
		 * session is its own (or attach.c's to remove). */
		if (!hangup && w->state.alive)
			log_error("detached from pid %d; it runs on%s", (int)launch->pid,
			          w->unanswered ? " (its collector did not answer the detach in time)" : "");
	} else if (runs_on) {
		if (!hangup)
			log_error("detached; pid %d runs on, its output goes to %s", (int)launch->pid,
			          launch->log_path);
	} else {
		if (!hangup) {
			fflush(stdout);
			launch_replay_log(launch, STDOUT_FILENO);
		}
		launch_cleanup(launch);
		end.target_code = launch_exit_code(launch);
	}
	latency_report(&lv->latency);
	return watch_exit_code(&end);
}

int live_run(struct launch *target, const char *command_line, const struct ui_options *ui_opts,
             struct trig_hook *trig)
{
	struct launch launch = *target;
	static struct live lv;
	live_open(&lv, &launch, ui_opts);
	if (trig && trig_hook_on(trig)) {
		trig_hook_share_store(trig, lv.store);
		lv.trig = trig;
	}
	struct tap_callbacks cb = {
	    .ctx = &lv, .frame = live_frame, .closed = live_closed, .error = live_error};
	struct watch w;
	if (watch_start(&w, &launch, &watch_live_policy, &cb) != 0) {
		live_close(&lv);
		return 1;
	}
	const char *cause = NULL;
	/* The UI shows what is logged while it owns the screen (its own log sink). */
	lv.ui = ui_new(lv.store, ui_opts, &cause);
	if (!lv.ui) {
		log_error("%s; pid %d keeps running%s%s", cause ? cause : "cannot start the terminal UI",
		          (int)launch.pid, launch.attached ? "" : ", output in ",
		          launch.attached ? "" : launch.log_path);
		watch_finish(&w);
		live_close(&lv);
		return 1;
	}
	cli_restore_on_crash();
	signal(SIGPIPE, SIG_IGN);
	struct ui_status status = {
	    .command = command_line,
	    .pid = launch.pid,
	    .live = 1,
	    .target_alive = 1,
	    .log_path = launch.attached ? NULL : launch.log_path,
	};
	live_loop(&lv, &w, &launch, &status);
	watch_finish(&w);
	/* On a hangup the terminal is gone: restoring it would only block or fail. */
	if (w.leave_signal != SIGHUP)
		ui_free(lv.ui);
	log_set_sink(NULL);
	/* A dump still running is finished first: nothing captured is lost. */
	if (lv.trig) {
		trig_hook_finish(lv.trig, lv.keep.writer);
		trig_hook_fini(lv.trig);
		lv.trig = NULL;
	}
	live_keep_finish(&lv.keep);
	live_keep_close(&lv.keep);
	int rc = live_end(&lv, &w, &launch);
	live_close(&lv);
	return rc;
}
