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
#include <stdio.h>
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

size_t clock_align_nccl_ends_since(const struct store *st, size_t p, uint64_t from_ns, uint64_t **out)
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
			size_t count = from_ns
			                   ? store_lane_gpu_query(st, p, l, row, from_ns, UINT64_MAX, &ops)
			                   : store_lane_gpu_all(st, p, l, row, &ops);
			for (size_t i = 0; i < count; i++) {
				if (ops[i].kind != WIRE_GPU_KERNEL || ops[i].end_ns < from_ns ||
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

size_t clock_align_nccl_ends(const struct store *st, size_t p, uint64_t **out)
{
	return clock_align_nccl_ends_since(st, p, 0, out);
}

/* ---- live refinement: the path of a host's move ---- */

static void clock_align_path_push(struct clock_align_path *path, uint64_t from_ns, int64_t at_ns,
                                  double slope)
{
	if (path->count == path->cap)
		xgrow((void **)&path->pieces, &path->cap, path->count + 1, sizeof *path->pieces);
	path->pieces[path->count++] = (struct clock_align_piece){from_ns, at_ns, slope};
}

void clock_align_path_init(struct clock_align_path *path, int64_t move_ns)
{
	memset(path, 0, sizeof *path);
	clock_align_path_push(path, 0, move_ns, 0);
}

void clock_align_path_fini(struct clock_align_path *path)
{
	free(path->pieces);
	memset(path, 0, sizeof *path);
}

/* The move of piece q at t (unsigned: a crafted time wraps rather than overflows). */
static int64_t clock_align_piece_move(const struct clock_align_piece *q, uint64_t t)
{
	return (int64_t)((uint64_t)q->at_ns +
	                 (uint64_t)llround(q->slope * (double)(int64_t)(t - q->from_ns)));
}

int64_t clock_align_path_move(const struct clock_align_path *path, uint64_t t)
{
	if (!path->count)
		return 0;
	/* The last piece starting at or before t; live times are mostly in the newest one. */
	size_t lo = 0, hi = path->count;
	if (path->pieces[hi - 1].from_ns <= t)
		lo = hi - 1;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (path->pieces[mid].from_ns <= t)
			lo = mid;
		else
			hi = mid;
	}
	return clock_align_piece_move(&path->pieces[lo], t);
}

uint64_t clock_align_path_unmove(const struct clock_align_path *path, uint64_t s)
{
	if (!path->count)
		return s;
	/* Piece i covers s from from_i + at_i on: those starts increase as the path does. */
	size_t lo = 0, hi = path->count;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		const struct clock_align_piece *q = &path->pieces[mid];
		if (q->from_ns + (uint64_t)q->at_ns <= s)
			lo = mid;
		else
			hi = mid;
	}
	const struct clock_align_piece *q = &path->pieces[lo];
	double into = (double)(int64_t)(s - (q->from_ns + (uint64_t)q->at_ns)) / (1 + q->slope);
	return q->from_ns + (uint64_t)llround(into);
}

void clock_align_path_steer(struct clock_align_path *path, uint64_t from_ns,
                            const struct clock_align_fit *fit, double max_rate)
{
	int64_t m0 = clock_align_path_move(path, from_ns);
	int64_t g0 = clock_align_move(fit, from_ns);
	double diff = (double)(int64_t)((uint64_t)g0 - (uint64_t)m0);
	const struct clock_align_piece *last = path->count ? &path->pieces[path->count - 1] : NULL;
	/* Already on the line (within a microsecond, at its rate): nothing to add. */
	if (last && last->from_ns <= from_ns && fabs(diff) <= 1000 && fabs(last->slope - fit->drift) < 1e-9)
		return;
	/* What was planned for times not seen yet is replaced. */
	while (path->count > 1 && path->pieces[path->count - 1].from_ns >= from_ns)
		path->count--;
	if (path->count == 1 && path->pieces[0].from_ns >= from_ns)
		path->count = 0;
	/* Bounded: the oldest half merges into the first piece kept (older times take its line). */
	if (path->count + 2 > CLOCK_ALIGN_PATH_MAX) {
		size_t drop = path->count / 2;
		memmove(path->pieces, path->pieces + drop, (path->count - drop) * sizeof *path->pieces);
		path->count -= drop;
	}
	if (fabs(diff) <= 1) {
		clock_align_path_push(path, from_ns, g0, fit->drift);
		return;
	}
	double slope = fit->drift + (diff > 0 ? max_rate : -max_rate);
	uint64_t t1 = from_ns + (uint64_t)ceil(fabs(diff) / max_rate);
	clock_align_path_push(path, from_ns, m0, slope);
	clock_align_path_push(path, t1, clock_align_move(fit, t1), fit->drift);
}

