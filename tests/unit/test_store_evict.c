/*
 * Store eviction unit tests: the memory bound of a live store drops the oldest completed events of
 * every kind by time, keeps queries exact over what remains, says how far back memory reaches, and
 * lets the NVTX panel's incremental statistics count every range once.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cuscope/nvtxstats.h"
#include "cuscope/store.h"
#include "cuscope/wire.h"

#define MS 1000000ull
#define T0 (1000 * MS)

static void feed(struct store *st, uint32_t type, const void *payload, uint32_t length)
{
	const char *cause = NULL;
	int rc = store_feed(st, 0, type, payload, length, &cause);
	if (rc)
		fail_msg("store_feed(%u): %s", type, cause ? cause : "?");
}

static void hello(struct store *st)
{
	unsigned char buf[sizeof(struct wire_hello) + 5];
	struct wire_hello h;
	memset(&h, 0, sizeof h);
	memcpy(h.magic, WIRE_MAGIC, 8);
	h.version = WIRE_VERSION;
	h.hello_size = sizeof h;
	h.pid = 42;
	h.ppid = 1;
	h.start_mono_ns = T0;
	h.cmdline_len = 5;
	memcpy(buf, &h, sizeof h);
	memcpy(buf + sizeof h, "prog\0", 5);
	feed(st, WIRE_FRAME_HELLO, buf, sizeof h + 5);
}

static void string(struct store *st, uint32_t id, const char *text)
{
	unsigned char buf[sizeof(struct wire_string) + 64];
	struct wire_string s = {id, (uint32_t)strlen(text)};
	memcpy(buf, &s, sizeof s);
	memcpy(buf + sizeof s, text, s.length);
	feed(st, WIRE_FRAME_STRING, buf, (uint32_t)(sizeof s + s.length));
}

static struct wire_event ev(uint16_t kind, uint64_t t, uint32_t tid, uint32_t name, uint64_t value)
{
	struct wire_event e;
	memset(&e, 0, sizeof e);
	e.kind = kind;
	e.time_ns = t;
	e.tid = tid;
	e.name_id = name;
	e.value = value;
	return e;
}

static struct wire_gpu_event kernel(uint64_t start, uint64_t end)
{
	struct wire_gpu_event e;
	memset(&e, 0, sizeof e);
	e.kind = WIRE_GPU_KERNEL;
	e.start_ns = start;
	e.end_ns = end;
	e.stream = 7;
	e.context = 1;
	e.name_id = 2;
	return e;
}

/* Lane of thread 101 and the stream lane. */
static void lanes(const struct store *st, size_t *thread, size_t *stream)
{
	struct store_process_info pi;
	store_process_get(st, 0, &pi);
	*thread = *stream = SIZE_MAX;
	for (size_t l = 0; l < pi.lane_count; l++) {
		struct store_lane_info li;
		store_lane_get(st, 0, l, &li);
		if (li.kind == STORE_LANE_THREAD && li.tid == 101)
			*thread = l;
		if (li.kind == STORE_LANE_GPU_STREAM)
			*stream = l;
	}
	assert_true(*thread != SIZE_MAX && *stream != SIZE_MAX);
}

/*
 * 100 ms of each kind, one per ms: push/pop ranges, marks, kernels, samples, blocking calls; plus
 * one range open since the start. Evicting before 60 ms keeps exactly what ended at or after it.
 */
