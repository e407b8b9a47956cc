/*
 * Store unit tests for the CPU side: hand-made STACKS / EVENTS (OSRT, GC) / COUNTERS frames into a
 * store, checked through the store's CPU queries and the stats_cpu sections.
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

#include "cuscope/stats_cpu.h"
#include "cuscope/store.h"
#include "cuscope/wire.h"

#define US 1000ull
#define MS 1000000ull
#define T0 (1000 * MS)

static void feed(struct store *st, uint32_t type, const void *payload, uint32_t length)
{
	const char *cause = NULL;
	int rc = store_feed(st, 0, type, payload, length, &cause);
	if (rc)
		fail_msg("store_feed(%u): %s", type, cause ? cause : "?");
}

static void hello(struct store *st, int pid)
{
	unsigned char buf[sizeof(struct wire_hello) + 8];
	struct wire_hello h;
	memset(&h, 0, sizeof h);
	memcpy(h.magic, WIRE_MAGIC, 8);
	h.version = WIRE_VERSION;
	h.hello_size = sizeof h;
	h.pid = pid;
	h.ppid = 1;
	h.start_mono_ns = T0;
	strcpy(h.host, "testhost");
	h.cmdline_len = 5;
	memcpy(buf, &h, sizeof h);
	memcpy(buf + sizeof h, "prog\0", 5);
	feed(st, WIRE_FRAME_HELLO, buf, sizeof h + 5);
}

static void string(struct store *st, uint32_t id, const char *text)
{
	unsigned char buf[sizeof(struct wire_string) + 512];
	struct wire_string s = {id, (uint32_t)strlen(text)};
	memcpy(buf, &s, sizeof s);
	memcpy(buf + sizeof s, text, s.length);
	feed(st, WIRE_FRAME_STRING, buf, (uint32_t)(sizeof s + s.length));
}

/* A STACKS frame builder. */
struct stacks {
	unsigned char buf[65536];
	uint32_t len;
};

static void stack_add(struct stacks *s, uint16_t kind, uint32_t tid, uint64_t t, const uint32_t *ids,
                      uint16_t depth)
{
	struct wire_stack ws = {t, tid, kind, depth};
	memcpy(s->buf + s->len, &ws, sizeof ws);
	s->len += sizeof ws;
	memcpy(s->buf + s->len, ids, depth * 4u);
	s->len += depth * 4u;
}

static void stacks_feed(struct store *st, struct stacks *s)
{
	feed(st, WIRE_FRAME_STACKS, s->buf, s->len);
	s->len = 0;
}

static void event(struct store *st, uint16_t kind, uint32_t tid, uint64_t t, uint64_t value, uint32_t name)
{
	struct wire_event ev;
	memset(&ev, 0, sizeof ev);
	ev.kind = kind;
	ev.tid = tid;
	ev.time_ns = t;
	ev.value = value;
	ev.name_id = name;
	feed(st, WIRE_FRAME_EVENTS, &ev, sizeof ev);
}

/* Local string ids used by the tests. */
enum {
	S_SPIN = 1,   /* spin\x1fapp */
	S_MAIN,       /* main\x1fapp */
	S_CXX,        /* _ZN3foo3barEv\x1flibfoo.so */
	S_PY,         /* py::train:/x.py\x1f[python] */
	S_UNKNOWN,    /* 0xdeadbeef\x1f[unknown] */
	S_NOSYM,      /* libfoo.so+0x1234\x1flibfoo.so */
	S_READ,       /* read */
	S_SLEEP,      /* nanosleep */
	S_GC2,        /* gc gen 2 */
	S_TASKCLOCK,  /* task-clock */
	S_CYCLES,     /* cycles */
	S_STEP,       /* step (NVTX) */
	S_INNER,      /* inner (NVTX) */
	S_THREADNAME, /* worker */
	S_PYHOT,      /* py::Model.inner:/w/hot.py\x1f[perf-map] */
	S_EVAL,       /* _PyEval_EvalFrameDefault\x1fpython3.12 */
};

