/* The one percentile definition: nearest rank ceil(q * n), exact for quantiles whose product with n
 * is an integer in decimal but not in binary, against an integer-only reference. */
#include "cuscope/u64.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

/* ceil(pct * n / 100) in integers: the rank nearest-rank percentile pct (1..100) asks for. */
static size_t ref_rank(size_t n, unsigned pct)
{
	size_t r = (pct * n + 99) / 100;
	return r < 1 ? 1 : r;
}

static void test_rank_matches_integer_reference(void **state)
{
	(void)state;
	for (size_t n = 1; n <= 1000; n++)
		for (unsigned pct = 1; pct <= 100; pct++)
			assert_int_equal(u64_rank(n, pct / 100.0), ref_rank(n, pct));
}

static void test_percentile_edges(void **state)
{
	(void)state;
	assert_int_equal(u64_percentile(NULL, 0, 0.5), 0);
	const uint64_t one[] = {42};
	assert_int_equal(u64_percentile(one, 1, 0.01), 42);
	assert_int_equal(u64_percentile(one, 1, 1.0), 42);
	uint64_t v[] = {9, 1, 5, 5, 3, UINT64_MAX, 0};
	u64_sort(v, 7);
	const uint64_t sorted[] = {0, 1, 3, 5, 5, 9, UINT64_MAX};
	assert_memory_equal(v, sorted, sizeof v);
	assert_int_equal(u64_percentile(v, 7, 0.5), 5); /* rank 4 */
	assert_int_equal(u64_percentile(v, 7, 0.99), UINT64_MAX);
	assert_int_equal(u64_percentile(v, 7, 0.0), 0); /* clamped to rank 1 */
	assert_int_equal(u64_cmp(&v[0], &v[6]), -1);
	assert_int_equal(u64_cmp(&v[6], &v[0]), 1);
	assert_int_equal(u64_cmp(&v[3], &v[4]), 0);
}

/* The radix sort against qsort: sizes around its cut-over, shared high bytes, duplicates, extremes. */
static void test_sort_matches_qsort(void **state)
{
	(void)state;
	const size_t sizes[] = {0, 1, 2, 255, 256, 257, 10000};
	const uint64_t masks[] = {0xff, 0xffff00, UINT64_MAX, 0x7};
	srand(64);
	for (size_t a = 0; a < sizeof sizes / sizeof *sizes; a++)
		for (size_t b = 0; b < sizeof masks / sizeof *masks; b++) {
			size_t n = sizes[a];
			uint64_t *v = malloc((n + 1) * sizeof *v), *ref = malloc((n + 1) * sizeof *ref);
			for (size_t i = 0; i < n; i++) {
				uint64_t x =
				    (uint64_t)rand() << 42 ^ (uint64_t)rand() << 21 ^ (uint64_t)rand();
				v[i] = ref[i] = (x & masks[b]) | (i % 3 == 0 ? 1ull << 40 : 0);
			}
			if (n > 2)
				v[1] = ref[1] = UINT64_MAX;
			u64_sort(v, n);
			qsort(ref, n, sizeof *ref, u64_cmp);
			for (size_t i = 0; i < n; i++)
				assert_true(v[i] == ref[i]);
			free(v);
			free(ref);
		}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rank_matches_integer_reference),
	    cmocka_unit_test(test_percentile_edges),
	    cmocka_unit_test(test_sort_matches_qsort),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
