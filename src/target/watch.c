/*
 * The supervision step of a session (live mode, record, attach). Everything a verb used to
 * hand-roll around tap_pump lives here once: the target's end, the signals cuscope receives,
 * the stop and its SIGKILL escalation, the flush timer, when to leave and the exit status.
 */
#include "cuscope/watch.h"
#include "cuscope/clock.h"
#include "cuscope/launch.h"
#include "cuscope/log.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#define WATCH_FLUSH_NS 250000000ull  /* capture files are flushed this often */
#define WATCH_KILL_NS  5000000000ull /* a stopped target still there this long gets SIGKILL */
#define WATCH_DRAIN_NS 3000000000ull /* a recording waits this long for an ended target's data */

/*
 * The two sets of rules in use, side by side; where they differ, each keeps what its users have
 * always seen.
 * - Live mode (and attach's live view): Ctrl-C goes on to the target, each press (an attached
 *   one is left instead); SIGHUP and SIGTERM mean the terminal or the viewer is going away, not
 *   the target's wish, so it is left running. The view stays after the target ends until the
 *   user quits (a stop the user asked for leaves at once). Leaving asks the collectors of every
 *   process that runs on for their counts.
 * - Record (and attach --record): SIGINT, SIGTERM and SIGHUP stop a launched target once, then
 *   SIGKILL if it lingers; an attached one is never signalled, its recording just ends, as it
 *   does when all its streams close. The recording ends with its target once its streams closed
 *   or after WATCH_DRAIN_NS, and reads the final streams exiting collectors left behind; only an
 *   attached target's collectors are asked for final counts (a launched one has ended).
 */
const struct watch_policy watch_live_policy = {
    .rules = {[WATCH_SIGINT] = WATCH_SIG_FORWARD,
              [WATCH_SIGTERM] = WATCH_SIG_DETACH,
              [WATCH_SIGHUP] = WATCH_SIG_DETACH},
    .pump_ms = 15,
    .wake_fd = STDIN_FILENO,
    .flush_ns = WATCH_FLUSH_NS,
    .kill_after_ns = WATCH_KILL_NS,
    .detach_launched = 1,
    .verb = "",
};

const struct watch_policy watch_record_policy = {
    .rules =
        {[WATCH_SIGINT] = WATCH_SIG_STOP, [WATCH_SIGTERM] = WATCH_SIG_STOP, [WATCH_SIGHUP] = WATCH_SIG_STOP},
    .pump_ms = 20,
    .wake_fd = -1,
    .flush_ns = WATCH_FLUSH_NS,
    .kill_after_ns = WATCH_KILL_NS,
    .leave_on_exit = 1,
    .drain_ns = WATCH_DRAIN_NS,
    .leave_when_streams_end = 1,
    .finish_streams = 1,
    .verb = "record",
};

static const int watch_signals[WATCH_SIGNALS] = {
    [WATCH_SIGINT] = SIGINT, [WATCH_SIGTERM] = SIGTERM, [WATCH_SIGHUP] = SIGHUP};

/* Signals caught so far, by index (a handler may only count). */
static volatile sig_atomic_t watch_caught[WATCH_SIGNALS];

static void watch_on_caught(int sig)
{
	for (int i = 0; i < WATCH_SIGNALS; i++)
		if (watch_signals[i] == sig)
			watch_caught[i]++;
}

struct watch_verdict watch_on_signal(enum watch_signal_rule rule, int sig, const struct watch_state *s)
{
	struct watch_verdict v = {WATCH_STAY, 0, 0};
	switch (rule) {
	case WATCH_SIG_FORWARD:
		/* An attached process is not ours to interrupt: Ctrl-C detaches from it instead. */
		if (s->attached)
			v.leave = WATCH_LEAVE_DETACHED;
		else
			v.send = sig;
		break;
	case WATCH_SIG_STOP:
		/* Once the target ended its streams drain; a second stop adds nothing (the escalation
		 * is already timed). An attached target is never signalled: the session just ends. */
		if (!s->alive || s->stop_sent)
			break;
		if (s->attached) {
			v.leave = WATCH_LEAVE_DETACHED;
		} else {
			/* A hangup is ours (the terminal went), not the target's: it gets a plain stop. */
			v.send = sig == SIGHUP ? SIGTERM : sig;
			v.stop = 1;
		}
		break;
	case WATCH_SIG_DETACH:
		v.leave = WATCH_LEAVE_DETACHED;
		break;
	}
	return v;
}