static struct store *setup(void)
{
	struct store *st = store_new();
	hello(st, 100);
	string(st, S_SPIN,
	       "spin\x1f"
	       "app");
	string(st, S_MAIN,
	       "main\x1f"
	       "app");
	string(st, S_CXX, "_ZN3foo3barEv\x1flibfoo.so");
	string(st, S_PY, "py::train:/x.py\x1f[python]");
	string(st, S_UNKNOWN, "0xdeadbeef\x1f[unknown]");
	string(st, S_NOSYM, "libfoo.so+0x1234\x1flibfoo.so");
	string(st, S_READ, "read");
	string(st, S_SLEEP, "nanosleep");
	string(st, S_GC2, "gc gen 2");
	string(st, S_TASKCLOCK, "task-clock");
	string(st, S_CYCLES, "cycles");
	string(st, S_STEP, "step");
	string(st, S_INNER, "inner");
	string(st, S_THREADNAME, "worker");
	string(st, S_PYHOT, "py::Model.inner:/w/hot.py\x1f[perf-map]");
	string(st, S_EVAL, "_PyEval_EvalFrameDefault\x1fpython3.12");
	return st;
}

static void test_samples_stacks_frames(void **state)
{
	(void)state;
	struct store *st = setup();
	struct stacks s = {.len = 0};
	const uint32_t a[] = {S_SPIN, S_MAIN}, b[] = {S_CXX, S_MAIN}, c[] = {S_PY, S_UNKNOWN, S_NOSYM};
	for (int i = 0; i < 10; i++)
		stack_add(&s, WIRE_STACK_SAMPLE, 101, T0 + (uint64_t)i * MS, i % 2 ? b : a, 2);
	stack_add(&s, WIRE_STACK_SAMPLE, 101, T0 + 20 * MS, c, 3);
	/* a frame id whose string never came is left out of the stack */
	const uint32_t d[] = {999, S_MAIN};
	stack_add(&s, WIRE_STACK_SAMPLE, 101, T0 + 21 * MS, d, 2);
	stacks_feed(st, &s);

	assert_int_equal(store_sample_count(st), 12);
	size_t lane = store_thread_lane_find(st, 0, 101);
	assert_int_not_equal(lane, SIZE_MAX);
	assert_int_equal(store_thread_lane_find(st, 0, 555), SIZE_MAX);
	struct store_lane_cpu_info ci;
	store_lane_cpu_get(st, 0, lane, &ci);
	assert_int_equal(ci.samples, 12);

	const struct store_sample *v;
	size_t n = store_lane_samples(st, 0, lane, 0, UINT64_MAX, &v);
	assert_int_equal(n, 12);
	/* identical sequences share one stack id */
	assert_int_equal(v[0].stack_id, v[2].stack_id);
	assert_int_equal(v[1].stack_id, v[3].stack_id);
	assert_int_not_equal(v[0].stack_id, v[1].stack_id);

	const uint32_t *f;
	assert_int_equal(store_stack_frames(st, v[1].stack_id, &f), 2);
	assert_string_equal(store_frame_function(st, f[0]), "foo::bar()"); /* demangled */
	assert_string_equal(store_frame_module(st, f[0]), "libfoo.so");
	assert_string_equal(store_frame_function(st, f[1]), "main");
	struct store_frame fr;
	store_frame_get(st, f[0], &fr);
	assert_string_equal(store_string(st, fr.text_id), "_ZN3foo3barEv\x1flibfoo.so");

	assert_int_equal(store_stack_frames(st, v[10].stack_id, &f), 3);
	assert_string_equal(store_frame_function(st, f[0]), "py::train:/x.py");
	assert_string_equal(store_frame_module(st, f[0]), "[python]");
	assert_string_equal(store_frame_function(st, f[1]), "0xdeadbeef");
	assert_string_equal(store_frame_module(st, f[1]), "[unknown]");
	assert_string_equal(store_frame_function(st, f[2]), "libfoo.so+0x1234");

	assert_int_equal(store_stack_frames(st, v[11].stack_id, &f), 1);
	assert_string_equal(store_frame_function(st, f[0]), "main");
	assert_int_equal(store_stack_frames(st, 0, &f), 0);
	assert_string_equal(store_frame_function(st, 0), "");

	/* window */
	n = store_lane_samples(st, 0, lane, T0 + 2 * MS, T0 + 5 * MS, &v);
	assert_int_equal(n, 3);
	assert_int_equal(v[0].time_ns, T0 + 2 * MS);
	assert_true(store_memory_bytes(st) > 0);
	store_free(st);
}

