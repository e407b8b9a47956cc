/* The details of an NVTX range or mark show its payload's fields on one line, after the domain. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "cuscope/inspect.h"
#include "cuscope/store.h"
#include "cuscope/wire.h"

#define MS 1000000ull

static void feed(struct store *st, uint32_t type, const void *payload, uint32_t length)
{
	const char *cause = NULL;
	if (store_feed(st, 0, type, payload, length, &cause))
		fail_msg("store_feed(%u): %s", type, cause ? cause : "?");
}

static void string(struct store *st, uint32_t id, const char *text)
{
	unsigned char buf[sizeof(struct wire_string) + 64];
	struct wire_string s = {id, (uint32_t)strlen(text)};
	memcpy(buf, &s, sizeof s);
	memcpy(buf + sizeof s, text, s.length);
	feed(st, WIRE_FRAME_STRING, buf, (uint32_t)(sizeof s + s.length));
}

static void event(struct store *st, uint16_t kind, uint64_t t, uint32_t name, uint32_t domain, uint64_t value,
                  uint16_t flags)
{
	struct wire_event e = {.time_ns = t,
	                       .value = value,
	                       .tid = 101,
	                       .name_id = name,
	                       .domain_id = domain,
	                       .kind = kind,
	                       .flags = flags};
	feed(st, WIRE_FRAME_EVENTS, &e, sizeof e);
}

static struct store *make_store(void)
{
	struct store *st = store_new();
	unsigned char buf[sizeof(struct wire_hello) + 5];
	struct wire_hello h;
	memset(&h, 0, sizeof h);
	memcpy(h.magic, WIRE_MAGIC, 8);
	h.version = WIRE_VERSION;
	h.hello_size = sizeof h;
	h.pid = 100;
	h.cmdline_len = 5;
	memcpy(buf, &h, sizeof h);
	memcpy(buf + sizeof h, "prog", 5);
	feed(st, WIRE_FRAME_HELLO, buf, sizeof buf);
	string(st, 1, "ncclAllReduce");
	string(st, 2, "NCCL");
	string(st, 3, "comm");
	string(st, 4, "bytes");
	string(st, 5, "root");
	string(st, 6, "scale");
	string(st, 7, "op");
	string(st, 8, "Max");
	double half = 0.5;
	uint64_t bits;
	memcpy(&bits, &half, sizeof bits);
	event(st, WIRE_EV_NVTX_PUSH, 10 * MS, 1, 2, 0, 0);
	event(st, WIRE_EV_NVTX_ARG, 10 * MS, 3, 0, 7, WIRE_ARG_UINT);
	event(st, WIRE_EV_NVTX_ARG, 10 * MS, 4, 0, 4096, WIRE_ARG_UINT);
	event(st, WIRE_EV_NVTX_ARG, 10 * MS, 5, 0, (uint64_t)-1, WIRE_ARG_INT);
	event(st, WIRE_EV_NVTX_ARG, 10 * MS, 6, 0, bits, WIRE_ARG_DOUBLE);
	event(st, WIRE_EV_NVTX_ARG, 10 * MS, 7, 8, 2, WIRE_ARG_ENUM);
	event(st, WIRE_EV_NVTX_POP, 20 * MS, 0, 2, 0, 0);
	event(st, WIRE_EV_NVTX_PUSH, 30 * MS, 1, 2, 0, 0); /* no fields */
	event(st, WIRE_EV_NVTX_POP, 40 * MS, 0, 2, 0, 0);
	event(st, WIRE_EV_NVTX_MARK, 50 * MS, 1, 2, 0, 0);
	event(st, WIRE_EV_NVTX_ARG, 50 * MS, 3, 0, 9, WIRE_ARG_UINT);
	event(st, WIRE_EV_NVTX_PUSH, 60 * MS, 1, 2, 0, 0); /* still open */
	event(st, WIRE_EV_NVTX_ARG, 60 * MS, 4, 0, 1, WIRE_ARG_UINT);
	return st;
}

static void test_details_args(void **state)
{
	(void)state;
	struct store *st = make_store();
	struct inspect_view v = {.store = st, .cursor_col = 100, .now_ns = 70 * MS, .clip_ns = UINT64_MAX};
	viewport_set(&v.vp, 0, 200 * MS, 200);
	size_t lane = store_thread_lane_find(st, 0, 101);
	const struct store_range *r;
	assert_int_equal(store_lane_row_all(st, 0, lane, 0, &r), 2);
	struct inspect_hit h = {
	    .found = 1, .process = 0, .lane = lane, .row = 0, .lane_kind = STORE_LANE_THREAD, .range = r[0]};
	struct inspect_text t;
	inspect_details(&v, &t, &h);
	assert_string_equal(t.lines[0], "NVTX range  ncclAllReduce");
	assert_string_equal(t.lines[1], "domain    NCCL");
	assert_string_equal(t.lines[2], "args      comm=7 bytes=4096 root=-1 scale=0.5 op=Max");
	assert_string_equal(t.lines[3], "start     0.010000 s");
	/* A range without fields has no args line. */
	h.range = r[1];
	inspect_details(&v, &t, &h);
	assert_string_equal(t.lines[2], "start     0.030000 s");
	/* A mark and an open range show theirs. */
	assert_int_equal(store_lane_mark_query(st, 0, lane, 0, UINT64_MAX, &r), 1);
	h.range = r[0];
	inspect_details(&v, &t, &h);
	assert_string_equal(t.lines[0], "NVTX mark  ncclAllReduce");
	assert_string_equal(t.lines[2], "args      comm=9");
	struct store_range open;
	size_t row;
	store_lane_open_get(st, 0, lane, 0, &open, &row);
	h.range = open;
	h.range.end_ns = 0;
	h.open = 1;
	inspect_details(&v, &t, &h);
	assert_string_equal(t.lines[2], "args      bytes=1");
	store_free(st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_details_args),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
