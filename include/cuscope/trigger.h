/*
 * Triggers: conditions on the event stream that say "this is the moment to look" (a stall). Parsed
 * from --trigger EXPR and evaluated in the viewer, never in the collector, incrementally over a
 * store as frames arrive. Pure: no curses, no files; the CLI turns firings into dumps and notices,
 * the UI into a pause.
 *
 *   gpu-idle>DUR            no kernel, copy or memset on any stream of one GPU for DUR, counted
 *                           after that GPU's first kernel; fires while the gap is still open
 *   range:NAME>DUR          an instance of NAME (any domain) open longer than DUR: fires at
 *   range:DOMAIN/NAME>DUR   start + DUR, so a range that never ends (a hang) fires too
 *   range:NAME>pQ*F         longer than F x the Q-th percentile of the last 100 completed
 *                           instances; armed once 20 have completed
 *   gap-explained:CAUSE     a GPU idle gap of at least the gap threshold whose host thread was
 *                           doing CAUSE (gc, sleep, read, write, lock, poll, wait, cpu, ...)
 *
 * DUR is a number with ns, us, ms or s. A trigger re-arms --post after it fired.
 */
#ifndef CUSCOPE_TRIGGER_H
#define CUSCOPE_TRIGGER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct store;

/* The grammar, as the one line a malformed expression gets. */
#define TRIGGER_GRAMMAR                                                                                      \
	"gpu-idle>DUR | range:[DOMAIN/]NAME>DUR | range:[DOMAIN/]NAME>pQ*F | gap-explained:CAUSE "           \
	"(DUR: 500us, 20ms, 2s; e.g. range:step>p99*2)"

#define TRIGGER_EXPR_MAX    256          /* bytes of an expression */
#define TRIGGER_PCT_WINDOW  100          /* completed instances a percentile trigger looks at */
#define TRIGGER_PCT_ARM     20           /* completed instances before a percentile trigger is armed */
#define TRIGGER_GPU_LAG_NS  200000000ull /* GPU records arrive this late at most (CUPTI flush) */
#define TRIGGER_FIRINGS_MAX 100000u      /* firings kept (beyond: counted only) */

enum trigger_kind {
	TRIGGER_GPU_IDLE = 1,
	TRIGGER_RANGE = 2,     /* range:NAME>DUR */
	TRIGGER_RANGE_PCT = 3, /* range:NAME>pQ*F */
	TRIGGER_GAP_CAUSE = 4, /* gap-explained:CAUSE */
};

struct trigger_spec {
	enum trigger_kind kind;
	char expr[TRIGGER_EXPR_MAX]; /* as written */
	char name[TRIGGER_EXPR_MAX]; /* range name */
	char domain[TRIGGER_EXPR_MAX];
	int has_domain;  /* DOMAIN/ given ("" is then the default domain) */
	uint64_t dur_ns; /* gpu-idle, range: the threshold */
	double q;        /* percentile, (0, 100] */
	double factor;   /* > 0 */
	char cause[32];  /* gap-explained */
};

/* Parses a duration "20ms", "1.5s", "500us", "100ns" (a unit is required); 0 or -EINVAL. */
int trigger_parse_duration(const char *text, uint64_t *out_ns);
/* Parses one expression; 0, or -EINVAL with *why (static) saying what is wrong. */
int trigger_parse(const char *text, struct trigger_spec *out, const char **why);

/* How the engine judges. */
struct trigger_config {
	uint64_t rearm_ns;   /* a trigger stays quiet this long after it fired (--post) */
	uint64_t gap_min_ns; /* gap-explained: the shortest gap explained (--gap-ms) */
	uint64_t gpu_lag_ns; /* GPU gaps are judged this far behind now (records come late) */
};

/* One firing: when the condition became true, and what it measured then. */
struct trigger_firing {
	uint64_t time_ns;  /* CLOCK_MONOTONIC: start + DUR, gap start + DUR, ... */
	uint64_t value_ns; /* the duration seen (range or gap length when found, at least DUR) */
	size_t trigger;    /* index into the specs */
	pid_t pid;         /* the process it concerns (0 when unknown) */
	const char *cause; /* gap-explained: the cause found (static), else "" */
};

struct trigger_engine;

/* An engine for count specs (copied). */
struct trigger_engine *trigger_engine_new(const struct trigger_spec *specs, size_t count,
                                          const struct trigger_config *config);
void trigger_engine_free(struct trigger_engine *eng);
/* Spec index of the engine (as given to trigger_engine_new). */
const struct trigger_spec *trigger_engine_spec(const struct trigger_engine *eng, size_t index);
/*
 * Looks at what store received since the last call, judging open ranges and gaps against now_ns
 * (the newest time the stream is known to be complete up to: see the CLI's use). A trigger fires
 * at most once per config.rearm_ns; a crossing found after a later firing of its trigger is quiet.
 * Returns how many firings were appended (one pass's in time order).
 */
size_t trigger_engine_eval(struct trigger_engine *eng, const struct store *store, uint64_t now_ns);
/* Firings so far (kept ones), and one of them. */
size_t trigger_engine_firing_count(const struct trigger_engine *eng);
const struct trigger_firing *trigger_engine_firing(const struct trigger_engine *eng, size_t index);

/*
 * What a thread was doing in a GPU gap, in one word: "gc" (Python GC covered most of it), a
 * blocking call's family ("sleep", "read", "write", "lock", "poll", "wait", "sync" for fsync, or
 * "blocked"), "cpu" (on CPU, sampled), or "unknown".
 */
const char *trigger_gap_cause(const struct store *store, size_t process, pid_t tid, uint64_t from_ns,
                              uint64_t to_ns);

/*
 * A firing as a capture keeps it: a NOTICE of topic WIRE_NOTICE_TOPIC_TRIGGER on the stream of the
 * process it concerns, written by the viewer, so `stats` lists it and old captures read as before.
 */
struct trigger_notice {
	uint64_t time_ns;  /* CLOCK_MONOTONIC: when the condition became true */
	uint64_t value_ns; /* what it measured */
	uint64_t pre_ns;   /* the dump's pre-window asked for */
	uint64_t held_ns;  /* of which the capture held data (the flight recorder may hold less) */
	int32_t pid;
	char cause[32];              /* gap-explained: the cause found, else "" */
	char file[512];              /* the dump holding it, "" when none was written */
	char expr[TRIGGER_EXPR_MAX]; /* the trigger */
};
/* The notice's one line of text into buf (cut at size); returns its length. */
size_t trigger_notice_format(const struct trigger_notice *n, char *buf, size_t size);
/* Reads a notice's text back: 0, or -EINVAL when it is not one. */
int trigger_notice_parse(const char *text, struct trigger_notice *out);
/* The firings a store's captures hold, by time: *out (malloc'd, the caller frees), their count. */
size_t trigger_notices(const struct store *store, struct trigger_notice **out);

#endif
