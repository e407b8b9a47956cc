/* Histogram buckets and percentiles against a sorted reference; incremental NVTX stats. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <math.h>

#include "cuscope/histogram.h"
#include "cuscope/nvtxstats.h"
#include "cuscope/u64.h"

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void test_bucket_bounds(void **state)
{
	(void)state;
	/* Every value lies in [lo, lo + width) of its bucket, and buckets are ordered. */
	uint64_t vals[] = {0,
	                   1,
	                   15,
	                   16,
	                   17,
	                   31,
	                   32,
	                   33,
	                   1000,
	                   1023,
	                   1024,
	                   999999,
	                   1000000,
	                   123456789,
	                   (1ull << 40) + 12345,
	                   UINT64_MAX / 4};
	size_t prev = 0;
	for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
		size_t b = hist_bucket_of(vals[i]);
		assert_true(b < HIST_BUCKETS);
		assert_true(hist_bucket_lo(b) <= vals[i]);
		assert_true(vals[i] - hist_bucket_lo(b) < hist_bucket_width(b));
		assert_true(b >= prev);
		prev = b;
		/* width is at most 1/16 of the bucket's low edge: the documented bound */
		if (vals[i] >= 16)
			assert_true(hist_bucket_width(b) * 16 <= hist_bucket_lo(b));
	}
	/* Adjacent buckets tile the line. */
	for (size_t b = 0; b + 1 < 500; b++)
		assert_int_equal(hist_bucket_lo(b) + hist_bucket_width(b), hist_bucket_lo(b + 1));
}

/* Nearest-rank percentile of a sorted array. */
static uint64_t ref_pct(const uint64_t *v, size_t n, double p)
{
	size_t rank = (size_t)ceil(p / 100.0 * (double)n);
	if (rank < 1)
		rank = 1;
	return v[rank - 1];
}

static void check_against_reference(uint64_t *v, size_t n)
{
	struct hist *h = malloc(sizeof *h);
	hist_init(h);
	for (size_t i = 0; i < n; i++)
		hist_add(h, v[i]);
	qsort(v, n, sizeof *v, cmp_u64);
	assert_int_equal(h->count, n);
	assert_int_equal(h->min_ns, v[0]);
	assert_int_equal(h->max_ns, v[n - 1]);
	double ps[] = {1, 10, 25, 50, 75, 90, 99, 99.9};
	for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) {
		uint64_t want = ref_pct(v, n, ps[i]), got = hist_percentile(h, ps[i]);
		uint64_t diff = got > want ? got - want : want - got;
		if (diff > want / 32 + 1)
			fail_msg("p%.1f: got %llu want %llu (n %zu)", ps[i], (unsigned long long)got,
			         (unsigned long long)want, n);
	}
	assert_int_equal(hist_percentile(h, 100), v[n - 1]);
	uint64_t bins[10];
	uint64_t top = hist_coarse(h, 10, bins);
	uint64_t sum = 0;
	for (int i = 0; i < 10; i++) {
		sum += bins[i];
		assert_true(bins[i] <= top);
	}
	assert_int_equal(sum, n);
	free(h);
}

static void test_percentiles_uniform(void **state)
{
	(void)state;
	size_t n = 10001;
	uint64_t *v = malloc(n * sizeof *v);
	srand(1);
	for (size_t i = 0; i < n; i++)
		v[i] = 1000 + (uint64_t)rand() % 50000000;
	check_against_reference(v, n);
	free(v);
}

static void test_percentiles_skewed(void **state)
{
	(void)state;
	/* Log-normal-ish: most steps ~40 ms, a slow tail to seconds, and tiny values. */
	size_t n = 5000;
	uint64_t *v = malloc(n * sizeof *v);
	srand(7);
	for (size_t i = 0; i < n; i++) {
		uint64_t base = i % 50 == 0 ? 900000000ull : i % 7 == 0 ? 5 : 40000000ull;
		v[i] = base + (uint64_t)rand() % (base / 3 + 1);
	}
	check_against_reference(v, n);
	free(v);
}

static void test_small_and_empty(void **state)
{
	(void)state;
	struct hist h;
	hist_init(&h);
	assert_int_equal(hist_percentile(&h, 50), 0);
	hist_add(&h, 7);
	assert_int_equal(hist_percentile(&h, 50), 7);
	assert_int_equal(hist_percentile(&h, 99), 7);
	uint64_t v[] = {3, 9, 1};
	check_against_reference(v, 3);
}

