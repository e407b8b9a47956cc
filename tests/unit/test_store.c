/* Event store unit tests: frames built by hand, pairing, lanes, queries, losses, strings. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cuscope/store.h"
#include "cuscope/wire.h"

/* ---- frame builders ---- */

/* The host the next HELLOs name. */
static const char *unit_host = "unit-host";

static int feed_hello_rc(struct store *st, int source, int32_t pid, const char *argv, uint32_t argv_len,
                         const char **cause)
{
	uint8_t buf[512];
	struct wire_hello h;
	memset(&h, 0, sizeof h);
	memcpy(h.magic, WIRE_MAGIC, 8);
	h.version = WIRE_VERSION;
	h.hello_size = sizeof h;
	h.pid = pid;
	h.ppid = pid - 1;
	h.start_mono_ns = 1000 + (uint64_t)pid;
	h.anchor_mono_ns = 2000;
	h.anchor_real_ns = 3000;
	h.features = WIRE_FEATURE_NVTX | WIRE_FEATURE_THREADS;
	snprintf(h.host, sizeof h.host, "%s", unit_host);
	h.cmdline_len = argv_len;
	assert_true(sizeof h + argv_len <= sizeof buf);
	memcpy(buf, &h, sizeof h);
	memcpy(buf + sizeof h, argv, argv_len);
	return store_feed(st, source, WIRE_FRAME_HELLO, buf, (uint32_t)(sizeof h + argv_len), cause);
}

static void feed_hello(struct store *st, int source, int32_t pid)
{
	const char *cause = NULL;
	static const char argv[] = "app\0--flag\0value"; /* 17 bytes with the final NUL */
	assert_int_equal(feed_hello_rc(st, source, pid, argv, sizeof argv, &cause), 0);
}

