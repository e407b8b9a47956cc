/*
 * The collector's own cost in the store and the model: newest readings per source, rates between
 * readings, reduced stretches, totals across an exec, the bounds of the history and its eviction
 * with the memory window, the stats section and the texts of `info` and the status line.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cuscope/costview.h"
#include "cuscope/layout.h"
#include "cuscope/stats.h"
#include "cuscope/store.h"
#include "cuscope/wire.h"

#define MS 1000000ull
#define S  1000000000ull
#define T0 (1000 * S)

static void feed_src(struct store *st, int source, uint32_t type, const void *payload, uint32_t length)
{
	const char *cause = NULL;
	int rc = store_feed(st, source, type, payload, length, &cause);
	if (rc)
		fail_msg("store_feed(%u): %s", type, cause ? cause : "?");
}

static void hello_src(struct store *st, int source, uint64_t start)
{
	unsigned char buf[sizeof(struct wire_hello) + 5];
	struct wire_hello h;
	memset(&h, 0, sizeof h);
	memcpy(h.magic, WIRE_MAGIC, 8);
	h.version = WIRE_VERSION;
	h.hello_size = sizeof h;
	h.pid = 42;
	h.ppid = 1;
	h.start_mono_ns = start;
	h.cmdline_len = 5;
	memcpy(buf, &h, sizeof h);
	memcpy(buf + sizeof h, "prog\0", 5);
	feed_src(st, source, WIRE_FRAME_HELLO, buf, sizeof h + 5);
}

static struct wire_cost cost(uint32_t source, uint64_t t, uint64_t cpu, uint64_t added, uint64_t events,
                             uint32_t backoffs, uint32_t level, uint32_t flags)
{
	struct wire_cost c;
	memset(&c, 0, sizeof c);
	c.time_ns = t;
	c.own_cpu_ns = cpu;
	c.added_ns = added;
	c.events = events;
	c.source = source;
	c.backoffs = backoffs;
	c.level = level;
	c.flags = flags;
	return c;
}

static void feed_cost(struct store *st, int source, struct wire_cost c)
{
	feed_src(st, source, WIRE_FRAME_COST, &c, sizeof c);
}

static struct store *setup(void)
{
	struct store *st = store_new();
	hello_src(st, 0, T0);
	return st;
}

static void test_newest_and_rates(void **state)
{
	(void)state;
	struct store *st = setup();
	assert_false(store_cost_any(st, 0));
	struct costview_rate none;
	assert_int_equal(costview_at(st, 0, T0, UINT64_MAX, &none), -ENOENT);
	struct store_cost c;
	assert_int_equal(store_cost_get(st, 0, WIRE_COST_SAMPLING, &c), -ENOENT);
	/* two sources in one frame, then one reading a second */
	struct wire_cost two[2] = {cost(WIRE_COST_SAMPLING, T0 + 1 * S, 10 * MS, 5 * MS, 100, 0, 1000, 0),
	                           cost(WIRE_COST_SENDER, T0 + 1 * S, 4 * MS, 0, 7, 0, 0, 0)};
	feed_src(st, 0, WIRE_FRAME_COST, two, sizeof two);
	feed_cost(st, 0, cost(WIRE_COST_SAMPLING, T0 + 2 * S, 30 * MS, 15 * MS, 300, 0, 1000, 0));
	feed_cost(st, 0, cost(WIRE_COST_SAMPLING, T0 + 3 * S, 60 * MS, 15 * MS, 400, 0, 1000, 0));
	/* older than the newest: ignored */
	feed_cost(st, 0, cost(WIRE_COST_SAMPLING, T0 + 2500 * MS, 99 * MS, 99 * MS, 999, 0, 1000, 0));
	/* a source of a newer collector: ignored */
	feed_cost(st, 0, cost(WIRE_COST_SOURCE_MAX, T0 + 3 * S, 1, 1, 1, 0, 0, 0));
	feed_cost(st, 0, cost(0, T0 + 3 * S, 1, 1, 1, 0, 0, 0));
	assert_true(store_cost_any(st, 0));
	assert_int_equal(store_cost_get(st, 0, WIRE_COST_SAMPLING, &c), 0);
	assert_int_equal(c.time_ns, T0 + 3 * S);
	assert_int_equal(c.cpu_ns, 60 * MS);
	assert_int_equal(c.added_ns, 15 * MS);
	assert_int_equal(c.events, 400);
	assert_int_equal(c.level, 1000);
	assert_int_equal(c.asked_level, 1000);
	assert_false(c.reduced);
	assert_int_equal(store_cost_get(st, 0, WIRE_COST_SENDER, &c), 0);
	assert_int_equal(c.cpu_ns, 4 * MS);
	assert_int_equal(store_cost_get(st, 0, WIRE_COST_GPU, &c), -ENOENT);
	const struct store_cost_point *pts;
	assert_int_equal(store_cost_points(st, 0, WIRE_COST_SAMPLING, &pts), 3);
	assert_int_equal(pts[1].time_ns, T0 + 2 * S);
	assert_int_equal(pts[1].cpu_ns, 30 * MS);

	/* per second: 20 ms of CPU and 10 ms added in the second second, 30 ms and none in the third */
	struct costview_rate r;
	costview_rate(st, 0, WIRE_COST_SAMPLING, T0 + 1 * S, T0 + 2 * S, UINT64_MAX, &r);
	assert_int_equal(r.covered_ns, 1 * S);
	assert_float_equal(r.cpu_ms_per_s, 20.0, 1e-6);
	assert_float_equal(r.added_pct, costview_added_pct(10 * MS, 1 * S), 1e-6);
	/* inside one interval: its slope */
	costview_rate(st, 0, 0, T0 + 2500 * MS, T0 + 2600 * MS, UINT64_MAX, &r);
	assert_float_equal(r.cpu_ms_per_s, 30.0, 1e-6);
	assert_float_equal(r.added_pct, 0.0, 1e-9);
	costview_rate(st, 0, 0, T0 + 1500 * MS, T0 + 2500 * MS, UINT64_MAX, &r); /* half of each */
	assert_float_equal(r.cpu_ms_per_s, 25.0, 1e-6);
	costview_rate(st, 0, 0, T0, T0 + 1 * S, UINT64_MAX, &r); /* before the first reading: no rate */
	assert_int_equal(r.covered_ns, 0);
	costview_rate(st, 0, 0, T0 + 3 * S, T0 + 4 * S, UINT64_MAX, &r); /* after the newest: none yet */
	assert_int_equal(r.covered_ns, 0);
	/* a view paused at 2.5 s: the reading of 3 s came later and changes nothing in it */
	costview_rate(st, 0, 0, T0 + 2500 * MS, T0 + 2600 * MS, T0 + 2500 * MS, &r);
	assert_int_equal(r.covered_ns, 0);
	costview_rate(st, 0, WIRE_COST_SAMPLING, T0 + 1 * S, T0 + 2 * S, T0 + 2500 * MS, &r);
	assert_float_equal(r.cpu_ms_per_s, 20.0, 1e-6);
	struct costview_rate cells[4];
	costview_cells(st, 0, T0, T0 + 4 * S, 4, UINT64_MAX, cells);
	assert_int_equal(cells[0].covered_ns, 0);
	assert_float_equal(cells[1].cpu_ms_per_s, 20.0, 1e-6);
	assert_float_equal(cells[2].cpu_ms_per_s, 30.0, 1e-6);
	assert_int_equal(cells[3].covered_ns, 0);

	/* the cost row's label: the rate at the cursor, or the newest past the newest reading */
	assert_int_equal(costview_at(st, 0, T0 + 1500 * MS, UINT64_MAX, &r), 0);
	assert_float_equal(r.cpu_ms_per_s, 20.0, 1e-6);
	assert_int_equal(costview_at(st, 0, T0 + 50 * S, UINT64_MAX, &r), 0);
	assert_float_equal(r.cpu_ms_per_s, 30.0, 1e-6);
	assert_int_equal(costview_at(st, 0, T0, UINT64_MAX, &r), 0);
	assert_float_equal(r.cpu_ms_per_s, 20.0, 1e-6);

	struct costview_summary sum;
	assert_int_equal(costview_summary(st, 0, &sum), 0);
	assert_int_equal(sum.wall_ns, 3 * S);
	assert_int_equal(sum.cpu_ns, 64 * MS);
	assert_int_equal(sum.added_ns, 15 * MS);
	assert_int_equal(sum.events, 407);
	store_free(st);
}