struct watch_verdict watch_decide(const struct watch_policy *p, const struct watch_state *s, uint64_t now_ns)
{
	struct watch_verdict v = {WATCH_STAY, 0, 0};
	if (s->refused) {
		v.leave = WATCH_LEAVE_REFUSED;
		return v;
	}
	if (!s->alive) {
		/* A stop the user or a signal asked for is over once the target is gone; otherwise
		 * only a verb that ends with its target leaves (the live view stays until quit). */
		if ((p->leave_on_exit || s->stop_sent) &&
		    (s->connections == 0 || now_ns - s->exited_ns >= p->drain_ns))
			v.leave = WATCH_LEAVE_EXITED;
		return v;
	}
	if (p->duration_ns && !s->stop_sent && now_ns - s->start_ns >= p->duration_ns) {
		if (s->attached) {
			v.leave = WATCH_LEAVE_DETACHED;
		} else {
			v.send = SIGTERM;
			v.stop = 1;
		}
		return v;
	}
	if (p->leave_when_streams_end && s->attached && s->connected_once && s->connections == 0) {
		v.leave =
		    WATCH_LEAVE_STREAMS_ENDED; /* its collector went away (detached elsewhere or exiting) */
		return v;
	}
	if (s->stop_sent && now_ns - s->stop_sent_ns > p->kill_after_ns) {
		v.send = SIGKILL;
		v.stop = 1; /* and again after another period, should even that not end it */
	}
	return v;
}

/*
 * Where the verbs' rules differed, each keeps what its users see: a recording whose capture is
 * incomplete fails whatever the target did (the file is what was asked for), while the live
 * view showed what arrived, so a bad stream only turns a success into WATCH_EXIT_BAD_INPUT.
 * An attached target's own status is not ours to pass on: 0 once we leave it.
 */
int watch_exit_code(const struct watch_end *e)
{
	if (e->attached && (e->refused || e->never_connected))
		return 1;
	if (e->output_error)
		return e->attached ? 1 : WATCH_EXIT_BAD_INPUT;
	int code = e->attached || e->runs_on ? 0 : e->target_code;
	if (e->stream_error && code == 0)
		return WATCH_EXIT_BAD_INPUT;
	return code;
}

static int watch_tap_frame(void *ctx, int source, uint32_t type, const void *payload, uint32_t length)
{
	struct watch *w = ctx;
	return w->verb.frame(w->verb.ctx, source, type, payload, length);
}

static void watch_tap_closed(void *ctx, int source)
{
	struct watch *w = ctx;
	if (w->verb.closed)
		w->verb.closed(w->verb.ctx, source);
}

static void watch_tap_error(void *ctx, int source, pid_t pid, const char *message)
{
	struct watch *w = ctx;
	if (w->verb.error)
		w->verb.error(w->verb.ctx, source, pid, message);
}

static void watch_tap_refused(void *ctx, pid_t pid)
{
	struct watch *w = ctx;
	if (w->state.attached && pid == w->target->pid)
		w->state.refused = 1;
	if (w->verb.refused)
		w->verb.refused(w->verb.ctx, pid);
}

static void watch_tap_continued(void *ctx, int source)
{
	struct watch *w = ctx;
	if (w->verb.continued)
		w->verb.continued(w->verb.ctx, source);
}