static void test_density_and_order(void **state)
{
	(void)state;
	struct store *st = setup();
	struct stacks s = {.len = 0};
	const uint32_t a[] = {S_SPIN};
	/* 100 samples at 1 ms, fed in two frames, the second one partly older (a reconnect replay) */
	for (int i = 0; i < 100; i += 2)
		stack_add(&s, WIRE_STACK_SAMPLE, 101, T0 + (uint64_t)i * MS, a, 1);
	stacks_feed(st, &s);
	for (int i = 1; i < 100; i += 2)
		stack_add(&s, WIRE_STACK_SAMPLE, 101, T0 + (uint64_t)i * MS, a, 1);
	stacks_feed(st, &s);
	size_t lane = store_thread_lane_find(st, 0, 101);
	const struct store_sample *v;
	size_t n = store_lane_samples(st, 0, lane, 0, UINT64_MAX, &v);
	assert_int_equal(n, 100);
	for (size_t i = 1; i < n; i++)
		assert_true(v[i - 1].time_ns <= v[i].time_ns);

	uint32_t counts[10];
	assert_int_equal(store_lane_sample_density(st, 0, lane, T0, T0 + 100 * MS, 10, counts), 100);
	for (int b = 0; b < 10; b++)
		assert_int_equal(counts[b], 10);
	/* a window over part of the data and beyond it */
	assert_int_equal(store_lane_sample_density(st, 0, lane, T0 + 50 * MS, T0 + 150 * MS, 4, counts), 50);
	assert_int_equal(counts[0], 25);
	assert_int_equal(counts[1], 25);
	assert_int_equal(counts[2], 0);
	assert_int_equal(counts[3], 0);
	/* uneven buckets still add up */
	uint32_t c3[3];
	assert_int_equal(store_lane_sample_density(st, 0, lane, T0, T0 + 100 * MS, 3, c3), 100);
	assert_int_equal(c3[0] + c3[1] + c3[2], 100);
	/* empty and degenerate windows */
	assert_int_equal(store_lane_sample_density(st, 0, lane, T0 + 200 * MS, T0 + 300 * MS, 10, counts), 0);
	assert_int_equal(counts[0], 0);
	assert_int_equal(store_lane_sample_density(st, 0, lane, T0, T0, 10, counts), 0);
	assert_int_equal(store_lane_sample_density(st, 0, lane, 0, UINT64_MAX, 7, counts), 100);
	/* a lane without CPU data */
	assert_int_equal(store_lane_sample_density(st, 0, 0, T0, T0 + MS, 10, counts), 0);
	store_free(st);
}

static void test_hot_functions(void **state)
{
	(void)state;
	struct store *st = setup();
	struct stacks s = {.len = 0};
	const uint32_t spin[] = {S_SPIN, S_MAIN}, cxx[] = {S_CXX, S_SPIN, S_MAIN},
	               rec[] = {S_SPIN, S_SPIN, S_MAIN};
	uint64_t t = T0;
	for (int i = 0; i < 6; i++)
		stack_add(&s, WIRE_STACK_SAMPLE, 101, t += MS, spin, 2);
	for (int i = 0; i < 3; i++)
		stack_add(&s, WIRE_STACK_SAMPLE, 101, t += MS, cxx, 3);
	stack_add(&s, WIRE_STACK_SAMPLE, 101, t += MS, rec, 3); /* recursion: spin counts once in total */
	stacks_feed(st, &s);
	size_t lane = store_thread_lane_find(st, 0, 101);
	struct store_hot_function hot[8];
	uint64_t samples = 0;
	size_t n = store_hot_functions(st, 0, lane, 0, UINT64_MAX, 8, hot, &samples);
	assert_int_equal(samples, 10);
	assert_int_equal(n, 3);
	assert_string_equal(store_frame_function(st, hot[0].frame_id), "spin");
	assert_int_equal(hot[0].self, 7);
	assert_int_equal(hot[0].total, 10);
	assert_string_equal(store_frame_function(st, hot[1].frame_id), "foo::bar()");
	assert_int_equal(hot[1].self, 3);
	assert_int_equal(hot[1].total, 3);
	assert_string_equal(store_frame_function(st, hot[2].frame_id), "main");
	assert_int_equal(hot[2].self, 0);
	assert_int_equal(hot[2].total, 10);
	/* top_n and a window with only the first six samples */
	n = store_hot_functions(st, 0, lane, T0, T0 + 6 * MS + 1, 1, hot, &samples);
	assert_int_equal(n, 1);
	assert_int_equal(samples, 6);
	assert_int_equal(hot[0].self, 6);
	assert_int_equal(store_hot_functions(st, 0, lane, T0 + 100 * MS, T0 + 200 * MS, 8, hot, &samples), 0);
	assert_int_equal(samples, 0);
	store_free(st);
}

