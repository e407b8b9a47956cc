/*
 * Idle-thread folding and frozen layouts (model/layout.c) on a store built from hand-made frames: a
 * process with one busy thread and twelve that never produced an event (like the ~15 helper threads of a
 * PyTorch process), one row "12 idle threads" that unfolds and folds again, and a frozen (paused) layout
 * that does not move when a thread produces its first event, a thread appears or a range nests deeper.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "cuscope/layout.h"
#include "cuscope/store.h"
#include "cuscope/wire.h"

#define MS 1000000ull

enum { N_NAME = 1, N_STEP };

#define BUSY_TID   101
#define FIRST_IDLE 102
#define IDLE_COUNT 12

static void feed(struct store *st, uint32_t type, const void *payload, size_t length)
{
	const char *cause = NULL;
	if (store_feed(st, 0, type, payload, (uint32_t)length, &cause))
		fail_msg("store_feed(%u): %s", type, cause ? cause : "?");
}

static void string(struct store *st, uint32_t id, const char *text)
{
	unsigned char buf[sizeof(struct wire_string) + 64];
	struct wire_string s = {id, (uint32_t)strlen(text)};
	memcpy(buf, &s, sizeof s);
	memcpy(buf + sizeof s, text, s.length);
	feed(st, WIRE_FRAME_STRING, buf, sizeof s + s.length);
}

static void event(struct store *st, uint16_t kind, uint64_t t, pid_t tid, uint32_t name)
{
	struct wire_event e;
	memset(&e, 0, sizeof e);
	e.kind = kind;
	e.time_ns = t;
	e.tid = (uint32_t)tid;
	e.name_id = name;
	feed(st, WIRE_FRAME_EVENTS, &e, sizeof e);
}

/* pid 100: thread 101 does a "step" range; idle threads 102.. only say their names. */
static struct store *make_store(int idle)
{
	struct store *st = store_new();
	unsigned char buf[sizeof(struct wire_hello) + 8];
	struct wire_hello h;
	memset(&h, 0, sizeof h);
	memcpy(h.magic, WIRE_MAGIC, 8);
	h.version = WIRE_VERSION;
	h.hello_size = sizeof h;
	h.pid = 100;
	h.ppid = 1;
	h.start_mono_ns = 1 * MS;
	h.features = WIRE_FEATURE_NVTX | WIRE_FEATURE_THREADS;
	strcpy(h.host, "unit-host");
	h.cmdline_len = 5;
	memcpy(buf, &h, sizeof h);
	memcpy(buf + sizeof h, "prog\0", 5);
	feed(st, WIRE_FRAME_HELLO, buf, sizeof h + 5);
	string(st, N_NAME, "worker");
	string(st, N_STEP, "step");
	event(st, WIRE_EV_THREAD_NAME, 2 * MS, BUSY_TID, N_NAME);
	for (int i = 0; i < idle; i++)
		event(st, WIRE_EV_THREAD_NAME, 3 * MS, FIRST_IDLE + i, N_NAME);
	event(st, WIRE_EV_NVTX_PUSH, 10 * MS, BUSY_TID, N_STEP);
	event(st, WIRE_EV_NVTX_POP, 20 * MS, BUSY_TID, 0);
	return st;
}

/* Index of the first row of a kind (and tid for thread rows, 0 = any), or l->count. */
static size_t find_row(const struct layout *l, enum layout_row_kind kind, pid_t tid)
{
	for (size_t i = 0; i < l->count; i++)
		if (l->rows[i].kind == kind && (!tid || l->rows[i].tid == tid))
			return i;
	return l->count;
}

static size_t count_rows(const struct layout *l, enum layout_row_kind kind)
{
	size_t n = 0;
	for (size_t i = 0; i < l->count; i++)
		n += l->rows[i].kind == kind;
	return n;
}

/* Twelve idle threads: one folded row under the busy thread, none of their own. */
static void test_idle_threads_fold(void **state)
{
	(void)state;
	struct store *st = make_store(IDLE_COUNT);
	struct layout l;
	layout_init(&l);
	layout_build(&l, st);
	assert_int_equal(l.count, 4);
	assert_int_equal(l.rows[0].kind, LAYOUT_ROW_PROCESS);
	assert_int_equal(l.rows[1].kind, LAYOUT_ROW_THREAD);
	assert_int_equal(l.rows[1].tid, BUSY_TID);
	assert_int_equal(l.rows[2].kind, LAYOUT_ROW_NVTX);
	assert_int_equal(l.rows[3].kind, LAYOUT_ROW_IDLE);
	assert_int_equal(l.rows[3].count, IDLE_COUNT);
	assert_int_equal(l.rows[3].pid, 100);
	assert_true(l.rows[3].folded);
	assert_true(layout_is_group(&l.rows[3]));
	layout_fini(&l);
	store_free(st);
}