static void test_nvtx_stats(void **state)
{
	(void)state;
	struct nvtx_stats s;
	nvtx_stats_init(&s);
	for (int i = 0; i < 1000; i++) {
		nvtx_stats_add(&s, 0, 1, 0, 5, 0, 1000 * (uint64_t)i, 1000 * (uint64_t)i + 100 + (uint64_t)i);
		nvtx_stats_add(&s, 0, 1, 1, 6, 2, 1000 * (uint64_t)i, 1000 * (uint64_t)i + 10);
	}
	nvtx_stats_add(&s, 0, 2, 0, 5, 3, 0, 1); /* same name, other domain: its own row */
	assert_int_equal(s.count, 3);
	const struct nvtx_stat *e = nvtx_stats_find(&s, 5, 0);
	assert_non_null(e);
	assert_int_equal(e->hist.count, 1000);
	assert_int_equal(e->hist.max_ns, 1099);
	assert_int_equal(e->slow_start_ns, 999000);
	assert_int_equal(e->lane, 1);
	assert_null(nvtx_stats_find(&s, 7, 0));
	size_t order[3];
	nvtx_stats_order(&s, order);
	assert_int_equal(s.v[order[0]]->name_id, 5); /* largest total first */
	assert_int_equal(s.v[order[1]]->name_id, 6);
	nvtx_stats_fini(&s);
}

/* The NVTX panel's percentiles are the numbers `cuscope stats` prints (u64_percentile over the
 * sorted durations), also after ranges arrive between two frames (the sorted prefix is merged). */
static void test_nvtx_panel_matches_stats(void **state)
{
	(void)state;
	struct nvtx_stats s;
	nvtx_stats_init(&s);
	uint64_t *all = malloc(3000 * sizeof *all);
	size_t n = 0;
	const double ps[] = {1, 10, 50, 90, 99, 99.9};
	srand(7);
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < 1000; i++) {
			/* A spread inside few buckets, so the bucket midpoint is not the answer. */
			uint64_t d = 1000 + (uint64_t)(rand() % 1000);
			nvtx_stats_add(&s, 0, 1, 0, 5, 0, 10, 10 + d);
			all[n++] = d;
		}
		uint64_t *sorted = malloc(n * sizeof *sorted);
		memcpy(sorted, all, n * sizeof *sorted);
		u64_sort(sorted, n);
		const struct nvtx_stat *e = nvtx_stats_find(&s, 5, 0);
		assert_true(hist_is_exact(&e->hist));
		for (size_t k = 0; k < sizeof ps / sizeof ps[0]; k++)
			assert_int_equal(hist_percentile(&e->hist, ps[k]),
			                 u64_percentile(sorted, n, ps[k] / 100));
		free(sorted);
	}
	free(all);
	nvtx_stats_fini(&s);
}

/* Kept durations are bounded: the entry that passes the bound estimates (within 1/32), and says so. */
static void test_nvtx_exact_bound(void **state)
{
	(void)state;
	struct nvtx_stats s;
	nvtx_stats_init(&s);
	s.exact_max = 100;
	for (uint64_t i = 0; i < 150; i++)
		nvtx_stats_add(&s, 0, 1, 0, 5, 0, 0, 1000 + i);
	const struct nvtx_stat *e = nvtx_stats_find(&s, 5, 0);
	assert_false(hist_is_exact(&e->hist));
	assert_null(e->hist.values);
	uint64_t p50 = hist_percentile(&e->hist, 50), want = 1074;
	assert_true(p50 * 32 >= want * 31 && p50 * 32 <= want * 33);
	assert_int_equal(s.exact_values, 0);
	/* The room it gave back serves the next names. */
	nvtx_stats_add(&s, 0, 1, 0, 6, 0, 0, 1234);
	assert_true(hist_is_exact(&nvtx_stats_find(&s, 6, 0)->hist));
	assert_int_equal(hist_percentile(&nvtx_stats_find(&s, 6, 0)->hist, 50), 1234);
	nvtx_stats_fini(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_bucket_bounds),      cmocka_unit_test(test_percentiles_uniform),
	    cmocka_unit_test(test_percentiles_skewed), cmocka_unit_test(test_small_and_empty),
	    cmocka_unit_test(test_nvtx_stats),         cmocka_unit_test(test_nvtx_panel_matches_stats),
	    cmocka_unit_test(test_nvtx_exact_bound),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
