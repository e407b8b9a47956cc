#include "cuscope/u64.h"

#include <stdlib.h>
#include <string.h>

int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

void u64_sort(uint64_t *v, size_t n)
{
	/* LSD radix sort, a byte a pass, skipping the bytes every value shares (the high bytes of
	 * durations): a few linear passes where qsort costs a comparison call per step. */
	uint64_t *tmp = n >= 256 ? malloc(n * sizeof *tmp) : NULL;
	if (!tmp) {
		if (n > 1)
			qsort(v, n, sizeof *v, u64_cmp);
		return;
	}
	size_t count[8][256];
	memset(count, 0, sizeof count);
	for (size_t i = 0; i < n; i++)
		for (int b = 0; b < 8; b++)
			count[b][(v[i] >> (8 * b)) & 255]++;
	uint64_t *src = v, *dst = tmp;
	for (int b = 0; b < 8; b++) {
		if (count[b][(v[0] >> (8 * b)) & 255] == n)
			continue; /* one value of this byte: the pass would change nothing */
		size_t at = 0;
		for (int d = 0; d < 256; d++) {
			size_t c = count[b][d];
			count[b][d] = at;
			at += c;
		}
		for (size_t i = 0; i < n; i++)
			dst[count[b][(src[i] >> (8 * b)) & 255]++] = src[i];
		uint64_t *t = src;
		src = dst;
		dst = t;
	}
	if (src != v)
		memcpy(v, src, n * sizeof *v);
	free(tmp);
}

size_t u64_rank(size_t n, double q)
{
	/* ceil, with slack for the binary error of q * n (0.29 * 100 is 28.999999999999996). */
	size_t rank = (size_t)(q * (double)n + 0.999999999);
	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	return rank;
}

uint64_t u64_percentile(const uint64_t *sorted, size_t n, double q)
{
	return n ? sorted[u64_rank(n, q) - 1] : 0;
}
