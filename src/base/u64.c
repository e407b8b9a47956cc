#include "cuscope/u64.h"

#include <stdlib.h>

int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

void u64_sort(uint64_t *v, size_t n)
{
	if (n > 1)
		qsort(v, n, sizeof *v, u64_cmp);
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
