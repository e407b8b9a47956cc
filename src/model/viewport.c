#include "cuscope/viewport.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "cuscope/timerow.h"

typedef __int128 i128; /* ns × cols overflows 64 bits for long captures on wide terminals */

/* Floor division for a possibly negative numerator and a positive denominator. */
static i128 floor_div(i128 a, i128 b)
{
	i128 q = a / b;
	if ((a % b != 0) && (a < 0))
		q--;
	return q;
}

/* Ceiling division for a possibly negative numerator and a positive denominator. */
static i128 ceil_div(i128 a, i128 b)
{
	return -floor_div(-a, b);
}

static uint64_t sat_u64(i128 v)
{
	if (v < 0)
		return 0;
	if (v > (i128)UINT64_MAX)
		return UINT64_MAX;
	return (uint64_t)v;
}

void viewport_set(struct viewport *vp, uint64_t start_ns, uint64_t span_ns, int cols)
{
	vp->start_ns = start_ns;
	vp->span_ns = span_ns ? span_ns : 1;
	vp->cols = cols > 0 ? cols : 1;
}

uint64_t viewport_end_ns(const struct viewport *vp)
{
	return sat_u64((i128)vp->start_ns + vp->span_ns);
}

int64_t viewport_col_of(const struct viewport *vp, uint64_t ns)
{
	i128 d = (i128)ns - (i128)vp->start_ns;
	i128 c = floor_div(d * vp->cols, vp->span_ns);
	if (c > INT64_MAX / 2)
		return INT64_MAX / 2;
	if (c < INT64_MIN / 2)
		return INT64_MIN / 2;
	return (int64_t)c;
}

int viewport_band_cols(const struct viewport *vp, uint64_t memory_from_ns)
{
	if (!memory_from_ns || memory_from_ns <= vp->start_ns || vp->cols <= 0)
		return 0;
	/* A column holding any time before memory_from_ns is in the band: part of it is gone. */
	int64_t c = viewport_col_of(vp, memory_from_ns - 1) + 1;
	return c < 0 ? 0 : c > vp->cols ? vp->cols : (int)c;
}

/* Ceiling, so that ns lies in column c exactly when ns_of(c) <= ns < ns_of(c + 1). */
uint64_t viewport_ns_of(const struct viewport *vp, int64_t col)
{
	i128 off = ceil_div((i128)col * vp->span_ns, vp->cols);
	return sat_u64((i128)vp->start_ns + off);
}

uint64_t viewport_ns_per_col(const struct viewport *vp)
{
	return (uint64_t)ceil_div(vp->span_ns, vp->cols) ?: 1;
}

void viewport_zoom(struct viewport *vp, double factor, uint64_t around_ns, uint64_t min_span_ns,
                   uint64_t max_span_ns)
{
	if (min_span_ns < 1)
		min_span_ns = 1;
	if (max_span_ns < min_span_ns)
		max_span_ns = min_span_ns;
	double want = (double)vp->span_ns * factor;
	uint64_t span;
	if (!(want >= (double)min_span_ns)) /* also catches NaN */
		span = min_span_ns;
	else if (want >= (double)max_span_ns)
		span = max_span_ns;
	else
		span = (uint64_t)(want + 0.5);
	/* The anchor keeps its fraction of the width: start' = a - (a - start) * span' / span. */
	i128 off = (i128)around_ns - (i128)vp->start_ns;
	i128 scaled = floor_div(off * (i128)span, vp->span_ns);
	vp->start_ns = sat_u64((i128)around_ns - scaled);
	vp->span_ns = span;
}

void viewport_pan(struct viewport *vp, int64_t cols)
{
	i128 off = floor_div((i128)cols * vp->span_ns, vp->cols);
	vp->start_ns = sat_u64((i128)vp->start_ns + off);
}

/* Digits after the decimal point needed to print multiples of step_ns as seconds. */
static int step_decimals(uint64_t step_ns)
{
	int d = 9;
	while (d > 0 && step_ns % 10 == 0) {
		step_ns /= 10;
		d--;
	}
	return d;
}

