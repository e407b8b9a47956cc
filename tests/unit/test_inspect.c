/*
 * Hit-testing, find and the details text (model/inspect.c) on a store built from hand-made frames:
 * a thread with nested NVTX ranges and one still open, and a GPU stream with an idle gap.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "cuscope/inspect.h"
#include "cuscope/layout.h"
#include "cuscope/store.h"
#include "cuscope/wire.h"

#define MS 1000000ull
#define S  1000000000ull

static void feed(struct store *st, uint32_t type, const void *payload, size_t length)
{
	const char *cause = NULL;
	if (store_feed(st, 0, type, payload, (uint32_t)length, &cause))
		fail_msg("store_feed(%u): %s", type, cause ? cause : "?");
}

static void string(struct store *st, uint32_t id, const char *text)
{
	unsigned char buf[sizeof(struct wire_string) + 256];
	struct wire_string s = {id, (uint32_t)strlen(text)};
	memcpy(buf, &s, sizeof s);
	memcpy(buf + sizeof s, text, s.length);
	feed(st, WIRE_FRAME_STRING, buf, sizeof s + s.length);
}

static struct wire_event ev(uint16_t kind, uint64_t t, uint32_t name)
{
	struct wire_event e;
	memset(&e, 0, sizeof e);
	e.kind = kind;
	e.time_ns = t;
	e.tid = 101;
	e.name_id = name;
	return e;
}

static struct wire_gpu_event kernel(uint64_t start, uint64_t end, uint32_t name)
{
	struct wire_gpu_event e;
	memset(&e, 0, sizeof e);
	e.kind = WIRE_GPU_KERNEL;
	e.start_ns = start;
	e.end_ns = end;
	e.stream = 7;
	e.context = 1;
	e.name_id = name;
	e.grid[0] = 128;
	e.grid[1] = e.grid[2] = 1;
	e.block[0] = 256;
	e.block[1] = e.block[2] = 1;
	return e;
}

enum { N_MAIN = 1, N_STEP, N_FWD, N_BWD, N_OPEN, N_GEMM };

/*
 * pid 100, thread 101 "main": step [10, 20] ms holding fwd [11, 15] and bwd [16, 19]; step [30, 40];
 * "open" pushed at 50 ms and never popped. Stream 7: gemm kernels [100, 110], [150, 160], [161, 170].
 */
static int setup(void **state)
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
	h.features = WIRE_FEATURE_NVTX | WIRE_FEATURE_THREADS | WIRE_FEATURE_CUPTI;
	strcpy(h.host, "unit-host");
	h.cmdline_len = 5;
	memcpy(buf, &h, sizeof h);
	memcpy(buf + sizeof h, "prog\0", 5);
	feed(st, WIRE_FRAME_HELLO, buf, sizeof h + 5);
	string(st, N_MAIN, "main");
	string(st, N_STEP, "step");
	string(st, N_FWD, "fwd");
	string(st, N_BWD, "bwd");
	string(st, N_OPEN, "open");
	string(st, N_GEMM, "gemm_kernel");
	struct wire_event e[] = {
	    ev(WIRE_EV_THREAD_NAME, 5 * MS, N_MAIN), ev(WIRE_EV_NVTX_PUSH, 10 * MS, N_STEP),
	    ev(WIRE_EV_NVTX_PUSH, 11 * MS, N_FWD),   ev(WIRE_EV_NVTX_POP, 15 * MS, 0),
	    ev(WIRE_EV_NVTX_PUSH, 16 * MS, N_BWD),   ev(WIRE_EV_NVTX_POP, 19 * MS, 0),
	    ev(WIRE_EV_NVTX_POP, 20 * MS, 0),        ev(WIRE_EV_NVTX_PUSH, 30 * MS, N_STEP),
	    ev(WIRE_EV_NVTX_POP, 40 * MS, 0),        ev(WIRE_EV_NVTX_PUSH, 50 * MS, N_OPEN),
	};
	feed(st, WIRE_FRAME_EVENTS, e, sizeof e);
	struct wire_gpu_event k[] = {kernel(100 * MS, 110 * MS, N_GEMM), kernel(150 * MS, 160 * MS, N_GEMM),
	                             kernel(161 * MS, 170 * MS, N_GEMM)};
	feed(st, WIRE_FRAME_GPU, k, sizeof k);
	*state = st;
	return 0;
}

static int teardown(void **state)
{
	store_free(*state);
	return 0;
}

