/*
 * NVTX payload fields in the store (WIRE_EV_NVTX_ARG): kept by the range or mark they follow on
 * their thread (push/pop, start/end on the async lane, marks, open ranges), interleaved sources
 * kept apart, stray and excess fields dropped and counted, open ranges' fields replayed.
 */
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

#define T0 1000000000ull

static void feed(struct store *st, int source, uint32_t type, const void *payload, uint32_t length)
{
	const char *cause = NULL;
	if (store_feed(st, source, type, payload, length, &cause))
		fail_msg("store_feed(%u): %s", type, cause ? cause : "?");
}

static void hello(struct store *st, int source, int pid)
{
	unsigned char buf[sizeof(struct wire_hello) + 5];
	struct wire_hello h;
	memset(&h, 0, sizeof h);
	memcpy(h.magic, WIRE_MAGIC, 8);
	h.version = WIRE_VERSION;
	h.hello_size = sizeof h;
	h.pid = pid;
	h.start_mono_ns = T0;
	h.cmdline_len = 5;
	memcpy(buf, &h, sizeof h);
	memcpy(buf + sizeof h, "prog", 5);
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

static void event(struct store *st, int source, uint16_t kind, uint64_t t, uint32_t tid, uint32_t name,
                  uint64_t value, uint16_t flags)
{
	struct wire_event e;
	memset(&e, 0, sizeof e);
	e.kind = kind;
	e.time_ns = t;
	e.tid = tid;
	e.name_id = name;
	e.value = value;
	e.flags = flags;
	feed(st, source, WIRE_FRAME_EVENTS, &e, sizeof e);
}

/* Strings of every source: 1 comm, 2 bytes, 3 ncclAllReduce, 4 op, 5 Sum. */
static void strings(struct store *st, int source)
{
	string(st, source, 1, "comm");
	string(st, source, 2, "bytes");
	string(st, source, 3, "ncclAllReduce");
	string(st, source, 4, "op");
	string(st, source, 5, "Sum");
}

/* An enum value's field: its name in domain_id. */
static void enum_arg(struct store *st, int source, uint64_t t, uint32_t tid, uint32_t name, uint64_t value,
                     uint32_t text)
{
	struct wire_event e = {.time_ns = t,
	                       .value = value,
	                       .tid = tid,
	                       .name_id = name,
	                       .domain_id = text,
	                       .kind = WIRE_EV_NVTX_ARG,
	                       .flags = WIRE_ARG_ENUM};
	feed(st, source, WIRE_FRAME_EVENTS, &e, sizeof e);
}

/* The fields of the i-th range of a row as "name=value ..." (value read by type). */
static const char *args_text(const struct store *st, size_t process, size_t lane, const struct store_range *r)
{
	static char buf[256];
	struct store_arg a[WIRE_ARGS_MAX + 2];
	size_t n = store_range_args(st, process, lane, r, a, WIRE_ARGS_MAX + 2);
	size_t len = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		double d;
		memcpy(&d, &a[i].value, sizeof d);
		if (a[i].type == WIRE_ARG_ENUM)
			len +=
			    (size_t)snprintf(buf + len, sizeof buf - len, "%s%s=%s", i ? " " : "",
			                     store_string(st, a[i].name_id), store_string(st, a[i].text_id));
		else if (a[i].type == WIRE_ARG_INT)
			len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%s=%lld", i ? " " : "",
			                        store_string(st, a[i].name_id), (long long)a[i].value);
		else if (a[i].type == WIRE_ARG_DOUBLE)
			len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%s=%g", i ? " " : "",
			                        store_string(st, a[i].name_id), d);
		else
			len +=
			    (size_t)snprintf(buf + len, sizeof buf - len, "%s%s=%llu", i ? " " : "",
			                     store_string(st, a[i].name_id), (unsigned long long)a[i].value);
	}
	return buf;
}

