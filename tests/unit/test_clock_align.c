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
#include "cuscope/store.h"

#include <stdio.h>

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

/* A path: the anchor's move, then a fit reached by slewing; times stay in order and unmove inverts. */
static void test_path_steer(void **state)
{
	(void)state;
	struct clock_align_path path;
	clock_align_path_init(&path, 5 * MS);
	assert_int_equal(clock_align_path_move(&path, 7 * SEC), (int64_t)(5 * MS));
	/* The fit says the move is 1 s less (the anchor was 1 s off). */
	struct clock_align_fit fit = {.offset_ns = (int64_t)(5 * MS) - (int64_t)SEC, .origin_ns = 10 * SEC};
	clock_align_path_steer(&path, 10 * SEC, &fit, 0.5);
	/* Before 10 s: unchanged. */
	assert_int_equal(clock_align_path_move(&path, 9 * SEC), (int64_t)(5 * MS));
	assert_int_equal(clock_align_path_move(&path, 10 * SEC), (int64_t)(5 * MS));
	/* Half-way through the slew (1 s of move at 0.5 ns/ns takes 2 s). */
	assert_int_equal(clock_align_path_move(&path, 11 * SEC), (int64_t)(5 * MS) - (int64_t)SEC / 2);
	/* On the fit's line from 12 s on. */
	assert_int_equal(clock_align_path_move(&path, 12 * SEC), fit.offset_ns);
	assert_int_equal(clock_align_path_move(&path, 30 * SEC), fit.offset_ns);
	/* Moved times keep their order, and unmove gives each time back. */
	uint64_t prev = 0;
	for (uint64_t t = 8 * SEC; t < 14 * SEC; t += 7 * MS + 1) {
		uint64_t s = t + (uint64_t)clock_align_path_move(&path, t);
		assert_true(s > prev);
		prev = s;
		uint64_t back = clock_align_path_unmove(&path, s);
		assert_true(back + 1 >= t && back <= t + 1);
	}
	/* A second fit before the slew ended replaces what was planned after its start. */
	struct clock_align_fit fit2 = {.offset_ns = (int64_t)(5 * MS), .origin_ns = 10 * SEC};
	int64_t at = clock_align_path_move(&path, 11 * SEC);
	clock_align_path_steer(&path, 11 * SEC, &fit2, 0.5);
	assert_int_equal(clock_align_path_move(&path, 11 * SEC), at);
	assert_int_equal(clock_align_path_move(&path, 10 * SEC + SEC / 2),
	                 (int64_t)(5 * MS) - (int64_t)SEC / 4);
	assert_int_equal(clock_align_path_move(&path, 13 * SEC), fit2.offset_ns);
	/* Steering onto the line it already follows adds nothing. */
	size_t pieces = path.count;
	clock_align_path_steer(&path, 20 * SEC, &fit2, 0.5);
	assert_int_equal(path.count, pieces);
	clock_align_path_fini(&path);
}

/* Bounded: steering many times keeps at most CLOCK_ALIGN_PATH_MAX pieces, the newest exact. */
static void test_path_bounded(void **state)
{
	(void)state;
	struct clock_align_path path;
	clock_align_path_init(&path, 0);
	for (uint64_t k = 1; k <= 3 * CLOCK_ALIGN_PATH_MAX; k++) {
		struct clock_align_fit fit = {.offset_ns = (int64_t)(k % 2) * 1000000, .origin_ns = 0};
		clock_align_path_steer(&path, k * SEC, &fit, 0.5);
		assert_true(path.count <= CLOCK_ALIGN_PATH_MAX);
	}
	assert_int_equal(clock_align_path_move(&path, (3 * CLOCK_ALIGN_PATH_MAX + 1) * SEC), 0);
	clock_align_path_fini(&path);
}