/* Inclusive order: a native thread lists every frame by total; a Python thread only its Python
 * frames (the interpreter is in every stack), labelled FILE:QUALNAME. */
static void test_hot_inclusive(void **state)
{
	(void)state;
	struct store *st = setup();
	struct stacks s = {.len = 0};
	const uint32_t spin[] = {S_SPIN, S_MAIN}, cxx[] = {S_CXX, S_SPIN, S_MAIN};
	/* thread 102: outer train() calls Model.inner (recursively once); the leaf is the interpreter */
	const uint32_t py_in[] = {S_EVAL, S_PYHOT, S_EVAL, S_PYHOT, S_EVAL, S_PY, S_EVAL, S_MAIN},
	               py_out[] = {S_EVAL, S_PY, S_EVAL, S_MAIN}, native[] = {S_CXX, S_EVAL, S_MAIN};
	uint64_t t = T0;
	for (int i = 0; i < 3; i++)
		stack_add(&s, WIRE_STACK_SAMPLE, 101, t += MS, spin, 2);
	stack_add(&s, WIRE_STACK_SAMPLE, 101, t += MS, cxx, 3);
	for (int i = 0; i < 5; i++)
		stack_add(&s, WIRE_STACK_SAMPLE, 102, t += MS, py_in, 8);
	for (int i = 0; i < 2; i++)
		stack_add(&s, WIRE_STACK_SAMPLE, 102, t += MS, py_out, 4);
	stack_add(&s, WIRE_STACK_SAMPLE, 102, t += MS, native, 3);
	stacks_feed(st, &s);
	struct store_hot_function hot[8];
	uint64_t samples = 0;
	int python = -1;
	char buf[128];

	size_t lane = store_thread_lane_find(st, 0, 101);
	size_t n = store_hot_inclusive(st, 0, lane, 0, UINT64_MAX, 8, hot, &samples, &python);
	assert_int_equal(samples, 4);
	assert_int_equal(python, 0);
	assert_int_equal(n, 3);
	/* main and spin are in all 4 stacks: self breaks the tie */
	assert_string_equal(store_frame_function(st, hot[0].frame_id), "spin");
	assert_int_equal(hot[0].total, 4);
	assert_int_equal(hot[0].self, 3);
	assert_string_equal(store_frame_function(st, hot[1].frame_id), "main");
	assert_int_equal(hot[1].total, 4);
	assert_int_equal(hot[1].self, 0);
	assert_string_equal(store_frame_function(st, hot[2].frame_id), "foo::bar()");
	assert_int_equal(hot[2].total, 1);
	assert_string_equal(store_frame_label(st, hot[2].frame_id, buf, sizeof buf), "foo::bar()");

	lane = store_thread_lane_find(st, 0, 102);
	n = store_hot_inclusive(st, 0, lane, 0, UINT64_MAX, 8, hot, &samples, &python);
	assert_int_equal(samples, 8);
	assert_int_equal(python, 1);
	assert_int_equal(n, 2);
	assert_string_equal(store_frame_label(st, hot[0].frame_id, buf, sizeof buf), "/x.py:train");
	assert_int_equal(hot[0].total, 7);
	assert_int_equal(hot[0].self, 0);
	assert_string_equal(store_frame_label(st, hot[1].frame_id, buf, sizeof buf), "/w/hot.py:Model.inner");
	assert_int_equal(hot[1].total, 5); /* recursion counts once per stack */
	assert_int_equal(store_frame_is_python(st, hot[1].frame_id), 1);
	/* self order on the same thread: the interpreter leads */
	n = store_hot_functions(st, 0, lane, 0, UINT64_MAX, 1, hot, &samples);
	assert_string_equal(store_frame_function(st, hot[0].frame_id), "_PyEval_EvalFrameDefault");
	assert_int_equal(store_frame_is_python(st, hot[0].frame_id), 0);
	/* a window without the Python samples is a native one again; top_n holds */
	n = store_hot_inclusive(st, 0, lane, T0 + 12 * MS, UINT64_MAX, 1, hot, &samples, &python);
	assert_int_equal(samples, 1);
	assert_int_equal(python, 0);
	assert_int_equal(n, 1);
	assert_int_equal(hot[0].total, 1);
	assert_int_equal(store_hot_inclusive(st, 0, lane, T0 + 100 * MS, UINT64_MAX, 8, hot, &samples, NULL),
	                 0);
	store_free(st);
}