/* f (or Enter) on the idle row lists the threads beneath it, in order of appearance, and folds them again. */
static void test_idle_unfold_and_fold(void **state)
{
	(void)state;
	struct store *st = make_store(IDLE_COUNT);
	struct layout l;
	layout_init(&l);
	layout_build(&l, st);
	size_t idle = find_row(&l, LAYOUT_ROW_IDLE, 0);
	l.selected = idle;
	assert_int_equal(layout_toggle_fold(&l, idle), 0);
	layout_build(&l, st);
	assert_int_equal(l.count, 4 + IDLE_COUNT);
	assert_int_equal(l.selected, idle); /* the selection stays on the idle row */
	assert_false(l.rows[idle].folded);
	for (int i = 0; i < IDLE_COUNT; i++) {
		assert_int_equal(l.rows[idle + 1 + (size_t)i].kind, LAYOUT_ROW_THREAD);
		assert_int_equal(l.rows[idle + 1 + (size_t)i].tid, FIRST_IDLE + i);
		/* f on a listed idle thread (nothing of its own to fold) folds the idle row */
		assert_int_equal(layout_group_index(&l, idle + 1 + (size_t)i), idle);
	}
	assert_int_equal(layout_group_index(&l, 2), 1); /* the busy thread's NVTX row: the thread */
	assert_int_equal(layout_group_index(&l, 1), 1);
	assert_int_equal(layout_group_index(&l, idle), idle);
	assert_int_equal(layout_group_index(&l, l.count), l.count);
	assert_int_equal(layout_toggle_fold(&l, idle), 0);
	layout_build(&l, st);
	assert_int_equal(l.count, 4);
	assert_true(l.rows[idle].folded);
	assert_int_equal(count_rows(&l, LAYOUT_ROW_THREAD), 1);
	layout_fini(&l);
	store_free(st);
}

/* One idle thread is shown as itself: folding it would save no row and hide its name. */
static void test_single_idle_thread_shown(void **state)
{
	(void)state;
	struct store *st = make_store(1);
	struct layout l;
	layout_init(&l);
	layout_build(&l, st);
	assert_int_equal(count_rows(&l, LAYOUT_ROW_IDLE), 0);
	assert_int_equal(count_rows(&l, LAYOUT_ROW_THREAD), 2);
	assert_int_equal(find_row(&l, LAYOUT_ROW_THREAD, FIRST_IDLE), 3);
	layout_fini(&l);
	store_free(st);
}

/* A thread's first event moves it out of the fold, above the idle row. */
static void test_first_event_leaves_fold(void **state)
{
	(void)state;
	struct store *st = make_store(IDLE_COUNT);
	struct layout l;
	layout_init(&l);
	layout_build(&l, st);
	event(st, WIRE_EV_NVTX_MARK, 30 * MS, FIRST_IDLE + 3, N_STEP);
	layout_build(&l, st);
	size_t t = find_row(&l, LAYOUT_ROW_THREAD, FIRST_IDLE + 3);
	size_t idle = find_row(&l, LAYOUT_ROW_IDLE, 0);
	assert_true(t < idle);
	assert_int_equal(l.rows[idle].count, IDLE_COUNT - 1);
	layout_fini(&l);
	store_free(st);
}

static void assert_same_rows(const struct layout *a, const struct layout_row *rows, size_t count)
{
	assert_int_equal(a->count, count);
	for (size_t i = 0; i < count; i++) {
		assert_int_equal(a->rows[i].kind, rows[i].kind);
		assert_int_equal(a->rows[i].tid, rows[i].tid);
		assert_int_equal(a->rows[i].row, rows[i].row);
		assert_int_equal(a->rows[i].count, rows[i].count);
	}
}

/*
 * Frozen (paused): a thread's first event, a new thread and a deeper range change no row, also when a fold
 * toggle forces a rebuild; the thaw shows all three.
 */