/* Formats signed ns relative to the origin as seconds with the given decimals, exactly. */
static void format_seconds(char *buf, size_t size, i128 rel_ns, int decimals)
{
	const char *sign = rel_ns < 0 ? "-" : "";
	unsigned __int128 a = rel_ns < 0 ? (unsigned __int128)-rel_ns : (unsigned __int128)rel_ns;
	unsigned long long sec = (unsigned long long)(a / 1000000000u);
	unsigned long long frac = (unsigned long long)(a % 1000000000u);
	if (decimals <= 0) {
		snprintf(buf, size, "%s%llu", sign, sec);
		return;
	}
	if (decimals > 9)
		decimals = 9;
	for (int i = decimals; i < 9; i++)
		frac /= 10;
	snprintf(buf, size, "%s%llu.%0*llu", sign, sec, decimals & 15, frac);
}

uint64_t viewport_tick_step(const struct viewport *vp, uint64_t origin_ns, int *decimals)
{
	static const uint64_t mant[] = {1, 2, 5};
	i128 lo = (i128)vp->start_ns - origin_ns;
	i128 hi = (i128)viewport_end_ns(vp) - origin_ns;
	uint64_t step = 1;
	for (uint64_t pow = 1; pow <= 100000000000000000ull; pow *= 10) {
		for (size_t m = 0; m < sizeof mant / sizeof mant[0]; m++) {
			step = mant[m] * pow;
			int d = step_decimals(step);
			char a[32], b[32];
			format_seconds(a, sizeof a, lo, d);
			format_seconds(b, sizeof b, hi, d);
			size_t width = strlen(a) > strlen(b) ? strlen(a) : strlen(b);
			/* Cells between ticks: step * cols / span; room for the label plus a gap of 2. */
			if ((i128)step * vp->cols >= (i128)(width + 2) * vp->span_ns) {
				if (decimals)
					*decimals = d;
				return step;
			}
		}
	}
	if (decimals)
		*decimals = step_decimals(step);
	return step;
}

size_t viewport_ticks(const struct viewport *vp, uint64_t origin_ns, struct viewport_tick *out, size_t max)
{
	int decimals;
	uint64_t step = viewport_tick_step(vp, origin_ns, &decimals);
	i128 rel = ceil_div((i128)vp->start_ns - origin_ns, step) * step;
	size_t n = 0;
	while (n < max) {
		i128 t = rel + (i128)origin_ns;
		if (t < 0) {
			rel += step;
			continue;
		}
		int64_t col = viewport_col_of(vp, (uint64_t)t);
		if (col >= vp->cols)
			break;
		if (col >= 0) {
			out[n].col = (int)col;
			format_seconds(out[n].label, sizeof out[n].label, rel, decimals);
			n++;
		}
		rel += step;
	}
	return n;
}

/* rel_ns / unit_ns with the given decimals, exactly. */
static void format_scaled(char *buf, size_t size, i128 rel_ns, uint64_t unit_ns, int decimals)
{
	const char *sign = rel_ns < 0 ? "-" : "";
	unsigned __int128 a = rel_ns < 0 ? (unsigned __int128)-rel_ns : (unsigned __int128)rel_ns;
	unsigned long long whole = (unsigned long long)(a / unit_ns);
	unsigned long long frac = (unsigned long long)(a % unit_ns);
	int unit_digits = 0;
	for (uint64_t u = unit_ns; u > 1; u /= 10)
		unit_digits++;
	if (decimals <= 0) {
		snprintf(buf, size, "%s%llu", sign, whole);
		return;
	}
	if (decimals > unit_digits)
		decimals = unit_digits;
	for (int i = decimals; i < unit_digits; i++)
		frac /= 10;
	snprintf(buf, size, "%s%llu.%0*llu", sign, whole, decimals & 15, frac);
}

