/* Model unit tests: viewport arithmetic, tick choice, folding, layout rows. No terminal needed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "cuscope/layout.h"
#include "cuscope/viewport.h"

#define MS 1000000ull
#define S  1000000000ull

static void test_col_ns_round_trip(void **state)
{
	(void)state;
	struct viewport vp;
	viewport_set(&vp, 5 * S, 10 * S, 97); /* a width that does not divide the span */
	for (int64_t c = -5; c <= 102; c++) {
		uint64_t ns = viewport_ns_of(&vp, c);
		assert_int_equal(viewport_col_of(&vp, ns), c);
		/* ns_of(c) is the first ns of column c: one ns earlier belongs to c - 1 */
		assert_int_equal(viewport_col_of(&vp, ns - 1), c - 1);
	}
	assert_int_equal(viewport_col_of(&vp, 5 * S), 0);
	assert_int_equal(viewport_col_of(&vp, 15 * S), 97);
	assert_int_equal(viewport_col_of(&vp, 15 * S - 1), 96);
	assert_true(viewport_col_of(&vp, 4 * S) < 0);
	assert_int_equal(viewport_end_ns(&vp), 15 * S);
}

static void test_col_of_no_overflow(void **state)
{
	(void)state;
	struct viewport vp;
	/* Hours of capture on a wide terminal: ns * cols exceeds 64 bits. */
	viewport_set(&vp, 0, 40000 * S, 400);
	assert_int_equal(viewport_col_of(&vp, 20000 * S), 200);
	assert_int_equal(viewport_ns_of(&vp, 200), 20000 * S);
}

/* The "not in memory" band: every column holding time before the store's reach, and no other. */
static void test_band_cols(void **state)
{
	(void)state;
	struct viewport vp;
	viewport_set(&vp, 100 * S, 10 * S, 100);                    /* 0.1 s per column */
	assert_int_equal(viewport_band_cols(&vp, 0), 0);            /* nothing evicted */
	assert_int_equal(viewport_band_cols(&vp, 50 * S), 0);       /* reach before the view */
	assert_int_equal(viewport_band_cols(&vp, 100 * S), 0);      /* reach at the left edge */
	assert_int_equal(viewport_band_cols(&vp, 102 * S), 20);     /* on a column boundary */
	assert_int_equal(viewport_band_cols(&vp, 102 * S + 1), 21); /* inside column 20: it is partly gone */
	assert_int_equal(viewport_band_cols(&vp, 500 * S), 100);    /* all of the view */
	for (uint64_t t = 100 * S + 1; t < 111 * S; t += S / 7) {
		int n = viewport_band_cols(&vp, t);
		/* column n-1 starts before t, column n (if any) starts at or after it */
		assert_true(n >= 1 && viewport_ns_of(&vp, n - 1) < t);
		assert_true(n == 100 || viewport_ns_of(&vp, n) >= t);
	}
}

static void test_zoom_keeps_anchor(void **state)
{
	(void)state;
	struct viewport vp;
	viewport_set(&vp, 100 * S, 10 * S, 100);
	uint64_t anchor = 103 * S; /* column 30 */
	int64_t before = viewport_col_of(&vp, anchor);
	viewport_zoom(&vp, 0.5, anchor, VIEWPORT_MIN_SPAN_NS, 1000 * S);
	assert_int_equal(vp.span_ns, 5 * S);
	assert_int_equal(viewport_col_of(&vp, anchor), before);
	assert_int_equal(vp.start_ns, 103 * S - 15 * S / 10);
	viewport_zoom(&vp, 4.0, anchor, VIEWPORT_MIN_SPAN_NS, 1000 * S);
	assert_int_equal(vp.span_ns, 20 * S);
	assert_int_equal(viewport_col_of(&vp, anchor), before);
}