static void test_reduced_stretches(void **state)
{
	(void)state;
	struct store *st = setup();
	const uint32_t R = WIRE_COST_REDUCED, SMP = WIRE_COST_SAMPLING;
	feed_cost(st, 0, cost(SMP, T0 + 1 * S, 1, 1, 1, 0, 1000, 0));
	feed_cost(st, 0, cost(SMP, T0 + 2 * S, 2, 2, 2, 1, 500, R));
	feed_cost(st, 0, cost(SMP, T0 + 3 * S, 3, 3, 3, 2, 500, R)); /* the same stretch */
	feed_cost(st, 0, cost(SMP, T0 + 4 * S, 4, 4, 4, 3, 250, R)); /* lower again: a new stretch */
	feed_cost(st, 0, cost(SMP, T0 + 5 * S, 5, 5, 5, 3, 1000, 0));
	feed_cost(st, 0, cost(SMP, T0 + 6 * S, 6, 6, 6, 4, 500, R)); /* still open */
	const struct store_cost_reduced *v;
	assert_int_equal(store_cost_reduced(st, 0, SMP, &v), 3);
	assert_int_equal(v[0].start_ns, T0 + 2 * S);
	assert_int_equal(v[0].end_ns, T0 + 4 * S);
	assert_int_equal(v[0].level, 500);
	assert_int_equal(v[1].start_ns, T0 + 4 * S);
	assert_int_equal(v[1].end_ns, T0 + 5 * S);
	assert_int_equal(v[1].level, 250);
	assert_int_equal(v[2].end_ns, 0);
	uint32_t level = 0;
	assert_false(costview_reduced_in(st, 0, SMP, T0, T0 + 1999 * MS, T0 + 9 * S, &level));
	assert_true(costview_reduced_in(st, 0, SMP, T0 + 2500 * MS, T0 + 2600 * MS, T0 + 9 * S, &level));
	assert_int_equal(level, 500);
	assert_true(costview_reduced_in(st, 0, SMP, T0 + 4500 * MS, T0 + 4600 * MS, T0 + 9 * S, &level));
	assert_int_equal(level, 250);
	assert_false(costview_reduced_in(st, 0, SMP, T0 + 5 * S, T0 + 5500 * MS, T0 + 9 * S, &level));
	/* the open one lasts to `until` */
	assert_true(costview_reduced_in(st, 0, SMP, T0 + 8 * S, T0 + 8100 * MS, T0 + 9 * S, &level));
	assert_false(costview_reduced_in(st, 0, SMP, T0 + 9 * S, T0 + 10 * S, T0 + 9 * S, &level));
	assert_int_equal(
	    costview_reduced_mask(st, 0, COSTVIEW_CPU_SOURCES, T0 + 2 * S, T0 + 3 * S, T0 + 9 * S),
	    1u << SMP);
	assert_int_equal(
	    costview_reduced_mask(st, 0, 1u << WIRE_COST_OSRT, T0 + 2 * S, T0 + 3 * S, T0 + 9 * S), 0);

	struct store_cost c;
	assert_int_equal(store_cost_get(st, 0, SMP, &c), 0);
	assert_true(c.reduced);
	assert_int_equal(c.backoffs, 4);
	assert_int_equal(c.level, 500);
	assert_int_equal(c.asked_level, 1000);
	char buf[256];
	assert_string_equal(costview_reduced_text(SMP, 500, 1000, buf, sizeof buf),
	                    "sampling reduced to 500/s by the overhead budget (asked: 1000/s)");
	assert_string_equal(costview_reduced_text(WIRE_COST_OSRT, 1000, 0, buf, sizeof buf),
	                    "blocking calls reduced to over 1000 us by the overhead budget");
	/* no budget notice: the status note is made from the reduced source */
	uint64_t seq = 99;
	assert_string_equal(costview_budget_note(st, buf, sizeof buf, &seq),
	                    "sampling reduced to 500/s by the overhead budget (asked: 1000/s)");
	assert_int_equal(seq, 0);
	store_free(st);
}