static void test_osrt_join_and_rows(void **state)
{
	(void)state;
	struct store *st = setup();
	struct stacks s = {.len = 0};
	const uint32_t sk[] = {S_MAIN};
	const uint32_t sk2[] = {S_CXX, S_MAIN};
	/* event first, then its stack */
	event(st, WIRE_EV_OSRT, 101, T0 + 10 * MS, T0 + 40 * MS, S_READ);
	stack_add(&s, WIRE_STACK_OSRT, 101, T0 + 10 * MS, sk, 1);
	/* stack first, then its event */
	stack_add(&s, WIRE_STACK_OSRT, 101, T0 + 50 * MS, sk2, 2);
	stacks_feed(st, &s);
	struct store_lane_cpu_info ci;
	size_t lane = store_thread_lane_find(st, 0, 101);
	store_lane_cpu_get(st, 0, lane, &ci);
	assert_int_equal(ci.osrt_pending, 1);
	event(st, WIRE_EV_OSRT, 101, T0 + 50 * MS, T0 + 70 * MS, S_SLEEP);
	/* a call nested in another (a handler blocking inside a blocking call) goes to row 1 */
	event(st, WIRE_EV_OSRT, 101, T0 + 55 * MS, T0 + 60 * MS, S_READ);
	/* a call without a stack at all */
	event(st, WIRE_EV_OSRT, 101, T0 + 80 * MS, T0 + 81 * MS, S_READ);

	store_lane_cpu_get(st, 0, lane, &ci);
	assert_int_equal(ci.osrt_pending, 0);
	assert_int_equal(ci.osrt_calls, 4);
	assert_int_equal(ci.osrt_row_count, 2);
	assert_int_equal(store_sample_count(st), 0);

	const struct store_call *c;
	size_t n = store_lane_osrt_query(st, 0, lane, 0, 0, UINT64_MAX, &c);
	assert_int_equal(n, 3);
	assert_string_equal(store_string(st, c[0].name_id), "read");
	assert_int_equal(c[0].end_ns, T0 + 40 * MS);
	const uint32_t *f;
	assert_int_equal(store_stack_frames(st, c[0].stack_id, &f), 1);
	assert_string_equal(store_frame_function(st, f[0]), "main");
	assert_string_equal(store_string(st, c[1].name_id), "nanosleep");
	assert_int_equal(store_stack_frames(st, c[1].stack_id, &f), 2);
	assert_string_equal(store_frame_function(st, f[0]), "foo::bar()");
	assert_int_equal(c[2].stack_id, 0);
	/* overlap query: [39 ms, 51 ms) touches the first two */
	n = store_lane_osrt_query(st, 0, lane, 0, T0 + 39 * MS, T0 + 51 * MS, &c);
	assert_int_equal(n, 2);
	n = store_lane_osrt_query(st, 0, lane, 0, T0 + 40 * MS, T0 + 50 * MS, &c);
	assert_int_equal(n, 0);
	n = store_lane_osrt_query(st, 0, lane, 1, 0, UINT64_MAX, &c);
	assert_int_equal(n, 1);
	assert_int_equal(c[0].start_ns, T0 + 55 * MS);
	assert_int_equal(store_lane_osrt_query(st, 0, lane, 2, 0, UINT64_MAX, &c), 0);
	assert_int_equal(store_last_ns(st), T0 + 81 * MS);
	store_free(st);
}

