/*
 * The straggler table: one row per rank and restart (a ranked process with the processes under it
 * that carry the same rank and restart folded in), with its step times and how much of them went to NCCL
 * kernels, to the rest (compute) and to an idle GPU. Used by `stats` (section "ranks"), the viewer's ranks
 * pane (R) and their unit tests.
 */
#ifndef CUSCOPE_STATS_RANKS_H
#define CUSCOPE_STATS_RANKS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct store;

struct stats_rank_row {
	const char *host; /* owned by the store */
	int32_t rank;
	int32_t restart;  /* TORCHELASTIC_RESTART_COUNT (0 when unknown): a restarted worker is its own row */
	pid_t pid;        /* the rank's own process (not a folded worker) */
	uint32_t capture; /* which capture it came from */
	size_t process;   /* its store process index */
	char gpu[48]; /* UUID of the GPU it ran most kernels on, "GPU<n>" without one, "" without GPU data */
	uint32_t step_name; /* global string id of the step range, 0 when none was found or inferred */
	int inferred;       /* its steps were inferred from its kernels (steps.h): no NVTX range repeats */
	uint64_t steps;
	uint64_t step_p50_ns, step_p99_ns, step_total_ns;
	uint64_t nccl_ns;     /* step time with an NCCL kernel (name starts "nccl") of the rank running */
	uint64_t compute_ns;  /* step_total_ns - nccl_ns */
	uint64_t gpu_idle_ns; /* step time with no kernel on its GPU; 0 without GPU data */
	size_t main_process;  /* store process and lane of the thread its steps were taken from */
	size_t main_lane;     /* SIZE_MAX when it has no thread with ranges */
	uint64_t slow_start_ns, slow_end_ns; /* its slowest step (the first of equals); 0 without steps */
};

/*
 * Builds the rows, sorted by compute time, largest first (the straggler first; then rank, restart,
 * capture, pid). step_range names the step range (NULL: per rank, the most frequent top-level push/pop range
 * of its main thread that is not in the NCCL domain nor a torch operator, ties to the larger total; when
 * its main process has no such range that repeats, the steps inferred from its kernels, see steps.h).
 * Returns the row count; *out is allocated (free it), NULL when there are none.
 */
size_t stats_ranks_compute(const struct store *store, const char *step_range, struct stats_rank_row **out);
/*
 * The same, with a rank that has no repeating NVTX range taking the steps inferred from its kernels
 * (steps_infer) over its newest max_events of them (0: all; the live pane passes STEPS_LIVE_EVENTS).
 * stats_ranks_compute reads all of them.
 */
size_t stats_ranks_compute_bounded(const struct store *store, const char *step_range, size_t max_events,
                                   struct stats_rank_row **out);

#endif