static void test_frozen_layout_stays(void **state)
{
	(void)state;
	struct store *st = make_store(IDLE_COUNT);
	struct layout l;
	layout_init(&l);
	layout_build(&l, st);
	struct layout_row before[8];
	size_t n = l.count;
	assert_true(n <= 8);
	memcpy(before, l.rows, n * sizeof *before);

	layout_freeze(&l, 1);
	event(st, WIRE_EV_NVTX_PUSH, 30 * MS, FIRST_IDLE + 5, N_STEP); /* first event of an idle thread */
	event(st, WIRE_EV_NVTX_POP, 31 * MS, FIRST_IDLE + 5, 0);
	event(st, WIRE_EV_THREAD_NAME, 32 * MS, 300, N_NAME); /* a new thread */
	event(st, WIRE_EV_NVTX_PUSH, 33 * MS, 300, N_STEP);
	event(st, WIRE_EV_NVTX_PUSH, 34 * MS, BUSY_TID, N_STEP); /* nesting one deeper */
	event(st, WIRE_EV_NVTX_PUSH, 35 * MS, BUSY_TID, N_STEP);
	layout_build(&l, st);
	assert_same_rows(&l, before, n);

	/* Unfolding while frozen lists the threads idle at the freeze, the one that woke up included. */
	size_t idle = find_row(&l, LAYOUT_ROW_IDLE, 0);
	assert_int_equal(layout_toggle_fold(&l, idle), 0);
	layout_build(&l, st);
	assert_int_equal(l.count, n + IDLE_COUNT);
	assert_int_not_equal(find_row(&l, LAYOUT_ROW_THREAD, FIRST_IDLE + 5), l.count);
	assert_int_equal(find_row(&l, LAYOUT_ROW_THREAD, 300), l.count);
	assert_int_equal(layout_toggle_fold(&l, idle), 0);
	layout_build(&l, st);
	assert_same_rows(&l, before, n);

	layout_freeze(&l, 0);
	layout_build(&l, st);
	size_t woke = find_row(&l, LAYOUT_ROW_THREAD, FIRST_IDLE + 5);
	idle = find_row(&l, LAYOUT_ROW_IDLE, 0);
	assert_true(woke < idle);
	assert_true(find_row(&l, LAYOUT_ROW_THREAD, 300) < idle);
	assert_int_equal(l.rows[idle].count, IDLE_COUNT - 1);
	assert_int_equal(count_rows(&l, LAYOUT_ROW_NVTX), 2 + 1 + 1); /* 101: depth 2; 107 and 300: 1 */
	layout_fini(&l);
	store_free(st);
}

/* Jumping to an event of a folded idle thread (find, gap) opens the fold; another thread's does not. */
static void test_reveal_opens_idle_fold(void **state)
{
	(void)state;
	struct store *st = make_store(IDLE_COUNT);
	struct layout l;
	layout_init(&l);
	layout_build(&l, st);
	layout_reveal(&l, 100, BUSY_TID, 0, 0);
	layout_build(&l, st);
	assert_true(l.rows[find_row(&l, LAYOUT_ROW_IDLE, 0)].folded);
	layout_reveal(&l, 100, FIRST_IDLE + 7, 0, 0);
	layout_build(&l, st);
	assert_false(l.rows[find_row(&l, LAYOUT_ROW_IDLE, 0)].folded);
	assert_int_not_equal(find_row(&l, LAYOUT_ROW_THREAD, FIRST_IDLE + 7), l.count);
	layout_fini(&l);
	store_free(st);
}

/* Idle means nothing a row shows: each kind of event makes a thread active. */
static void test_lane_idle_decision(void **state)
{
	(void)state;
	const struct store_lane_info none = {.kind = STORE_LANE_THREAD, .first_ns = 5, .name = "x"};
	const struct store_lane_cpu_info no_cpu = {0};
	assert_true(layout_lane_idle(&none, &no_cpu));
	struct store_lane_info li = none;
	li.row_count = 1;
	assert_false(layout_lane_idle(&li, &no_cpu));
	li = none;
	li.open_count = 1;
	assert_false(layout_lane_idle(&li, &no_cpu));
	li = none;
	li.mark_count = 1;
	assert_false(layout_lane_idle(&li, &no_cpu));
	li = none;
	li.gpu_ops = 1;
	assert_false(layout_lane_idle(&li, &no_cpu));
	li = none;
	li.end_ns = 9; /* an exited thread that did nothing is still idle */
	assert_true(layout_lane_idle(&li, &no_cpu));
	struct store_lane_cpu_info ci = {.samples = 1};
	assert_false(layout_lane_idle(&none, &ci));
	ci = (struct store_lane_cpu_info){.osrt_calls = 1, .osrt_row_count = 1};
	assert_false(layout_lane_idle(&none, &ci));
	ci = (struct store_lane_cpu_info){.gc_count = 1, .gc_row_count = 1};
	assert_false(layout_lane_idle(&none, &ci));
	li = none;
	li.kind = STORE_LANE_GPU_STREAM; /* only threads fold */
	assert_false(layout_lane_idle(&li, &no_cpu));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_idle_threads_fold),        cmocka_unit_test(test_idle_unfold_and_fold),
	    cmocka_unit_test(test_single_idle_thread_shown), cmocka_unit_test(test_first_event_leaves_fold),
	    cmocka_unit_test(test_frozen_layout_stays),      cmocka_unit_test(test_reveal_opens_idle_fold),
	    cmocka_unit_test(test_lane_idle_decision),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