static void test_gc_and_counters(void **state)
{
	(void)state;
	struct store *st = setup();
	event(st, WIRE_EV_GC, 101, T0 + 5 * MS, T0 + 7 * MS, S_GC2);
	event(st, WIRE_EV_GC, 101, T0 + 9 * MS, T0 + 9 * MS + 500 * US, S_GC2);
	size_t lane = store_thread_lane_find(st, 0, 101);
	const struct store_call *c;
	assert_int_equal(store_lane_gc_query(st, 0, lane, 0, 0, UINT64_MAX, &c), 2);
	assert_string_equal(store_string(st, c[0].name_id), "gc gen 2");
	assert_int_equal(store_lane_gc_query(st, 0, lane, 0, T0 + 8 * MS, T0 + 9 * MS, &c), 0);
	assert_int_equal(store_lane_gc_query(st, 0, lane, 0, T0 + 8 * MS, T0 + 10 * MS, &c), 1);

	struct wire_counter wc[4] = {
	    {T0 + 500 * MS, 100, 101, S_TASKCLOCK},
	    {T0 + 1000 * MS, 300, 101, S_TASKCLOCK},
	    {T0 + 700 * MS, 200, 101, S_TASKCLOCK}, /* older than the newest: ignored */
	    {T0 + 500 * MS, 42, 102, S_CYCLES},
	};
	feed(st, WIRE_FRAME_COUNTERS, wc, sizeof wc);
	assert_int_equal(store_counter_count(st, 0), 2);
	struct store_counter out;
	store_counter_get(st, 0, 0, &out);
	assert_int_equal(out.tid, 101);
	assert_string_equal(store_string(st, out.event_id), "task-clock");
	assert_int_equal(out.value, 300);
	assert_int_equal(out.time_ns, T0 + 1000 * MS);
	store_counter_get(st, 0, 1, &out);
	assert_int_equal(out.tid, 102);
	assert_int_equal(out.value, 42);
	/* many threads: the counter table grows */
	for (uint32_t tid = 200; tid < 400; tid++) {
		struct wire_counter one = {T0, tid, tid, S_TASKCLOCK};
		feed(st, WIRE_FRAME_COUNTERS, &one, sizeof one);
	}
	assert_int_equal(store_counter_count(st, 0), 202);
	for (size_t i = 2; i < 202; i++) {
		store_counter_get(st, 0, i, &out);
		assert_int_equal(out.value, (uint64_t)out.tid);
	}
	store_free(st);
}

static void test_thread_activity(void **state)
{
	(void)state;
	struct store *st = setup();
	/* NVTX: step [0, 100 ms) with inner [20, 30 ms) nested */
	event(st, WIRE_EV_NVTX_PUSH, 101, T0, 0, S_STEP);
	event(st, WIRE_EV_NVTX_PUSH, 101, T0 + 20 * MS, 0, S_INNER);
	event(st, WIRE_EV_NVTX_POP, 101, T0 + 30 * MS, 0, 0);
	event(st, WIRE_EV_NVTX_POP, 101, T0 + 100 * MS, 0, 0);
	/* read blocks [40, 90 ms), a short nanosleep [10, 12 ms) */
	event(st, WIRE_EV_OSRT, 101, T0 + 10 * MS, T0 + 12 * MS, S_SLEEP);
	event(st, WIRE_EV_OSRT, 101, T0 + 40 * MS, T0 + 90 * MS, S_READ);
	event(st, WIRE_EV_GC, 101, T0 + 32 * MS, T0 + 35 * MS, S_GC2);
	struct stacks s = {.len = 0};
	const uint32_t spin[] = {S_SPIN, S_MAIN}, cxx[] = {S_CXX, S_MAIN};
	for (int i = 0; i < 8; i++)
		stack_add(&s, WIRE_STACK_SAMPLE, 101, T0 + (uint64_t)(i + 1) * MS, i < 6 ? cxx : spin, 2);
	stacks_feed(st, &s);

	struct store_thread_activity a;
	/* the GPU-idle gap [38, 95 ms): blocked in read, inside "step" */
	store_thread_activity(st, 0, 101, T0 + 38 * MS, T0 + 95 * MS, &a);
	assert_int_not_equal(a.lane, SIZE_MAX);
	assert_true(a.has_blocking);
	assert_string_equal(store_string(st, a.blocking.name_id), "read");
	assert_int_equal(a.blocking_overlap_ns, 50 * MS);
	assert_true(a.has_nvtx);
	assert_string_equal(store_string(st, a.nvtx.name_id), "step");
	assert_int_equal(a.nvtx_depth, 0);
	assert_false(a.has_gc);
	assert_int_equal(a.samples, 0);

	/* [0, 36 ms): samples (foo::bar most), inner is the innermost range, the GC, the short sleep */
	store_thread_activity(st, 0, 101, T0, T0 + 36 * MS, &a);
	assert_int_equal(a.samples, 8);
	assert_string_equal(store_frame_function(st, a.top_frame), "foo::bar()");
	assert_int_equal(a.top_samples, 6);
	const uint32_t *f;
	assert_int_equal(store_stack_frames(st, a.top_stack, &f), 2);
	assert_string_equal(store_frame_function(st, f[0]), "foo::bar()");
	assert_true(a.has_nvtx);
	assert_string_equal(store_string(st, a.nvtx.name_id), "inner");
	assert_int_equal(a.nvtx_depth, 1);
	assert_true(a.has_gc);
	assert_int_equal(a.gc_overlap_ns, 3 * MS);
	assert_true(a.has_blocking);
	assert_string_equal(store_string(st, a.blocking.name_id), "nanosleep");

	/* an open range counts: push without pop */
	event(st, WIRE_EV_NVTX_PUSH, 101, T0 + 200 * MS, 0, S_STEP);
	store_thread_activity(st, 0, 101, T0 + 300 * MS, T0 + 400 * MS, &a);
	assert_true(a.has_nvtx);
	assert_int_equal(a.nvtx.end_ns, 0);
	assert_false(a.has_blocking);

	store_thread_activity(st, 0, 999, T0, T0 + MS, &a);
	assert_int_equal(a.lane, SIZE_MAX);
	store_free(st);
}