static void test_zoom_clamps(void **state)
{
	(void)state;
	struct viewport vp;
	viewport_set(&vp, 50 * S, 10 * S, 80);
	for (int i = 0; i < 100; i++)
		viewport_zoom(&vp, 0.1, 55 * S, VIEWPORT_MIN_SPAN_NS, 60 * S);
	assert_int_equal(vp.span_ns, VIEWPORT_MIN_SPAN_NS);
	for (int i = 0; i < 100; i++)
		viewport_zoom(&vp, 10.0, 55 * S, VIEWPORT_MIN_SPAN_NS, 60 * S);
	assert_int_equal(vp.span_ns, 60 * S);
	/* Zooming out around a point near 0 must not wrap below time 0. */
	viewport_set(&vp, 1 * S, 2 * S, 80);
	viewport_zoom(&vp, 100.0, 2 * S, 1, 1000 * S);
	assert_int_equal(vp.start_ns, 0);
	assert_int_equal(vp.span_ns, 200 * S);
}

static void test_pan(void **state)
{
	(void)state;
	struct viewport vp;
	viewport_set(&vp, 10 * S, 10 * S, 100);
	viewport_pan(&vp, 25);
	assert_int_equal(vp.start_ns, 12500 * MS);
	viewport_pan(&vp, -50);
	assert_int_equal(vp.start_ns, 7500 * MS);
	viewport_pan(&vp, -1000);
	assert_int_equal(vp.start_ns, 0);
	assert_int_equal(vp.span_ns, 10 * S);
}

static void test_tick_step(void **state)
{
	(void)state;
	struct viewport vp;
	int d;
	/* 2 s over 100 cells from 12 s: "12.0"-wide labels need 6 cells, 0.2 s = 10 cells. */
	viewport_set(&vp, 12 * S, 2 * S, 100);
	assert_int_equal(viewport_tick_step(&vp, 0, &d), 200 * MS);
	assert_int_equal(d, 1);
	/* 10 s over 100 cells: labels "12"/"22" need 4 cells; 0.5 s gives 5 cells but "12.5" needs 6. */
	viewport_set(&vp, 12 * S, 10 * S, 100);
	assert_int_equal(viewport_tick_step(&vp, 0, &d), 1 * S);
	assert_int_equal(d, 0);
	/* 10 s over 30 cells: 1 s = 3 cells is too tight for "22" + gap, 2 s fits. */
	viewport_set(&vp, 12 * S, 10 * S, 30);
	assert_int_equal(viewport_tick_step(&vp, 0, &d), 2 * S);
	/* 10 µs near 1 s: labels like "1.000005" (8 chars) need 10 cells; 100 cells -> 1 µs. */
	viewport_set(&vp, 1 * S, 10000, 100);
	assert_int_equal(viewport_tick_step(&vp, 0, &d), 1000);
	assert_int_equal(d, 6);
	/* Labels are relative to the origin. */
	viewport_set(&vp, 1012 * S, 2 * S, 100);
	assert_int_equal(viewport_tick_step(&vp, 1000 * S, &d), 200 * MS);
}

static void test_ticks_labels(void **state)
{
	(void)state;
	struct viewport vp;
	struct viewport_tick t[64];
	viewport_set(&vp, 1000 * S + 11900 * MS, 2 * S, 100);
	size_t n = viewport_ticks(&vp, 1000 * S, t, 64);
	assert_int_equal(n, 10);
	assert_string_equal(t[0].label, "12.0");
	assert_int_equal(t[0].col, 5);
	assert_string_equal(t[3].label, "12.6");
	assert_string_equal(t[9].label, "13.8");
	for (size_t i = 1; i < n; i++)
		assert_true(t[i].col > t[i - 1].col);
	/* Before the origin labels go negative. */
	viewport_set(&vp, 9 * S, 2 * S, 100);
	n = viewport_ticks(&vp, 10 * S, t, 64);
	assert_string_equal(t[0].label, "-1.0");
	assert_int_equal(t[0].col, 0);
}

static void test_folding_decision(void **state)
{
	(void)state;
	struct viewport vp;
	viewport_set(&vp, 0, 100 * MS, 100); /* 1 ms per cell */
	assert_true(viewport_is_folded(&vp, 10 * MS, 10 * MS + 999999));
	assert_false(viewport_is_folded(&vp, 10 * MS, 11 * MS));
	assert_true(viewport_is_folded(&vp, 5 * MS, 5 * MS)); /* zero length */
	viewport_zoom(&vp, 0.001, 10 * MS, 1, S);             /* now 1 µs per cell */
	assert_false(viewport_is_folded(&vp, 10 * MS, 10 * MS + 999999));
}