/* Pairing by the last fit: windows that start at different collectives still pair the same ones. */
static void test_pair_nearest(void **state)
{
	(void)state;
	size_t n = 100;
	uint64_t *t = ends(n), *ref = malloc(n * sizeof *ref), r[100], u[100];
	for (size_t k = 0; k < n; k++)
		ref[k] = t[k] + 700 * MS + 20000;
	struct clock_align_fit fit = {.offset_ns = (int64_t)(700 * MS), .origin_ns = t[0]};
	/* The host's window starts 10 collectives later than the reference's. */
	size_t m = clock_align_pair_nearest(ref, n, t + 10, n - 10, &fit, 200000, r, u);
	assert_int_equal(m, n - 10);
	for (size_t k = 0; k < m; k++)
		assert_int_equal(r[k], u[k] + 700 * MS + 20000);
	struct clock_align_fit f;
	assert_int_equal(clock_align_fit(r, m, u, m, &f), 0);
	assert_int_equal(f.offset_ns, (int64_t)(700 * MS + 20000));
	/* Index pairing of the same lists is off by ten collectives: what tracking avoids. */
	assert_int_equal(clock_align_fit(ref, n, t + 10, n - 10, &f), 0);
	assert_true(f.offset_ns < (int64_t)(700 * MS) - 20 * (int64_t)MS);
	/* Out of reach (a tolerance below the fit's error): no pairs. */
	assert_int_equal(clock_align_pair_nearest(ref, n, t, n, &fit, 10000, r, u), 0);
	/* Two ref ends within reach of one: ambiguous, not paired. */
	uint64_t close_ref[2] = {1000, 1100}, one[1] = {1050};
	struct clock_align_fit zero = {0};
	assert_int_equal(clock_align_pair_nearest(close_ref, 2, one, 1, &zero, 200, r, u), 0);
	free(t);
	free(ref);
}

/* The manifest line of a live view's alignment reads back; the newest line of a host wins. */
static void test_manifest(void **state)
{
	(void)state;
	struct store_capture_clock a = {.method = "reference", .offset_ns = -12, .matched = 300},
	                           b = {.method = "collectives",
	                                .offset_ns = 5,
	                                .correction_ns = -1000000000,
	                                .drift_ppb = 3,
	                                .matched = 250,
	                                .unmatched = 2,
	                                .outliers = 1,
	                                .residual_p50_ns = 4000,
	                                .residual_max_ns = 9000};
	char la[400], lb[400], text[1400];
	clock_align_manifest_line(la, sizeof la, "nodeA", &a);
	clock_align_manifest_line(lb, sizeof lb, "nodeB", &b);
	snprintf(text, sizeof text,
	         "host=x\n%s\nclock_alignment=nodeB method=anchor offset_ns=1\n%s\nclock_alignment=bad\n"
	         "clock_alignment=nodeC method=warp\n",
	         la, lb);
	struct store *st = store_new();
	assert_int_equal(clock_align_manifest_apply(text, st), 2);
	struct store_capture_clock got;
	assert_int_equal(store_capture_get_clock(st, 0, &got), 0);
	assert_string_equal(got.host, "nodeA");
	assert_string_equal(got.method, "reference");
	assert_int_equal(got.offset_ns, -12);
	assert_int_equal(got.matched, 300);
	assert_int_equal(store_capture_get_clock(st, 1, &got), 0);
	assert_string_equal(got.host, "nodeB");
	assert_string_equal(got.method, "collectives");
	assert_int_equal(got.correction_ns, -1000000000);
	assert_int_equal(got.drift_ppb, 3);
	assert_int_equal(got.unmatched, 2);
	assert_int_equal(got.outliers, 1);
	assert_int_equal(got.residual_p50_ns, 4000);
	assert_int_equal(got.residual_max_ns, 9000);
	assert_int_equal(store_capture_get_clock(st, 2, &got), -ENOENT);
	store_free(st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_offset),       cmocka_unit_test(test_drift),
	    cmocka_unit_test(test_outliers),     cmocka_unit_test(test_unequal_counts),
	    cmocka_unit_test(test_too_few),      cmocka_unit_test(test_residual),
	    cmocka_unit_test(test_path_steer),   cmocka_unit_test(test_path_bounded),
	    cmocka_unit_test(test_pair_nearest), cmocka_unit_test(test_manifest),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