static void notice(struct store *st, uint32_t level, uint32_t topic, const char *text)
{
	unsigned char buf[512];
	struct wire_notice n = {.level = level, .topic = topic, .length = (uint32_t)strlen(text)};
	memcpy(buf, &n, sizeof n);
	memcpy(buf + sizeof n, text, n.length);
	feed_src(st, 0, WIRE_FRAME_NOTICE, buf, (uint32_t)(sizeof n + n.length));
}

static void test_texts(void **state)
{
	(void)state;
	struct store *st = setup();
	char buf[512];
	assert_string_equal(costview_info_line(st, 0, buf, sizeof buf), "");
	assert_null(costview_budget_note(st, buf, sizeof buf, NULL));
	/* 10 s: 80 ms of collector CPU (0.8 %), 120 ms added (120 / 9880 = 1.2 %), sampling 3 back-offs */
	struct wire_cost two[2] = {
	    cost(WIRE_COST_SAMPLING, T0 + 10 * S, 50 * MS, 120 * MS, 9000, 3, 250, WIRE_COST_REDUCED),
	    cost(WIRE_COST_SENDER, T0 + 10 * S, 30 * MS, 0, 50, 0, 0, 0)};
	feed_src(st, 0, WIRE_FRAME_COST, two, sizeof two);
	assert_string_equal(costview_info_line(st, 0, buf, sizeof buf),
	                    "collector 0.8 % CPU, est. +1.2 % on the program (sampling reduced to 250/s, 3 "
	                    "back-offs); not counted: CUPTI's time in the driver");
	notice(st, WIRE_NOTICE_WARNING, WIRE_NOTICE_TOPIC_GPU_UNAVAILABLE, "GPU tracing unavailable: no GPU");
	notice(st, WIRE_NOTICE_INFO, WIRE_NOTICE_TOPIC_BUDGET, "sampling lowered: 1000/s -> 250/s");
	notice(st, WIRE_NOTICE_WARNING, WIRE_NOTICE_TOPIC_GENERAL, "something else about a budget");
	/* The topic says what a notice is about, not its words: the newest notice naming a budget is not one.
	 */
	uint64_t seq = 0;
	assert_string_equal(costview_budget_note(st, buf, sizeof buf, &seq),
	                    "sampling lowered: 1000/s -> 250/s");
	assert_int_equal(seq, 2);
	assert_string_equal(costview_level_text(WIRE_COST_COUNTERS, 100, buf, sizeof buf), "every 100 ms");
	assert_string_equal(costview_level_text(WIRE_COST_SAMPLING, 0, buf, sizeof buf), "off");
	assert_float_equal(costview_added_pct(0, S), 0.0, 1e-9);
	assert_float_equal(costview_added_pct(S / 2, S), 100.0, 1e-9);  /* doubled */
	assert_float_equal(costview_added_pct(2 * S, S), 2000.0, 1e-9); /* floor: a tenth of the wall */
	assert_float_equal(costview_added_pct(1, 0), 0.0, 1e-9);
	store_free(st);
}