/* A view of [0, 200 ms) over 200 cells (1 ms each), now at 70 ms, origin 0, gaps from 10 ms. */
static struct inspect_view view(const struct store *st)
{
	struct inspect_view v = {.store = st, .cursor_col = 100, .now_ns = 70 * MS, .clip_ns = UINT64_MAX};
	viewport_set(&v.vp, 0, 200 * MS, 200);
	v.gap_min_ns = 10 * MS;
	return v;
}

/* The layout row of a kind (and nesting row) of process 0. */
static struct layout_row row_of(const struct store *st, enum layout_row_kind kind, size_t row)
{
	struct layout lay;
	layout_init(&lay);
	layout_build(&lay, st);
	struct layout_row r = {0};
	for (size_t i = 0; i < lay.count; i++)
		if (lay.rows[i].kind == kind && lay.rows[i].row == row)
			r = lay.rows[i];
	layout_fini(&lay);
	assert_int_equal(r.kind, kind);
	return r;
}

static const char *name(const struct store *st, const struct inspect_hit *h)
{
	return store_string(st, h->gpu ? h->op.name_id : h->range.name_id);
}

static void test_row_hit(void **state)
{
	const struct store *st = *state;
	struct inspect_view v = view(st);
	struct layout_row r0 = row_of(st, LAYOUT_ROW_NVTX, 0), r1 = row_of(st, LAYOUT_ROW_NVTX, 1);
	struct inspect_hit h = inspect_row_hit(&v, &r0, 12 * MS, 0);
	assert_true(h.found);
	assert_string_equal(name(st, &h), "step");
	assert_int_equal(h.range.start_ns, 10 * MS);
	assert_int_equal(h.range.end_ns, 20 * MS);
	assert_false(h.open);
	h = inspect_row_hit(&v, &r1, 12 * MS, 0);
	assert_string_equal(name(st, &h), "fwd");
	/* Between ranges: the nearest within the slack, nothing beyond it. */
	assert_false(inspect_row_hit(&v, &r0, 25 * MS, 1 * MS).found);
	h = inspect_row_hit(&v, &r0, 24 * MS, 10 * MS);
	assert_int_equal(h.range.start_ns, 10 * MS); /* 4 ms to its end, 6 ms to the next start */
	h = inspect_row_hit(&v, &r0, 27 * MS, 10 * MS);
	assert_int_equal(h.range.start_ns, 30 * MS);
	h = inspect_row_hit(&v, &r1, 16 * MS + 1, 0);
	assert_string_equal(name(st, &h), "bwd");
	/* The open range reaches now; before it starts there is nothing. */
	h = inspect_row_hit(&v, &r0, 60 * MS, 0);
	assert_true(h.found && h.open);
	assert_string_equal(name(st, &h), "open");
	assert_int_equal(h.range.end_ns, 0);
	assert_false(inspect_row_hit(&v, &r0, 75 * MS, 1 * MS).found);
	v.now_ns = 45 * MS;
	assert_false(inspect_row_hit(&v, &r0, 52 * MS, 1 * MS).found);
	/* A paused view clipped at 29 ms shows nothing of the range starting at 30 ms. */
	v = view(st);
	assert_true(inspect_row_hit(&v, &r0, 31 * MS, 2 * MS).found);
	v.clip_ns = 29 * MS;
	assert_false(inspect_row_hit(&v, &r0, 31 * MS, 2 * MS).found);
	/* Rows without events of their own. */
	struct layout_row pr = row_of(st, LAYOUT_ROW_PROCESS, 0);
	assert_false(inspect_row_hit(&v, &pr, 12 * MS, S).found);
	/* A GPU op on a stream row, and the layout row that shows it. */
	struct layout_row sr = row_of(st, LAYOUT_ROW_GPU_STREAM, 0);
	v = view(st);
	h = inspect_row_hit(&v, &sr, 155 * MS, 0);
	assert_true(h.found && h.gpu);
	assert_int_equal(h.op.start_ns, 150 * MS);
	struct layout_row back = inspect_hit_row(st, &h);
	assert_int_equal(back.kind, LAYOUT_ROW_GPU_STREAM);
	assert_int_equal(back.lane, sr.lane);
	h = inspect_row_hit(&v, &r1, 12 * MS, 0);
	back = inspect_hit_row(st, &h);
	assert_int_equal(back.kind, LAYOUT_ROW_NVTX);
	assert_int_equal(back.row, 1);
	assert_int_equal(back.tid, 101);
}

