/*
 * Log-bucketed duration histogram: 16 sub-buckets per power of two, so any percentile read back from
 * the buckets alone lies within 1/32 (3.2%) of the exact nearest-rank value (bucket midpoint, clamped
 * to the observed min/max). Constant memory per histogram, O(1) insert, O(buckets) percentile.
 * A histogram may also keep every value (hist_keep_values): its percentiles are then exact, the same
 * nearest-rank numbers `cuscope stats` and `cuscope diff` print (u64.h), until it lets them go.
 */
#ifndef CUSCOPE_HISTOGRAM_H
#define CUSCOPE_HISTOGRAM_H

#include <stddef.h>
#include <stdint.h>

#define HIST_SUB     16 /* sub-buckets per octave */
#define HIST_BUCKETS (HIST_SUB + 60 * HIST_SUB)

/* Every value added since hist_keep_values; v[0..sorted) is sorted, the rest is in arrival order. */
struct hist_values {
	uint64_t *v;
	size_t n, cap, sorted;
};

struct hist {
	uint64_t count;
	uint64_t total_ns;
	uint64_t min_ns, max_ns;
	struct hist_values *values; /* NULL unless kept: then percentiles are exact */
	uint32_t bucket[HIST_BUCKETS];
};

void hist_init(struct hist *h);
/* Frees kept values. */
void hist_fini(struct hist *h);
/* Keeps every value added from now on (call on an empty histogram): percentiles become exact. */
void hist_keep_values(struct hist *h);
/* Frees the kept values: percentiles are estimates from then on. */
void hist_drop_values(struct hist *h);
/* Whether hist_percentile is exact (every value is kept) rather than a bucket estimate. */
int hist_is_exact(const struct hist *h);
/* Bucket index of a value. */
size_t hist_bucket_of(uint64_t ns);
/* Smallest value of bucket b, and its width (values [lo, lo + width) fall in it). */
uint64_t hist_bucket_lo(size_t b);
uint64_t hist_bucket_width(size_t b);
void hist_add(struct hist *h, uint64_t ns);
/*
 * Nearest-rank percentile p in [0, 100] (u64_rank of p / 100): exact when hist_is_exact, else within
 * 1/32 of it; 0 when empty. Sorts kept values added since the last call (O(new log new + count)).
 */
uint64_t hist_percentile(const struct hist *h, double p);
/*
 * Coarse log-spaced view for a sparkline: nbins bins between min and max (log scale); out[i] gets
 * the count of bin i. Returns the largest bin count.
 */
uint64_t hist_coarse(const struct hist *h, size_t nbins, uint64_t *out);

#endif
