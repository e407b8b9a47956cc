#include "cuscope/histogram.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cuscope/u64.h"
#include "cuscope/xalloc.h"

void hist_init(struct hist *h)
{
	memset(h, 0, sizeof *h);
}

void hist_fini(struct hist *h)
{
	hist_drop_values(h);
}

void hist_keep_values(struct hist *h)
{
	if (!h->values && !h->count)
		h->values = xcalloc(1, sizeof *h->values);
}

void hist_drop_values(struct hist *h)
{
	if (h->values)
		free(h->values->v);
	free(h->values);
	h->values = NULL;
}

int hist_is_exact(const struct hist *h)
{
	return h->values && h->values->n == h->count;
}

/* Sorts the values added since the last call and merges them into the sorted prefix. */
static void hist_values_sort(struct hist_values *hv)
{
	size_t old = hv->sorted, add = hv->n - old;
	if (!add)
		return;
	u64_sort(hv->v + old, add);
	if (old && hv->v[old - 1] > hv->v[old]) {
		/* Merge from the back: the new run waits in tmp while the prefix moves up. */
		uint64_t *tmp = xmalloc(add * sizeof *tmp);
		memcpy(tmp, hv->v + old, add * sizeof *tmp);
		size_t i = old, j = add, k = hv->n;
		while (j > 0) {
			if (i > 0 && hv->v[i - 1] > tmp[j - 1])
				hv->v[--k] = hv->v[--i];
			else
				hv->v[--k] = tmp[--j];
		}
		free(tmp);
	}
	hv->sorted = hv->n;
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
	if (h->values) {
		struct hist_values *hv = h->values;
		xgrow((void **)&hv->v, &hv->cap, hv->n + 1, sizeof *hv->v);
		hv->v[hv->n++] = ns;
	}
}

uint64_t hist_percentile(const struct hist *h, double p)
{
	if (!h->count)
		return 0;
	if (p <= 0)
		return h->min_ns;
	if (p >= 100)
		return h->max_ns;
	if (hist_is_exact(h)) {
		/* The values are the histogram's own cache: sorting them changes no answer. */
		hist_values_sort(h->values);
		return u64_percentile(h->values->v, h->values->n, p / 100.0);
	}
	uint64_t rank = u64_rank((size_t)h->count, p / 100.0);
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