/* ---- stats_cpu sections through the row callback ---- */

struct rows {
	char text[64][256];
	size_t n;
};

static void collect(void *ctx, const struct stats_cpu_cell *cells, size_t count)
{
	struct rows *r = ctx;
	if (r->n == 64)
		return;
	char *o = r->text[r->n++];
	size_t used = 0;
	for (size_t i = 0; i < count; i++) {
		if (cells[i].str)
			used += (size_t)snprintf(o + used, 256 - used, "%s%s", i ? "|" : "", cells[i].str);
		else
			used += (size_t)snprintf(o + used, 256 - used, "%s%lld", i ? "|" : "",
			                         (long long)cells[i].num);
	}
}

static void test_stats_sections(void **state)
{
	(void)state;
	struct store *st = setup();
	event(st, WIRE_EV_THREAD_NAME, 101, T0, 0, S_THREADNAME);
	struct stacks s = {.len = 0};
	const uint32_t spin[] = {S_SPIN, S_MAIN}, cxx[] = {S_CXX, S_MAIN};
	for (int i = 0; i < 4; i++)
		stack_add(&s, WIRE_STACK_SAMPLE, 101, T0 + (uint64_t)(i + 1) * MS, i < 3 ? spin : cxx, 2);
	stack_add(&s, WIRE_STACK_SAMPLE, 100, T0 + 9 * MS, cxx, 2);
	stacks_feed(st, &s);
	/* durations 1..100 ms of read on 101, plus one GC */
	for (uint64_t i = 1; i <= 100; i++)
		event(st, WIRE_EV_OSRT, 101, T0 + i * 1000 * MS, T0 + i * 1000 * MS + i * MS, S_READ);
	event(st, WIRE_EV_OSRT, 101, T0 + 200000 * MS, T0 + 200000 * MS + 5 * MS, S_SLEEP);
	event(st, WIRE_EV_GC, 101, T0 + 300000 * MS, T0 + 300000 * MS + 2 * MS, S_GC2);
	struct wire_counter wc[3] = {
	    {T0, 7, 101, S_TASKCLOCK},
	    {T0, 9, 100, S_TASKCLOCK},
	    {T0, 5, 101, S_CYCLES},
	};
	feed(st, WIRE_FRAME_COUNTERS, wc, sizeof wc);

	size_t count;
	const struct stats_cpu_section *sec = stats_cpu_sections(&count);
	assert_int_equal(count, 4);
	assert_string_equal(sec[0].name, "hot");
	assert_int_equal(sec[0].col_count, 7);
	assert_string_equal(sec[0].cols[6].key, "share");
	assert_int_equal(sec[0].cols[6].type, STATS_CPU_FLOAT);
	assert_string_equal(sec[1].name, "osrt");
	assert_int_equal(sec[1].col_count, 9);
	assert_string_equal(sec[2].name, "counters");
	assert_int_equal(sec[2].col_count, 5);

	struct rows r = {.n = 0};
	sec[0].build(st, collect, &r);
	assert_int_equal(r.n, 3);
	/* by tid: 100 (unnamed main) first, then 101 "worker" by samples */
	assert_string_equal(r.text[0], "100|100||foo::bar()|libfoo.so|1|1.0000");
	assert_string_equal(r.text[1], "100|101|worker|spin|app|3|0.7500");
	assert_string_equal(r.text[2], "100|101|worker|foo::bar()|libfoo.so|1|0.2500");

	r.n = 0;
	stats_cpu_osrt(st, collect, &r);
	assert_int_equal(r.n, 3);
	/* read: count 100, total 5050 ms, p50 = 50 ms, p99 = 99 ms, max 100 ms (nearest rank) */
	assert_string_equal(r.text[0], "100|101|worker|read|100|5050000000|50000000|99000000|100000000");
	assert_string_equal(r.text[1], "100|101|worker|nanosleep|1|5000000|5000000|5000000|5000000");
	assert_string_equal(r.text[2], "100|101|worker|python_gc|1|2000000|2000000|2000000|2000000");

	r.n = 0;
	stats_cpu_counters(st, collect, &r);
	assert_int_equal(r.n, 3);
	assert_string_equal(r.text[0], "100|100||task-clock|9");
	assert_string_equal(r.text[1], "100|101|worker|cycles|5");
	assert_string_equal(r.text[2], "100|101|worker|task-clock|7");

	/* an empty store gives no rows */
	struct store *empty = store_new();
	r.n = 0;
	stats_cpu_hot(empty, collect, &r);
	stats_cpu_osrt(empty, collect, &r);
	stats_cpu_counters(empty, collect, &r);
	assert_int_equal(r.n, 0);
	assert_int_equal(store_sample_count(empty), 0);
	store_free(empty);
	store_free(st);
}