static void test_evict_before_every_kind(void **state)
{
	(void)state;
	struct store *st = store_new();
	hello(st);
	string(st, 1, "step");
	string(st, 2, "kern");
	string(st, 3, "read");
	string(st, 4, "f\x1fmod");
	struct wire_event open = ev(WIRE_EV_NVTX_PUSH, T0, 101, 1, 0);
	feed(st, WIRE_FRAME_EVENTS, &open, sizeof open);
	for (uint64_t i = 0; i < 100; i++) {
		uint64_t t = T0 + i * MS;
		struct wire_event e[5] = {
		    ev(WIRE_EV_NVTX_PUSH, t + 1, 101, 1, 0),
		    ev(WIRE_EV_NVTX_POP, t + MS / 2, 101, 0, 0),
		    ev(WIRE_EV_NVTX_MARK, t + 2, 101, 1, 0),
		    ev(WIRE_EV_OSRT, t + 3, 101, 3, t + MS / 2),
		};
		feed(st, WIRE_FRAME_EVENTS, e, 4 * sizeof e[0]);
		struct wire_gpu_event k = kernel(t + 10, t + MS / 2);
		feed(st, WIRE_FRAME_GPU, &k, sizeof k);
		unsigned char buf[sizeof(struct wire_stack) + 4];
		struct wire_stack ws = {t + 4, 101, WIRE_STACK_SAMPLE, 1};
		uint32_t frame = 4;
		memcpy(buf, &ws, sizeof ws);
		memcpy(buf + sizeof ws, &frame, 4);
		feed(st, WIRE_FRAME_STACKS, buf, sizeof buf);
	}
	size_t th, sl;
	lanes(st, &th, &sl);
	uint64_t events = store_event_count(st);
	assert_int_equal(store_memory_from_ns(st), 0);

	uint64_t horizon = T0 + 60 * MS;
	uint64_t dropped = store_evict_before(st, horizon);
	/* 60 each of ranges, marks, blocking calls, kernels, samples */
	assert_int_equal(dropped, 5 * 60);
	assert_int_equal(store_evicted_count(st), 5 * 60);
	assert_int_equal(store_memory_from_ns(st), horizon);
	assert_int_equal(store_event_count(st), events); /* totals still count everything */

	const struct store_range *r;
	/* nested row 1 holds the per-ms ranges; row 0 the open one */
	assert_int_equal(store_lane_row_all(st, 0, th, 1, &r), 40);
	assert_int_equal(r[0].start_ns, horizon + 1);
	assert_int_equal(store_lane_row_dropped(st, 0, th, 1), 60);
	assert_int_equal(store_lane_row_query(st, 0, th, 1, 0, UINT64_MAX, &r), 40);
	assert_int_equal(store_lane_row_query(st, 0, th, 1, T0, horizon, &r), 0);
	struct store_lane_info li;
	store_lane_get(st, 0, th, &li);
	assert_int_equal(li.open_count, 1); /* still open: never evicted */
	assert_int_equal(store_lane_mark_query(st, 0, th, 0, UINT64_MAX, &r), 40);
	const struct store_gpu_op *op;
	assert_int_equal(store_lane_gpu_all(st, 0, sl, 0, &op), 40);
	assert_int_equal(op[0].start_ns, horizon + 10);
	const struct store_sample *s;
	assert_int_equal(store_lane_samples(st, 0, th, 0, UINT64_MAX, &s), 40);
	assert_int_equal(s[0].time_ns, horizon + 4);
	const struct store_call *c;
	assert_int_equal(store_lane_osrt_query(st, 0, th, 0, 0, UINT64_MAX, &c), 40);
	assert_int_equal(c[0].start_ns, horizon + 3);

	/* An earlier horizon changes nothing. */
	assert_int_equal(store_evict_before(st, T0 + 10 * MS), 0);
	assert_int_equal(store_memory_from_ns(st), horizon);
	store_free(st);
}

/* A range that began before the horizon and ends after it stays whole. */
static void test_straddling_range_stays(void **state)
{
	(void)state;
	struct store *st = store_new();
	hello(st);
	string(st, 1, "long");
	struct wire_event e[4] = {
	    ev(WIRE_EV_NVTX_PUSH, T0, 101, 1, 0),
	    ev(WIRE_EV_NVTX_POP, T0 + 10 * MS, 101, 0, 0),
	    ev(WIRE_EV_NVTX_PUSH, T0 + 20 * MS, 101, 1, 0),
	    ev(WIRE_EV_NVTX_POP, T0 + 90 * MS, 101, 0, 0),
	};
	feed(st, WIRE_FRAME_EVENTS, e, sizeof e);
	assert_int_equal(store_evict_before(st, T0 + 50 * MS), 1);
	const struct store_range *r;
	size_t th = store_thread_lane_find(st, 0, 101);
	assert_int_equal(store_lane_row_query(st, 0, th, 0, T0 + 40 * MS, T0 + 60 * MS, &r), 1);
	assert_int_equal(r[0].start_ns, T0 + 20 * MS);
	store_free(st);
}

