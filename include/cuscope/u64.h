/*
 * Sorted uint64_t values (durations): the one comparator and the one percentile definition, so that
 * `cuscope stats`, `cuscope diff` and the UI's NVTX panel agree on what p50 means.
 */
#ifndef CUSCOPE_U64_H
#define CUSCOPE_U64_H

#include <stddef.h>
#include <stdint.h>

/* qsort comparator of uint64_t, ascending. */
int u64_cmp(const void *a, const void *b);
/* Sorts v[0..n) ascending (radix sort with a temporary copy; qsort where that cannot be had). */
void u64_sort(uint64_t *v, size_t n);
/* 1-based nearest rank of quantile q in (0, 1] among n values (n >= 1): ceil(q * n), in [1, n]. */
size_t u64_rank(size_t n, double q);
/* Nearest-rank quantile q in (0, 1] of sorted[0..n); 0 when n is 0. */
uint64_t u64_percentile(const uint64_t *sorted, size_t n, double q);

#endif
