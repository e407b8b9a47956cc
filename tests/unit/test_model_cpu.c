/*
 * Model unit tests for the CPU side of the timeline: density levels, call labels, GPU idle gaps
 * (at a time, next and previous), blocking-call rows in the layout, folding of calls and the
 * fallback looks of the CPU theme slots. No terminal needed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "cuscope/cpuview.h"
#include "cuscope/layout.h"
#include "cuscope/theme.h"
#include "cuscope/viewport.h"

#define MS 1000000ull

static void test_density_level(void **state)
{
	(void)state;
	assert_int_equal(cpuview_density_level(0, 10), 0);
	assert_int_equal(cpuview_density_level(5, 0), 0);
	assert_int_equal(cpuview_density_level(10, 10), CPUVIEW_LEVELS);
	/* any sample shows: one of a thousand is the lowest level, not empty */
	assert_int_equal(cpuview_density_level(1, 1000), 1);
	assert_int_equal(cpuview_density_level(5, 10), 4);
	assert_int_equal(cpuview_density_level(6, 10), 5); /* rounds up */
	assert_int_equal(cpuview_density_level(20, 10), CPUVIEW_LEVELS);
	for (uint32_t c = 1; c < 100; c++)
		assert_true(cpuview_density_level(c, 100) <= cpuview_density_level(c + 1, 100));
}

static void test_call_label(void **state)
{
	(void)state;
	char b[64];
	assert_int_equal(cpuview_call_label("read", 30 * MS + 100000, 40, b, sizeof b),
	                 strlen("read 30.1ms"));
	assert_string_equal(b, "read 30.1ms");
	/* too narrow for all: the name gives way so the duration stays */
	cpuview_call_label("pthread_mutex_lock", 20 * MS, 18, b, sizeof b);
	assert_string_equal(b, "pthread_mut 20.0ms");
	assert_true(strlen(b) <= 18);
	/* too narrow for name and duration: the name alone, cut */
	cpuview_call_label("nanosleep", 20 * MS, 6, b, sizeof b);
	assert_string_equal(b, "nanosl");
	cpuview_call_label("gc gen 2", 1500 * MS, 20, b, sizeof b);
	assert_string_equal(b, "gc gen 2 1.50s");
	cpuview_call_label("", 812, 20, b, sizeof b);
	assert_string_equal(b, "call 812ns");
	cpuview_call_label("read", 1, 0, b, sizeof b);
	assert_string_equal(b, "");
	assert_true(cpuview_share(1, 4) > 24.9 && cpuview_share(1, 4) < 25.1);
	assert_true(cpuview_share(1, 0) == 0);
}

/* Kernels at [0,10) [10,12) [30,40) [45,50) [100,110) ms: gaps 18, 5 and 50 ms. */
static const struct store_gpu_op ops[] = {
    {.start_ns = 0, .end_ns = 10 * MS},         {.start_ns = 10 * MS, .end_ns = 12 * MS},
    {.start_ns = 30 * MS, .end_ns = 40 * MS},   {.start_ns = 45 * MS, .end_ns = 50 * MS},
    {.start_ns = 100 * MS, .end_ns = 110 * MS},
};
#define NOPS (sizeof ops / sizeof ops[0])

static void test_gap_at(void **state)
{
	(void)state;
	struct cpuview_gap g;
	assert_true(cpuview_is_gap(5, 15, 10));
	assert_false(cpuview_is_gap(5, 14, 10));
	assert_false(cpuview_is_gap(15, 5, 0)); /* overlapping ops leave no gap, whatever the minimum */
	assert_false(cpuview_is_gap(5, 5, 0));
	assert_true(cpuview_gap_at(ops, NOPS, 20 * MS, 10 * MS, &g));
	assert_int_equal(g.start_ns, 12 * MS);
	assert_int_equal(g.end_ns, 30 * MS);
	assert_int_equal(g.next, 2);
	assert_true(cpuview_gap_at(ops, NOPS, 12 * MS, 10 * MS, &g));  /* the gap's first ns */
	assert_false(cpuview_gap_at(ops, NOPS, 30 * MS, 10 * MS, &g)); /* the next op's start */
	assert_false(cpuview_gap_at(ops, NOPS, 5 * MS, 10 * MS, &g));  /* inside an op */
	assert_false(cpuview_gap_at(ops, NOPS, 42 * MS, 10 * MS, &g)); /* 5 ms gap: under the threshold */
	assert_true(cpuview_gap_at(ops, NOPS, 42 * MS, 1 * MS, &g));
	assert_false(cpuview_gap_at(ops, NOPS, 200 * MS, 1 * MS, &g)); /* after the last op */
	assert_true(cpuview_gap_at(ops, NOPS, 99 * MS, 10 * MS, &g));
	assert_int_equal(g.next, 4);
	assert_false(cpuview_gap_at(ops, 0, 1, 1, &g));
}

