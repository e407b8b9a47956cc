/*
 * Sorted time rows: arrays whose elements begin with `uint64_t start_ns, end_ns` (ranges, GPU ops,
 * calls) or with one `uint64_t` time (samples, readings, symbols), sorted by that first field. One
 * binary search and one sorted insert for the store, the model and the collector. Nothing here
 * allocates: the caller owns the array and its capacity.
 */
#ifndef CUSCOPE_TIMEROW_H
#define CUSCOPE_TIMEROW_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Which time field of an element a search reads (byte offset into the element). */
#define TIMEROW_START 0 /* start_ns, or the one time of a point */
#define TIMEROW_END   8 /* end_ns */

/*
 * First index in v[0..n) (elements of `stride` bytes) whose time field at `field` is > t
 * (after != 0) or >= t (after == 0); n when there is none. The field must be sorted over the row
 * (ends are, on a row whose elements never overlap). Inline: it is on every query's path.
 */
static inline size_t timerow_bound(const void *v, size_t n, size_t stride, size_t field, uint64_t t,
                                   int after)
{
	const unsigned char *base = v;
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint64_t x;
		memcpy(&x, base + mid * stride + field, sizeof x);
		if (after ? x > t : x >= t)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

/*
 * Where [start, end) goes in a row sorted by start whose elements never overlap: after every
 * element starting at or before start. Returns SIZE_MAX when it would overlap a neighbour.
 */
size_t timerow_fit(const void *v, size_t n, size_t stride, uint64_t start, uint64_t end);
/* Opens a gap at pos in v[0..*n) (room for *n + 1 elements) and copies elem into it; *n grows by one. */
void timerow_insert(void *v, size_t *n, size_t stride, size_t pos, const void *elem);

#endif
