/* Sorted time rows: the shared binary search (both edges, both fields, empty rows, equal keys) and
 * the sorted insert that keeps a row free of overlaps, against a linear reference. */
#include "cuscope/timerow.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

struct span {
	uint64_t start_ns, end_ns;
	uint32_t tag;
};

struct point {
	uint64_t time_ns;
};

/* Linear reference: first index whose field is > t (after) or >= t. */
static size_t ref_bound(const struct span *v, size_t n, int end, uint64_t t, int after)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t x = end ? v[i].end_ns : v[i].start_ns;
		if (after ? x > t : x >= t)
			return i;
	}
	return n;
}

static void test_empty_row(void **state)
{
	(void)state;
	/* An empty row may have no array at all. */
	assert_int_equal(timerow_bound(NULL, 0, sizeof(struct span), TIMEROW_START, 5, 0), 0);
	assert_int_equal(timerow_bound(NULL, 0, sizeof(struct span), TIMEROW_END, 5, 1), 0);
	assert_int_equal(timerow_fit(NULL, 0, sizeof(struct span), 5, 9), 0);
	struct span row[1];
	size_t n = 0;
	timerow_insert(row, &n, sizeof *row, 0, &(struct span){5, 9, 7});
	assert_int_equal(n, 1);
	assert_int_equal(row[0].tag, 7);
}

static void test_equal_keys(void **state)
{
	(void)state;
	/* Zero-length marks share start times: "at" lands before the run, "after" past it. */
	const struct span v[] = {{1, 1}, {3, 3}, {3, 3}, {3, 3}, {8, 8}};
	size_t n = sizeof v / sizeof *v;
	assert_int_equal(timerow_bound(v, n, sizeof *v, TIMEROW_START, 3, 0), 1);
	assert_int_equal(timerow_bound(v, n, sizeof *v, TIMEROW_START, 3, 1), 4);
	assert_int_equal(timerow_bound(v, n, sizeof *v, TIMEROW_START, 0, 0), 0);
	assert_int_equal(timerow_bound(v, n, sizeof *v, TIMEROW_START, 8, 1), n);
	assert_int_equal(timerow_bound(v, n, sizeof *v, TIMEROW_START, UINT64_MAX, 0), n);
	const struct point p[] = {{2}, {2}, {4}};
	assert_int_equal(timerow_bound(p, 3, sizeof *p, TIMEROW_START, 2, 0), 0);
	assert_int_equal(timerow_bound(p, 3, sizeof *p, TIMEROW_START, 2, 1), 2);
}

static void test_matches_linear_search(void **state)
{
	(void)state;
	struct span v[64];
	uint64_t t = 0;
	srand(12);
	for (size_t i = 0; i < 64; i++) {
		t += (uint64_t)(rand() % 3); /* repeats included */
		v[i] = (struct span){t, t + (uint64_t)(rand() % 2), (uint32_t)i};
		t = v[i].end_ns;
	}
	for (size_t n = 0; n <= 64; n++)
		for (uint64_t q = 0; q <= t + 1; q++)
			for (int after = 0; after < 2; after++) {
				assert_int_equal(timerow_bound(v, n, sizeof *v, TIMEROW_START, q, after),
				                 ref_bound(v, n, 0, q, after));
				assert_int_equal(timerow_bound(v, n, sizeof *v, TIMEROW_END, q, after),
				                 ref_bound(v, n, 1, q, after));
			}
}

static void test_fit_and_insert(void **state)
{
	(void)state;
	struct span row[8];
	size_t n = 0;
	const struct span in[] = {{10, 20, 0}, {30, 40, 1}, {20, 30, 2},
	                          {0, 10, 3},  {40, 40, 4}, {40, 45, 5}};
	for (size_t i = 0; i < sizeof in / sizeof *in; i++) {
		size_t pos = timerow_fit(row, n, sizeof *row, in[i].start_ns, in[i].end_ns);
		assert_true(pos != SIZE_MAX);
		timerow_insert(row, &n, sizeof *row, pos, &in[i]);
	}
	const uint32_t want[] = {3, 0, 2, 1, 4, 5};
	assert_int_equal(n, 6);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(row[i].tag, want[i]);
	/* Overlaps with the element before, the element after, or one inside. */
	assert_int_equal(timerow_fit(row, n, sizeof *row, 15, 16), SIZE_MAX);
	assert_int_equal(timerow_fit(row, n, sizeof *row, 5, 11), SIZE_MAX);
	assert_int_equal(timerow_fit(row, n, sizeof *row, 44, 50), SIZE_MAX);
	/* Touching ends do not overlap. */
	assert_int_equal(timerow_fit(row, n, sizeof *row, 45, 50), n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_empty_row),
	    cmocka_unit_test(test_equal_keys),
	    cmocka_unit_test(test_matches_linear_search),
	    cmocka_unit_test(test_fit_and_insert),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
