/*
 * store_replay_identity: the frames that open a new live capture segment rebuild, in a fresh store,
 * each process (pid, command, exit), its strings, thread names, open push/pop ranges, GPU devices
 * and loss counters, so that later frames of the same sources read on their own.
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

#include "cuscope/store.h"
#include "cuscope/wire.h"

#define MS 1000000ull
#define T0 (1000 * MS)

static void feed(struct store *st, int source, uint32_t type, const void *payload, uint32_t length)
{
	const char *cause = NULL;
	if (store_feed(st, source, type, payload, length, &cause))
		fail_msg("store_feed(%u): %s", type, cause ? cause : "?");
}

static void hello(struct store *st, int source, int pid)
{
	unsigned char buf[sizeof(struct wire_hello) + 9];
	struct wire_hello h;
	memset(&h, 0, sizeof h);
	memcpy(h.magic, WIRE_MAGIC, 8);
	h.version = WIRE_VERSION;
	h.hello_size = sizeof h;
	h.pid = pid;
	h.ppid = 1;
	h.start_mono_ns = T0;
	strcpy(h.host, "replay-host");
	h.cmdline_len = 9;
	memcpy(buf, &h, sizeof h);
	memcpy(buf + sizeof h, "prog\0-x\0\0", 9);
	feed(st, source, WIRE_FRAME_HELLO, buf, sizeof buf);
}

static void string(struct store *st, int source, uint32_t id, const char *text)
{
	unsigned char buf[sizeof(struct wire_string) + 64];
	struct wire_string s = {id, (uint32_t)strlen(text)};
	memcpy(buf, &s, sizeof s);
	memcpy(buf + sizeof s, text, s.length);
	feed(st, source, WIRE_FRAME_STRING, buf, (uint32_t)(sizeof s + s.length));
}

static struct wire_event ev(uint16_t kind, uint64_t t, uint32_t tid, uint32_t name)
{
	struct wire_event e;
	memset(&e, 0, sizeof e);
	e.kind = kind;
	e.time_ns = t;
	e.tid = tid;
	e.name_id = name;
	return e;
}

static int copy_frame(void *ctx, int source, uint32_t type, const void *payload, uint32_t length)
{
	const char *cause = NULL;
	return store_feed(ctx, source, type, payload, length, &cause);
}

static void test_replay_rebuilds_identity(void **state)
{
	(void)state;
	struct store *a = store_new();
	/* source 3: a running process with a named thread, an open range, a device and losses */
	hello(a, 3, 500);
	string(a, 3, 7, "worker");
	string(a, 3, 9, "outer");
	string(a, 3, 11, "H200");
	struct wire_event e[3] = {ev(WIRE_EV_THREAD_NAME, T0 + 1, 501, 7),
	                          ev(WIRE_EV_NVTX_PUSH, T0 + 2, 501, 9),
	                          ev(WIRE_EV_NVTX_MARK, T0 + 3, 501, 9)};
	feed(a, 3, WIRE_FRAME_EVENTS, e, sizeof e);
	struct wire_gpu_device d = {.device = 0, .name_id = 11, .sm_count = 132};
	feed(a, 3, WIRE_FRAME_GPU_DEVICE, &d, sizeof d);
	struct wire_loss loss = {WIRE_LOSS_RING_FULL, 0, 42};
	feed(a, 3, WIRE_FRAME_LOSSES, &loss, sizeof loss);
	/* source 5: a process that already ended */
	hello(a, 5, 600);
	struct wire_bye bye = {T0 + 9, 3, 0};
	feed(a, 5, WIRE_FRAME_BYE, &bye, sizeof bye);
	store_source_closed(a, 5);

	struct store *b = store_new();
	assert_int_equal(store_replay_identity(a, copy_frame, b), 0);
	assert_int_equal(store_process_count(b), 2);
	struct store_process_info pi;
	store_process_get(b, 0, &pi);
	assert_int_equal(pi.pid, 500);
	assert_string_equal(pi.host, "replay-host");
	assert_string_equal(pi.cmdline, "prog -x");
	assert_int_equal(store_process_loss(b, 0, WIRE_LOSS_RING_FULL), 42);
	struct store_gpu_device_info di;
	assert_int_equal(store_gpu_device_find(b, 0, 0, &di), 0);
	assert_string_equal(di.name, "H200");
	size_t lane = store_thread_lane_find(b, 0, 501);
	assert_true(lane != SIZE_MAX);
	struct store_lane_info li;
	store_lane_get(b, 0, lane, &li);
	assert_string_equal(li.name, "worker");
	assert_int_equal(li.open_count, 1);
	/* The next frame of source 3 uses the ids the collector gave: the pop closes "outer". */
	struct wire_event pop = ev(WIRE_EV_NVTX_POP, T0 + 50, 501, 0);
	feed(b, 3, WIRE_FRAME_EVENTS, &pop, sizeof pop);
	const struct store_range *r;
	assert_int_equal(store_lane_row_all(b, 0, lane, 0, &r), 1);
	assert_string_equal(store_string(b, r[0].name_id), "outer");
	assert_int_equal(r[0].start_ns, T0 + 2);
	struct wire_event mark = ev(WIRE_EV_NVTX_MARK, T0 + 60, 501, 9);
	feed(b, 3, WIRE_FRAME_EVENTS, &mark, sizeof mark);
	assert_int_equal(store_lane_mark_query(b, 0, lane, 0, UINT64_MAX, &r), 1);
	assert_string_equal(store_string(b, r[0].name_id), "outer");
	store_process_get(b, 1, &pi);
	assert_int_equal(pi.pid, 600);
	assert_true(pi.exited);
	assert_int_equal(pi.exit_code, 3);
	store_free(a);
	store_free(b);
}