static void test_fold_segments(void **state)
{
	(void)state;
	struct viewport vp;
	viewport_set(&vp, 0, 100 * MS, 100); /* 1 ms per cell */
	struct store_range r[1100];
	size_t n = 0;
	/* A box clipped on the left: -5 .. 3.5 ms */
	r[n++] = (struct store_range){.start_ns = 0, .end_ns = 3500 * 1000};
	/* 1000 tiny ranges in cells 10..19 (10 µs apart, 1 µs each) */
	for (int i = 0; i < 1000; i++) {
		uint64_t s = 10 * MS + (uint64_t)i * 10000;
		r[n++] = (struct store_range){.start_ns = s, .end_ns = s + 1000};
	}
	/* A 20 ms box from 30 ms */
	r[n++] = (struct store_range){.start_ns = 30 * MS, .end_ns = 50 * MS};
	/* A box running past the view */
	r[n++] = (struct store_range){.start_ns = 95 * MS, .end_ns = 200 * MS};

	struct viewport_seg seg[100];
	size_t ns = viewport_fold(&vp, r, n, seg, 100);
	assert_int_equal(ns, 1 + 10 + 2);
	assert_int_equal(seg[0].kind, VIEWPORT_SEG_BOX);
	assert_int_equal(seg[0].col0, 0);
	assert_int_equal(seg[0].col1, 4);
	size_t folded = 0;
	for (int k = 1; k <= 10; k++) {
		assert_int_equal(seg[k].kind, VIEWPORT_SEG_FOLD);
		assert_int_equal(seg[k].col0, 9 + k);
		folded += seg[k].count;
	}
	assert_int_equal(folded, 1000);
	assert_int_equal(seg[11].kind, VIEWPORT_SEG_BOX);
	assert_int_equal(seg[11].col0, 30);
	assert_int_equal(seg[11].col1, 50);
	assert_false(seg[11].clip_right);
	assert_int_equal(seg[12].col0, 95);
	assert_int_equal(seg[12].col1, 100);
	assert_true(seg[12].clip_right);
	assert_false(seg[12].clip_left);
	/* Panning left clips the first box and drops what is outside. */
	viewport_set(&vp, 1 * MS, 100 * MS, 100);
	ns = viewport_fold(&vp, r, n, seg, 100);
	assert_true(seg[0].clip_left);
	assert_int_equal(seg[0].col0, 0);
	assert_int_equal(seg[ns - 1].col1, 100);
}

static void test_fold_narrow_then_wide_same_cell(void **state)
{
	(void)state;
	struct viewport vp;
	viewport_set(&vp, 0, 100 * MS, 100);
	struct store_range r[] = {
	    {.start_ns = 5 * MS + 100, .end_ns = 5 * MS + 200},
	    {.start_ns = 5 * MS + 300, .end_ns = 9 * MS}, /* wide, starts in the same cell */
	};
	struct viewport_seg seg[10];
	size_t ns = viewport_fold(&vp, r, 2, seg, 10);
	assert_int_equal(ns, 2);
	assert_int_equal(seg[0].kind, VIEWPORT_SEG_FOLD);
	assert_int_equal(seg[0].col0, 5);
	assert_int_equal(seg[0].count, 1);
	assert_int_equal(seg[1].kind, VIEWPORT_SEG_BOX);
	assert_int_equal(seg[1].col0, 6);
	assert_int_equal(seg[1].col1, 9);
	assert_int_equal(seg[1].first, 1);
}

