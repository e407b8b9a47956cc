/*
 * GPU utilization from the store's stream rows: the fraction of a time window covered by the union
 * of one kind of op (kernels = compute busy, memcpy = copy busy) over several stream rows. Exact by
 * merging, or by sampling time points (each checked by binary search per row), which keeps a frame
 * O(cells · samples · rows · log n) however many ops the window holds.
 */
#ifndef CUSCOPE_UTIL_H
#define CUSCOPE_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "cuscope/store.h"

struct util_row {
	const struct store_gpu_op *ops; /* sorted by start, non-overlapping (one store gpu row) */
	size_t n;
};

/* Nanoseconds of [from, to) covered by at least one op of `kind` on any row (exact, O(n log n)). */
uint64_t util_busy_exact(const struct util_row *rows, size_t k, uint8_t kind, uint64_t from, uint64_t to);
/* Whether time t is inside an op of `kind` on any row. */
int util_covered(const struct util_row *rows, size_t k, uint8_t kind, uint64_t t);
/* Busy fraction of [from, to) estimated from `samples` stratified points (unbiased). */
double util_busy_sampled(const struct util_row *rows, size_t k, uint8_t kind, uint64_t from, uint64_t to,
                         int samples);
/* Ops of the rows overlapping [from, to) (binary searches only). */
size_t util_count(const struct util_row *rows, size_t k, uint64_t from, uint64_t to);
/*
 * Busy fraction of [from, to): exact when at most exact_max ops overlap the window, else sampled
 * with `samples` points.
 */
double util_busy(const struct util_row *rows, size_t k, uint8_t kind, uint64_t from, uint64_t to,
                 size_t exact_max, int samples);

#endif
