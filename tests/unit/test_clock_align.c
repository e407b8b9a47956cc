/*
 * Matching collectives (clock_align_fit) on synthetic kernel-end lists: a planted offset, a
 * planted drift, wrong pairs dropped as outliers, lists of unequal length matched on their common
 * prefix, too few pairs refused, and the residual of pairs left as they are.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include <cmocka.h>

#include "cuscope/clock_align.h"

#define MS  1000000ull
#define SEC 1000000000ull

/* A deterministic noise in [-amp, amp] ns (no libc rand: the same on every machine). */
static int64_t noise(uint32_t *seed, int64_t amp)
{
	*seed = *seed * 1664525u + 1013904223u;
	return (int64_t)(*seed >> 8) % (2 * amp + 1) - amp;
}

/* n collective ends of one rank: one every 3 ms from 100 s on, with up to 2 ms of jitter. */
static uint64_t *ends(size_t n)
{
	uint64_t *t = malloc(n * sizeof *t);
	uint32_t seed = 7;
	for (size_t k = 0; k < n; k++)
		t[k] = 100 * SEC + k * 3 * MS + (uint64_t)(noise(&seed, 1000000) + 1000000);
	return t;
}

static void test_offset(void **state)
{
	(void)state;
	size_t n = 200;
	uint64_t *t = ends(n), *ref = malloc(n * sizeof *ref);
	for (size_t k = 0; k < n; k++)
		ref[k] = t[k] + 2500 * MS;
	struct clock_align_fit f;
	assert_int_equal(clock_align_fit(ref, n, t, n, &f), 0);
	assert_int_equal(f.pairs, n);
	assert_int_equal(f.unmatched, 0);
	assert_int_equal(f.outliers, 0);
	assert_int_equal(f.offset_ns, (int64_t)(2500 * MS));
	assert_true(f.drift > -1e-12 && f.drift < 1e-12);
	assert_int_equal(f.residual_max_ns, 0);
	for (size_t k = 0; k < n; k++)
		assert_int_equal(t[k] + (uint64_t)clock_align_move(&f, t[k]), ref[k]);
	/* The other way: the capture is ahead of the reference, the move is negative. */
	assert_int_equal(clock_align_fit(t, n, ref, n, &f), 0);
	assert_int_equal(f.offset_ns, -(int64_t)(2500 * MS));
	free(t);
	free(ref);
}

static void test_drift(void **state)
{
	(void)state;
	size_t n = 1000; /* 3 s of collectives: 25 ppm makes 75 us */
	uint64_t *t = ends(n), *ref = malloc(n * sizeof *ref);
	for (size_t k = 0; k < n; k++)
		ref[k] = t[k] - 1700 * MS + (uint64_t)llround(25e-6 * (double)(t[k] - t[0]));
	struct clock_align_fit f;
	assert_int_equal(clock_align_fit(ref, n, t, n, &f), 0);
	assert_true(f.drift > 24.99e-6 && f.drift < 25.01e-6);
	assert_int_equal(f.outliers, 0);
	assert_true(f.residual_max_ns <= 2);
	for (size_t k = 0; k < n; k += 97) {
		int64_t e = (int64_t)(t[k] + (uint64_t)clock_align_move(&f, t[k]) - ref[k]);
		assert_true(e >= -2 && e <= 2);
	}
	/* Left as they are, the pairs are 1.7 s apart. */
	uint64_t p50, max;
	clock_align_residual(ref, n, t, n, &p50, &max);
	assert_true(max > 1700 * MS - 100000 && p50 < 1700 * MS);
	free(t);
	free(ref);
}

static void test_outliers(void **state)
{
	(void)state;
	size_t n = 300;
	uint64_t *t = ends(n), *ref = malloc(n * sizeof *ref);
	uint32_t seed = 11;
	for (size_t k = 0; k < n; k++)
		ref[k] = t[k] + 40 * SEC + (uint64_t)noise(&seed, 3000); /* ends agree within 3 us */
	/* Eleven wrong pairs (a rank preempted, a kernel stamped late): 5 ms and -8 ms off. */
	for (size_t k = 5; k < n; k += 29)
		ref[k] += k % 2 ? 5 * MS : -8 * MS;
	struct clock_align_fit f;
	assert_int_equal(clock_align_fit(ref, n, t, n, &f), 0);
	assert_int_equal(f.outliers, 11);
	assert_true(f.offset_ns > (int64_t)(40 * SEC) - 1000 && f.offset_ns < (int64_t)(40 * SEC) + 1000);
	/* No drift was planted: the jitter's apparent slope is not taken for one. */
	assert_true(f.drift == 0);
	assert_true(f.residual_max_ns <= 4000);
	assert_true(f.residual_p50_ns <= 2000);
	free(t);
	free(ref);
}

static void test_unequal_counts(void **state)
{
	(void)state;
	size_t n = 50;
	uint64_t *t = ends(n), *ref = malloc(n * sizeof *ref);
	for (size_t k = 0; k < n; k++)
		ref[k] = t[k] + 123456;
	struct clock_align_fit f;
	/* The capture saw 3 collectives fewer (it stopped earlier): the first 47 match. */
	assert_int_equal(clock_align_fit(ref, n, t, n - 3, &f), 0);
	assert_int_equal(f.pairs, n - 3);
	assert_int_equal(f.unmatched, 3);
	assert_int_equal(f.offset_ns, 123456);
	assert_int_equal(clock_align_fit(ref, n - 5, t, n, &f), 0);
	assert_int_equal(f.pairs, n - 5);
	assert_int_equal(f.unmatched, 5);
	assert_int_equal(f.offset_ns, 123456);
	free(t);
	free(ref);
}

static void test_too_few(void **state)
{
	(void)state;
	uint64_t t[2] = {SEC, 2 * SEC}, ref[5] = {3 * SEC, 4 * SEC, 5 * SEC, 6 * SEC, 7 * SEC};
	struct clock_align_fit f;
	assert_int_equal(clock_align_fit(ref, 5, t, 2, &f), -EDOM);
	assert_int_equal(f.pairs, 2);
	assert_int_equal(f.unmatched, 3);
	assert_int_equal(clock_align_fit(ref, 0, t, 2, &f), -EDOM);
	assert_int_equal(clock_align_move(NULL, 5), 0);
}

static void test_residual(void **state)
{
	(void)state;
	uint64_t ref[4] = {100, 200, 300, 400}, t[3] = {90, 230, 300};
	uint64_t p50, max;
	clock_align_residual(ref, 4, t, 3, &p50, &max);
	assert_int_equal(p50, 10);
	assert_int_equal(max, 30);
	clock_align_residual(ref, 0, t, 3, &p50, &max);
	assert_int_equal(max, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_offset),   cmocka_unit_test(test_drift),
	    cmocka_unit_test(test_outliers), cmocka_unit_test(test_unequal_counts),
	    cmocka_unit_test(test_too_few),  cmocka_unit_test(test_residual),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