static void feed_string(struct store *st, int source, uint32_t id, const char *text)
{
	uint8_t buf[sizeof(struct wire_string) + 256];
	struct wire_string s = {id, (uint32_t)strlen(text)};
	assert_true(s.length <= 256);
	memcpy(buf, &s, sizeof s);
	memcpy(buf + sizeof s, text, s.length);
	const char *cause = NULL;
	assert_int_equal(
	    store_feed(st, source, WIRE_FRAME_STRING, buf, (uint32_t)(sizeof s + s.length), &cause), 0);
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

/* Feeds events in one frame, at an odd offset inside a buffer (frames are unaligned in streams). */
static void feed_events(struct store *st, int source, const struct wire_event *events, size_t n)
{
	size_t bytes = n * sizeof *events;
	uint8_t *buf = malloc(bytes + 1);
	assert_non_null(buf);
	memcpy(buf + 1, events, bytes);
	const char *cause = NULL;
	int rc = store_feed(st, source, WIRE_FRAME_EVENTS, buf + 1, (uint32_t)bytes, &cause);
	free(buf);
	assert_int_equal(rc, 0);
}

static void feed_one(struct store *st, int source, struct wire_event e)
{
	feed_events(st, source, &e, 1);
}

static void feed_losses(struct store *st, int source, const struct wire_loss *losses, size_t n)
{
	const char *cause = NULL;
	assert_int_equal(
	    store_feed(st, source, WIRE_FRAME_LOSSES, losses, (uint32_t)(n * sizeof *losses), &cause), 0);
}

/* Index of the lane of tid in process p, or -1. */
static long lane_of(struct store *st, size_t p, pid_t tid)
{
	struct store_process_info pi;
	store_process_get(st, p, &pi);
	for (size_t l = 0; l < pi.lane_count; l++) {
		struct store_lane_info li;
		store_lane_get(st, p, l, &li);
		if (li.kind == STORE_LANE_THREAD && li.tid == tid)
			return (long)l;
	}
	return -1;
}

static void assert_range(const struct store *st, const struct store_range *r, uint64_t start, uint64_t end,
                         const char *name)
{
	assert_int_equal(r->start_ns, start);
	assert_int_equal(r->end_ns, end);
	assert_string_equal(store_string(st, r->name_id), name);
}

/* ---- tests ---- */

static void test_hello_and_process_info(void **state)
{
	(void)state;
	struct store *st = store_new();
	assert_int_equal(store_process_count(st), 0);
	feed_hello(st, 0, 4242);
	assert_int_equal(store_process_count(st), 1);
	struct store_process_info pi;
	store_process_get(st, 0, &pi);
	assert_int_equal(pi.pid, 4242);
	assert_int_equal(pi.ppid, 4241);
	assert_string_equal(pi.cmdline, "app --flag value");
	assert_string_equal(pi.host, "unit-host");
	assert_int_equal(pi.start_ns, 1000 + 4242);
	assert_int_equal(pi.anchor_mono_ns, 2000);
	assert_int_equal(pi.anchor_real_ns, 3000);
	assert_int_equal(pi.features, WIRE_FEATURE_NVTX | WIRE_FEATURE_THREADS);
	assert_int_equal(pi.connected, 1);
	assert_int_equal(pi.exited, 0);
	assert_int_equal(pi.exit_code, -1);
	assert_int_equal(pi.events, 0);
	/* The async lane exists from the start. */
	assert_int_equal(pi.lane_count, 1);
	struct store_lane_info li;
	store_lane_get(st, 0, 0, &li);
	assert_int_equal(li.kind, STORE_LANE_NVTX_ASYNC);
	assert_int_equal(li.tid, 0);
	assert_int_equal(li.pid, 4242);
	/* BYE: exited with its code. */
	struct wire_bye bye = {.time_ns = 777, .exit_code = 3};
	const char *cause = NULL;
	assert_int_equal(store_feed(st, 0, WIRE_FRAME_BYE, &bye, sizeof bye, &cause), 0);
	store_process_get(st, 0, &pi);
	assert_int_equal(pi.exited, 1);
	assert_int_equal(pi.exit_code, 3);
	assert_int_equal(store_last_ns(st), 777);
	store_source_closed(st, 0);
	store_process_get(st, 0, &pi);
	assert_int_equal(pi.connected, 0);
	store_free(st);
}

/* The launcher's labels in the HELLO: known ones as sent, unknown (or negative) ones -1. */
static void test_hello_rank_labels(void **state)
{
	(void)state;
	struct store *st = store_new();
	static const char argv[] = "train.py";
	struct {
		uint32_t ids;
		int32_t rank, local_rank, world_size, restart;
		int32_t want[4];
	} cases[] = {
	    {0, 5, 5, 5, 5, {-1, -1, -1, -1}},
	    {WIRE_ID_ALL, 3, 1, 8, 0, {3, 1, 8, 0}},
	    {WIRE_ID_RANK | WIRE_ID_WORLD_SIZE, 0, 7, 2, 7, {0, -1, 2, -1}},
	    {WIRE_ID_ALL | 0xf0u, -4, 1, -1, 2, {-1, 1, -1, 2}}, /* crafted: never a negative label */
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		uint8_t buf[512];
		struct wire_hello h;
		memset(&h, 0, sizeof h);
		memcpy(h.magic, WIRE_MAGIC, 8);
		h.version = WIRE_VERSION;
		h.hello_size = sizeof h;
		h.pid = 500 + (int32_t)i;
		h.cmdline_len = sizeof argv;
		h.ids = cases[i].ids;
		h.rank = cases[i].rank;
		h.local_rank = cases[i].local_rank;
		h.world_size = cases[i].world_size;
		h.restart_count = cases[i].restart;
		memcpy(buf, &h, sizeof h);
		memcpy(buf + sizeof h, argv, sizeof argv);
		const char *cause = NULL;
		assert_int_equal(
		    store_feed(st, (int)i, WIRE_FRAME_HELLO, buf, (uint32_t)(sizeof h + sizeof argv), &cause),
		    0);
		struct store_process_info pi;
		store_process_get(st, i, &pi);
		assert_int_equal(pi.pid, 500 + (int32_t)i);
		assert_int_equal(pi.rank, cases[i].want[0]);
		assert_int_equal(pi.local_rank, cases[i].want[1]);
		assert_int_equal(pi.world_size, cases[i].want[2]);
		assert_int_equal(pi.restart_count, cases[i].want[3]);
	}
	store_free(st);
}

static void test_frame_before_hello(void **state)
{
	(void)state;
	struct store *st = store_new();
	struct wire_event e = ev(WIRE_EV_NVTX_PUSH, 10, 1, 0, 0);
	const char *cause = NULL;
	assert_int_equal(store_feed(st, 0, WIRE_FRAME_EVENTS, &e, sizeof e, &cause), -EPROTO);
	assert_non_null(cause);
	uint8_t sbuf[sizeof(struct wire_string) + 1];
	struct wire_string s = {2, 1};
	memcpy(sbuf, &s, sizeof s);
	sbuf[sizeof s] = 'x';
	cause = NULL;
	assert_int_equal(store_feed(st, 0, WIRE_FRAME_STRING, sbuf, sizeof sbuf, &cause), -EPROTO);
	assert_non_null(cause);
	struct wire_loss loss = {WIRE_LOSS_RING_FULL, 0, 3};
	cause = NULL;
	assert_int_equal(store_feed(st, 0, WIRE_FRAME_LOSSES, &loss, sizeof loss, &cause), -EPROTO);
	assert_non_null(cause);
	/* Another source's HELLO does not make this one valid. */
	feed_hello(st, 1, 10);
	cause = NULL;
	assert_int_equal(store_feed(st, 5, WIRE_FRAME_EVENTS, &e, sizeof e, &cause), -EPROTO);
	assert_non_null(cause);
	/* Nothing was ingested from the bad frames. */
	assert_int_equal(store_event_count(st), 0);
	assert_int_equal(store_loss_total(st), 0);
	/* A closed source is unusable until its next HELLO. */
	store_source_closed(st, 1);
	cause = NULL;
	assert_int_equal(store_feed(st, 1, WIRE_FRAME_EVENTS, &e, sizeof e, &cause), -EPROTO);
	/* Malformed frames and negative sources are refused too. */
	cause = NULL;
	feed_hello(st, 2, 11);
	assert_int_equal(store_feed(st, 2, WIRE_FRAME_EVENTS, &e, sizeof e - 1, &cause), -EPROTO);
	assert_non_null(cause);
	cause = NULL;
	assert_true(store_feed(st, -1, WIRE_FRAME_EVENTS, &e, sizeof e, &cause) < 0);
	assert_non_null(cause);
	assert_int_equal(store_event_count(st), 0);
	store_free(st);
}

static void test_nested_push_pop_two_threads(void **state)
{
	(void)state;
	struct store *st = store_new();
	feed_hello(st, 0, 100);
	feed_string(st, 0, 2, "outer");
	feed_string(st, 0, 3, "inner");
	feed_string(st, 0, 4, "deep");
	feed_string(st, 0, 5, "mydomain");
	struct wire_event e[] = {
	    ev(WIRE_EV_NVTX_PUSH, 10, 11, 2, 0),  ev(WIRE_EV_NVTX_PUSH, 15, 12, 2, 0),
	    ev(WIRE_EV_NVTX_PUSH, 20, 11, 3, 0),  ev(WIRE_EV_NVTX_PUSH, 25, 11, 4, 0),
	    ev(WIRE_EV_NVTX_POP, 30, 11, 0, 0),   ev(WIRE_EV_NVTX_POP, 35, 12, 0, 0),
	    ev(WIRE_EV_NVTX_POP, 40, 11, 0, 0),   ev(WIRE_EV_NVTX_PUSH, 50, 11, 3, 0),
	    ev(WIRE_EV_NVTX_POP, 60, 11, 0, 0),   ev(WIRE_EV_NVTX_POP, 100, 11, 0, 0),
	    ev(WIRE_EV_NVTX_PUSH, 200, 12, 4, 0),
	};
	e[3].domain_id = 5;
	feed_events(st, 0, e, sizeof e / sizeof *e);
	assert_int_equal(store_event_count(st), 11);
	assert_int_equal(store_first_ns(st), 10);
	assert_int_equal(store_last_ns(st), 200);
	struct store_process_info pi;
	store_process_get(st, 0, &pi);
	assert_int_equal(pi.events, 11);
	assert_int_equal(pi.lane_count, 3);
	/* Threads in order of appearance after the async lane. */
	assert_int_equal(lane_of(st, 0, 11), 1);
	assert_int_equal(lane_of(st, 0, 12), 2);

	struct store_lane_info li;
	store_lane_get(st, 0, 1, &li);
	assert_int_equal(li.kind, STORE_LANE_THREAD);
	assert_int_equal(li.pid, 100);
	assert_int_equal(li.row_count, 3);
	assert_int_equal(li.open_count, 0);
	assert_int_equal(li.first_ns, 10);
	const struct store_range *r;
	assert_int_equal(store_lane_row_all(st, 0, 1, 0, &r), 1);
	assert_range(st, &r[0], 10, 100, "outer");
	assert_int_equal(r[0].domain_id, 0);
	assert_int_equal(store_lane_row_all(st, 0, 1, 1, &r), 2);
	assert_range(st, &r[0], 20, 40, "inner");
	assert_range(st, &r[1], 50, 60, "inner");
	assert_int_equal(store_lane_row_all(st, 0, 1, 2, &r), 1);
	assert_range(st, &r[0], 25, 30, "deep");
	assert_string_equal(store_string(st, r[0].domain_id), "mydomain");
	assert_int_equal(store_lane_row_all(st, 0, 1, 3, &r), 0);
	assert_null(r);

	store_lane_get(st, 0, 2, &li);
	assert_int_equal(li.tid, 12);
	assert_int_equal(li.row_count, 1);
	assert_int_equal(li.open_count, 1);
	assert_int_equal(store_lane_row_all(st, 0, 2, 0, &r), 1);
	assert_range(st, &r[0], 15, 35, "outer");
	struct store_range open;
	size_t row = 99;
	store_lane_open_get(st, 0, 2, 0, &open, &row);
	assert_int_equal(row, 0);
	assert_range(st, &open, 200, 0, "deep");
	/* Nothing went to the async lane; nothing was lost. */
	store_lane_get(st, 0, 0, &li);
	assert_int_equal(li.row_count, 0);
	assert_int_equal(store_loss_total(st), 0);
	store_free(st);
}

/* A model of one thread's ranges by depth, for the brute-force comparison. */
struct model_row {
	struct store_range v[4096];
	size_t n;
};

static uint64_t rng_state = 0x2545f4914f6cdd1dull;

static uint64_t rng_next(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ull;
}

static void test_row_query_brute_force(void **state)
{
	(void)state;
	enum { DEPTH = 6, OPS = 12000 };
	static struct model_row rows[DEPTH];
	memset(rows, 0, sizeof rows);
	struct store *st = store_new();
	feed_hello(st, 0, 7);
	feed_string(st, 0, 2, "a");
	feed_string(st, 0, 3, "b");
	/* Random nesting on one thread; time steps of 0..4 ns make zero-length and touching ranges. */
	struct wire_event *events = calloc(OPS + DEPTH, sizeof *events);
	assert_non_null(events);
	uint64_t stack_start[DEPTH];
	uint32_t stack_name[DEPTH];
	size_t depth = 0, n = 0;
	uint64_t t = 100;
	for (int i = 0; i < OPS; i++) {
		t += rng_next() % 5;
		int push = depth == 0 || (depth < DEPTH && rng_next() % 2);
		if (push) {
			uint32_t name = 2 + (uint32_t)(rng_next() % 2);
			stack_start[depth] = t;
			stack_name[depth] = name;
			depth++;
			events[n++] = ev(WIRE_EV_NVTX_PUSH, t, 5, name, 0);
		} else {
			depth--;
			struct model_row *mr = &rows[depth];
			assert_true(mr->n < 4096);
			mr->v[mr->n++] =
			    (struct store_range){stack_start[depth], t, stack_name[depth] == 2 ? 1u : 2u, 0};
			events[n++] = ev(WIRE_EV_NVTX_POP, t, 5, 0, 0);
		}
	}
	while (depth > 0) {
		t += 1;
		depth--;
		struct model_row *mr = &rows[depth];
		mr->v[mr->n++] =
		    (struct store_range){stack_start[depth], t, stack_name[depth] == 2 ? 1u : 2u, 0};
		events[n++] = ev(WIRE_EV_NVTX_POP, t, 5, 0, 0);
	}
	/* In several frames. */
	for (size_t off = 0; off < n; off += 1000)
		feed_events(st, 0, events + off, n - off < 1000 ? n - off : 1000);
	free(events);
	uint64_t end_t = t;
	long lane = lane_of(st, 0, 5);
	assert_int_equal(lane, 1);
	struct store_lane_info li;
	store_lane_get(st, 0, 1, &li);
	size_t used_rows = 0;
	for (size_t d = 0; d < DEPTH; d++)
		if (rows[d].n)
			used_rows = d + 1;
	assert_int_equal(li.row_count, used_rows);
	assert_int_equal(li.open_count, 0);
	for (size_t d = 0; d < used_rows; d++) {
		const struct store_range *all;
		assert_int_equal(store_lane_row_all(st, 0, 1, d, &all), rows[d].n);
		for (size_t i = 0; i < rows[d].n; i++) {
			assert_int_equal(all[i].start_ns, rows[d].v[i].start_ns);
			assert_int_equal(all[i].end_ns, rows[d].v[i].end_ns);
			assert_string_equal(store_string(st, all[i].name_id),
			                    rows[d].v[i].name_id == 1 ? "a" : "b");
		}
	}
	/* Windows: random, tiny, empty, before, after, everything. */
	for (int w = 0; w < 3000; w++) {
		uint64_t from, to;
		switch (w) {
		case 0:
			from = 0, to = UINT64_MAX;
			break;
		case 1:
			from = 0, to = 100;
			break;
		case 2:
			from = end_t, to = end_t + 1000;
			break;
		case 3:
			from = 500, to = 500;
			break;
		case 4:
			from = 600, to = 400;
			break;
		default:
			from = 90 + rng_next() % (end_t - 80);
			to = from + (w % 3 == 0 ? rng_next() % 4 : rng_next() % 2000);
			break;
		}
		for (size_t d = 0; d < used_rows; d++) {
			/* Brute force: a range overlaps [from, to) when start < to and end > from; an empty
			 * window overlaps nothing. */
			size_t first = SIZE_MAX, count = 0;
			for (size_t i = 0; from < to && i < rows[d].n; i++) {
				if (rows[d].v[i].start_ns < to && rows[d].v[i].end_ns > from) {
					if (first == SIZE_MAX)
						first = i;
					assert_int_equal(i, first + count); /* contiguous */
					count++;
				}
			}
			const struct store_range *out = NULL;
			size_t got = store_lane_row_query(st, 0, 1, d, from, to, &out);
			if (got != count)
				fail_msg("row %zu window [%llu,%llu): %zu ranges, want %zu", d,
				         (unsigned long long)from, (unsigned long long)to, got, count);
			for (size_t i = 0; i < count; i++) {
				assert_int_equal(out[i].start_ns, rows[d].v[first + i].start_ns);
				assert_int_equal(out[i].end_ns, rows[d].v[first + i].end_ns);
			}
		}
	}
	/* A row that does not exist answers nothing. */
	const struct store_range *out = (const struct store_range *)1;
	assert_int_equal(store_lane_row_query(st, 0, 1, used_rows + 3, 0, UINT64_MAX, &out), 0);
	store_free(st);
}

static void test_start_end_async(void **state)
{
	(void)state;
	struct store *st = store_new();
	feed_hello(st, 0, 200);
	feed_string(st, 0, 2, "load");
	feed_string(st, 0, 3, "copy");
	feed_string(st, 0, 4, "late");
	/* Started on thread 21, ended on thread 22. */
	struct wire_event e[] = {
	    ev(WIRE_EV_NVTX_START, 10, 21, 2, 1), ev(WIRE_EV_NVTX_START, 20, 21, 3, 2),
	    ev(WIRE_EV_NVTX_END, 30, 22, 0, 2),   ev(WIRE_EV_NVTX_END, 50, 22, 0, 1),
	    ev(WIRE_EV_NVTX_START, 60, 22, 3, 3), ev(WIRE_EV_NVTX_START, 65, 21, 2, 4),
	    ev(WIRE_EV_NVTX_END, 70, 21, 0, 3),
	};
	feed_events(st, 0, e, sizeof e / sizeof *e);
	struct store_lane_info li;
	store_lane_get(st, 0, 0, &li);
	assert_int_equal(li.kind, STORE_LANE_NVTX_ASYNC);
	assert_int_equal(li.row_count, 2);
	assert_int_equal(li.open_count, 1);
	const struct store_range *r;
	assert_int_equal(store_lane_row_all(st, 0, 0, 0, &r), 2);
	assert_range(st, &r[0], 10, 50, "load");
	assert_range(st, &r[1], 60, 70, "copy");
	assert_int_equal(store_lane_row_all(st, 0, 0, 1, &r), 1);
	assert_range(st, &r[0], 20, 30, "copy");
	/* Range 4 is open on row 1 (row 0 was busy at 65). */
	struct store_range open;
	size_t row = 99;
	store_lane_open_get(st, 0, 0, 0, &open, &row);
	assert_range(st, &open, 65, 0, "load");
	assert_int_equal(row, 1);
	/* Both threads got lanes, with no push/pop rows. */
	assert_int_equal(lane_of(st, 0, 21), 1);
	assert_int_equal(lane_of(st, 0, 22), 2);
	store_lane_get(st, 0, 1, &li);
	assert_int_equal(li.row_count, 0);

	/* The END of range 9 was drained (from thread 22's ring) before its START (thread 21). */
	feed_one(st, 0, ev(WIRE_EV_NVTX_END, 200, 22, 0, 9));
	store_lane_get(st, 0, 0, &li);
	assert_int_equal(li.open_count, 1);
	feed_one(st, 0, ev(WIRE_EV_NVTX_START, 150, 21, 4, 9));
	store_lane_get(st, 0, 0, &li);
	assert_int_equal(li.open_count, 1);
	assert_int_equal(store_lane_row_all(st, 0, 0, 0, &r), 3);
	assert_range(st, &r[2], 150, 200, "late");
	/* Close range 4 and query the async rows. */
	feed_one(st, 0, ev(WIRE_EV_NVTX_END, 300, 21, 0, 4));
	store_lane_get(st, 0, 0, &li);
	assert_int_equal(li.open_count, 0);
	assert_int_equal(store_lane_row_all(st, 0, 0, 1, &r), 2);
	assert_range(st, &r[1], 65, 300, "load");
	assert_int_equal(store_lane_row_query(st, 0, 0, 0, 45, 155, &r), 3);
	assert_range(st, &r[0], 10, 50, "load");
	assert_int_equal(store_lane_row_query(st, 0, 0, 0, 71, 150, &r), 0);
	assert_int_equal(store_lane_row_query(st, 0, 0, 1, 31, 64, &r), 0);
	assert_int_equal(store_lane_row_query(st, 0, 0, 1, 29, 66, &r), 2);
	/* A range starting exactly when a row's last one ended reuses that row (rows stay packed). */
	feed_one(st, 0, ev(WIRE_EV_NVTX_START, 200, 21, 2, 6));
	store_lane_open_get(st, 0, 0, 0, &open, &row);
	assert_int_equal(row, 0);
	feed_one(st, 0, ev(WIRE_EV_NVTX_END, 210, 22, 0, 6));
	store_lane_get(st, 0, 0, &li);
	assert_int_equal(li.row_count, 2);
	assert_int_equal(store_lane_row_all(st, 0, 0, 0, &r), 4);
	assert_range(st, &r[3], 200, 210, "load");
	assert_int_equal(store_loss_count(st, WIRE_LOSS_UNMATCHED_POP), 0);
	store_free(st);
}

static void test_pop_without_push(void **state)
{
	(void)state;
	struct store *st = store_new();
	feed_hello(st, 0, 300);
	feed_string(st, 0, 2, "x");
	struct wire_event e[] = {
	    ev(WIRE_EV_NVTX_POP, 5, 31, 0, 0),  ev(WIRE_EV_NVTX_PUSH, 10, 31, 2, 0),
	    ev(WIRE_EV_NVTX_POP, 20, 31, 0, 0), ev(WIRE_EV_NVTX_POP, 30, 31, 0, 0),
	    ev(WIRE_EV_NVTX_POP, 40, 32, 0, 0),
	};
	feed_events(st, 0, e, sizeof e / sizeof *e);
	assert_int_equal(store_loss_count(st, WIRE_LOSS_UNMATCHED_POP), 3);
	assert_int_equal(store_process_loss(st, 0, WIRE_LOSS_UNMATCHED_POP), 3);
	assert_int_equal(store_loss_total(st), 3);
	assert_int_equal(store_loss_count(st, WIRE_LOSS_RING_FULL), 0);
	/* The matched pair still makes a range. */
	const struct store_range *r;
	assert_int_equal(store_lane_row_all(st, 0, (size_t)lane_of(st, 0, 31), 0, &r), 1);
	assert_range(st, &r[0], 10, 20, "x");
	/* A collector-reported unmatched count does not hide the store's own count. */
	struct wire_loss l = {WIRE_LOSS_RING_FULL, 0, 4};
	feed_losses(st, 0, &l, 1);
	assert_int_equal(store_loss_total(st), 7);
	store_free(st);
}

static void test_marks(void **state)
{
	(void)state;
	struct store *st = store_new();
	feed_hello(st, 0, 400);
	feed_string(st, 0, 2, "tick");
	feed_string(st, 0, 3, "tock");
	struct wire_event e[] = {
	    ev(WIRE_EV_NVTX_MARK, 5, 41, 2, 0),  ev(WIRE_EV_NVTX_MARK, 10, 41, 3, 0),
	    ev(WIRE_EV_NVTX_MARK, 10, 41, 2, 0), ev(WIRE_EV_NVTX_MARK, 20, 41, 3, 0),
	    ev(WIRE_EV_NVTX_MARK, 7, 42, 2, 0),
	};
	feed_events(st, 0, e, sizeof e / sizeof *e);
	size_t lane = (size_t)lane_of(st, 0, 41);
	struct store_lane_info li;
	store_lane_get(st, 0, lane, &li);
	assert_int_equal(li.mark_count, 4);
	assert_int_equal(li.row_count, 0);
	const struct store_range *m;
	assert_int_equal(store_lane_mark_query(st, 0, lane, 0, 100, &m), 4);
	assert_range(st, &m[0], 5, 5, "tick");
	assert_range(st, &m[3], 20, 20, "tock");
	assert_int_equal(store_lane_mark_query(st, 0, lane, 10, 20, &m), 2);
	assert_range(st, &m[0], 10, 10, "tock");
	assert_range(st, &m[1], 10, 10, "tick");
	assert_int_equal(store_lane_mark_query(st, 0, lane, 6, 10, &m), 0);
	assert_int_equal(store_lane_mark_query(st, 0, lane, 20, 21, &m), 1);
	assert_int_equal(store_lane_mark_query(st, 0, lane, 21, 1000, &m), 0);
	assert_int_equal(store_lane_mark_query(st, 0, lane, 0, 5, &m), 0);
	lane = (size_t)lane_of(st, 0, 42);
	assert_int_equal(store_lane_mark_query(st, 0, lane, 0, 100, &m), 1);
	assert_range(st, &m[0], 7, 7, "tick");
	store_free(st);
}

static void test_thread_name_and_exit(void **state)
{
	(void)state;
	struct store *st = store_new();
	feed_hello(st, 0, 500);
	feed_string(st, 0, 2, "worker");
	feed_string(st, 0, 3, "renamed");
	feed_string(st, 0, 4, "main");
	struct wire_event e[] = {
	    ev(WIRE_EV_THREAD_NAME, 100, 51, 2, 0), ev(WIRE_EV_THREAD_NAME, 90, 50, 4, 0),
	    ev(WIRE_EV_NVTX_PUSH, 110, 51, 2, 0),   ev(WIRE_EV_THREAD_NAME, 120, 51, 3, 0),
	    ev(WIRE_EV_NVTX_POP, 130, 51, 0, 0),    ev(WIRE_EV_THREAD_EXIT, 140, 51, 0, 0),
	};
	feed_events(st, 0, e, sizeof e / sizeof *e);
	struct store_lane_info li;
	size_t lane = (size_t)lane_of(st, 0, 51);
	assert_int_equal(lane, 1);
	store_lane_get(st, 0, lane, &li);
	assert_string_equal(li.name, "renamed");
	assert_int_equal(li.first_ns, 100);
	assert_int_equal(li.end_ns, 140);
	store_lane_get(st, 0, (size_t)lane_of(st, 0, 50), &li);
	assert_string_equal(li.name, "main");
	assert_int_equal(li.end_ns, 0);
	assert_int_equal(li.first_ns, 90);
	/* An exit for a thread never seen creates its lane, ended. */
	feed_one(st, 0, ev(WIRE_EV_THREAD_EXIT, 150, 53, 0, 0));
	store_lane_get(st, 0, (size_t)lane_of(st, 0, 53), &li);
	assert_string_equal(li.name, "");
	assert_int_equal(li.end_ns, 150);
	/* An event without a name shows no name; unknown kinds are ignored but counted. */
	struct wire_event odd = ev(WIRE_EV_NVTX_CATEGORY, 160, 51, 3, 1);
	feed_one(st, 0, odd);
	odd.kind = 999;
	feed_one(st, 0, odd);
	assert_int_equal(store_event_count(st), 9);
	store_lane_get(st, 0, lane, &li);
	assert_string_equal(li.name, "renamed");
	store_free(st);
}

static void test_losses_frame(void **state)
{
	(void)state;
	struct store *st = store_new();
	feed_hello(st, 0, 600);
	feed_hello(st, 1, 601);
	struct wire_loss a[] = {
	    {WIRE_LOSS_RING_FULL, 0, 5},
	    {WIRE_LOSS_STRING_CAP, 0, 7},
	    {99, 0, 1000},
	    {0, 0, 1000},
	};
	feed_losses(st, 0, a, 4);
	assert_int_equal(store_loss_count(st, WIRE_LOSS_RING_FULL), 5);
	assert_int_equal(store_loss_count(st, WIRE_LOSS_STRING_CAP), 7);
	assert_int_equal(store_loss_total(st), 12);
	/* Cumulative totals: the newest replaces, it does not add. */
	struct wire_loss b[] = {{WIRE_LOSS_RING_FULL, 0, 9}};
	feed_losses(st, 0, b, 1);
	assert_int_equal(store_loss_count(st, WIRE_LOSS_RING_FULL), 9);
	assert_int_equal(store_loss_count(st, WIRE_LOSS_STRING_CAP), 7);
	/* Another process adds to the sums. */
	struct wire_loss c[] = {{WIRE_LOSS_RING_FULL, 0, 1}, {WIRE_LOSS_NO_VIEWER, 0, 2}};
	feed_losses(st, 1, c, 2);
	assert_int_equal(store_loss_count(st, WIRE_LOSS_RING_FULL), 10);
	assert_int_equal(store_loss_count(st, WIRE_LOSS_NO_VIEWER), 2);
	assert_int_equal(store_process_loss(st, 0, WIRE_LOSS_RING_FULL), 9);
	assert_int_equal(store_process_loss(st, 1, WIRE_LOSS_RING_FULL), 1);
	assert_int_equal(store_process_loss(st, 1, WIRE_LOSS_STRING_CAP), 0);
	assert_int_equal(store_loss_total(st), 19);
	/* An empty LOSSES frame changes nothing. */
	feed_losses(st, 0, c, 0);
	assert_int_equal(store_loss_total(st), 19);
	store_free(st);
}

/*
 * Hostile record streams cost bounded work per record: start/end ranges that never end, ranges
 * that all overlap and a new thread per record are capped, the excess counted as unmatched.
 */
static void test_hostile_streams_bounded(void **state)
{
	(void)state;
	struct store *st = store_new();
	feed_hello(st, 0, 4000);
	feed_string(st, 0, 1, "r");
	enum { N = 20000 };
	struct wire_event *e = calloc(N, sizeof *e);
	assert_non_null(e);
	/* N starts, none ended: at most 4096 stay open, the rest are counted. */
	for (size_t i = 0; i < N; i++)
		e[i] = ev(WIRE_EV_NVTX_START, 100 + i, 7, 1, i + 1);
	feed_events(st, 0, e, N);
	struct store_lane_info li;
	store_lane_get(st, 0, 0, &li);
	assert_true(li.open_count <= 4096);
	assert_true(store_process_loss(st, 0, WIRE_LOSS_UNMATCHED_POP) >= N - 4096);
	store_free(st);

	/* Ranges one after another in the stream, each ending far later: at most 1024 rows. */
	st = store_new();
	feed_hello(st, 0, 4001);
	feed_string(st, 0, 1, "r");
	for (size_t i = 0; i < N; i += 2) {
		e[i] = ev(WIRE_EV_NVTX_START, 100 + i, 7, 1, i + 1);
		e[i + 1] = ev(WIRE_EV_NVTX_END, 1000000000 + i, 7, 0, i + 1);
	}
	feed_events(st, 0, e, N);
	store_lane_get(st, 0, 0, &li);
	assert_true(li.row_count <= 1024);
	assert_true(store_process_loss(st, 0, WIRE_LOSS_UNMATCHED_POP) >= N / 2 - 1024);
	store_free(st);

	/* A new thread per record: lanes stop growing at the cap, later threads share one lane. */
	st = store_new();
	feed_hello(st, 0, 4002);
	feed_string(st, 0, 1, "t");
	free(e);
	enum { T = 40000 };
	e = calloc(T, sizeof *e);
	assert_non_null(e);
	for (size_t i = 0; i < T; i++)
		e[i] = ev(WIRE_EV_THREAD_NAME, 100 + i, (uint32_t)(10 + i), 1, 0);
	feed_events(st, 0, e, T);
	struct store_process_info pi;
	store_process_get(st, 0, &pi);
	assert_true(pi.lane_count <= 32768 + 1);
	assert_int_equal(pi.events, T);
	free(e);
	store_free(st);

	/* A string named by the largest id before any other: ignored, not a 2^24-entry map. */
	st = store_new();
	feed_hello(st, 0, 4003);
	feed_string(st, 0, WIRE_MAX_STRING_ID, "far");
	feed_string(st, 0, 1, "near");
	assert_true(store_memory_bytes(st) < (1u << 20));
	feed_one(st, 0, ev(WIRE_EV_NVTX_MARK, 100, 7, 1, 0));
	store_process_get(st, 0, &pi);
	assert_int_equal(pi.events, 1);
	store_free(st);
}

static void test_exec_reuses_process(void **state)
{
	(void)state;
	struct store *st = store_new();
	feed_hello(st, 0, 700);
	feed_string(st, 0, 2, "before-exec");
	feed_one(st, 0, ev(WIRE_EV_NVTX_PUSH, 10, 700, 2, 0));
	feed_one(st, 0, ev(WIRE_EV_NVTX_POP, 20, 700, 0, 0));
	store_source_closed(st, 0);
	struct store_process_info pi;
	store_process_get(st, 0, &pi);
	assert_int_equal(pi.connected, 0);
	/* The exec'd image connects again with the same pid and a new command line. */
	static const char argv2[] = "newimage\0arg";
	const char *cause = NULL;
	assert_int_equal(feed_hello_rc(st, 1, 700, argv2, sizeof argv2, &cause), 0);
	assert_int_equal(store_process_count(st), 1);
	store_process_get(st, 0, &pi);
	assert_int_equal(pi.connected, 1);
	assert_string_equal(pi.cmdline, "newimage arg");
	/* Its lanes continue: the same thread lane gets the new ranges. */
	feed_string(st, 1, 2, "after-exec");
	feed_one(st, 1, ev(WIRE_EV_NVTX_PUSH, 30, 700, 2, 0));
	feed_one(st, 1, ev(WIRE_EV_NVTX_POP, 40, 700, 0, 0));
	store_process_get(st, 0, &pi);
	assert_int_equal(pi.lane_count, 2);
	assert_int_equal(pi.events, 4);
	const struct store_range *r;
	assert_int_equal(store_lane_row_all(st, 0, 1, 0, &r), 2);
	assert_range(st, &r[0], 10, 20, "before-exec");
	assert_range(st, &r[1], 30, 40, "after-exec");
	/* After BYE the pid may be reused by an unrelated process: that is a new one. */
	struct wire_bye bye = {.time_ns = 50, .exit_code = 0};
	assert_int_equal(store_feed(st, 1, WIRE_FRAME_BYE, &bye, sizeof bye, &cause), 0);
	store_source_closed(st, 1);
	feed_hello(st, 2, 700);
	assert_int_equal(store_process_count(st), 2);
	store_process_get(st, 1, &pi);
	assert_int_equal(pi.pid, 700);
	assert_int_equal(pi.lane_count, 1);
	assert_int_equal(pi.connected, 1);
	/* A different pid while the first is connected is a different process too. */
	feed_hello(st, 3, 701);
	assert_int_equal(store_process_count(st), 3);
	store_free(st);
}

/* A BYE that answered a detach: counts final, the process runs on (not exited, not incomplete). */
static void test_bye_detached(void **state)
{
	(void)state;
	struct store *st = store_new();
	const char *cause = NULL;
	char end[128];
	struct store_process_info pi;
	feed_hello(st, 0, 900); /* its collector started at 1900 ns */
	struct wire_bye bye = {1900 + 1234000000ull, -1, WIRE_BYE_DETACHED};
	assert_int_equal(store_feed(st, 0, WIRE_FRAME_BYE, &bye, sizeof bye, &cause), 0);
	store_source_closed(st, 0);
	store_process_get(st, 0, &pi);
	assert_int_equal(pi.detached, 1);
	assert_int_equal(pi.detached_ns, 1900 + 1234000000ull);
	assert_int_equal(pi.exited, 0);
	assert_int_equal(pi.final_counts, 1);
	assert_int_equal(pi.exit_code, -1);
	assert_string_equal(store_process_end_text(&pi, end, sizeof end),
	                    "detached at +1.234s, still running");
	assert_int_equal(store_last_ns(st), 1900 + 1234000000ull);
	/* A later attach to the same process continues it; its own end is awaited again. */
	feed_hello(st, 1, 900);
	assert_int_equal(store_process_count(st), 1);
	store_process_get(st, 0, &pi);
	assert_int_equal(pi.detached, 0);
	assert_int_equal(pi.connected, 1);
	assert_string_equal(store_process_end_text(&pi, end, sizeof end), "");
	/* This time it exits: a BYE of a capture written before the flag existed (flags 0). */
	struct wire_bye exit_bye = {1900 + 5000000000ull, 0, 0};
	assert_int_equal(store_feed(st, 1, WIRE_FRAME_BYE, &exit_bye, sizeof exit_bye, &cause), 0);
	store_source_closed(st, 1);
	store_process_get(st, 0, &pi);
	assert_int_equal(pi.detached, 0);
	assert_int_equal(pi.exited, 1);
	assert_int_equal(pi.exit_code, 0);
	assert_string_equal(store_process_end_text(&pi, end, sizeof end), "");
	/* A stream that stopped without any BYE is still incomplete. */
	feed_hello(st, 2, 901);
	store_source_closed(st, 2);
	store_process_get(st, 1, &pi);
	assert_string_equal(store_process_end_text(&pi, end, sizeof end),
	                    "incomplete: final counts missing; ended abruptly");
	store_free(st);
}

static void test_strings_per_source(void **state)
{
	(void)state;
	struct store *st = store_new();
	feed_hello(st, 0, 800);
	feed_hello(st, 1, 801);
	/* Same local id, different text in each process. */
	feed_string(st, 0, 2, "alpha");
	feed_string(st, 1, 2, "beta");
	/* Same text under different local ids maps to one global id. */
	feed_string(st, 1, 7, "alpha");
	feed_one(st, 0, ev(WIRE_EV_NVTX_PUSH, 10, 1, 2, 0));
	feed_one(st, 1, ev(WIRE_EV_NVTX_PUSH, 11, 1, 2, 0));
	feed_one(st, 1, ev(WIRE_EV_NVTX_PUSH, 12, 1, 7, 0));
	/* An id never announced shows as the empty string. */
	feed_one(st, 1, ev(WIRE_EV_NVTX_PUSH, 13, 1, 5000, 0));
	feed_one(st, 1, ev(WIRE_EV_NVTX_POP, 14, 1, 0, 0));
	feed_one(st, 1, ev(WIRE_EV_NVTX_POP, 15, 1, 0, 0));
	feed_one(st, 1, ev(WIRE_EV_NVTX_POP, 16, 1, 0, 0));
	feed_one(st, 0, ev(WIRE_EV_NVTX_POP, 20, 1, 0, 0));
	assert_int_equal(store_process_count(st), 2);
	const struct store_range *r0, *r1, *r2, *r3;
	assert_int_equal(store_lane_row_all(st, 0, 1, 0, &r0), 1);
	assert_string_equal(store_string(st, r0[0].name_id), "alpha");
	assert_int_equal(store_lane_row_all(st, 1, 1, 0, &r1), 1);
	assert_string_equal(store_string(st, r1[0].name_id), "beta");
	assert_int_equal(store_lane_row_all(st, 1, 1, 1, &r2), 1);
	assert_string_equal(store_string(st, r2[0].name_id), "alpha");
	assert_int_equal(r2[0].name_id, r0[0].name_id);
	assert_int_not_equal(r1[0].name_id, r0[0].name_id);
	assert_int_equal(store_lane_row_all(st, 1, 1, 2, &r3), 1);
	assert_int_equal(r3[0].name_id, 0);
	assert_string_equal(store_string(st, r3[0].name_id), "");
	/* Unknown global ids read as "". */
	assert_string_equal(store_string(st, 0), "");
	assert_string_equal(store_string(st, 123456), "");
	/* Re-announcing an id in the same source (a new HELLO resets the map) takes the new text. */
	store_source_closed(st, 0);
	feed_hello(st, 0, 802);
	feed_one(st, 0, ev(WIRE_EV_NVTX_MARK, 30, 1, 2, 0));
	const struct store_range *m;
	assert_int_equal(store_lane_mark_query(st, 2, 1, 0, 100, &m), 1);
	assert_int_equal(m[0].name_id, 0);
	feed_string(st, 0, 2, "gamma");
	feed_one(st, 0, ev(WIRE_EV_NVTX_MARK, 31, 1, 2, 0));
	assert_int_equal(store_lane_mark_query(st, 2, 1, 0, 100, &m), 2);
	assert_string_equal(store_string(st, m[1].name_id), "gamma");
	store_free(st);
}

static void test_many_strings_and_generation(void **state)
{
	(void)state;
	struct store *st = store_new();
	feed_hello(st, 0, 900);
	uint64_t gen = store_generation(st);
	char text[32];
	/* Enough strings to force the global hash to grow several times. */
	for (uint32_t i = 0; i < 20000; i++) {
		snprintf(text, sizeof text, "name-%u", i);
		feed_string(st, 0, i + 2, text);
	}
	assert_true(store_generation(st) > gen);
	for (uint32_t i = 0; i < 20000; i += 997) {
		feed_one(st, 0, ev(WIRE_EV_NVTX_MARK, 10 + i, 1, i + 2, 0));
		const struct store_range *m;
		size_t n = store_lane_mark_query(st, 0, 1, 10 + i, 11 + i, &m);
		assert_int_equal(n, 1);
		snprintf(text, sizeof text, "name-%u", i);
		assert_string_equal(store_string(st, m[0].name_id), text);
	}
	assert_true(store_memory_bytes(st) > 20000 * 6);
	store_free(st);
}

/* Thread id 0 (a crafted stream sends it) is a thread like any other: one lane, found again. The
 * old map took key 0 for an empty slot and made a new lane for each of its events. */
static void test_tid_zero_one_lane(void **state)
{
	(void)state;
	struct store *st = store_new();
	feed_hello(st, 0, 100);
	feed_string(st, 0, 2, "r");
	struct wire_event e[] = {
	    ev(WIRE_EV_NVTX_PUSH, 10, 0, 2, 0),
	    ev(WIRE_EV_NVTX_POP, 20, 0, 0, 0),
	    ev(WIRE_EV_NVTX_PUSH, 30, 0, 2, 0),
	    ev(WIRE_EV_NVTX_POP, 40, 0, 0, 0),
	};
	feed_events(st, 0, e, sizeof e / sizeof *e);
	struct store_process_info pi;
	store_process_get(st, 0, &pi);
	assert_int_equal(pi.lane_count, 2); /* the async lane and thread 0 */
	long l = lane_of(st, 0, 0);
	assert_true(l >= 0);
	assert_int_equal(store_thread_lane_find(st, 0, 0), (size_t)l);
	const struct store_range *r;
	assert_int_equal(store_lane_row_all(st, 0, (size_t)l, 0, &r), 2);
	store_free(st);
}

/* A live view of several hosts (attach --ssh) reads them all into one capture: a pid of one host is
 * not the same process as that pid on another, even once the first is no longer connected. */
static void test_other_host_same_pid(void **state)
{
	(void)state;
	struct store *st = store_new();
	unit_host = "nodeA";
	feed_hello(st, 0, 700);
	store_source_closed(st, 0); /* nodeA's relay went away */
	unit_host = "nodeB";
	feed_hello(st, 1, 700);
	unit_host = "unit-host";
	assert_int_equal(store_process_count(st), 2);
	struct store_process_info pi;
	store_process_get(st, 0, &pi);
	assert_string_equal(pi.host, "nodeA");
	assert_int_equal(pi.connected, 0);
	store_process_get(st, 1, &pi);
	assert_string_equal(pi.host, "nodeB");
	assert_int_equal(pi.connected, 1);
	store_free(st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_hello_and_process_info),
	    cmocka_unit_test(test_hello_rank_labels),
	    cmocka_unit_test(test_frame_before_hello),
	    cmocka_unit_test(test_nested_push_pop_two_threads),
	    cmocka_unit_test(test_row_query_brute_force),
	    cmocka_unit_test(test_start_end_async),
	    cmocka_unit_test(test_pop_without_push),
	    cmocka_unit_test(test_marks),
	    cmocka_unit_test(test_thread_name_and_exit),
	    cmocka_unit_test(test_losses_frame),
	    cmocka_unit_test(test_exec_reuses_process),
	    cmocka_unit_test(test_other_host_same_pid),
	    cmocka_unit_test(test_hostile_streams_bounded),
	    cmocka_unit_test(test_bye_detached),
	    cmocka_unit_test(test_strings_per_source),
	    cmocka_unit_test(test_many_strings_and_generation),
	    cmocka_unit_test(test_tid_zero_one_lane),
	};
	return cmocka_run_group_tests_name("store", tests, NULL, NULL);
}