static void test_exec_and_reconnect(void **state)
{
	(void)state;
	struct store *st = setup();
	feed_cost(st, 0, cost(WIRE_COST_NVTX, T0 + 1 * S, 100, 1000, 10, 0, 0, 0));
	/* exec: the connection closes, the same pid says HELLO again with a new collector start */
	store_source_closed(st, 0);
	hello_src(st, 1, T0 + 2 * S);
	assert_int_equal(store_process_count(st), 1);
	feed_cost(st, 1, cost(WIRE_COST_NVTX, T0 + 3 * S, 30, 300, 3, 0, 0, 0));
	struct store_cost c;
	assert_int_equal(store_cost_get(st, 0, WIRE_COST_NVTX, &c), 0);
	assert_int_equal(c.cpu_ns, 130);
	assert_int_equal(c.added_ns, 1300);
	assert_int_equal(c.events, 13);
	/* a reconnect of the same collector goes on counting from where it was */
	store_source_closed(st, 1);
	hello_src(st, 2, T0 + 2 * S);
	feed_cost(st, 2, cost(WIRE_COST_NVTX, T0 + 4 * S, 50, 500, 5, 0, 0, 0));
	assert_int_equal(store_cost_get(st, 0, WIRE_COST_NVTX, &c), 0);
	assert_int_equal(c.cpu_ns, 150);
	assert_int_equal(c.events, 15);
	/* a count going back within one collector (a damaged stream) never makes a negative rate */
	feed_cost(st, 2, cost(WIRE_COST_NVTX, T0 + 5 * S, 10, 10, 1, 0, 0, 0));
	assert_int_equal(store_cost_get(st, 0, WIRE_COST_NVTX, &c), 0);
	assert_int_equal(c.cpu_ns, 150);
	struct costview_rate r;
	costview_rate(st, 0, 0, T0 + 4 * S, T0 + 5 * S, UINT64_MAX, &r);
	assert_float_equal(r.cpu_ms_per_s, 0.0, 1e-9);
	store_free(st);
}