static void test_fields_by_range(void **state)
{
	(void)state;
	struct store *st = store_new();
	hello(st, 0, 100);
	strings(st, 0);
	/* A push with fields, nested push without, pop, pop; a second push with other fields. */
	event(st, 0, WIRE_EV_NVTX_PUSH, T0 + 10, 101, 3, 0, 0);
	event(st, 0, WIRE_EV_NVTX_ARG, T0 + 10, 101, 1, 7, WIRE_ARG_UINT);
	event(st, 0, WIRE_EV_NVTX_ARG, T0 + 10, 101, 2, 4096, WIRE_ARG_UINT);
	event(st, 0, WIRE_EV_NVTX_PUSH, T0 + 11, 101, 3, 0, 0);
	event(st, 0, WIRE_EV_NVTX_POP, T0 + 12, 101, 0, 0, 0);
	event(st, 0, WIRE_EV_NVTX_POP, T0 + 20, 101, 0, 0, 0);
	event(st, 0, WIRE_EV_NVTX_PUSH, T0 + 30, 101, 3, 0, 0);
	event(st, 0, WIRE_EV_NVTX_ARG, T0 + 30, 101, 4, (uint64_t)-5, WIRE_ARG_INT);
	double half = 0.5;
	uint64_t bits;
	memcpy(&bits, &half, sizeof bits);
	event(st, 0, WIRE_EV_NVTX_ARG, T0 + 30, 101, 2, bits, WIRE_ARG_DOUBLE);
	/* A mark with a field; a start/end range whose field follows its start. */
	event(st, 0, WIRE_EV_NVTX_MARK, T0 + 40, 101, 3, 0, 0);
	event(st, 0, WIRE_EV_NVTX_ARG, T0 + 40, 101, 1, 9, WIRE_ARG_UINT);
	enum_arg(st, 0, T0 + 40, 101, 4, 0, 5); /* op=Sum */
	enum_arg(st, 0, T0 + 40, 101, 4, 3, 0); /* an enum value without a name: its number */
	event(st, 0, WIRE_EV_NVTX_START, T0 + 50, 101, 3, 77, 0);
	event(st, 0, WIRE_EV_NVTX_ARG, T0 + 50, 101, 1, 5, WIRE_ARG_UINT);
	event(st, 0, WIRE_EV_NVTX_END, T0 + 60, 102, 0, 77, 0);
	/* A field after a pop or an end belongs to no range: dropped, counted. */
	event(st, 0, WIRE_EV_NVTX_PUSH, T0 + 61, 101, 3, 0, 0);
	event(st, 0, WIRE_EV_NVTX_POP, T0 + 62, 101, 0, 0, 0);
	event(st, 0, WIRE_EV_NVTX_ARG, T0 + 62, 101, 1, 1, WIRE_ARG_UINT);
	event(st, 0, WIRE_EV_NVTX_END, T0 + 63, 102, 0, 78, 0);
	event(st, 0, WIRE_EV_NVTX_ARG, T0 + 63, 102, 1, 1, WIRE_ARG_UINT);
	assert_int_equal(store_args_dropped(st), 2);

	size_t lane = store_thread_lane_find(st, 0, 101);
	const struct store_range *r;
	assert_int_equal(store_lane_row_all(st, 0, lane, 0, &r), 1); /* the second push is still open */
	assert_string_equal(args_text(st, 0, lane, &r[0]), "comm=7 bytes=4096");
	assert_int_equal(store_lane_row_all(st, 0, lane, 1, &r), 2);
	assert_string_equal(args_text(st, 0, lane, &r[0]), ""); /* the nested ranges have none */
	assert_string_equal(args_text(st, 0, lane, &r[1]), "");
	struct store_range open;
	size_t row;
	store_lane_open_get(st, 0, lane, 0, &open, &row);
	assert_string_equal(args_text(st, 0, lane, &open), "op=-5 bytes=0.5");
	assert_int_equal(store_lane_mark_query(st, 0, lane, 0, UINT64_MAX, &r), 1);
	assert_string_equal(args_text(st, 0, lane, &r[0]), "comm=9 op=Sum op=3");
	assert_int_equal(store_lane_row_all(st, 0, 0, 0, &r), 1); /* the async lane */
	assert_string_equal(args_text(st, 0, 0, &r[0]), "comm=5");
	assert_true(store_memory_bytes(st) > 0);
	store_free(st);
}

/* Two sources whose fields arrive interleaved (frames of live connections) stay apart; more than
 * WIRE_ARGS_MAX fields of one range are dropped and counted. */