static void test_find(void **state)
{
	const struct store *st = *state;
	struct inspect_find f;
	inspect_find_init(&f);
	inspect_find_set(&f, "W"); /* case-insensitive: fwd and bwd */
	struct inspect_hit h = inspect_find(&f, st, 1, 0);
	assert_true(h.found);
	assert_string_equal(name(st, &h), "fwd");
	h = inspect_find(&f, st, 1, 11 * MS); /* strictly after */
	assert_string_equal(name(st, &h), "bwd");
	assert_false(inspect_find(&f, st, 1, 16 * MS).found);
	h = inspect_find(&f, st, -1, 16 * MS); /* strictly before */
	assert_string_equal(name(st, &h), "fwd");
	assert_false(inspect_find(&f, st, -1, 11 * MS).found);
	/* A new query forgets the cached matches of the old one. */
	inspect_find_set(&f, "step");
	h = inspect_find(&f, st, 1, 10 * MS);
	assert_int_equal(h.range.start_ns, 30 * MS);
	assert_int_equal(h.row, 0);
	/* GPU rows too. */
	inspect_find_set(&f, "gemm");
	h = inspect_find(&f, st, 1, 120 * MS);
	assert_true(h.found && h.gpu);
	assert_int_equal(h.op.start_ns, 150 * MS);
	h = inspect_find(&f, st, -1, UINT64_MAX - 1);
	assert_int_equal(h.op.start_ns, 161 * MS);
	inspect_find_set(&f, "nothing-like-it");
	assert_false(inspect_find(&f, st, 1, 0).found);
	inspect_find_fini(&f);
}

static void test_gap_step(void **state)
{
	const struct store *st = *state;
	struct inspect_hit h;
	struct cpuview_gap g;
	assert_true(inspect_gap_step(st, 0, 1, 10 * MS, &h, &g));
	assert_int_equal(g.start_ns, 110 * MS);
	assert_int_equal(g.end_ns, 150 * MS);
	assert_true(h.gpu);
	assert_int_equal(h.lane_kind, STORE_LANE_GPU_STREAM);
	assert_int_equal(h.op.start_ns, 110 * MS);
	assert_false(inspect_gap_step(st, 120 * MS, 1, 10 * MS, &h, &g)); /* 160..161 is too short */
	assert_true(inspect_gap_step(st, 120 * MS, 1, 1 * MS / 2, &h, &g));
	assert_int_equal(g.start_ns, 160 * MS);
	assert_true(inspect_gap_step(st, 300 * MS, -1, 10 * MS, &h, &g));
	assert_int_equal(g.start_ns, 110 * MS);
}

/* Index of the first line starting with prefix, or -1. */
static int line_of(const struct inspect_text *t, const char *prefix)
{
	for (int i = 0; i < t->count; i++)
		if (strncmp(t->lines[i], prefix, strlen(prefix)) == 0)
			return i;
	return -1;
}

static void test_details_nvtx(void **state)
{
	const struct store *st = *state;
	struct inspect_view v = view(st);
	struct inspect_text t;
	struct layout_row r0 = row_of(st, LAYOUT_ROW_NVTX, 0), r1 = row_of(st, LAYOUT_ROW_NVTX, 1);
	struct inspect_hit h = inspect_row_hit(&v, &r0, 12 * MS, 0);
	inspect_details(&v, &t, &h);
	assert_string_equal(t.lines[0], "NVTX range  step");
	assert_string_equal(t.lines[1], "start     0.010000 s");
	assert_string_equal(t.lines[2], "duration  10.0ms");
	assert_string_equal(t.lines[3], "thread    main 101 (pid 100)");
	assert_string_equal(t.lines[4], "parent    none (outermost)");
	assert_string_equal(t.lines[5], "children  2: fwd, bwd");
	assert_int_equal(t.count, 6);
	h = inspect_row_hit(&v, &r1, 17 * MS, 0);
	v.origin_ns = 1 * MS; /* labels are relative to the origin */
	inspect_details(&v, &t, &h);
	assert_string_equal(t.lines[0], "NVTX range  bwd");
	assert_string_equal(t.lines[1], "start     0.015000 s");
	assert_string_equal(t.lines[4], "parent    step (10.0ms)");
	assert_string_equal(t.lines[5], "children  none");
	/* The open range: its duration so far, up to now. */
	v = view(st);
	h = inspect_row_hit(&v, &r0, 60 * MS, 0);
	inspect_details(&v, &t, &h);
	assert_string_equal(t.lines[0], "NVTX range  open");
	assert_string_equal(t.lines[2], "duration  20.0ms so far (open)");
}