static void test_bounds_and_eviction(void **state)
{
	(void)state;
	struct store *st = setup();
	const size_t n = 3 * STORE_COST_POINTS_MAX + 7;
	for (size_t i = 1; i <= n; i++) {
		/* every other reading reduced: a stretch opens and closes at each */
		uint32_t flags = i % 2 ? WIRE_COST_REDUCED : 0;
		feed_cost(
		    st, 0,
		    cost(WIRE_COST_SAMPLING, T0 + i * S, i * MS, i * 10, i, (uint32_t)i / 2, 500, flags));
	}
	const struct store_cost_point *pts;
	size_t np = store_cost_points(st, 0, WIRE_COST_SAMPLING, &pts);
	assert_true(np <= STORE_COST_POINTS_MAX);
	assert_true(np >= STORE_COST_POINTS_MAX / 2);
	assert_int_equal(pts[0].time_ns, T0 + 1 * S); /* thinning keeps the oldest and the newest */
	assert_int_equal(pts[np - 1].time_ns, T0 + n * S);
	assert_int_equal(pts[np - 1].cpu_ns, n * MS);
	for (size_t i = 1; i < np; i++)
		assert_true(pts[i].time_ns > pts[i - 1].time_ns);
	/* rates stay exact over thinned time: 1 ms per second throughout */
	struct costview_rate r;
	costview_rate(st, 0, 0, T0 + 10 * S, T0 + 2000 * S, UINT64_MAX, &r);
	assert_float_equal(r.cpu_ms_per_s, 1.0, 1e-6);
	const struct store_cost_reduced *v;
	size_t nr = store_cost_reduced(st, 0, WIRE_COST_SAMPLING, &v);
	assert_true(nr <= STORE_COST_REDUCED_MAX);
	assert_int_equal(v[nr - 1].start_ns, T0 + n * S); /* n is odd: the newest is reduced, open */
	assert_int_equal(v[nr - 1].end_ns, 0);
	size_t before = store_memory_bytes(st);

	/* the memory window drops readings and ended stretches before its start */
	uint64_t cut = T0 + (n - 100) * S;
	store_evict_before(st, cut);
	np = store_cost_points(st, 0, WIRE_COST_SAMPLING, &pts);
	assert_true(np > 0 && np <= 100);
	assert_true(pts[0].time_ns >= cut);
	nr = store_cost_reduced(st, 0, WIRE_COST_SAMPLING, &v);
	assert_true(nr > 0 && nr <= 51);
	assert_true(v[0].end_ns == 0 || v[0].end_ns >= cut);
	assert_true(store_memory_bytes(st) < before);
	/* the totals stay */
	struct store_cost c;
	assert_int_equal(store_cost_get(st, 0, WIRE_COST_SAMPLING, &c), 0);
	assert_int_equal(c.cpu_ns, n * MS);
	store_free(st);
}