int watch_start(struct watch *w, struct launch *target, const struct watch_policy *policy,
                const struct tap_callbacks *callbacks)
{
	memset(w, 0, sizeof *w);
	w->target = target;
	w->policy = policy;
	w->verb = *callbacks;
	w->state.attached = target->attached;
	w->state.alive = target->running;
	w->state.start_ns = clock_mono_ns();
	w->last_flush_ns = w->state.start_ns;
	struct tap_callbacks cb = {.ctx = w,
	                           .frame = watch_tap_frame,
	                           .closed = watch_tap_closed,
	                           .error = watch_tap_error,
	                           .refused = watch_tap_refused,
	                           .continued = watch_tap_continued};
	int err = 0;
	w->tap =
	    tap_new_owned(target->session_dir, target->attached ? target->session_uid : getuid(), &cb, &err);
	if (!w->tap) {
		log_error("%s%ssession directory %s is not a private directory of the target's user: %s",
		          policy->verb, *policy->verb ? ": " : "", target->session_dir, strerror(-err));
		return err ? err : -EPERM;
	}
	/* Counted from here on: what came before this session is not its business. */
	for (int i = 0; i < WATCH_SIGNALS; i++)
		w->handled[i] = (unsigned)watch_caught[i];
	struct sigaction sa = {0};
	sa.sa_handler = watch_on_caught; /* no SA_RESTART: a wait returns early to act on it */
	for (int i = 0; i < WATCH_SIGNALS; i++)
		sigaction(watch_signals[i], &sa, NULL);
	return 0;
}

/* Carries out a verdict: the signal, then the leave (the first reason found stands). */
static int watch_apply(struct watch *w, struct watch_verdict v, int sig, uint64_t now)
{
	int flags = 0;
	if (v.send) {
		launch_signal(w->target, v.send);
		if (v.send == SIGKILL)
			flags |= WATCH_KILLED;
	}
	if (v.stop) {
		w->state.stop_sent = 1;
		w->state.stop_sent_ns = now;
	}
	if (v.leave && !w->leave) {
		w->leave = v.leave;
		w->leave_signal = sig;
	}
	return flags;
}

int watch_step(struct watch *w)
{
	const struct watch_policy *p = w->policy;
	struct watch_state *s = &w->state;
	int flags = tap_pump(w->tap, p->pump_ms, p->wake_fd) ? WATCH_WAKE : 0;
	uint64_t now = clock_mono_ns();
	s->connections = tap_connection_count(w->tap);
	s->connected_once |= s->connections > 0;
	if (s->alive && !launch_poll(w->target)) {
		s->alive = 0;
		s->exited_ns = now;
		flags |= WATCH_EXITED;
	}
	for (int i = 0; i < WATCH_SIGNALS; i++) {
		while (w->handled[i] != (unsigned)watch_caught[i]) {
			w->handled[i]++;
			flags |= watch_apply(w, watch_on_signal(p->rules[i], watch_signals[i], s),
			                     watch_signals[i], now);
		}
	}
	flags |= watch_apply(w, watch_decide(p, s, now), 0, now);
	if (now - w->last_flush_ns >= p->flush_ns) {
		w->last_flush_ns = now;
		flags |= WATCH_FLUSH;
	}
	return w->leave ? flags | WATCH_LEAVE : flags;
}

void watch_forward(struct watch *w, int sig)
{
	watch_apply(w, watch_on_signal(WATCH_SIG_FORWARD, sig, &w->state), 0, clock_mono_ns());
}

void watch_stop(struct watch *w, int sig)
{
	/* The user's own choice: even an attached target is asked (its user said so). */
	struct watch_verdict v = {WATCH_STAY, sig, 1};
	if (w->state.alive && !w->state.stop_sent)
		watch_apply(w, v, 0, clock_mono_ns());
}

void watch_leave(struct watch *w, enum watch_leave why)
{
	if (!w->leave)
		w->leave = why;
}

void watch_finish(struct watch *w)
{
	if (!w->tap)
		return;
	/* Collectors of processes that run on send their counts up to now before we close (a
	 * bounded wait; those exiting send their real end instead). */
	if (tap_connection_count(w->tap) > 0 && !w->state.refused &&
	    (w->state.attached || w->policy->detach_launched))
		w->unanswered = tap_detach(w->tap, WATCH_DETACH_MS);
	if (w->policy->finish_streams)
		tap_finish(w->tap);
	tap_free(w->tap);
	w->tap = NULL;
}

void watch_say_refused(const struct watch *w)
{
	pid_t pid = w->target->pid;
	if (!launch_poll(w->target))
		log_error("attach: pid %d exited during attach", (int)pid);
	else
		log_error(
		    "attach: pid %d already has a viewer attached (one at a time); detach that one first",
		    (int)pid);
}