static void test_fold_many_is_bounded(void **state)
{
	(void)state;
	/* 200k ranges packed in view: segments never exceed the cells. */
	static struct store_range r[200000];
	for (size_t i = 0; i < 200000; i++)
		r[i] = (struct store_range){.start_ns = i * 500, .end_ns = i * 500 + 400};
	struct viewport vp;
	viewport_set(&vp, 0, 100 * MS, 80);
	struct viewport_seg seg[80];
	size_t ns = viewport_fold(&vp, r, 200000, seg, 80);
	assert_int_equal(ns, 80);
	size_t total = 0;
	for (size_t i = 0; i < ns; i++)
		total += seg[i].count;
	assert_int_equal(total, 200000);
}

static void test_layout_rows(void **state)
{
	(void)state;
	struct layout l;
	layout_init(&l);
	layout_add_process(&l, 0, 100);
	layout_add_thread(&l, 0, 1, 100, 100, 3);
	layout_add_thread(&l, 0, 2, 100, 101, 0);
	layout_add_async(&l, 0, 0, 100, 2);
	layout_add_process(&l, 1, 200);
	layout_add_thread(&l, 1, 0, 200, 200, 1);
	layout_add_async(&l, 1, 0, 200, 0);
	assert_int_equal(l.count, 1 + (1 + 3) + 1 + 2 + 1 + (1 + 1));
	assert_int_equal(l.rows[0].kind, LAYOUT_ROW_PROCESS);
	assert_int_equal(l.rows[1].kind, LAYOUT_ROW_THREAD);
	assert_int_equal(l.rows[4].kind, LAYOUT_ROW_NVTX);
	assert_int_equal(l.rows[4].row, 2);
	assert_int_equal(l.rows[6].kind, LAYOUT_ROW_ASYNC);
	assert_int_equal(l.rows[7].row, 1);
	assert_int_equal(l.rows[8].pid, 200);

	struct layout_row key = l.rows[9];
	assert_int_equal(layout_find(&l, &key), 9);
	key.tid = 999;
	key.lane = 7;
	assert_int_equal(layout_find(&l, &key), l.count);
	layout_fini(&l);
}

static void test_layout_scroll(void **state)
{
	(void)state;
	struct layout l;
	layout_init(&l);
	for (int p = 0; p < 5; p++) {
		layout_add_process(&l, (size_t)p, 10 + p);
		layout_add_thread(&l, (size_t)p, 0, 10 + p, 10 + p, 2);
	}
	assert_int_equal(l.count, 20);
	layout_select(&l, 6, 5);
	assert_int_equal(l.selected, 6);
	assert_int_equal(l.top, 2); /* selection on the last visible line */
	layout_select(&l, -5, 5);
	assert_int_equal(l.selected, 1);
	assert_int_equal(l.top, 1);
	layout_select(&l, 1000, 5);
	assert_int_equal(l.selected, 19);
	assert_int_equal(l.top, 15);
	layout_select(&l, -1000, 5);
	assert_int_equal(l.selected, 0);
	assert_int_equal(l.top, 0);
	/* Taller screen than rows: no scrolling. */
	layout_select(&l, 19, 50);
	assert_int_equal(l.top, 0);
	/* Rows vanish (rebuild with fewer): selection clamps in. */
	layout_select(&l, 0, 5);
	l.count = 4;
	layout_clamp(&l, 5);
	assert_int_equal(l.selected, 3);
	assert_int_equal(l.top, 0);
	layout_fini(&l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_col_ns_round_trip),
	    cmocka_unit_test(test_col_of_no_overflow),
	    cmocka_unit_test(test_band_cols),
	    cmocka_unit_test(test_zoom_keeps_anchor),
	    cmocka_unit_test(test_zoom_clamps),
	    cmocka_unit_test(test_pan),
	    cmocka_unit_test(test_tick_step),
	    cmocka_unit_test(test_ticks_labels),
	    cmocka_unit_test(test_folding_decision),
	    cmocka_unit_test(test_fold_segments),
	    cmocka_unit_test(test_fold_narrow_then_wide_same_cell),
	    cmocka_unit_test(test_fold_many_is_bounded),
	    cmocka_unit_test(test_layout_rows),
	    cmocka_unit_test(test_layout_scroll),
	};
	return cmocka_run_group_tests_name("model", tests, NULL, NULL);
}