static void test_stats_section(void **state)
{
	(void)state;
	struct store *st = setup();
	struct wire_cost two[2] = {
	    cost(WIRE_COST_SAMPLING, T0 + 10 * S, 50 * MS, 120 * MS, 9000, 3, 250, WIRE_COST_REDUCED),
	    cost(WIRE_COST_GPU, T0 + 10 * S, 30 * MS, 0, 50, 0, 0, 0)};
	feed_src(st, 0, WIRE_FRAME_COST, two, sizeof two);
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	unsigned mask = 0;
	const char *bad = NULL;
	size_t bad_len = 0;
	assert_int_equal(stats_report_parse("cost", &mask, &bad, &bad_len), 0);
	assert_int_equal(stats_write_sections(f, st, STATS_FORMAT_CSV, mask), 0);
	fclose(f);
	assert_string_equal(text, "# cost\n"
	                          "pid,source,cpu_ns,added_ns,events,backoffs,level,reduced\n"
	                          "42,gpu,30000000,0,50,0,0,false\n"
	                          "42,sampling,50000000,120000000,9000,3,250,true\n");
	free(text);
	assert_non_null(strstr(stats_section_names(), "cost"));
	store_free(st);
}

/* The cost rows sit right under the header of a process that reported its cost, and nowhere else. */
static void test_layout_rows(void **state)
{
	(void)state;
	struct store *st = setup();
	struct wire_event e;
	memset(&e, 0, sizeof e);
	e.kind = WIRE_EV_NVTX_MARK;
	e.time_ns = T0 + 1 * MS;
	e.tid = 42;
	feed_src(st, 0, WIRE_FRAME_EVENTS, &e, sizeof e);
	struct layout lay;
	layout_init(&lay);
	layout_build(&lay, st);
	assert_int_equal(lay.count, 2); /* header, thread */
	feed_cost(st, 0, cost(WIRE_COST_SENDER, T0 + 1 * S, 1, 0, 1, 0, 0, 0));
	layout_build(&lay, st);
	assert_int_equal(lay.count, 4);
	assert_int_equal(lay.rows[0].kind, LAYOUT_ROW_PROCESS);
	assert_int_equal(lay.rows[1].kind, LAYOUT_ROW_COST);
	assert_int_equal(lay.rows[1].row, 0);
	assert_int_equal(lay.rows[2].kind, LAYOUT_ROW_COST);
	assert_int_equal(lay.rows[2].row, 1);
	assert_int_equal(lay.rows[2].pid, 42);
	assert_int_equal(lay.rows[3].kind, LAYOUT_ROW_THREAD);
	assert_false(layout_is_thread_row(&lay.rows[1]));
	assert_false(layout_is_group(&lay.rows[1]));
	/* the selection follows the same cost row across rebuilds */
	lay.selected = 2;
	layout_build(&lay, st);
	assert_int_equal(lay.selected, 2);
	/* folded process: no cost rows */
	assert_int_equal(layout_toggle_fold(&lay, 0), 0);
	layout_build(&lay, st);
	assert_int_equal(lay.count, 1);
	layout_fini(&lay);
	store_free(st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_newest_and_rates),
	    cmocka_unit_test(test_reduced_stretches),
	    cmocka_unit_test(test_texts),
	    cmocka_unit_test(test_exec_and_reconnect),
	    cmocka_unit_test(test_bounds_and_eviction),
	    cmocka_unit_test(test_stats_section),
	    cmocka_unit_test(test_layout_rows),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
