/*
 * Live per-name NVTX statistics for the panel: one histogram per (name, domain), fed incrementally
 * from the store's completed-range rows. Each update scans only the ranges added to each row since
 * the previous one (rows only grow), so a frame costs O(new ranges + rows), never O(all ranges).
 * Percentiles are exact, the nearest-rank numbers `cuscope stats` prints: each entry keeps its
 * durations (8 bytes a range) while all entries together keep at most exact_max of them; an entry that
 * would pass that lets its values go and estimates from its log buckets (histogram.h: within 3.2%;
 * hist_is_exact says which).
 */
#ifndef CUSCOPE_NVTXSTATS_H
#define CUSCOPE_NVTXSTATS_H

#include <stddef.h>
#include <stdint.h>

#include "cuscope/hashmap.h"
#include "cuscope/histogram.h"

struct store;

struct nvtx_stat {
	uint32_t name_id, domain_id; /* global string ids */
	struct hist hist;
	/* the slowest instance, to jump to */
	size_t process, lane, row;
	uint64_t slow_start_ns, slow_end_ns;
};

struct nvtx_stats {
	struct nvtx_stat **v; /* entries, in order of first appearance */
	size_t count, cap;
	struct hashmap map; /* by (name, domain): index + 1 */
	/* ranges already scanned per (process, lane, row) */
	struct nvtx_seen_proc {
		struct nvtx_seen_lane {
			size_t *seen;
			size_t rows;
		} * lanes;
		size_t lane_count;
	} * procs;
	size_t proc_count;
	uint64_t ranges;                /* ranges fed so far */
	size_t exact_values, exact_max; /* durations kept for exact percentiles, and their bound */
};

/* Domain of the steps inferred from kernels (steps.h), fed by the viewer under name 0: "step (inferred)". */
#define NVTX_STATS_INFERRED  UINT32_MAX
#define NVTX_STATS_EXACT_MAX (8u << 20) /* durations kept for exact percentiles (64 MiB) */

void nvtx_stats_init(struct nvtx_stats *s);
void nvtx_stats_fini(struct nvtx_stats *s);
/* Feeds one completed range of (process, lane, row). */
void nvtx_stats_add(struct nvtx_stats *s, size_t process, size_t lane, size_t row, uint32_t name_id,
                    uint32_t domain_id, uint64_t start_ns, uint64_t end_ns);
/* Scans the ranges the store gained since the last call; returns how many were added. */
size_t nvtx_stats_update(struct nvtx_stats *s, const struct store *store);
/* Entry by (name, domain), or NULL. */
const struct nvtx_stat *nvtx_stats_find(const struct nvtx_stats *s, uint32_t name_id, uint32_t domain_id);
/* Fills order[0..count) with entry indexes sorted by total time, largest first. */
void nvtx_stats_order(const struct nvtx_stats *s, size_t *order);

#endif
