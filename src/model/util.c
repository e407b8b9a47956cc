#include "cuscope/util.h"

#include <stdlib.h>

#include "cuscope/xalloc.h"
#include "cuscope/timerow.h"

struct util_iv {
	uint64_t a, b;
};

static int util_iv_cmp(const void *x, const void *y)
{
	const struct util_iv *p = x, *q = y;
	return p->a < q->a ? -1 : p->a > q->a;
}

/* First op of a row whose end is after t (rows don't overlap, so ends are sorted too). */
static size_t util_first_ending_after(const struct store_gpu_op *ops, size_t n, uint64_t t)
{
	return timerow_bound(ops, n, sizeof *ops, TIMEROW_END, t, 1);
}

uint64_t util_busy_exact(const struct util_row *rows, size_t k, uint8_t kind, uint64_t from, uint64_t to)
{
	if (to <= from)
		return 0;
	size_t cap = 0, n = 0;
	struct util_iv *iv = NULL;
	for (size_t r = 0; r < k; r++) {
		for (size_t i = util_first_ending_after(rows[r].ops, rows[r].n, from);
		     i < rows[r].n && rows[r].ops[i].start_ns < to; i++) {
			const struct store_gpu_op *op = &rows[r].ops[i];
			if (op->kind != kind || op->end_ns <= op->start_ns)
				continue;
			xgrow((void **)&iv, &cap, n + 1, sizeof *iv);
			iv[n++] = (struct util_iv){op->start_ns < from ? from : op->start_ns,
			                           op->end_ns > to ? to : op->end_ns};
		}
	}
	if (n > 1)
		qsort(iv, n, sizeof *iv, util_iv_cmp);
	uint64_t busy = 0, cur_a = 0, cur_b = 0;
	for (size_t i = 0; i < n; i++) {
		if (i == 0 || iv[i].a > cur_b) {
			busy += cur_b - cur_a;
			cur_a = iv[i].a;
			cur_b = iv[i].b;
		} else if (iv[i].b > cur_b) {
			cur_b = iv[i].b;
		}
	}
	busy += cur_b - cur_a;
	free(iv);
	return busy;
}

int util_covered(const struct util_row *rows, size_t k, uint8_t kind, uint64_t t)
{
	for (size_t r = 0; r < k; r++) {
		size_t i = util_first_ending_after(rows[r].ops, rows[r].n, t);
		if (i < rows[r].n && rows[r].ops[i].start_ns <= t && rows[r].ops[i].kind == kind)
			return 1;
	}
	return 0;
}

double util_busy_sampled(const struct util_row *rows, size_t k, uint8_t kind, uint64_t from, uint64_t to,
                         int samples)
{
	if (to <= from || samples <= 0)
		return 0;
	double w = (double)(to - from) / samples;
	int hit = 0;
	for (int j = 0; j < samples; j++) {
		/* Stratified: one point per stratum, offset by the golden-ratio sequence (no aliasing
		 * with periodic work the way evenly spaced points would). */
		double f = (double)j * 0.6180339887498949 + 0.5;
		f -= (double)(uint64_t)f;
		uint64_t t = from + (uint64_t)(((double)j + f) * w);
		if (t >= to)
			t = to - 1;
		hit += util_covered(rows, k, kind, t);
	}
	return (double)hit / samples;
}

size_t util_count(const struct util_row *rows, size_t k, uint64_t from, uint64_t to)
{
	size_t n = 0;
	for (size_t r = 0; r < k; r++) {
		size_t a = util_first_ending_after(rows[r].ops, rows[r].n, from);
		size_t b = timerow_bound(rows[r].ops, rows[r].n, sizeof *rows[r].ops, TIMEROW_START, to, 0);
		n += b > a ? b - a : 0;
	}
	return n;
}

double util_busy(const struct util_row *rows, size_t k, uint8_t kind, uint64_t from, uint64_t to,
                 size_t exact_max, int samples)
{
	if (to <= from)
		return 0;
	if (util_count(rows, k, from, to) <= exact_max)
		return (double)util_busy_exact(rows, k, kind, from, to) / (double)(to - from);
	return util_busy_sampled(rows, k, kind, from, to, samples);
}