size_t clock_align_pair_nearest(const uint64_t *ref, size_t n_ref, const uint64_t *t, size_t n,
                                const struct clock_align_fit *fit, uint64_t tol_ns, uint64_t *ref_out,
                                uint64_t *t_out)
{
	size_t m = 0, j = 0, last = SIZE_MAX;
	for (size_t k = 0; k < n && n_ref; k++) {
		uint64_t p = t[k] + (uint64_t)clock_align_move(fit, t[k]);
		while (j < n_ref && ref[j] < p)
			j++;
		/* The two ref ends around p: the nearer is taken when the other is out of reach. */
		uint64_t d_after = j < n_ref ? ref[j] - p : UINT64_MAX;
		uint64_t d_before = j > 0 ? p - ref[j - 1] : UINT64_MAX;
		size_t pick = d_after <= d_before ? j : j - 1;
		uint64_t near = d_after <= d_before ? d_after : d_before;
		uint64_t far = d_after <= d_before ? d_before : d_after;
		if (near > tol_ns || far <= tol_ns || pick == last)
			continue;
		ref_out[m] = ref[pick];
		t_out[m] = t[k];
		m++;
		last = pick;
	}
	return m;
}

/* ---- a live view's alignment in its capture's manifest ---- */

#define CLOCK_ALIGN_MANIFEST_KEY       "clock_alignment="
#define CLOCK_ALIGN_MANIFEST_HOSTS_MAX 256

int clock_align_manifest_line(char *buf, size_t size, const char *host, const struct store_capture_clock *c)
{
	return snprintf(
	    buf, size,
	    CLOCK_ALIGN_MANIFEST_KEY "%s method=%s offset_ns=%lld correction_ns=%lld drift_ppb=%lld "
	                             "matched=%llu unmatched=%llu outliers=%llu residual_p50_ns=%lld "
	                             "residual_max_ns=%lld",
	    host, c->method ? c->method : "none", (long long)c->offset_ns, (long long)c->correction_ns,
	    (long long)c->drift_ppb, (unsigned long long)c->matched, (unsigned long long)c->unmatched,
	    (unsigned long long)c->outliers, (long long)c->residual_p50_ns, (long long)c->residual_max_ns);
}

/* Reads one "clock_alignment=" line (text after the key, n bytes) into c; 0, or -1 if malformed. */
static int clock_align_manifest_parse(const char *text, size_t n, struct store_capture_clock *c)
{
	static const char *const methods[] = {"reference", "collectives", "anchor", "none"};
	char line[512];
	if (n >= sizeof line)
		return -1;
	memcpy(line, text, n);
	line[n] = '\0';
	memset(c, 0, sizeof *c);
	char *save = NULL, *word = strtok_r(line, " ", &save);
	if (!word || strlen(word) >= sizeof c->host)
		return -1;
	snprintf(c->host, sizeof c->host, "%s", word);
	while ((word = strtok_r(NULL, " ", &save))) {
		char *eq = strchr(word, '=');
		if (!eq)
			return -1;
		*eq++ = '\0';
		if (strcmp(word, "method") == 0) {
			for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++)
				if (strcmp(eq, methods[i]) == 0)
					c->method = methods[i];
			continue;
		}
		char *end;
		long long v = strtoll(eq, &end, 10);
		if (*end)
			return -1;
		if (strcmp(word, "offset_ns") == 0)
			c->offset_ns = v;
		else if (strcmp(word, "correction_ns") == 0)
			c->correction_ns = v;
		else if (strcmp(word, "drift_ppb") == 0)
			c->drift_ppb = v;
		else if (strcmp(word, "matched") == 0)
			c->matched = (uint64_t)v;
		else if (strcmp(word, "unmatched") == 0)
			c->unmatched = (uint64_t)v;
		else if (strcmp(word, "outliers") == 0)
			c->outliers = (uint64_t)v;
		else if (strcmp(word, "residual_p50_ns") == 0)
			c->residual_p50_ns = v;
		else if (strcmp(word, "residual_max_ns") == 0)
			c->residual_max_ns = v;
	}
	return c->method ? 0 : -1;
}

int clock_align_manifest_apply(const char *manifest, struct store *st)
{
	struct store_capture_clock *hosts = NULL;
	size_t count = 0, cap = 0;
	size_t key = strlen(CLOCK_ALIGN_MANIFEST_KEY);
	for (const char *line = manifest; line && *line;) {
		const char *nl = strchr(line, '\n');
		size_t n = nl ? (size_t)(nl - line) : strlen(line);
		struct store_capture_clock c;
		if (n > key && strncmp(line, CLOCK_ALIGN_MANIFEST_KEY, key) == 0 &&
		    clock_align_manifest_parse(line + key, n - key, &c) == 0) {
			size_t i = 0;
			while (i < count && strcmp(hosts[i].host, c.host) != 0)
				i++;
			if (i == count && count < CLOCK_ALIGN_MANIFEST_HOSTS_MAX) {
				if (count == cap)
					xgrow((void **)&hosts, &cap, count + 1, sizeof *hosts);
				count++;
			}
			if (i < count)
				hosts[i] = c; /* the newest line of a host wins */
		}
		line = nl ? nl + 1 : NULL;
	}
	for (size_t i = 0; i < count; i++)
		store_capture_set_clock(st, (uint32_t)i, &hosts[i]);
	free(hosts);
	return (int)count;
}
