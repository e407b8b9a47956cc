/*
 * Matching collectives across captures (clock_align.h). The pairs come from two lists of NCCL
 * kernel ends in end-time order; the fit is a line d = offset + drift * x, where d is the
 * reference's end minus the capture's and x the capture's end minus the origin.
 */
#include "cuscope/clock_align.h"
#include "cuscope/store.h"
#include "cuscope/u64.h"
#include "cuscope/wire.h"
#include "cuscope/xalloc.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int clock_align_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Median of v[0..n) (n >= 1); reorders v. */
static double clock_align_median(double *v, size_t n)
{
	qsort(v, n, sizeof *v, clock_align_cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Median of v[from..to), through tmp (v stays as it is). */
static double clock_align_median_of(const double *v, size_t from, size_t to, double *tmp)
{
	memcpy(tmp, v + from, (to - from) * sizeof *tmp);
	return clock_align_median(tmp, to - from);
}

int clock_align_fit(const uint64_t *ref, size_t n_ref, const uint64_t *t, size_t n,
                    struct clock_align_fit *out)
{
	memset(out, 0, sizeof *out);
	size_t m = n_ref < n ? n_ref : n;
	out->pairs = m;
	out->unmatched = n_ref > n ? n_ref - n : n - n_ref;
	if (m < CLOCK_ALIGN_MIN_PAIRS)
		return -EDOM;
	out->origin_ns = t[m / 2];
	double *x = xmalloc(m * sizeof *x), *d = xmalloc(m * sizeof *d), *tmp = xmalloc(m * sizeof *tmp);
	unsigned char *in = xmalloc(m);
	for (size_t k = 0; k < m; k++) {
		/* Differences of unsigned times as signed: exact for moves below 292 years. */
		x[k] = (double)(int64_t)(t[k] - out->origin_ns);
		d[k] = (double)(int64_t)(ref[k] - t[k]);
	}

	/* A first line robust to wrong pairs: through the medians of the first and second half. */
	size_t h = m / 2;
	double x1 = clock_align_median_of(x, 0, h, tmp), x2 = clock_align_median_of(x, h, m, tmp);
	double d1 = clock_align_median_of(d, 0, h, tmp), d2 = clock_align_median_of(d, h, m, tmp);
	double drift = x2 > x1 ? (d2 - d1) / (x2 - x1) : 0;
	if (fabs(drift) > CLOCK_ALIGN_DRIFT_MAX)
		drift = 0;
	for (size_t k = 0; k < m; k++)
		tmp[k] = d[k] - drift * x[k];
	double offset = clock_align_median(tmp, m);

	/* Pairs off that line by more than 6 MADs (about 4 standard deviations of normal noise). */
	for (size_t k = 0; k < m; k++)
		tmp[k] = fabs(d[k] - offset - drift * x[k]);
	double limit = 6 * 1.4826 * clock_align_median(tmp, m);
	if (limit < CLOCK_ALIGN_FLOOR_NS)
		limit = CLOCK_ALIGN_FLOOR_NS;
	double sx = 0, sd = 0;
	size_t used = 0;
	for (size_t k = 0; k < m; k++) {
		in[k] = fabs(d[k] - offset - drift * x[k]) <= limit;
		if (in[k]) {
			sx += x[k];
			sd += d[k];
			used++;
		}
	}
	/* Least squares over the pairs kept (at least half of them: the limit is above the MAD). */
	double mx = sx / (double)used, md = sd / (double)used, sxx = 0, sxd = 0;
	for (size_t k = 0; k < m; k++)
		if (in[k]) {
			sxx += (x[k] - mx) * (x[k] - mx);
			sxd += (x[k] - mx) * (d[k] - md);
		}
	double lsq = sxx > 0 ? sxd / sxx : 0, ss = 0;
	for (size_t k = 0; k < m; k++)
		if (in[k]) {
			double e = d[k] - md - lsq * (x[k] - mx);
			ss += e * e;
		}
	/* A drift within 3 standard errors of 0 is the ends' jitter over a short span, not the clocks:
	 * taken as 0, so that times away from the collectives are not moved by noise. */
	double se = used > 2 && sxx > 0 ? sqrt(ss / (double)(used - 2) / sxx) : INFINITY;
	if (fabs(lsq) <= CLOCK_ALIGN_DRIFT_MAX && fabs(lsq) >= 3 * se) {
		drift = lsq;
		offset = md - drift * mx;
	} else {
		drift = 0;
		offset = md;
	}
	out->outliers = m - used;
	out->drift = drift;
	out->offset_ns = (int64_t)llround(offset);

	uint64_t *res = xmalloc(used * sizeof *res);
	size_t r = 0;
	for (size_t k = 0; k < m; k++)
		if (in[k]) {
			int64_t e = (int64_t)(ref[k] - (t[k] + (uint64_t)clock_align_move(out, t[k])));
			res[r++] = e < 0 ? -(uint64_t)e : (uint64_t)e;
		}
	u64_sort(res, used);
	out->residual_p50_ns = u64_percentile(res, used, 0.5);
	out->residual_max_ns = res[used - 1];
	free(res);
	free(x);
	free(d);
	free(tmp);
	free(in);
	return 0;
}

int64_t clock_align_move(const struct clock_align_fit *fit, uint64_t t)
{
	if (!fit)
		return 0;
	/* Unsigned: times of a crafted capture wrap rather than overflow. */
	return (int64_t)((uint64_t)fit->offset_ns +
	                 (uint64_t)llround(fit->drift * (double)(int64_t)(t - fit->origin_ns)));
}

void clock_align_residual(const uint64_t *ref, size_t n_ref, const uint64_t *t, size_t n, uint64_t *p50,
                          uint64_t *max)
{
	size_t m = n_ref < n ? n_ref : n;
	*p50 = *max = 0;
	if (!m)
		return;
	uint64_t *res = xmalloc(m * sizeof *res);
	for (size_t k = 0; k < m; k++)
		res[k] = ref[k] > t[k] ? ref[k] - t[k] : t[k] - ref[k];
	u64_sort(res, m);
	*p50 = u64_percentile(res, m, 0.5);
	*max = res[m - 1];
	free(res);
}

size_t clock_align_nccl_ends(const struct store *st, size_t p, uint64_t **out)
{
	struct store_process_info pi;
	store_process_get(st, p, &pi);
	uint64_t *v = NULL;
	size_t n = 0, cap = 0;
	for (size_t l = 0; l < pi.lane_count; l++) {
		struct store_lane_info li;
		store_lane_get(st, p, l, &li);
		if (li.kind != STORE_LANE_GPU_STREAM || !li.kernels)
			continue;
		for (size_t row = 0; row < li.gpu_row_count; row++) {
			const struct store_gpu_op *ops;
			size_t count = store_lane_gpu_all(st, p, l, row, &ops);
			for (size_t i = 0; i < count; i++) {
				if (ops[i].kind != WIRE_GPU_KERNEL ||
				    strncmp(store_short_name(st, ops[i].name_id), "nccl", 4) != 0)
					continue;
				if (n == cap)
					xgrow((void **)&v, &cap, n + 1, sizeof *v);
				v[n++] = ops[i].end_ns;
			}
		}
	}
	if (n)
		u64_sort(v, n);
	*out = v;
	return n;
}
