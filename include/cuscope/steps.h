/*
 * Steps without annotations: the repeating iteration of a process found in its GPU kernel stream
 * (kernel names in launch order, across its streams), or in its CUDA API call stream when it has no
 * kernels, turned into synthetic "step" ranges marked as inferred. Used where a process has no NVTX
 * range that repeats: `stats` (section nvtx, domain "inferred"), the exports, the ranks section and
 * pane, and the timeline's "step (inferred)" row with its histogram.
 *
 * steps_detect is pure (an array of events in, ranges out), linear-ish in the events (two radix
 * sorts, a scan per candidate anchor, at most STEPS_CANDIDATES_MAX of them); steps_infer reads one
 * process from the store, bounded to its newest max_events kernels (the live view's bound).
 */
#ifndef CUSCOPE_STEPS_H
#define CUSCOPE_STEPS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct store;
struct store_range;

/* One kernel (or API call) of the stream, in launch order. */
struct steps_event {
	uint32_t name;       /* any id: only equality matters (a global string id) */
	pid_t tid;           /* launching thread, 0 when unknown */
	uint64_t cpu_ns;     /* start of its launch call (API call: its start), CLOCK_MONOTONIC; 0 unknown */
	uint64_t cpu_end_ns; /* end of that call, 0 unknown */
	uint64_t gpu_start_ns, gpu_end_ns; /* on the GPU; 0 for an API call */
};

/* One inferred step. */
struct steps_range {
	uint64_t start_ns; /* CLOCK_MONOTONIC: see struct steps_result's gpu_time */
	uint64_t end_ns;
	pid_t tid;     /* the thread that launched its first kernel, 0 when unknown */
	uint32_t size; /* events (kernels or calls) in it */
};

struct steps_result {
	struct steps_range *v; /* sorted by start, not overlapping; NULL when none */
	size_t n, cap;
	uint32_t anchor; /* name of the event each step starts at (its first bigram's second name) */
	int bigram;      /* the anchor is a pair of consecutive names (no single name repeats once a step) */
	int gpu_time;    /* 1: starts are GPU start times (launch calls unknown), 0: launch call starts */
	int api;         /* 1: found in the CUDA API call stream (the process had no kernels) */
	uint32_t period; /* median events per step */
};

/* Fewest steps inferred: fewer repetitions are no evidence of a loop. */
#define STEPS_MIN_STEPS 2
/* Candidate anchors checked for content consistency (a scan of the stream each), most frequent first. */
#define STEPS_CANDIDATES_MAX 64
/* Kernels the live view reads per process (the newest ones). */
#define STEPS_LIVE_EVENTS 200000u

/*
 * Finds the repeating iteration in ev[0..n) (launch order) and fills out (emptied first) with one
 * range per iteration; out->n is 0 when nothing repeats. See steps.c for the method.
 */
void steps_detect(const struct steps_event *ev, size_t n, struct steps_result *out);
void steps_result_fini(struct steps_result *r);

/* Whether a range is a torch operator, an NCCL range or unnamed: never a step (ranks, inference). */
int steps_range_is_op(const struct store *store, const struct store_range *r);
/* Whether process p has an NVTX range (not a torch operator nor NCCL's) that repeats (3 times or more). */
int steps_process_annotated(const struct store *store, size_t process);
/*
 * Inferred steps of process p from its newest max_events kernels (0: all), or its CUDA API calls when it
 * has no kernels: fills out (emptied first); out->n is 0 when it is annotated or nothing repeats.
 */
void steps_infer(const struct store *store, size_t process, size_t max_events, struct steps_result *out);

#endif