/*
 * Under a limit the store never holds much more than it while events stream in (checked between
 * feeds), keeps the newest events, and the NVTX statistics updated along the way count each range
 * exactly once.
 */
static void test_limit_bounds_memory(void **state)
{
	(void)state;
	struct store *st = store_new();
	const size_t limit = 4u << 20;
	store_set_memory_limit(st, limit);
	assert_int_equal(store_memory_limit(st), limit);
	hello(st);
	string(st, 1, "step");
	struct nvtx_stats ns;
	nvtx_stats_init(&ns);
	enum { BATCH = 2048, BATCHES = 400 };
	static struct wire_event e[BATCH];
	uint64_t t = T0, ranges = 0;
	size_t peak = 0;
	for (int b = 0; b < BATCHES; b++) {
		for (int i = 0; i < BATCH; i += 2) {
			e[i] = ev(WIRE_EV_NVTX_PUSH, t += 1000, 101 + (uint32_t)(i % 8), 1, 0);
			e[i + 1] = ev(WIRE_EV_NVTX_POP, t += 1000, 101 + (uint32_t)(i % 8), 0, 0);
			ranges++;
		}
		feed(st, WIRE_FRAME_EVENTS, e, sizeof e);
		size_t used = store_event_bytes(st);
		if (used > peak)
			peak = used;
		assert_true(store_memory_bytes(st) <= used + (1u << 20)); /* strings, indexes: small */
		if (b % 7 == 0)
			nvtx_stats_update(&ns, st);
	}
	nvtx_stats_update(&ns, st);
	/* Unbounded this would be 800 k ranges (> 19 MB of rows alone). */
	assert_true(peak <= limit);
	assert_true(store_evicted_count(st) > 0);
	uint64_t from = store_memory_from_ns(st);
	assert_true(from > T0 && from < t);
	/* The newest range is there; nothing before the horizon is. */
	size_t th = store_thread_lane_find(st, 0, 101);
	const struct store_range *r;
	size_t n = store_lane_row_all(st, 0, th, 0, &r);
	assert_true(n > 0);
	assert_true(r[0].end_ns >= from);
	assert_true(r[n - 1].end_ns > t - 20000);
	assert_int_equal(store_event_count(st), (uint64_t)BATCH * BATCHES);
	const struct nvtx_stat *s =
	    nvtx_stats_find(&ns, store_lane_row_all(st, 0, th, 0, &r) ? r[0].name_id : 0, 0);
	assert_non_null(s);
	assert_int_equal(s->hist.count, ranges);
	nvtx_stats_fini(&ns);
	store_free(st);
}

/* Without a limit nothing is ever dropped. */
static void test_no_limit_keeps_all(void **state)
{
	(void)state;
	struct store *st = store_new();
	hello(st);
	static struct wire_event e[4096];
	for (int i = 0; i < 4096; i += 2) {
		e[i] = ev(WIRE_EV_NVTX_PUSH, T0 + (uint64_t)i * 1000, 101, 0, 0);
		e[i + 1] = ev(WIRE_EV_NVTX_POP, T0 + (uint64_t)i * 1000 + 500, 101, 0, 0);
	}
	for (int k = 0; k < 50; k++)
		feed(st, WIRE_FRAME_EVENTS, e, sizeof e);
	assert_int_equal(store_trim(st), 0);
	assert_int_equal(store_evicted_count(st), 0);
	assert_int_equal(store_memory_from_ns(st), 0);
	store_free(st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_evict_before_every_kind),
	    cmocka_unit_test(test_straddling_range_stays),
	    cmocka_unit_test(test_limit_bounds_memory),
	    cmocka_unit_test(test_no_limit_keeps_all),
	};
	return cmocka_run_group_tests_name("store_evict", tests, NULL, NULL);
}
