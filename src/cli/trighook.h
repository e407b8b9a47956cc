/*
 * Triggers in a viewer process (live mode, record, attach, run): the engine evaluated over the
 * session's store after each watch step, each firing written into the capture as a notice, and
 * the window around it (--pre/--post) cut from the capture being written into --dump-dir, bounded
 * by --dump-max/--dump-max-mb/--dump-keep. Private to cli/.
 */
#ifndef CUSCOPE_CLI_TRIGHOOK_H
#define CUSCOPE_CLI_TRIGHOOK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct capture_writer;
struct capture_snapshot;
struct cli_triggers;
struct store;
struct trigger_engine;
struct trigger_firing;

#define TRIG_PRE_DEFAULT_NS  5000000000ull
#define TRIG_POST_DEFAULT_NS 2000000000ull
#define TRIG_DUMP_MAX        20u
#define TRIG_DUMP_MAX_MB     2048u

/* A window around one or more firings, and its dump. */
struct trig_window {
	uint64_t from_ns, to_ns; /* CLOCK_MONOTONIC */
	char path[512];          /* "" when no dump is written for it */
	uint64_t bytes;          /* the dump's size once written */
	int state;               /* enum trig_window_state (trighook.c) */
};

struct trig_hook {
	struct trigger_engine *eng;
	struct store *store; /* the session's store (ours when own_store) */
	int own_store;
	const struct cli_triggers *opt;
	uint64_t pre_ns, post_ns;
	unsigned dump_max;
	uint64_t dump_max_bytes;
	pid_t *source_pid; /* by store source: the pid its HELLO named */
	size_t source_cap;
	int last_source; /* the newest source that said HELLO, -1 before */
	size_t handled;  /* engine firings turned into notices and windows */
	struct trig_window *win;
	size_t win_n, win_cap;
	size_t next_dump; /* first window whose dump is not finished */
	struct capture_snapshot *snap;
	unsigned seq;           /* dump files named so far */
	unsigned dumps_written; /* on disk now */
	uint64_t dump_bytes;    /* on disk now */
	int full;               /* --dump-keep oldest and a bound reached: no more dumps */
	uint64_t
	    file_from_ns; /* the capture dumps are cut from starts here (it restarted), 0 = at the start */
	unsigned said_full;
	unsigned said_too_big; /* a dump alone over --dump-max-mb: said once */
};

/*
 * Sets h up for the triggers in opt (count > 0), over store, or over a store of its own (NULL;
 * bounded by memory_mb, 0 = the default). gap_ms is --gap-ms as parsed (0: the default). Checks
 * (and makes, 0700) --dump-dir. Returns 0, or CLI_EXIT_USAGE after one line.
 */
int trig_hook_init(struct trig_hook *h, const struct cli_triggers *opt, double gap_ms, struct store *store,
                   unsigned memory_mb, const char *verb);
/* Evaluates over store (the view's) from now on, instead of a store of its own. */
void trig_hook_share_store(struct trig_hook *h, struct store *store);
/* Whether any trigger is set (h was set up). */
int trig_hook_on(const struct trig_hook *h);
/* One frame of store source `source` (fed into the store when it is ours). */
void trig_hook_frame(struct trig_hook *h, int source, uint32_t type, const void *payload, uint32_t length);
/*
 * Evaluates what arrived, writes notices for new firings into w (may be NULL), and moves dumps
 * from w forward a step. Returns how many firings are new.
 */
size_t trig_hook_step(struct trig_hook *h, struct capture_writer *w);
/* The capture dumps are cut from restarted (--disk-mb): older time is no longer in it. */
void trig_hook_file_restarted(struct trig_hook *h);
/* At the end of the session: every window's dump is written with what there is. */
void trig_hook_finish(struct trig_hook *h, struct capture_writer *w);
void trig_hook_fini(struct trig_hook *h);
/* Firings so far and one of them; the text of its trigger. */
size_t trig_hook_firing_count(const struct trig_hook *h);
const struct trigger_firing *trig_hook_firing(const struct trig_hook *h, size_t index);
const char *trig_hook_expr(const struct trig_hook *h, const struct trigger_firing *f);

#endif
