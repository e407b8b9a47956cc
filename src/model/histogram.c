#include "cuscope/histogram.h"

#include <math.h>
#include <string.h>

void hist_init(struct hist *h)
{
	memset(h, 0, sizeof *h);
}

size_t hist_bucket_of(uint64_t ns)
{
	if (ns < HIST_SUB)
		return (size_t)ns;
	int e = 63 - __builtin_clzll(ns); /* >= 4 */
	size_t sub = (size_t)(ns >> (e - 4)) & (HIST_SUB - 1);
	size_t b = HIST_SUB + (size_t)(e - 4) * HIST_SUB + sub;
	return b < HIST_BUCKETS ? b : HIST_BUCKETS - 1;
}

uint64_t hist_bucket_lo(size_t b)
{
	if (b < HIST_SUB)
		return b;
	size_t e = (b - HIST_SUB) / HIST_SUB + 4, sub = (b - HIST_SUB) % HIST_SUB;
	return (uint64_t)(HIST_SUB + sub) << (e - 4);
}

uint64_t hist_bucket_width(size_t b)
{
	if (b < HIST_SUB)
		return 1;
	return 1ull << ((b - HIST_SUB) / HIST_SUB);
}

void hist_add(struct hist *h, uint64_t ns)
{
	if (!h->count || ns < h->min_ns)
		h->min_ns = ns;
	if (ns > h->max_ns)
		h->max_ns = ns;
	h->count++;
	h->total_ns += ns;
	h->bucket[hist_bucket_of(ns)]++;
}

uint64_t hist_percentile(const struct hist *h, double p)
{
	if (!h->count)
		return 0;
	if (p <= 0)
		return h->min_ns;
	if (p >= 100)
		return h->max_ns;
	uint64_t rank = (uint64_t)ceil(p / 100.0 * (double)h->count);
	if (rank < 1)
		rank = 1;
	uint64_t seen = 0;
	for (size_t b = 0; b < HIST_BUCKETS; b++) {
		seen += h->bucket[b];
		if (seen >= rank) {
			uint64_t v = hist_bucket_lo(b) + hist_bucket_width(b) / 2;
			if (v < h->min_ns)
				v = h->min_ns;
			if (v > h->max_ns)
				v = h->max_ns;
			return v;
		}
	}
	return h->max_ns;
}

uint64_t hist_coarse(const struct hist *h, size_t nbins, uint64_t *out)
{
	memset(out, 0, nbins * sizeof *out);
	if (!h->count || !nbins)
		return 0;
	double lo = log((double)(h->min_ns ? h->min_ns : 1));
	double hi = log((double)(h->max_ns ? h->max_ns : 1));
	double w = hi - lo;
	uint64_t top = 0;
	for (size_t b = hist_bucket_of(h->min_ns); b <= hist_bucket_of(h->max_ns); b++) {
		if (!h->bucket[b])
			continue;
		double mid = (double)hist_bucket_lo(b) + (double)hist_bucket_width(b) / 2;
		size_t i = 0;
		if (w > 0) {
			double f = (log(mid) - lo) / w;
			i = f <= 0 ? 0 : (size_t)(f * (double)nbins);
		}
		if (i >= nbins)
			i = nbins - 1;
		out[i] += h->bucket[b];
		if (out[i] > top)
			top = out[i];
	}
	return top;
}