static void test_interleaved_and_bounded(void **state)
{
	(void)state;
	struct store *st = store_new();
	hello(st, 0, 100);
	strings(st, 0);
	hello(st, 1, 200);
	strings(st, 1);
	event(st, 0, WIRE_EV_NVTX_PUSH, T0 + 10, 101, 3, 0, 0);
	event(st, 1, WIRE_EV_NVTX_PUSH, T0 + 10, 201, 3, 0, 0);
	for (uint64_t i = 0; i < WIRE_ARGS_MAX + 2; i++) {
		event(st, 0, WIRE_EV_NVTX_ARG, T0 + 10, 101, 1, i, WIRE_ARG_UINT);
		event(st, 1, WIRE_EV_NVTX_ARG, T0 + 10, 201, 2, 100 + i, WIRE_ARG_UINT);
	}
	event(st, 0, WIRE_EV_NVTX_POP, T0 + 20, 101, 0, 0, 0);
	event(st, 1, WIRE_EV_NVTX_POP, T0 + 20, 201, 0, 0, 0);
	assert_int_equal(store_args_dropped(st), 4);
	const struct store_range *r;
	size_t lane = store_thread_lane_find(st, 0, 101);
	assert_int_equal(store_lane_row_all(st, 0, lane, 0, &r), 1);
	assert_string_equal(args_text(st, 0, lane, &r[0]),
	                    "comm=0 comm=1 comm=2 comm=3 comm=4 comm=5 comm=6 comm=7");
	lane = store_thread_lane_find(st, 1, 201);
	assert_int_equal(store_lane_row_all(st, 1, lane, 0, &r), 1);
	assert_string_equal(
	    args_text(st, 1, lane, &r[0]),
	    "bytes=100 bytes=101 bytes=102 bytes=103 bytes=104 bytes=105 bytes=106 bytes=107");
	/* An unknown type reads as unsigned, never out of range. */
	event(st, 0, WIRE_EV_NVTX_MARK, T0 + 30, 101, 3, 0, 0);
	event(st, 0, WIRE_EV_NVTX_ARG, T0 + 30, 101, 1, 3, 0xffff);
	lane = store_thread_lane_find(st, 0, 101);
	assert_int_equal(store_lane_mark_query(st, 0, lane, 0, UINT64_MAX, &r), 1);
	assert_string_equal(args_text(st, 0, lane, &r[0]), "comm=3");
	store_free(st);
}

static int copy_frame(void *ctx, int source, uint32_t type, const void *payload, uint32_t length)
{
	const char *cause = NULL;
	return store_feed(ctx, source, type, payload, length, &cause);
}

/* A new live segment: an open range's fields come with it. */
static void test_replay_open_range(void **state)
{
	(void)state;
	struct store *a = store_new();
	hello(a, 0, 100);
	strings(a, 0);
	event(a, 0, WIRE_EV_NVTX_PUSH, T0 + 10, 101, 3, 0, 0);
	event(a, 0, WIRE_EV_NVTX_ARG, T0 + 10, 101, 1, 42, WIRE_ARG_UINT);
	event(a, 0, WIRE_EV_NVTX_ARG, T0 + 10, 101, 4, (uint64_t)-1, WIRE_ARG_INT);
	enum_arg(a, 0, T0 + 10, 101, 4, 0, 5);
	struct store *b = store_new();
	assert_int_equal(store_replay_identity(a, copy_frame, b), 0);
	event(b, 0, WIRE_EV_NVTX_POP, T0 + 20, 101, 0, 0, 0);
	size_t lane = store_thread_lane_find(b, 0, 101);
	const struct store_range *r;
	assert_int_equal(store_lane_row_all(b, 0, lane, 0, &r), 1);
	assert_string_equal(store_string(b, r[0].name_id), "ncclAllReduce");
	assert_string_equal(args_text(b, 0, lane, &r[0]), "comm=42 op=-1 op=Sum");
	store_free(a);
	store_free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_fields_by_range),
	    cmocka_unit_test(test_interleaved_and_bounded),
	    cmocka_unit_test(test_replay_open_range),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