static int failing_emit(void *ctx, int source, uint32_t type, const void *payload, uint32_t length)
{
	(void)source, (void)type, (void)payload, (void)length;
	(*(int *)ctx)++;
	return -28; /* ENOSPC */
}

/* The first emit error stops the replay and is returned. */
static void test_replay_stops_on_error(void **state)
{
	(void)state;
	struct store *a = store_new();
	hello(a, 0, 700);
	string(a, 0, 1, "x");
	int calls = 0;
	assert_int_equal(store_replay_identity(a, failing_emit, &calls), -28);
	assert_int_equal(calls, 1);
	store_free(a);
}

/* A process the viewer detached from reads as detached (at the same time) after a replay. */
static void test_replay_keeps_detach(void **state)
{
	(void)state;
	struct store *a = store_new();
	hello(a, 2, 800);
	struct wire_bye bye = {T0 + 7, -1, WIRE_BYE_DETACHED};
	feed(a, 2, WIRE_FRAME_BYE, &bye, sizeof bye);
	store_source_closed(a, 2);
	struct store *b = store_new();
	assert_int_equal(store_replay_identity(a, copy_frame, b), 0);
	store_source_closed(b, 2);
	struct store_process_info pi;
	store_process_get(b, 0, &pi);
	assert_int_equal(pi.pid, 800);
	assert_true(pi.detached);
	assert_false(pi.exited);
	assert_true(pi.final_counts);
	assert_int_equal(pi.detached_ns, T0 + 7);
	store_free(a);
	store_free(b);
}

static void test_replay_keeps_cost(void **state)
{
	(void)state;
	struct store *a = store_new();
	hello(a, 2, 800);
	struct wire_cost cost[2] = {
	    {.time_ns = T0 + 5,
	     .own_cpu_ns = 40,
	     .added_ns = 7,
	     .events = 9,
	     .source = WIRE_COST_SAMPLING,
	     .backoffs = 2,
	     .level = 250,
	     .flags = WIRE_COST_REDUCED},
	    {.time_ns = T0 + 5, .own_cpu_ns = 11, .source = WIRE_COST_SENDER},
	};
	feed(a, 2, WIRE_FRAME_COST, cost, sizeof cost);
	struct store *b = store_new();
	assert_int_equal(store_replay_identity(a, copy_frame, b), 0);
	struct store_cost c;
	assert_int_equal(store_cost_get(b, 0, WIRE_COST_SAMPLING, &c), 0);
	assert_int_equal(c.cpu_ns, 40);
	assert_int_equal(c.added_ns, 7);
	assert_int_equal(c.events, 9);
	assert_int_equal(c.backoffs, 2);
	assert_int_equal(c.level, 250);
	assert_true(c.reduced);
	assert_int_equal(store_cost_get(b, 0, WIRE_COST_SENDER, &c), 0);
	assert_int_equal(c.cpu_ns, 11);
	assert_int_equal(store_cost_get(b, 0, WIRE_COST_GPU, &c), -ENOENT);
	store_free(a);
	store_free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_replay_rebuilds_identity),
	    cmocka_unit_test(test_replay_stops_on_error),
	    cmocka_unit_test(test_replay_keeps_detach),
	    cmocka_unit_test(test_replay_keeps_cost),
	};
	return cmocka_run_group_tests_name("store_replay", tests, NULL, NULL);
}
