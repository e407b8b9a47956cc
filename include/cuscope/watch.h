/*
 * One supervision step shared by live mode, record and attach: pump the session's streams,
 * notice the target's end, act on SIGINT/SIGTERM/SIGHUP as the verb's rules say, escalate an
 * ignored stop to SIGKILL, time flushes, say when the session is over, and the exit status that
 * follows. The verb keeps what is its own (the UI, the capture file); nothing here draws.
 */
#ifndef CUSCOPE_WATCH_H
#define CUSCOPE_WATCH_H

#include <stdint.h>
#include <sys/types.h>

#include "cuscope/tap.h"

struct launch;

/* What a signal cuscope receives does to the session. */
enum watch_signal_rule {
	WATCH_SIG_FORWARD, /* each one goes on to the target's process group (live: Ctrl-C) */
	WATCH_SIG_STOP,    /* the first stops the target (SIGHUP as SIGTERM), SIGKILL if it lingers */
	WATCH_SIG_DETACH,  /* leave; the target runs on */
};

/* The signals a session catches, indexing watch_policy.rules. */
enum { WATCH_SIGINT, WATCH_SIGTERM, WATCH_SIGHUP, WATCH_SIGNALS };

/* A verb's rules (the two in use are below). */
struct watch_policy {
	enum watch_signal_rule rules[WATCH_SIGNALS];
	int pump_ms;                /* longest wait for data in one step */
	int wake_fd;                /* also ends a step's wait when readable (the terminal), -1 = none */
	uint64_t flush_ns;          /* WATCH_FLUSH at most this often */
	uint64_t kill_after_ns;     /* a stopped target still there this long gets SIGKILL (then again) */
	int leave_on_exit;          /* leave once the target ended (else only after a stop) */
	uint64_t drain_ns;          /* after that end, wait at most this long for its streams to close */
	uint64_t duration_ns;       /* stop the target (leave an attached one) after this long; 0 = never */
	int leave_when_streams_end; /* attached: leave once every stream that was open has closed */
	int detach_launched;        /* leaving: ask a launched target's collectors for final counts too */
	int finish_streams;         /* leaving: read the final streams exiting collectors left behind */
	const char *verb;           /* prefix of messages ("record"), "" for none */
};

/* Live mode and attach's live view; record and attach --record (set duration_ns in a copy). */
extern const struct watch_policy watch_live_policy;
extern const struct watch_policy watch_record_policy;

/* Why a session ended. */
enum watch_leave {
	WATCH_STAY = 0,
	WATCH_LEAVE_EXITED,       /* the target ended (and its streams, or the drain time) */
	WATCH_LEAVE_DETACHED,     /* a signal or the user left; the target runs on if it still can */
	WATCH_LEAVE_REFUSED,      /* the attached target's collector has another viewer */
	WATCH_LEAVE_STREAMS_ENDED /* every stream of the attached target closed */
};

/* What the decisions below look at: the session as a step sees it. */
struct watch_state {
	int attached;          /* the target is not our child: it is never signalled on our own account */
	int alive;             /* the target still runs */
	int refused;           /* the attached target's collector turned us away */
	int stop_sent;         /* a stop (or a kill) was sent */
	int connections;       /* streams open now */
	int connected_once;    /* a stream was open at some point */
	uint64_t start_ns;     /* CLOCK_MONOTONIC, when the session started */
	uint64_t exited_ns;    /* when the target's end was seen (when !alive) */
	uint64_t stop_sent_ns; /* when the last stop or kill was sent */
};

/* What to do now: leave, and/or send a signal (a stop arms the SIGKILL escalation). */
struct watch_verdict {
	enum watch_leave leave;
	int send; /* signal for the target, 0 = none */
	int stop; /* send is a stop: kill_after_ns starts now */
};

/* The timed decisions of one step (pure): leaving on exit, refusal or the streams' end, the
 * duration's stop and the SIGKILL escalation. */
struct watch_verdict watch_decide(const struct watch_policy *p, const struct watch_state *s, uint64_t now_ns);
/* What one caught signal does under rule (pure). */
struct watch_verdict watch_on_signal(enum watch_signal_rule rule, int sig, const struct watch_state *s);

/* How a session ended, for its exit status. */
struct watch_end {
	int attached;
	int refused;         /* the attached target's collector turned us away */
	int never_connected; /* a recording of an attached target got no stream at all */
	int runs_on;         /* we left a launched target running (live: detach) */
	int target_code;     /* the target's exit code or 128+signal (launch_exit_code) */
	int stream_error;    /* a stream broke the protocol; what arrived was shown (live) */
	int output_error;    /* what was asked for was not written whole (record: the capture) */
};

/* Leaving: how long collectors that run on may take to send their final counts. */
#define WATCH_DETACH_MS 1000

#define WATCH_EXIT_BAD_INPUT 2 /* as CLI_EXIT_USAGE: unreadable or foreign input */

/* The exit status cuscope gives for a session (pure). */
int watch_exit_code(const struct watch_end *e);

/* Flags of watch_step. */
enum {
	WATCH_WAKE = 1 << 0,   /* policy.wake_fd is readable */
	WATCH_EXITED = 1 << 1, /* the target ended in this step (its status is in the launch) */
	WATCH_FLUSH = 1 << 2,  /* a flush period passed */
	WATCH_KILLED = 1 << 3, /* the target outlived its stop: SIGKILL was sent */
	WATCH_LEAVE = 1 << 4,  /* the session is over: watch.leave says why */
};

struct watch {
	struct launch *target;
	const struct watch_policy *policy;
	struct tap *tap;
	struct tap_callbacks verb; /* the verb's callbacks, called through the watch's */
	struct watch_state state;
	enum watch_leave leave;
	int leave_signal; /* the signal that made the session leave, 0 = none */
	uint64_t last_flush_ns;
	unsigned handled[WATCH_SIGNALS]; /* caught signals acted on */
	int unanswered;                  /* after watch_finish: collectors that missed the detach */
};

/*
 * Follows target's session (policy and target outlive w) and catches SIGINT, SIGTERM and SIGHUP.
 * 0, or -errno after one line when the session directory is not the target user's own.
 */
int watch_start(struct watch *w, struct launch *target, const struct watch_policy *policy,
                const struct tap_callbacks *callbacks);
/* One step: waits for data up to policy.pump_ms, reads it, then decides; returns WATCH_* flags. */
int watch_step(struct watch *w);
/* Passes sig to the target as a Ctrl-C would under WATCH_SIG_FORWARD (an attached one is left). */
void watch_forward(struct watch *w, int sig);
/* Asks the target to stop with sig (the user's explicit stop), SIGKILL after policy.kill_after_ns. */
void watch_stop(struct watch *w, int sig);
/* Leaves at the end of this step (the user's detach or quit). */
void watch_leave(struct watch *w, enum watch_leave why);
/* Ends the session: final counts of collectors that run on, final streams, every connection closed. */
void watch_finish(struct watch *w);
/* Says in one line why an attached target's collector turned us away (WATCH_LEAVE_REFUSED). */
void watch_say_refused(const struct watch *w);

#endif