static void test_many_stacks(void **state)
{
	(void)state;
	struct store *st = setup();
	/* 3,000 distinct stacks (the stack table and frame map rehash), each sampled twice */
	for (uint32_t id = 100; id < 3100; id++) {
		char text[64];
		snprintf(text, sizeof text, "f%u\x1fmod", id);
		string(st, id, text);
	}
	struct stacks s = {.len = 0};
	uint64_t t = T0;
	for (int round = 0; round < 2; round++) {
		for (uint32_t id = 100; id < 3100; id++) {
			const uint32_t fr[] = {id, S_MAIN};
			stack_add(&s, WIRE_STACK_SAMPLE, 101, t += US, fr, 2);
			if (s.len > sizeof s.buf - 64)
				stacks_feed(st, &s);
		}
	}
	stacks_feed(st, &s);
	size_t lane = store_thread_lane_find(st, 0, 101);
	const struct store_sample *v;
	size_t n = store_lane_samples(st, 0, lane, 0, UINT64_MAX, &v);
	assert_int_equal(n, 6000);
	for (size_t i = 0; i < 3000; i++)
		assert_int_equal(v[i].stack_id, v[i + 3000].stack_id);
	struct store_hot_function hot[4];
	uint64_t samples;
	assert_int_equal(store_hot_functions(st, 0, lane, 0, UINT64_MAX, 4, hot, &samples), 4);
	assert_int_equal(samples, 6000);
	assert_string_equal(store_frame_function(st, hot[0].frame_id), "f100"); /* ties by frame id */
	assert_int_equal(hot[0].self, 2);
	store_free(st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_samples_stacks_frames), cmocka_unit_test(test_density_and_order),
	    cmocka_unit_test(test_hot_functions),         cmocka_unit_test(test_hot_inclusive),
	    cmocka_unit_test(test_osrt_join_and_rows),    cmocka_unit_test(test_gc_and_counters),
	    cmocka_unit_test(test_thread_activity),       cmocka_unit_test(test_stats_sections),
	    cmocka_unit_test(test_many_stacks),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
