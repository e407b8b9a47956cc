#include "cuscope/timerow.h"

size_t timerow_fit(const void *v, size_t n, size_t stride, uint64_t start, uint64_t end)
{
	const unsigned char *base = v;
	uint64_t x;
	size_t pos = n;
	/* Rows mostly grow at the end: search only when the new element starts before the last one. */
	if (n) {
		memcpy(&x, base + (n - 1) * stride + TIMEROW_START, sizeof x);
		if (x > start)
			pos = timerow_bound(v, n, stride, TIMEROW_START, start, 1);
	}
	if (pos > 0) {
		memcpy(&x, base + (pos - 1) * stride + TIMEROW_END, sizeof x);
		if (x > start)
			return SIZE_MAX;
	}
	if (pos < n) {
		memcpy(&x, base + pos * stride + TIMEROW_START, sizeof x);
		if (x < end)
			return SIZE_MAX;
	}
	return pos;
}

void timerow_insert(void *v, size_t *n, size_t stride, size_t pos, const void *elem)
{
	unsigned char *base = v;
	memmove(base + (pos + 1) * stride, base + pos * stride, (*n - pos) * stride);
	memcpy(base + pos * stride, elem, stride);
	(*n)++;
}
