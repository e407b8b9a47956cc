/*
 * Pure helpers for the CPU side of the timeline: sample-density levels, labels of blocking calls,
 * GPU idle gaps on a stream row (the one under the cursor, the next or previous one) and the choice
 * of the thread whose activity explains a gap. No curses: tested on plain arrays and small stores.
 */
#ifndef CUSCOPE_CPUVIEW_H
#define CUSCOPE_CPUVIEW_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cuscope/store.h"

#define CPUVIEW_LEVELS 8 /* density levels above empty (glyphs spark[1..8]) */

/* Level 0..CPUVIEW_LEVELS of a cell holding count samples when the fullest cell holds max. */
int cpuview_density_level(uint32_t count, uint32_t max);
/* A duration in at most 7 cells: "812ns", "41.2us", "41.2ms", "1.20s" (the timeline's format). */
void cpuview_format_dur(char *buf, size_t size, uint64_t ns);
/*
 * Label of a blocking call or GC range box in at most width characters: "read 30.1ms" when it
 * fits, else the name cut so that the duration still shows ("pthread_mut 20.1ms"), else the name
 * cut to width. Returns the length written.
 */
size_t cpuview_call_label(const char *name, uint64_t dur_ns, size_t width, char *buf, size_t size);
/* Share of part in whole as a percentage (0 when whole is 0). */
double cpuview_share(uint64_t part, uint64_t whole);

/* An idle gap of a stream row: between ops[next - 1] and ops[next]. */
struct cpuview_gap {
	uint64_t start_ns; /* end of the op before */
	uint64_t end_ns;   /* start of the op after */
	size_t next;       /* index of the op after the gap */
};

/* The GPU-gap rule: whether the idle time [a, b) between two ops is at least min_ns long. */
int cpuview_is_gap(uint64_t a, uint64_t b, uint64_t min_ns);
/*
 * The gap of at least min_ns between two ops of a sorted, non-overlapping row that holds time t:
 * 1 and *out, or 0 (t inside an op, before the first or after the last, or the gap is shorter).
 */
int cpuview_gap_at(const struct store_gpu_op *ops, size_t n, uint64_t t, uint64_t min_ns,
                   struct cpuview_gap *out);
/*
 * The first gap of at least min_ns that starts strictly after t (dir > 0), or the last one that
 * ends strictly before t (dir < 0; so never the gap holding t): 1 and *out, or 0 when there is none.
 */
int cpuview_gap_step(const struct store_gpu_op *ops, size_t n, uint64_t t, int dir, uint64_t min_ns,
                     struct cpuview_gap *out);

/*
 * The thread that explains a GPU gap of a process: the caller of the API call that launched
 * `after` (the op right after the gap) when the store knows it, else the thread with the most CUDA
 * API calls. *why says which ("launched the next op", "most CUDA API calls"). 0 when none.
 */
pid_t cpuview_gap_thread(const struct store *store, size_t process, const struct store_gpu_op *after,
                         const char **why);

#endif
