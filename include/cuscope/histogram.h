/*
 * Log-bucketed duration histogram: 16 sub-buckets per power of two, so any percentile read back from
 * it lies within 1/32 (3.2%) of the exact nearest-rank value (bucket midpoint, clamped to the
 * observed min/max). Constant memory per histogram, O(1) insert, O(buckets) percentile: what the
 * live NVTX panel needs. `cuscope stats` stays exact (it sorts).
 */
#ifndef CUSCOPE_HISTOGRAM_H
#define CUSCOPE_HISTOGRAM_H

#include <stddef.h>
#include <stdint.h>

#define HIST_SUB     16 /* sub-buckets per octave */
#define HIST_BUCKETS (HIST_SUB + 60 * HIST_SUB)

struct hist {
	uint64_t count;
	uint64_t total_ns;
	uint64_t min_ns, max_ns;
	uint32_t bucket[HIST_BUCKETS];
};

void hist_init(struct hist *h);
/* Bucket index of a value. */
size_t hist_bucket_of(uint64_t ns);
/* Smallest value of bucket b, and its width (values [lo, lo + width) fall in it). */
uint64_t hist_bucket_lo(size_t b);
uint64_t hist_bucket_width(size_t b);
void hist_add(struct hist *h, uint64_t ns);
/* Nearest-rank percentile p in [0, 100] (within 1/32 of the exact value); 0 when empty. */
uint64_t hist_percentile(const struct hist *h, double p);
/*
 * Coarse log-spaced view for a sparkline: nbins bins between min and max (log scale); out[i] gets
 * the count of bin i. Returns the largest bin count.
 */
uint64_t hist_coarse(const struct hist *h, size_t nbins, uint64_t *out);

#endif
