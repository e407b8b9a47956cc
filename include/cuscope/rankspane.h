/*
 * The ranks pane (R): one line per rank from stats_ranks_compute (the straggler first), the selection
 * the user moves when it has focus, how often its rows are recomputed, and where Enter goes (the
 * rank's lanes, a window around its slowest step). Pure: no curses; the UI draws the text.
 */
#ifndef CUSCOPE_RANKSPANE_H
#define CUSCOPE_RANKSPANE_H

#include <stddef.h>
#include <stdint.h>

#include "cuscope/stats_ranks.h"

struct store;

/* Rows are recomputed at most this often while the store changes (a live view). */
#define RANKSPANE_REFRESH_NS 1000000000ull
/*
 * ... and at most 1/RANKSPANE_SHARE of the time: ranks without NVTX steps have theirs inferred from
 * their kernels (steps.h), tens of ms a rank.
 */
#define RANKSPANE_SHARE 20

/* What the pane says when no process has a rank. */
#define RANKSPANE_EMPTY "no ranks: no process has RANK/OMPI_COMM_WORLD_RANK/PMI_RANK/SLURM_PROCID set"

struct rankspane {
	struct stats_rank_row *rows; /* sorted by compute time, largest first */
	size_t count;
	int multi_host;           /* the rows come from more than one host: a host column */
	int restart_w;            /* width of " (restart K)" after the rank: 0 when no row is a restart */
	size_t sel;               /* selected row, < count when count > 0 */
	size_t top;               /* first row on screen */
	int computed;             /* rows were computed at least once */
	uint64_t generation;      /* store_generation the rows were computed from */
	uint64_t computed_at_ns;  /* CLOCK_MONOTONIC of that computation */
	uint64_t compute_cost_ns; /* how long it took */
};

/* Where Enter on a row goes: the rank's process header on top, the time window around its slowest step. */
struct rankspane_jump {
	size_t process;      /* store process of its header (the rank's own process) */
	size_t main_process; /* and of the thread its steps come from (SIZE_MAX lane: none) */
	size_t main_lane;
	int has_window;                      /* 0: the rank has no steps; the time window stays */
	uint64_t start_ns, span_ns;          /* the new window */
	uint64_t step_start_ns, step_end_ns; /* the slowest step */
};

void rankspane_init(struct rankspane *rp);
void rankspane_fini(struct rankspane *rp);
/*
 * Whether the rows are due a recomputation at now_ns for a store at generation: never computed, or
 * the store changed and RANKSPANE_REFRESH_NS (or RANKSPANE_SHARE times the last one's cost, if longer)
 * passed since the last one (never per frame).
 */
int rankspane_due(const struct rankspane *rp, uint64_t generation, uint64_t now_ns);
/*
 * Takes rows (ownership passes to the pane; the old ones are freed), keeping the selection on the
 * same rank (capture and pid) when it is still there.
 */
void rankspane_set_rows(struct rankspane *rp, struct stats_rank_row *rows, size_t count);
/* Recomputes the rows from the store (stats_ranks_compute) and notes when and how long it took. */
void rankspane_update(struct rankspane *rp, const struct store *store, uint64_t generation, uint64_t now_ns);
/* The column heading line (the host column only when multi_host). */
void rankspane_header(const struct rankspane *rp, char *buf, size_t size);
/* Row i's text: rank ("(restart K)" after it for a restarted worker), host, pid, steps, step p50, p99, NCCL,
 * compute, GPU idle %, and the straggler mark. */
void rankspane_row_text(const struct rankspane *rp, size_t i, char *buf, size_t size);
/* Moves the selection by delta rows (clamped) and scrolls so that it stays among height rows. */
void rankspane_select(struct rankspane *rp, long delta, size_t height);
/* Where Enter on the selected row goes; 0 when there is no row. */
int rankspane_jump(const struct rankspane *rp, struct rankspane_jump *j);

#endif