static void test_gap_step(void **state)
{
	(void)state;
	struct cpuview_gap g;
	/* forward: gaps starting after t, skipping the short one */
	assert_true(cpuview_gap_step(ops, NOPS, 0, 1, 10 * MS, &g));
	assert_int_equal(g.start_ns, 12 * MS);
	assert_true(cpuview_gap_step(ops, NOPS, 20 * MS, 1, 10 * MS, &g)); /* from inside the first gap */
	assert_int_equal(g.start_ns, 50 * MS);
	assert_int_equal(g.end_ns, 100 * MS);
	assert_true(cpuview_gap_step(ops, NOPS, 35 * MS, 1, 1 * MS, &g)); /* t inside an op: its end */
	assert_int_equal(g.start_ns, 40 * MS);
	assert_false(cpuview_gap_step(ops, NOPS, 60 * MS, 1, 10 * MS, &g));
	/* backward: the last gap before the cursor's gap, never the one holding it */
	assert_true(cpuview_gap_step(ops, NOPS, 75 * MS, -1, 10 * MS, &g));
	assert_int_equal(g.start_ns, 12 * MS);
	assert_true(cpuview_gap_step(ops, NOPS, 200 * MS, -1, 10 * MS, &g));
	assert_int_equal(g.start_ns, 50 * MS);
	assert_true(cpuview_gap_step(ops, NOPS, 105 * MS, -1, 10 * MS, &g));
	assert_int_equal(g.start_ns, 50 * MS);
	assert_false(cpuview_gap_step(ops, NOPS, 20 * MS, -1, 10 * MS, &g));
	assert_false(cpuview_gap_step(ops, 1, 20 * MS, -1, 1, &g));
	assert_false(cpuview_gap_step(ops, 0, 20 * MS, 1, 1, &g));
	/* stepping forward from each gap's middle visits every long gap once, in order */
	uint64_t t = 0, starts[8];
	size_t k = 0;
	while (k < 8 && cpuview_gap_step(ops, NOPS, t, 1, 1 * MS, &g)) {
		starts[k++] = g.start_ns;
		t = g.start_ns + (g.end_ns - g.start_ns) / 2;
	}
	assert_int_equal(k, 3);
	assert_int_equal(starts[0], 12 * MS);
	assert_int_equal(starts[1], 40 * MS);
	assert_int_equal(starts[2], 50 * MS);
}

static void test_layout_cpu_rows(void **state)
{
	(void)state;
	struct layout l;
	layout_init(&l);
	layout_add_process(&l, 0, 100);
	layout_add_thread(&l, 0, 1, 100, 101, 1);
	layout_add_osrt(&l, 0, 1, 100, 101, 2);
	layout_add_gc(&l, 0, 1, 100, 101, 1);
	layout_add_gpu_device(&l, 0, 100, 0);
	assert_int_equal(l.count, 7);
	assert_int_equal(l.rows[3].kind, LAYOUT_ROW_OSRT);
	assert_int_equal(l.rows[4].kind, LAYOUT_ROW_OSRT);
	assert_int_equal(l.rows[4].row, 1);
	assert_int_equal(l.rows[4].tid, 101);
	assert_int_equal(l.rows[5].kind, LAYOUT_ROW_GC);
	assert_false(layout_is_thread_row(&l.rows[0]));
	for (size_t i = 1; i <= 5; i++)
		assert_true(layout_is_thread_row(&l.rows[i]));
	assert_false(layout_is_thread_row(&l.rows[6]));
	assert_false(layout_is_group(&l.rows[3]));
	/* osrt row 1 and gc row 0 are distinct identities */
	struct layout_row key = l.rows[5];
	assert_int_equal(layout_find(&l, &key), 5);
	key.kind = LAYOUT_ROW_OSRT;
	key.row = 1;
	assert_int_equal(layout_find(&l, &key), 4);
	layout_fini(&l);
}