size_t viewport_axis_ticks(const struct viewport *vp, uint64_t origin_ns, struct viewport_tick *out,
                           size_t max, struct viewport_axis *axis)
{
	static const uint64_t mant[] = {1, 2, 5};
	uint64_t step = 1, unit = 1000000000ull;
	int decimals = 0;
	i128 base_rel = 0;
	for (uint64_t pow = 1; pow <= 100000000000000000ull; pow *= 10) {
		int found = 0;
		for (size_t m = 0; m < 3 && !found; m++) {
			step = mant[m] * pow;
			unit = step >= 100000000ull ? 1000000000ull
			       : step >= 100000ull  ? 1000000ull
			                            : 1000ull;
			/* The base: the view start floored to a whole unit above ours (1 s for ms, 1 ms for
			 * us). */
			base_rel = 0;
			if (unit != 1000000000ull) {
				i128 start_rel = (i128)vp->start_ns - origin_ns;
				base_rel = floor_div(start_rel, (i128)unit * 1000) * (i128)unit * 1000;
			}
			int unit_digits = unit == 1000000000ull ? 9 : unit == 1000000ull ? 6 : 3;
			decimals = step_decimals(step) - (9 - unit_digits);
			if (decimals < 0)
				decimals = 0;
			char a[40], b[40];
			format_scaled(a, sizeof a, (i128)vp->start_ns - origin_ns - base_rel, unit, decimals);
			format_scaled(b, sizeof b, (i128)viewport_end_ns(vp) - origin_ns - base_rel, unit,
			              decimals);
			size_t width = strlen(a) > strlen(b) ? strlen(a) : strlen(b);
			if ((i128)step * vp->cols >= (i128)(width + 2) * vp->span_ns)
				found = 1;
		}
		if (found)
			break;
	}
	memset(axis, 0, sizeof *axis);
	snprintf(axis->unit, sizeof axis->unit, "%s",
	         unit == 1000000000ull ? "s"
	         : unit == 1000000ull  ? "ms"
	                               : "us");
	axis->base_ns = (uint64_t)((i128)origin_ns + base_rel);
	if (unit != 1000000000ull) {
		format_scaled(axis->base, sizeof axis->base - 1, base_rel, 1000000000ull,
		              unit == 1000000ull ? 0 : 3);
		strcat(axis->base, "s");
	}
	i128 rel = ceil_div((i128)vp->start_ns - origin_ns - base_rel, step) * step;
	size_t n = 0;
	while (n < max) {
		i128 t = rel + base_rel + (i128)origin_ns;
		if (t < 0) {
			rel += step;
			continue;
		}
		int64_t col = viewport_col_of(vp, (uint64_t)t);
		if (col >= vp->cols)
			break;
		if (col >= 0) {
			out[n].col = (int)col;
			format_scaled(out[n].label, sizeof out[n].label, rel, unit, decimals);
			n++;
		}
		rel += step;
	}
	return n;
}

int viewport_is_folded(const struct viewport *vp, uint64_t start_ns, uint64_t end_ns)
{
	uint64_t width = end_ns > start_ns ? end_ns - start_ns : 0;
	/* width < span / cols, kept in integers */
	return (i128)width * vp->cols < (i128)vp->span_ns;
}

/* Ranges and GPU ops both begin with start_ns and end_ns: folding reads only those. */
_Static_assert(offsetof(struct store_range, start_ns) == 0 && offsetof(struct store_range, end_ns) == 8,
               "store_range layout");
_Static_assert(offsetof(struct store_gpu_op, start_ns) == 0 && offsetof(struct store_gpu_op, end_ns) == 8,
               "store_gpu_op layout");
_Static_assert(offsetof(struct store_call, start_ns) == 0 && offsetof(struct store_call, end_ns) == 8,
               "store_call layout");

struct viewport_span {
	uint64_t start_ns, end_ns;
};

static uint64_t el_start(const char *base, size_t stride, size_t i)
{
	uint64_t v;
	memcpy(&v, base + i * stride, sizeof v);
	return v;
}

static uint64_t el_end(const char *base, size_t stride, size_t i)
{
	uint64_t v;
	memcpy(&v, base + i * stride + 8, sizeof v);
	return v;
}

static size_t lower_bound_at(const char *ranges, size_t stride, size_t n, size_t from, uint64_t ns)
{
	if (from >= n) /* ranges may be NULL: never NULL + 0 */
		return from;
	return from + timerow_bound(ranges + from * stride, n - from, stride, TIMEROW_START, ns, 0);
}

/*
 * First range still visible at the view start: ends after it, or starts at/after it (marks). Both
 * fields are sorted on a row, so that is the earlier of the two bounds.
 */
