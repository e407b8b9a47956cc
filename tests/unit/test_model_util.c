/* Model: GPU utilisation against an interval-union reference, group folding, axis units. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cuscope/layout.h"
#include "cuscope/util.h"
#include "cuscope/viewport.h"
#include "cuscope/wire.h"

#define MS 1000000ull
#define S  1000000000ull

/* Reference: a bitmap of covered microseconds (times here are multiples of 1 µs). */
static uint64_t ref_busy(const struct util_row *rows, size_t k, uint8_t kind, uint64_t from, uint64_t to)
{
	size_t n = (size_t)((to - from) / 1000);
	char *cov = calloc(n, 1);
	for (size_t r = 0; r < k; r++)
		for (size_t i = 0; i < rows[r].n; i++) {
			const struct store_gpu_op *op = &rows[r].ops[i];
			if (op->kind != kind)
				continue;
			for (uint64_t t = op->start_ns; t < op->end_ns; t += 1000)
				if (t >= from && t < to)
					cov[(t - from) / 1000] = 1;
		}
	uint64_t busy = 0;
	for (size_t i = 0; i < n; i++)
		busy += cov[i] ? 1000 : 0;
	free(cov);
	return busy;
}

/* Random non-overlapping sorted ops on one row, kernels and copies mixed. */
static struct store_gpu_op *make_row(size_t n, unsigned seed, uint64_t start)
{
	struct store_gpu_op *v = calloc(n, sizeof *v);
	srand(seed);
	uint64_t t = start;
	for (size_t i = 0; i < n; i++) {
		t += (uint64_t)(rand() % 50) * 1000;
		v[i].start_ns = t;
		t += (uint64_t)(1 + rand() % 40) * 1000;
		v[i].end_ns = t;
		v[i].kind = rand() % 4 ? WIRE_GPU_KERNEL : WIRE_GPU_MEMCPY;
	}
	return v;
}

static void test_union_exact_vs_reference(void **state)
{
	(void)state;
	struct util_row rows[3];
	struct store_gpu_op *v[3];
	for (int r = 0; r < 3; r++) {
		v[r] = make_row(2000, 11 + (unsigned)r, (uint64_t)r * 3000);
		rows[r] = (struct util_row){v[r], 2000};
	}
	uint64_t windows[][2] = {{0, 10 * MS}, {5 * MS, 6 * MS}, {1234000, 40 * MS}, {0, 60 * MS}};
	for (size_t w = 0; w < 4; w++) {
		for (int kind = WIRE_GPU_KERNEL; kind <= WIRE_GPU_MEMCPY; kind++) {
			uint64_t want = ref_busy(rows, 3, (uint8_t)kind, windows[w][0], windows[w][1]);
			uint64_t got = util_busy_exact(rows, 3, (uint8_t)kind, windows[w][0], windows[w][1]);
			assert_int_equal(got, want);
			/* Sampling is an estimate: within a few percent with 4000 points. */
			double f =
			    util_busy_sampled(rows, 3, (uint8_t)kind, windows[w][0], windows[w][1], 4000);
			double fw = (double)want / (double)(windows[w][1] - windows[w][0]);
			if (f < fw - 0.03 || f > fw + 0.03)
				fail_msg("sampled %.3f vs exact %.3f (window %zu kind %d)", f, fw, w, kind);
		}
	}
	/* Two streams fully overlapping count once. */
	struct store_gpu_op a = {.start_ns = 0, .end_ns = 10 * MS, .kind = WIRE_GPU_KERNEL};
	struct store_gpu_op b = {.start_ns = 5 * MS, .end_ns = 15 * MS, .kind = WIRE_GPU_KERNEL};
	struct util_row two[2] = {{&a, 1}, {&b, 1}};
	assert_int_equal(util_busy_exact(two, 2, WIRE_GPU_KERNEL, 0, 20 * MS), 15 * MS);
	assert_true(util_covered(two, 2, WIRE_GPU_KERNEL, 12 * MS));
	assert_false(util_covered(two, 2, WIRE_GPU_KERNEL, 15 * MS));
	assert_int_equal(util_count(two, 2, 9 * MS, 11 * MS), 2);
	double f = util_busy(two, 2, WIRE_GPU_KERNEL, 0, 20 * MS, 100, 10);
	assert_true(f > 0.7499 && f < 0.7501);
	for (int r = 0; r < 3; r++)
		free(v[r]);
}

static void test_layout_fold(void **state)
{
	(void)state;
	struct layout l;
	layout_init(&l);
	layout_add_process(&l, 0, 100);
	layout_add_thread(&l, 0, 1, 100, 101, 3);
	layout_add_gpu_device(&l, 0, 100, 0);
	assert_int_equal(l.count, 6);
	assert_true(layout_is_group(&l.rows[0]));
	assert_true(layout_is_group(&l.rows[1]));
	assert_false(layout_is_group(&l.rows[2]));
	assert_int_equal(layout_toggle_fold(&l, 2), -22);
	assert_int_equal(layout_toggle_fold(&l, 1), 0);
	assert_int_equal(l.fold_count, 1);
	assert_int_equal(l.folds[0].tid, 101);
	assert_int_equal(layout_toggle_fold(&l, 5), 0);
	assert_int_equal(l.fold_count, 2);
	assert_int_equal(l.folds[1].kind, LAYOUT_FOLD_DEVICE);
	/* Revealing a stream row of device 0 unfolds the device, not the thread. */
	layout_reveal(&l, 100, 0, 1, 0);
	assert_int_equal(l.fold_count, 1);
	layout_reveal(&l, 100, 101, 0, 0);
	assert_int_equal(l.fold_count, 0);
	assert_int_equal(layout_toggle_fold(&l, 0), 0); /* process */
	assert_int_equal(layout_toggle_fold(&l, 0), 0); /* and back */
	assert_int_equal(l.fold_count, 0);
	layout_fini(&l);
}

static void test_axis_units(void **state)
{
	(void)state;
	struct viewport vp;
	struct viewport_tick t[64];
	struct viewport_axis ax;
	viewport_set(&vp, 10 * S, 10 * S, 100);
	size_t n = viewport_axis_ticks(&vp, 10 * S, t, 64, &ax);
	assert_string_equal(ax.unit, "s");
	assert_string_equal(ax.base, "");
	assert_true(n >= 3);
	assert_string_equal(t[0].label, "0");
	/* 20 ms on 100 cells: milliseconds after a whole-second base */
	viewport_set(&vp, 12 * S + 340 * MS, 20 * MS, 100);
	n = viewport_axis_ticks(&vp, 10 * S, t, 64, &ax);
	assert_string_equal(ax.unit, "ms");
	assert_string_equal(ax.base, "2s");
	assert_true(n >= 3);
	assert_int_equal(t[0].col, 0);
	assert_string_equal(t[0].label, "340");
	/* 50 µs: microseconds after a whole-millisecond base */
	viewport_set(&vp, 12 * S + 340 * MS + 17000, 50000, 100);
	n = viewport_axis_ticks(&vp, 10 * S, t, 64, &ax);
	assert_string_equal(ax.unit, "us");
	assert_string_equal(ax.base, "2.340s");
	assert_true(n >= 3);
	assert_true(atoi(t[0].label) >= 17 && atoi(t[0].label) <= 20);
	/* ticks never collide: each label fits before the next */
	for (size_t i = 1; i < n; i++)
		assert_true(t[i].col - t[i - 1].col >= (int)strlen(t[i - 1].label) + 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_union_exact_vs_reference),
	    cmocka_unit_test(test_layout_fold),
	    cmocka_unit_test(test_axis_units),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