static void test_fold_calls(void **state)
{
	(void)state;
	struct viewport vp;
	viewport_set(&vp, 0, 100 * MS, 100); /* 1 ms per cell */
	struct store_call calls[] = {
	    {.start_ns = 10 * MS, .end_ns = 40 * MS, .name_id = 7},      /* a box over cells 10..39 */
	    {.start_ns = 50 * MS, .end_ns = 50 * MS + 10, .name_id = 8}, /* folded */
	    {.start_ns = 50 * MS + 20, .end_ns = 50 * MS + 30, .name_id = 8},
	};
	struct viewport_seg seg[8];
	size_t n = viewport_fold_calls(&vp, calls, 3, seg, 8);
	assert_int_equal(n, 2);
	assert_int_equal(seg[0].kind, VIEWPORT_SEG_BOX);
	assert_int_equal(seg[0].col0, 10);
	assert_int_equal(seg[0].col1, 40);
	assert_int_equal(seg[1].kind, VIEWPORT_SEG_FOLD);
	assert_int_equal(seg[1].col0, 50);
	assert_int_equal(seg[1].count, 2);
}

static void test_theme_cpu_fallback(void **state)
{
	(void)state;
	struct theme t;
	theme_default(&t);
	/* dark names none of the CPU slots: they take their fallbacks' looks */
	assert_memory_equal(&t.slot[THEME_OSRT], &t.slot[theme_fallback(THEME_OSRT)], sizeof t.slot[0]);
	assert_memory_equal(&t.slot[THEME_GC], &t.slot[theme_fallback(THEME_GC)], sizeof t.slot[0]);
	assert_memory_equal(&t.slot[THEME_SAMPLE], &t.slot[theme_fallback(THEME_SAMPLE)], sizeof t.slot[0]);
	assert_int_equal(theme_fallback(THEME_OSRT), THEME_SYNC);
	assert_int_equal(theme_fallback(THEME_STATUS), THEME_STATUS);
	assert_string_equal(theme_slot_name(THEME_OSRT), "osrt");
	/* a theme that changes sync but not osrt: osrt follows that theme's sync */
	char warn[128];
	assert_int_equal(theme_parse(&t, "sync = 33 on 44 underline\n", warn, sizeof warn), 0);
	assert_int_equal(t.slot[THEME_OSRT].fg, 33);
	assert_int_equal(t.slot[THEME_OSRT].bg, 44);
	assert_int_equal(t.slot[THEME_OSRT].attr, THEME_UNDERLINE);
	/* naming the slot wins, and is not overwritten */
	assert_int_equal(theme_parse(&t, "osrt = red on default bold\ngc = 200\n", warn, sizeof warn), 0);
	assert_int_equal(t.slot[THEME_OSRT].fg, 1);
	assert_int_equal(t.slot[THEME_OSRT].attr, THEME_BOLD);
	assert_int_equal(t.slot[THEME_GC].fg, 200);
	/* every built-in theme loads without a warning and gives the CPU slots a look of its own */
	for (size_t i = 0; theme_builtin_names[i]; i++) {
		struct theme b;
		char msg[256], from[64];
		assert_int_equal(
		    theme_load(&b, theme_builtin_names[i], NULL, msg, sizeof msg, from, sizeof from), 0);
		assert_string_equal(msg, "");
		assert_false(b.slot[THEME_OSRT].attr & 0x8000u);
		assert_memory_equal(&b.slot[THEME_OSRT], &b.slot[THEME_SYNC], sizeof b.slot[0]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_density_level),
	    cmocka_unit_test(test_call_label),
	    cmocka_unit_test(test_gap_at),
	    cmocka_unit_test(test_gap_step),
	    cmocka_unit_test(test_layout_cpu_rows),
	    cmocka_unit_test(test_fold_calls),
	    cmocka_unit_test(test_theme_cpu_fallback),
	};
	return cmocka_run_group_tests_name("model_cpu", tests, NULL, NULL);
}