static void test_details_kernel(void **state)
{
	const struct store *st = *state;
	struct inspect_view v = view(st);
	struct inspect_text t;
	struct layout_row sr = row_of(st, LAYOUT_ROW_GPU_STREAM, 0);
	struct inspect_hit h = inspect_row_hit(&v, &sr, 105 * MS, 0);
	inspect_details(&v, &t, &h);
	assert_string_equal(t.lines[0], "kernel    gemm_kernel");
	assert_string_equal(t.lines[1], "name      gemm_kernel");
	assert_string_equal(t.lines[2], "start     0.100000 s");
	assert_string_equal(t.lines[3], "duration  10.0ms");
	assert_int_equal(strncmp(t.lines[4], "stream    ", 10), 0);
	assert_true(line_of(&t, "grid      (128, 1, 1)   block (256, 1, 1)") >= 0);
	assert_true(line_of(&t, "launched  unknown") >= 0); /* no API record was traced */
}

static void test_cell_details_gap(void **state)
{
	const struct store *st = *state;
	struct inspect_view v = view(st);
	struct inspect_text t;
	struct layout_row sr = row_of(st, LAYOUT_ROW_GPU_STREAM, 0);
	v.cursor_col = 130; /* 130.5 ms: inside the 110..150 ms gap */
	assert_int_equal(inspect_cursor_ns(&v), 130 * MS + MS / 2);
	assert_int_equal(inspect_cell_details(&v, &t, &sr), 1);
	assert_int_equal(strncmp(t.lines[0], "GPU idle       40.0ms on ", 25), 0);
	assert_string_equal(t.lines[1], "start          0.110000 s");
	assert_string_equal(t.lines[2], "between        gemm_kernel and gemm_kernel");
	assert_string_equal(t.lines[3], "thread         unknown (no CUDA API calls traced)");
	v.gap_min_ns = 50 * MS; /* under the threshold: nothing to explain */
	assert_int_equal(inspect_cell_details(&v, &t, &sr), 0);
	v = view(st);
	v.cursor_col = 105; /* inside a kernel */
	assert_int_equal(inspect_cell_details(&v, &t, &sr), 0);
	/* A thread row without samples or cost readings has nothing either; NVTX rows never do. */
	struct layout_row tr = row_of(st, LAYOUT_ROW_THREAD, 0), r0 = row_of(st, LAYOUT_ROW_NVTX, 0);
	assert_int_equal(inspect_cell_details(&v, &t, &tr), 0);
	assert_int_equal(inspect_cell_details(&v, &t, &r0), 0);
}

/* Feeds one CPU sample of thread 101 at t whose stack is the one frame named by string id frame. */
static void sample(struct store *st, uint64_t t, uint32_t frame)
{
	unsigned char buf[sizeof(struct wire_stack) + 4];
	struct wire_stack ws = {.time_ns = t, .tid = 101, .kind = WIRE_STACK_SAMPLE, .depth = 1};
	memcpy(buf, &ws, sizeof ws);
	memcpy(buf + sizeof ws, &frame, 4);
	feed(st, WIRE_FRAME_STACKS, buf, sizeof buf);
}

static void test_cell_details_samples(void **state)
{
	struct store *st = *state;
	enum { F_A = 20, F_B, F_C };
	string(st, F_A, "fa\x1fliba.so");
	string(st, F_B, "fb\x1flibb.so");
	string(st, F_C, "fc\x1flibc.so");
	/* In the cell [60, 61) ms: stack fc once, fa twice, fb three times; one fb sample in the next cell.
	 */
	const uint32_t order[] = {F_A, F_C, F_B, F_A, F_B, F_B};
	for (size_t i = 0; i < sizeof order / sizeof *order; i++)
		sample(st, 60 * MS + (i + 1) * 100000, order[i]);
	sample(st, 61 * MS + 500000, F_B);
	struct inspect_view v = view(st);
	struct inspect_text t;
	struct layout_row tr = row_of(st, LAYOUT_ROW_THREAD, 0);
	v.cursor_col = 60;
	assert_int_equal(inspect_cell_details(&v, &t, &tr), 1);
	assert_int_equal(strncmp(t.lines[0], "CPU samples    6 in this cell (", 31), 0);
	assert_string_equal(t.lines[1], "thread         main 101");
	assert_string_equal(t.lines[2],
	                    "stack          the most frequent: 3 of 6 samples (3 distinct stacks)");
	assert_string_equal(t.lines[3], "  0  fb  libb.so");
	/* A tie goes to the stack seen first (the lowest id): fa and fb once each in [61, 62) with fa. */
	sample(st, 61 * MS + 600000, F_A);
	v.cursor_col = 61;
	assert_int_equal(inspect_cell_details(&v, &t, &tr), 1);
	assert_string_equal(t.lines[2],
	                    "stack          the most frequent: 1 of 2 samples (2 distinct stacks)");
	assert_string_equal(t.lines[3], "  0  fa  liba.so");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_row_hit, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_find, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_gap_step, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_details_nvtx, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_details_kernel, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_cell_details_gap, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_cell_details_samples, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