static size_t first_visible(const char *ranges, size_t stride, size_t n, uint64_t start_ns)
{
	size_t ends_after = timerow_bound(ranges, n, stride, TIMEROW_END, start_ns, 1);
	size_t starts_at = timerow_bound(ranges, n, stride, TIMEROW_START, start_ns, 0);
	return ends_after < starts_at ? ends_after : starts_at;
}

static size_t fold_at(const struct viewport *vp, const char *ranges, size_t stride, size_t n,
                      struct viewport_seg *out, size_t max)
{
	uint64_t view_end = viewport_end_ns(vp);
	size_t nseg = 0;
	int cursor = 0; /* first cell not yet taken */
	size_t i = first_visible(ranges, stride, n, vp->start_ns);

	while (i < n && nseg < max && cursor < vp->cols) {
		const struct viewport_span r = {el_start(ranges, stride, i), el_end(ranges, stride, i)};
		if (r.start_ns >= view_end)
			break;
		int64_t c = viewport_col_of(vp, r.start_ns);
		if (c < 0)
			c = 0;
		if (!viewport_is_folded(vp, r.start_ns, r.end_ns)) {
			int64_t c0 = c < cursor ? cursor : c;
			int64_t c1 = viewport_col_of(vp, r.end_ns - 1);
			if (c1 >= vp->cols)
				c1 = vp->cols - 1;
			if (c1 < c0) {
				/* Nothing of it left outside cells already drawn: count it there. */
				if (nseg && out[nseg - 1].kind == VIEWPORT_SEG_FOLD)
					out[nseg - 1].count++;
				i++;
				continue;
			}
			out[nseg++] = (struct viewport_seg){
			    .kind = VIEWPORT_SEG_BOX,
			    .col0 = (int)c0,
			    .col1 = (int)c1 + 1,
			    .clip_left = r.start_ns<vp->start_ns, .clip_right = r.end_ns> view_end,
			    .first = i,
			    .count = 1,
			};
			cursor = (int)c1 + 1;
			i++;
			continue;
		}
		if (c < cursor) {
			/* Narrow ranges starting inside a cell already drawn: skip them in one jump. */
			size_t j = lower_bound_at(ranges, stride, n, i, viewport_ns_of(vp, cursor));
			if (j <= i)
				j = i + 1;
			if (nseg && out[nseg - 1].kind == VIEWPORT_SEG_FOLD)
				out[nseg - 1].count += j - i;
			i = j;
			continue;
		}
		/* Everything starting in cell c folds into it, except a wide last one, which gets the
		 * cells after (it necessarily reaches past this cell). */
		size_t j = lower_bound_at(ranges, stride, n, i, viewport_ns_of(vp, c + 1));
		if (j <= i)
			j = i + 1;
		if (j - i > 1 &&
		    !viewport_is_folded(vp, el_start(ranges, stride, j - 1), el_end(ranges, stride, j - 1)))
			j--;
		out[nseg++] = (struct viewport_seg){
		    .kind = VIEWPORT_SEG_FOLD,
		    .col0 = (int)c,
		    .col1 = (int)c + 1,
		    .first = i,
		    .count = j - i,
		};
		cursor = (int)c + 1;
		i = j;
	}
	return nseg;
}

size_t viewport_lower_bound(const struct store_range *ranges, size_t n, size_t from, uint64_t ns)
{
	return lower_bound_at((const char *)ranges, sizeof *ranges, n, from, ns);
}

size_t viewport_fold(const struct viewport *vp, const struct store_range *ranges, size_t n,
                     struct viewport_seg *out, size_t max)
{
	return fold_at(vp, (const char *)ranges, sizeof *ranges, n, out, max);
}

size_t viewport_fold_gpu(const struct viewport *vp, const struct store_gpu_op *ops, size_t n,
                         struct viewport_seg *out, size_t max)
{
	return fold_at(vp, (const char *)ops, sizeof *ops, n, out, max);
}

size_t viewport_fold_calls(const struct viewport *vp, const struct store_call *calls, size_t n,
                           struct viewport_seg *out, size_t max)
{
	return fold_at(vp, (const char *)calls, sizeof *calls, n, out, max);
}
