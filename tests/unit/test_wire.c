/* Wire protocol unit tests: handshake and frame checks, the incremental stream decoder. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cuscope/wire.h"

/* ---- helpers ---- */

/* Builds a HELLO payload with argv "prog\0-x\0" into buf; returns its length. */
static uint32_t make_hello(uint8_t *buf, size_t cap, uint32_t version)
{
	static const char argv[] = "prog\0-x"; /* 8 bytes with the final NUL */
	struct wire_hello h;
	memset(&h, 0, sizeof h);
	memcpy(h.magic, WIRE_MAGIC, 8);
	h.version = version;
	h.hello_size = sizeof h;
	h.pid = 1234;
	h.ppid = 1;
	h.start_mono_ns = 1000;
	strcpy(h.host, "testhost");
	h.cmdline_len = sizeof argv;
	assert_true(cap >= sizeof h + sizeof argv);
	memcpy(buf, &h, sizeof h);
	memcpy(buf + sizeof h, argv, sizeof argv);
	return (uint32_t)(sizeof h + sizeof argv);
}

/* A HELLO of protocol version 1 or 2 (128 bytes: today's fields up to cmdline_len, then a 0). */
static uint32_t make_hello_v2(uint8_t *buf, size_t cap, uint32_t version)
{
	uint8_t today[256];
	uint32_t len = make_hello(today, sizeof today, version);
	struct wire_hello h;
	memcpy(&h, today, sizeof h);
	h.hello_size = WIRE_HELLO_V2_SIZE;
	assert_true(cap >= len);
	memcpy(buf, &h, WIRE_HELLO_V2_SIZE);
	memcpy(buf + WIRE_HELLO_V2_SIZE, today + sizeof h, len - sizeof h);
	return len - (uint32_t)(sizeof h - WIRE_HELLO_V2_SIZE);
}

/* A tiny deterministic PRNG (xorshift64*), so failures reproduce. */
static uint64_t rng_state = 88172645463325252ull;

static uint64_t rng_next(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ull;
}

/* ---- hello ---- */

static void test_hello_good(void **state)
{
	(void)state;
	uint8_t buf[256];
	uint32_t len = make_hello(buf, sizeof buf, WIRE_VERSION);
	const char *cause = NULL;
	assert_int_equal(wire_hello_check(buf, len, &cause), 0);
	assert_null(cause);
	assert_int_equal(wire_frame_check(WIRE_FRAME_HELLO, buf, len, &cause), 0);
	/* No argv at all is fine too. */
	struct wire_hello h;
	memcpy(&h, buf, sizeof h);
	h.cmdline_len = 0;
	memcpy(buf, &h, sizeof h);
	assert_int_equal(wire_hello_check(buf, sizeof h, &cause), 0);
}

static void test_hello_bad_magic(void **state)
{
	(void)state;
	uint8_t buf[256];
	uint32_t len = make_hello(buf, sizeof buf, WIRE_VERSION);
	buf[0] = 'X';
	const char *cause = NULL;
	assert_int_equal(wire_hello_check(buf, len, &cause), -EPROTO);
	assert_non_null(cause);
	assert_non_null(strstr(cause, "magic"));
	/* The NUL that ends the magic is part of it. */
	len = make_hello(buf, sizeof buf, WIRE_VERSION);
	buf[7] = '!';
	cause = NULL;
	assert_int_equal(wire_hello_check(buf, len, &cause), -EPROTO);
	assert_non_null(strstr(cause, "magic"));
}

static void test_hello_versions(void **state)
{
	(void)state;
	uint8_t buf[256];
	uint32_t len = make_hello(buf, sizeof buf, WIRE_VERSION + 1);
	const char *cause = NULL;
	assert_int_equal(wire_hello_check(buf, len, &cause), -EPROTO);
	assert_non_null(cause);
	assert_non_null(strstr(cause, "newer"));
	assert_null(strstr(cause, "older"));

	len = make_hello(buf, sizeof buf, WIRE_VERSION - 1);
	cause = NULL;
	assert_int_equal(wire_hello_check(buf, len, &cause), -EPROTO);
	assert_non_null(cause);
	assert_non_null(strstr(cause, "older"));
	assert_null(strstr(cause, "newer"));

	/* A newer collector with a bigger, truncated-looking hello is still reported as newer. */
	len = make_hello(buf, sizeof buf, 99);
	cause = NULL;
	assert_int_equal(wire_hello_check(buf, 16, &cause), -EPROTO);
	assert_non_null(strstr(cause, "newer"));
}

static void test_hello_truncated(void **state)
{
	(void)state;
	uint8_t buf[256];
	uint32_t len = make_hello(buf, sizeof buf, WIRE_VERSION);
	const char *cause;
	/* Every length short of the fixed struct fails; below 16 bytes it cannot even be identified. */
	for (uint32_t n = 0; n < sizeof(struct wire_hello); n++) {
		cause = NULL;
		assert_int_equal(wire_hello_check(buf, n, &cause), -EPROTO);
		assert_non_null(cause);
		if (n >= 16)
			assert_string_equal(cause, "truncated handshake");
	}
	/* Cut inside argv: cmdline_len no longer matches. */
	for (uint32_t n = sizeof(struct wire_hello); n < len; n++) {
		cause = NULL;
		assert_int_equal(wire_hello_check(buf, n, &cause), -EPROTO);
		assert_non_null(cause);
	}
}

static void test_hello_cmdline_mismatch(void **state)
{
	(void)state;
	uint8_t buf[256];
	uint32_t len = make_hello(buf, sizeof buf, WIRE_VERSION);
	struct wire_hello h;
	memcpy(&h, buf, sizeof h);
	const char *cause = NULL;
	/* Declares more argv than follows. */
	h.cmdline_len = 9;
	memcpy(buf, &h, sizeof h);
	assert_int_equal(wire_hello_check(buf, len, &cause), -EPROTO);
	assert_string_equal(cause, "malformed handshake");
	/* Declares less than follows (trailing garbage). */
	h.cmdline_len = 7;
	memcpy(buf, &h, sizeof h);
	cause = NULL;
	assert_int_equal(wire_hello_check(buf, len, &cause), -EPROTO);
	assert_string_equal(cause, "malformed handshake");
	/* A huge length must not wrap around. */
	h.cmdline_len = UINT32_MAX;
	memcpy(buf, &h, sizeof h);
	cause = NULL;
	assert_int_equal(wire_hello_check(buf, len, &cause), -EPROTO);
	/* A wrong hello_size is malformed as well. */
	h.cmdline_len = 8;
	h.hello_size = sizeof h + 8;
	memcpy(buf, &h, sizeof h);
	cause = NULL;
	assert_int_equal(wire_hello_check(buf, len, &cause), -EPROTO);
	assert_string_equal(cause, "malformed handshake");
}

/* ---- frame checks ---- */

static void test_frame_check_string(void **state)
{
	(void)state;
	uint8_t buf[sizeof(struct wire_string) + WIRE_MAX_STRING + 8];
	struct wire_string s = {.id = 2, .length = 5};
	memcpy(buf, &s, sizeof s);
	memcpy(buf + sizeof s, "hello", 5);
	const char *cause = NULL;
	assert_int_equal(wire_frame_check(WIRE_FRAME_STRING, buf, sizeof s + 5, &cause), 0);
	/* Length field disagrees with the payload either way. */
	assert_int_equal(wire_frame_check(WIRE_FRAME_STRING, buf, sizeof s + 4, &cause), -EPROTO);
	assert_non_null(cause);
	cause = NULL;
	assert_int_equal(wire_frame_check(WIRE_FRAME_STRING, buf, sizeof s + 6, &cause), -EPROTO);
	assert_non_null(cause);
	/* Shorter than the struct. */
	for (uint32_t n = 0; n < sizeof s; n++) {
		cause = NULL;
		assert_int_equal(wire_frame_check(WIRE_FRAME_STRING, buf, n, &cause), -EPROTO);
		assert_non_null(cause);
	}
	/* Id 0 is reserved. */
	s.id = 0;
	memcpy(buf, &s, sizeof s);
	cause = NULL;
	assert_int_equal(wire_frame_check(WIRE_FRAME_STRING, buf, sizeof s + 5, &cause), -EPROTO);
	assert_non_null(cause);
	/* Empty string and the longest string are fine; one byte longer is not. */
	s.id = 3;
	s.length = 0;
	memcpy(buf, &s, sizeof s);
	assert_int_equal(wire_frame_check(WIRE_FRAME_STRING, buf, sizeof s, &cause), 0);
	memset(buf + sizeof s, 'a', WIRE_MAX_STRING + 1);
	s.length = WIRE_MAX_STRING;
	memcpy(buf, &s, sizeof s);
	assert_int_equal(wire_frame_check(WIRE_FRAME_STRING, buf, sizeof s + WIRE_MAX_STRING, &cause), 0);
	s.length = WIRE_MAX_STRING + 1;
	memcpy(buf, &s, sizeof s);
	cause = NULL;
	assert_int_equal(wire_frame_check(WIRE_FRAME_STRING, buf, sizeof s + WIRE_MAX_STRING + 1, &cause),
	                 -EPROTO);
	assert_non_null(cause);
}

static void test_frame_check_arrays(void **state)
{
	(void)state;
	uint8_t buf[4 * sizeof(struct wire_event)];
	memset(buf, 0, sizeof buf);
	const char *cause;
	for (uint32_t n = 0; n <= sizeof buf; n++) {
		cause = NULL;
		int want = n % sizeof(struct wire_event) == 0 ? 0 : -EPROTO;
		assert_int_equal(wire_frame_check(WIRE_FRAME_EVENTS, buf, n, &cause), want);
		if (want)
			assert_non_null(cause);
		cause = NULL;
		want = n % sizeof(struct wire_loss) == 0 ? 0 : -EPROTO;
		assert_int_equal(wire_frame_check(WIRE_FRAME_LOSSES, buf, n, &cause), want);
		if (want)
			assert_non_null(cause);
	}
}

static void test_frame_check_gpu(void **state)
{
	(void)state;
	uint8_t buf[3 * sizeof(struct wire_gpu_event)];
	memset(buf, 0, sizeof buf);
	const char *cause;
	for (uint32_t n = 0; n <= sizeof buf; n++) {
		cause = NULL;
		int want = n % sizeof(struct wire_gpu_event) == 0 ? 0 : -EPROTO;
		assert_int_equal(wire_frame_check(WIRE_FRAME_GPU, buf, n, &cause), want);
		if (want)
			assert_non_null(cause);
		cause = NULL;
		want = n == sizeof(struct wire_gpu_device) ? 0 : -EPROTO;
		assert_int_equal(wire_frame_check(WIRE_FRAME_GPU_DEVICE, buf, n, &cause), want);
		if (want)
			assert_non_null(cause);
	}
}

static void test_frame_check_notice(void **state)
{
	(void)state;
	uint8_t buf[sizeof(struct wire_notice) + WIRE_MAX_STRING + 8];
	memset(buf, 'n', sizeof buf);
	struct wire_notice n = {
	    .level = WIRE_NOTICE_WARNING, .topic = WIRE_NOTICE_TOPIC_GPU_UNAVAILABLE, .length = 10};
	memcpy(buf, &n, sizeof n);
	const char *cause = NULL;
	assert_int_equal(wire_frame_check(WIRE_FRAME_NOTICE, buf, sizeof n + 10, &cause), 0);
	/* Every known topic passes; one beyond them is not a notice this version wrote. */
	for (uint32_t t = 0; t <= WIRE_NOTICE_TOPIC_MAX; t++) {
		n.topic = t;
		memcpy(buf, &n, sizeof n);
		cause = NULL;
		assert_int_equal(wire_frame_check(WIRE_FRAME_NOTICE, buf, sizeof n + 10, &cause),
		                 t < WIRE_NOTICE_TOPIC_MAX ? 0 : -EPROTO);
	}
	n.topic = WIRE_NOTICE_TOPIC_GENERAL;
	memcpy(buf, &n, sizeof n);
	for (uint32_t len = 0; len < sizeof n + 10; len++) {
		cause = NULL;
		assert_int_equal(wire_frame_check(WIRE_FRAME_NOTICE, buf, len, &cause), -EPROTO);
		assert_non_null(cause);
	}
	cause = NULL;
	assert_int_equal(wire_frame_check(WIRE_FRAME_NOTICE, buf, sizeof n + 11, &cause), -EPROTO);
	assert_non_null(cause);
	n.length = 0;
	memcpy(buf, &n, sizeof n);
	assert_int_equal(wire_frame_check(WIRE_FRAME_NOTICE, buf, sizeof n, &cause), 0);
	n.length = WIRE_MAX_STRING;
	memcpy(buf, &n, sizeof n);
	assert_int_equal(wire_frame_check(WIRE_FRAME_NOTICE, buf, sizeof n + WIRE_MAX_STRING, &cause), 0);
	n.length = WIRE_MAX_STRING + 1;
	memcpy(buf, &n, sizeof n);
	cause = NULL;
	assert_int_equal(wire_frame_check(WIRE_FRAME_NOTICE, buf, sizeof n + WIRE_MAX_STRING + 1, &cause),
	                 -EPROTO);
	assert_non_null(cause);
}

/* A version 1 notice ({level, length}, no topic) with text into buf; returns the frame length. */
static uint32_t make_notice_v1(uint8_t *buf, uint32_t level, const char *text)
{
	uint32_t head[2] = {level, (uint32_t)strlen(text)};
	memcpy(buf, head, sizeof head);
	memcpy(buf + sizeof head, text, head[1]);
	return (uint32_t)(sizeof head + head[1]);
}

/* Upgrades a version 1 notice and checks the result is a valid notice of today with text and topic. */
static void check_notice_upgrade(uint32_t level, const char *text, uint32_t topic)
{
	uint8_t in[256], out[256 + WIRE_UPGRADE_GROWTH];
	uint32_t len = make_notice_v1(in, level, text), out_len = 0;
	const char *cause = NULL;
	assert_int_equal(wire_frame_upgrade(1, WIRE_FRAME_NOTICE, in, len, out, &out_len, &cause), 1);
	assert_int_equal(out_len, sizeof(struct wire_notice) + strlen(text));
	assert_true(out_len <= len + WIRE_UPGRADE_GROWTH);
	assert_int_equal(wire_frame_check(WIRE_FRAME_NOTICE, out, out_len, &cause), 0);
	struct wire_notice n;
	memcpy(&n, out, sizeof n);
	assert_int_equal(n.level, level);
	assert_int_equal(n.topic, topic);
	assert_int_equal(n.length, strlen(text));
	assert_memory_equal(out + sizeof n, text, n.length);
}

static void test_upgrade_v1(void **state)
{
	(void)state;
	/* The notices the version 1 collector wrote that a viewer acts on get their topic. */
	check_notice_upgrade(WIRE_NOTICE_WARNING,
	                     "GPU tracing unavailable: no libcupti; CPU and NVTX lanes continue",
	                     WIRE_NOTICE_TOPIC_GPU_UNAVAILABLE);
	check_notice_upgrade(WIRE_NOTICE_WARNING,
	                     "GPU tracing: the program loaded CUDA but the CUDA driver never initialised",
	                     WIRE_NOTICE_TOPIC_GPU_UNAVAILABLE);
	check_notice_upgrade(WIRE_NOTICE_INFO, "overhead budget 3%: CPU sampling 10000 -> 1250 samples/s",
	                     WIRE_NOTICE_TOPIC_BUDGET);
	check_notice_upgrade(WIRE_NOTICE_INFO, "cupti_version=13\ncuda_driver_api_version=13000",
	                     WIRE_NOTICE_TOPIC_RUNTIME);
	/* Anything else, and the same words at another level, is for the user only. */
	check_notice_upgrade(WIRE_NOTICE_INFO, "GPU tracing unavailable: no libcupti",
	                     WIRE_NOTICE_TOPIC_GENERAL);
	check_notice_upgrade(WIRE_NOTICE_WARNING, "CPU sampling moved from signal 34 to 35",
	                     WIRE_NOTICE_TOPIC_GENERAL);
	check_notice_upgrade(WIRE_NOTICE_WARNING, "the sampling budget", WIRE_NOTICE_TOPIC_GENERAL);
	check_notice_upgrade(WIRE_NOTICE_WARNING, "", WIRE_NOTICE_TOPIC_GENERAL);

	uint8_t in[WIRE_MAX_STRING + 64], out[sizeof in + WIRE_UPGRADE_GROWTH];
	uint32_t out_len = 0;
	const char *cause = NULL;
	/* A version 1 notice that does not fit its own layout is refused with a cause. */
	uint32_t len = make_notice_v1(in, WIRE_NOTICE_WARNING, "text");
	for (uint32_t l = 0; l < len + 2; l++) {
		if (l == len)
			continue;
		cause = NULL;
		assert_int_equal(wire_frame_upgrade(1, WIRE_FRAME_NOTICE, in, l, out, &out_len, &cause),
		                 -EPROTO);
		assert_non_null(cause);
	}
	uint32_t head[2] = {WIRE_NOTICE_WARNING, WIRE_MAX_STRING + 1};
	memcpy(in, head, sizeof head);
	cause = NULL;
	assert_int_equal(wire_frame_upgrade(1, WIRE_FRAME_NOTICE, in, sizeof head + WIRE_MAX_STRING + 1, out,
	                                    &out_len, &cause),
	                 -EPROTO);
	assert_non_null(cause);

	/* A version 1 or 2 HELLO passes today's check once upgraded: no labels, its argv kept. */
	for (uint32_t v = 1; v <= 2; v++) {
		len = make_hello_v2(in, sizeof in, v);
		cause = NULL;
		assert_int_equal(wire_hello_check(in, len, &cause), -EPROTO);
		memset(out, 0xff, sizeof out);
		assert_int_equal(wire_frame_upgrade(v, WIRE_FRAME_HELLO, in, len, out, &out_len, &cause), 1);
		assert_int_equal(out_len, len + sizeof(struct wire_hello) - WIRE_HELLO_V2_SIZE);
		assert_true(out_len <= len + WIRE_UPGRADE_GROWTH);
		assert_int_equal(wire_hello_check(out, out_len, &cause), 0);
		struct wire_hello h;
		memcpy(&h, out, sizeof h);
		assert_int_equal(h.pid, 1234);
		assert_string_equal(h.host, "testhost");
		assert_int_equal(h.ids, 0);
		assert_int_equal(h.rank, 0);
		assert_int_equal(h.restart_count, 0);
		assert_memory_equal(out + sizeof(struct wire_hello), in + WIRE_HELLO_V2_SIZE,
		                    len - WIRE_HELLO_V2_SIZE);
		/* Version 2 notices are today's. */
		uint32_t nl = make_notice_v1(in, WIRE_NOTICE_WARNING, "text");
		assert_int_equal(wire_frame_upgrade(v, WIRE_FRAME_NOTICE, in, nl, out, &out_len, &cause),
		                 v == 1 ? 1 : 0);
	}
	/* ... but not a HELLO naming another version, today's size, or a short one. */
	len = make_hello_v2(in, sizeof in, 7);
	cause = NULL;
	assert_int_equal(wire_frame_upgrade(1, WIRE_FRAME_HELLO, in, len, out, &out_len, &cause), -EPROTO);
	assert_non_null(cause);
	len = make_hello(in, sizeof in, 2);
	cause = NULL;
	assert_int_equal(wire_frame_upgrade(2, WIRE_FRAME_HELLO, in, len, out, &out_len, &cause), -EPROTO);
	assert_non_null(cause);
	len = make_hello_v2(in, sizeof in, 1);
	cause = NULL;
	assert_int_equal(wire_frame_upgrade(1, WIRE_FRAME_HELLO, in, 16, out, &out_len, &cause), -EPROTO);
	assert_non_null(cause);

	/* Other frames are the same in both versions; today's frames need nothing; unknown versions fail. */
	uint8_t bye[sizeof(struct wire_bye)] = {0};
	assert_int_equal(wire_frame_upgrade(1, WIRE_FRAME_BYE, bye, sizeof bye, out, &out_len, &cause), 0);
	len = make_notice_v1(in, WIRE_NOTICE_WARNING, "text");
	assert_int_equal(wire_frame_upgrade(WIRE_VERSION, WIRE_FRAME_NOTICE, in, len, out, &out_len, &cause),
	                 0);
	uint32_t bad[] = {0, WIRE_VERSION + 1, 99};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		cause = NULL;
		assert_int_equal(
		    wire_frame_upgrade(bad[i], WIRE_FRAME_BYE, bye, sizeof bye, out, &out_len, &cause),
		    -EPROTO);
		assert_non_null(cause);
	}
}

/* Version 3 captures: only their hello changes (its version); GPU metric frames check their size. */
static void test_upgrade_v3_and_gpu_metrics(void **state)
{
	(void)state;
	uint8_t in[256], out[256 + WIRE_UPGRADE_GROWTH];
	uint32_t out_len = 0;
	const char *cause = NULL;
	uint32_t len = make_hello(in, sizeof in, 3);
	assert_int_equal(wire_hello_check(in, len, &cause), -EPROTO);
	assert_int_equal(wire_frame_upgrade(3, WIRE_FRAME_HELLO, in, len, out, &out_len, &cause), 1);
	assert_int_equal(out_len, len);
	assert_int_equal(wire_hello_check(out, out_len, &cause), 0);
	struct wire_hello h;
	memcpy(&h, out, sizeof h);
	assert_int_equal(h.version, WIRE_VERSION);
	assert_int_equal(h.pid, 1234);
	assert_memory_equal(out + sizeof h, in + sizeof h, len - sizeof h);
	/* A hello that is not version 3's, claimed as version 3, is refused. */
	len = make_hello(in, sizeof in, 2);
	assert_int_equal(wire_frame_upgrade(3, WIRE_FRAME_HELLO, in, len, out, &out_len, &cause), -EPROTO);
	uint8_t bye[sizeof(struct wire_bye)] = {0};
	assert_int_equal(wire_frame_upgrade(3, WIRE_FRAME_BYE, bye, sizeof bye, out, &out_len, &cause), 0);

	struct wire_gpu_metric m[2];
	memset(m, 0, sizeof m);
	assert_int_equal(wire_frame_check(WIRE_FRAME_GPU_METRICS, m, sizeof m, &cause), 0);
	assert_int_equal(wire_frame_check(WIRE_FRAME_GPU_METRICS, m, 0, &cause), 0);
	assert_int_equal(wire_frame_check(WIRE_FRAME_GPU_METRICS, m, sizeof m - 8, &cause), -EPROTO);
	assert_string_equal(wire_frame_type_name(WIRE_FRAME_GPU_METRICS), "gpu_metrics");
	assert_string_equal(wire_cost_source_name(WIRE_COST_GPU_METRICS), "gpu_metrics");
}

static void test_frame_check_bye_and_unknown(void **state)
{
	(void)state;
	uint8_t buf[64];
	memset(buf, 0, sizeof buf);
	const char *cause;
	for (uint32_t n = 0; n < sizeof buf; n++) {
		cause = NULL;
		int want = n == sizeof(struct wire_bye) ? 0 : -EPROTO;
		assert_int_equal(wire_frame_check(WIRE_FRAME_BYE, buf, n, &cause), want);
		if (want)
			assert_non_null(cause);
	}
	uint32_t bad_types[] = {0, WIRE_FRAME_TYPE_MAX, 99, UINT32_MAX};
	for (size_t i = 0; i < sizeof bad_types / sizeof *bad_types; i++) {
		cause = NULL;
		assert_int_equal(wire_frame_check(bad_types[i], buf, 0, &cause), -EPROTO);
		assert_string_equal(cause, "unknown frame type");
	}
}

static void test_names(void **state)
{
	(void)state;
	assert_string_equal(wire_frame_type_name(WIRE_FRAME_HELLO), "hello");
	assert_string_equal(wire_frame_type_name(WIRE_FRAME_BYE), "bye");
	assert_string_equal(wire_frame_type_name(WIRE_FRAME_NOTICE), "notice");
	/* Every frame type has a name of its own. */
	for (uint32_t t = 1; t < WIRE_FRAME_TYPE_MAX; t++)
		assert_string_not_equal(wire_frame_type_name(t), "unknown");
	for (uint32_t c = 1; c < WIRE_LOSS_CAUSE_MAX; c++)
		assert_non_null(wire_loss_cause_name(c));
	assert_string_equal(wire_frame_type_name(0), "unknown");
	assert_string_equal(wire_frame_type_name(1000), "unknown");
	assert_string_equal(wire_loss_cause_name(WIRE_LOSS_RING_FULL), "ring_full");
	assert_string_equal(wire_loss_cause_name(WIRE_LOSS_UNMATCHED_POP), "unmatched_pop");
	assert_null(wire_loss_cause_name(0));
	assert_null(wire_loss_cause_name(WIRE_LOSS_CAUSE_MAX));
}

/* ---- decoder ---- */

struct test_frame {
	uint32_t type;
	uint32_t length;
	uint8_t *payload;
};

/* Appends a frame (header + payload) to a growing byte stream. */
static void stream_append(uint8_t **stream, size_t *len, uint32_t type, const void *payload, uint32_t length)
{
	struct wire_frame_header h = {type, length};
	*stream = realloc(*stream, *len + sizeof h + length);
	assert_non_null(*stream);
	memcpy(*stream + *len, &h, sizeof h);
	if (length)
		memcpy(*stream + *len + sizeof h, payload, length);
	*len += sizeof h + length;
}

/* Builds a stream of n frames of every type with varied lengths (including empty payloads). */
static uint8_t *build_stream(struct test_frame *frames, size_t n, size_t *out_len)
{
	uint8_t *stream = NULL;
	size_t len = 0;
	for (size_t i = 0; i < n; i++) {
		uint32_t type = 1 + (uint32_t)(i % (WIRE_FRAME_TYPE_MAX - 1));
		uint32_t length = (uint32_t)(i * 37 % 301);
		if (i % 7 == 3)
			length = 0;
		frames[i].type = type;
		frames[i].length = length;
		frames[i].payload = malloc(length ? length : 1);
		assert_non_null(frames[i].payload);
		for (uint32_t b = 0; b < length; b++)
			frames[i].payload[b] = (uint8_t)(i * 131 + b * 7 + 1);
		stream_append(&stream, &len, type, frames[i].payload, length);
	}
	*out_len = len;
	return stream;
}

/* Takes every complete frame out of dec, comparing with frames[*next...]. */
static void drain_and_compare(struct wire_decoder *dec, struct test_frame *frames, size_t n, size_t *next)
{
	uint32_t type, length;
	const void *payload;
	const char *cause = NULL;
	int rc;
	while ((rc = wire_decoder_next(dec, &type, &payload, &length, &cause)) == 1) {
		assert_true(*next < n);
		assert_int_equal(type, frames[*next].type);
		assert_int_equal(length, frames[*next].length);
		if (length)
			assert_memory_equal(payload, frames[*next].payload, length);
		(*next)++;
	}
	assert_int_equal(rc, 0);
}

static void test_decoder_split_every_boundary(void **state)
{
	(void)state;
	enum { N = 24 };
	struct test_frame frames[N];
	size_t len;
	uint8_t *stream = build_stream(frames, N, &len);
	/* Two pieces split at every byte position (empty pushes: see test_decoder_empty_push). */
	for (size_t k = 1; k < len; k++) {
		struct wire_decoder dec;
		wire_decoder_init(&dec);
		size_t next = 0;
		assert_int_equal(wire_decoder_push(&dec, stream, k), 0);
		drain_and_compare(&dec, frames, N, &next);
		assert_int_equal(wire_decoder_push(&dec, stream + k, len - k), 0);
		drain_and_compare(&dec, frames, N, &next);
		assert_int_equal(next, N);
		assert_int_equal(dec.len - dec.off, 0);
		wire_decoder_fini(&dec);
	}
	/* One byte at a time. */
	struct wire_decoder dec;
	wire_decoder_init(&dec);
	size_t next = 0;
	for (size_t i = 0; i < len; i++) {
		assert_int_equal(wire_decoder_push(&dec, stream + i, 1), 0);
		drain_and_compare(&dec, frames, N, &next);
	}
	assert_int_equal(next, N);
	wire_decoder_fini(&dec);
	/* Random piece sizes, many times. */
	for (int round = 0; round < 200; round++) {
		wire_decoder_init(&dec);
		next = 0;
		size_t off = 0;
		while (off < len) {
			size_t piece = 1 + rng_next() % 97;
			if (piece > len - off)
				piece = len - off;
			assert_int_equal(wire_decoder_push(&dec, stream + off, piece), 0);
			off += piece;
			drain_and_compare(&dec, frames, N, &next);
		}
		assert_int_equal(next, N);
		wire_decoder_fini(&dec);
	}
	for (size_t i = 0; i < N; i++)
		free(frames[i].payload);
	free(stream);
}

static void test_decoder_malformed_header(void **state)
{
	(void)state;
	struct wire_frame_header bad[] = {
	    {0, 0},
	    {WIRE_FRAME_TYPE_MAX, 0},
	    {77, 4},
	    {WIRE_FRAME_EVENTS, WIRE_MAX_FRAME + 1},
	    {WIRE_FRAME_STRING, UINT32_MAX},
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		struct wire_decoder dec;
		wire_decoder_init(&dec);
		/* A good frame first, then the bad header. */
		uint8_t *stream = NULL;
		size_t len = 0;
		stream_append(&stream, &len, WIRE_FRAME_BYE, "0123456789abcdef", 16);
		stream_append(&stream, &len, bad[i].type, NULL, 0);
		memcpy(stream + len - sizeof bad[i], &bad[i], sizeof bad[i]);
		assert_int_equal(wire_decoder_push(&dec, stream, len), 0);
		uint32_t type, length;
		const void *payload;
		const char *cause = NULL;
		assert_int_equal(wire_decoder_next(&dec, &type, &payload, &length, &cause), 1);
		assert_int_equal(type, WIRE_FRAME_BYE);
		assert_int_equal(length, 16);
		assert_int_equal(wire_decoder_next(&dec, &type, &payload, &length, &cause), -EPROTO);
		assert_non_null(cause);
		/* It stays broken: the stream cannot be resynchronised. */
		cause = NULL;
		assert_int_equal(wire_decoder_next(&dec, &type, &payload, &length, &cause), -EPROTO);
		assert_non_null(cause);
		wire_decoder_fini(&dec);
		free(stream);
	}
	/* A largest legal frame header waits for its payload instead of failing. */
	struct wire_decoder dec;
	wire_decoder_init(&dec);
	struct wire_frame_header ok = {WIRE_FRAME_EVENTS, WIRE_MAX_FRAME};
	assert_int_equal(wire_decoder_push(&dec, &ok, sizeof ok), 0);
	uint32_t type, length;
	const void *payload;
	const char *cause = NULL;
	assert_int_equal(wire_decoder_next(&dec, &type, &payload, &length, &cause), 0);
	/* Fewer than 8 header bytes: wait. */
	wire_decoder_fini(&dec);
	wire_decoder_init(&dec);
	assert_int_equal(wire_decoder_push(&dec, &ok, 7), 0);
	assert_int_equal(wire_decoder_next(&dec, &type, &payload, &length, &cause), 0);
	wire_decoder_fini(&dec);
}

static void test_decoder_bounded_buffer(void **state)
{
	(void)state;
	/* About 64 MiB of frames of up to 3000 bytes, fed in random pieces, consumed as they come. */
	uint8_t piece[8192];
	uint8_t payload[3000];
	struct wire_decoder dec;
	wire_decoder_init(&dec);
	uint64_t sent = 0, received = 0, bytes = 0;
	size_t max_cap = 0;
	uint64_t expect_seq = 0;
	size_t fill = 0;
	while (bytes < (64u << 20)) {
		/* Make a frame: payload starts with its sequence number. */
		uint32_t length = 9 + (uint32_t)(rng_next() % (sizeof payload - 9));
		memcpy(payload, &sent, 8);
		memset(payload + 8, (int)(sent & 0xff), length - 8);
		struct wire_frame_header h = {WIRE_FRAME_EVENTS, length};
		size_t total = sizeof h + length;
		if (fill + total > sizeof piece || rng_next() % 3 == 0) {
			/* Flush what we have in two random parts. */
			size_t cut = fill ? rng_next() % (fill + 1) : 0;
			if (cut)
				assert_int_equal(wire_decoder_push(&dec, piece, cut), 0);
			if (fill - cut)
				assert_int_equal(wire_decoder_push(&dec, piece + cut, fill - cut), 0);
			bytes += fill;
			fill = 0;
			uint32_t type, len;
			const void *p;
			const char *cause = NULL;
			int rc;
			while ((rc = wire_decoder_next(&dec, &type, &p, &len, &cause)) == 1) {
				uint64_t seq;
				assert_int_equal(type, WIRE_FRAME_EVENTS);
				memcpy(&seq, p, 8);
				assert_int_equal(seq, expect_seq);
				assert_int_equal(((const uint8_t *)p)[len - 1], (uint8_t)(seq & 0xff));
				expect_seq++;
				received++;
			}
			assert_int_equal(rc, 0);
			if (dec.cap > max_cap)
				max_cap = dec.cap;
		}
		memcpy(piece + fill, &h, sizeof h);
		memcpy(piece + fill + sizeof h, payload, length);
		fill += total;
		sent++;
	}
	assert_int_equal(wire_decoder_push(&dec, piece, fill), 0);
	uint32_t type, len;
	const void *p;
	const char *cause = NULL;
	while (wire_decoder_next(&dec, &type, &p, &len, &cause) == 1)
		received++;
	assert_int_equal(received, sent);
	assert_true(sent > 10000);
	/* The buffer never grew past a small multiple of the initial 64 KiB. */
	assert_true(max_cap <= 128 * 1024);
	assert_true(dec.cap <= 128 * 1024);
	wire_decoder_fini(&dec);
	assert_null(dec.buf);
}

static void test_decoder_partial_frames_compact(void **state)
{
	(void)state;
	/* The stream is always left mid-frame, so the consumed prefix must be compacted away. */
	struct wire_decoder dec;
	wire_decoder_init(&dec);
	uint8_t frame[8 + 1000];
	struct wire_frame_header h = {WIRE_FRAME_EVENTS, 1000};
	memcpy(frame, &h, sizeof h);
	memset(frame + 8, 0x5a, 1000);
	size_t count = 0;
	for (int i = 0; i < 20000; i++) {
		/* Push one frame shifted by 500 bytes: every push completes one and starts another. */
		if (i == 0) {
			assert_int_equal(wire_decoder_push(&dec, frame, 500), 0);
			continue;
		}
		assert_int_equal(wire_decoder_push(&dec, frame + 500, sizeof frame - 500), 0);
		assert_int_equal(wire_decoder_push(&dec, frame, 500), 0);
		uint32_t type, len;
		const void *p;
		const char *cause = NULL;
		while (wire_decoder_next(&dec, &type, &p, &len, &cause) == 1) {
			assert_int_equal(len, 1000);
			assert_int_equal(((const uint8_t *)p)[999], 0x5a);
			count++;
		}
		assert_true(dec.cap <= 128 * 1024);
	}
	assert_int_equal(count, 19999);
	wire_decoder_fini(&dec);
}

/*
 * Regression (fixed): pushing zero bytes into a fresh
 * decoder calls memcpy(NULL + 0, data, 0), which UBSan reports as a null argument and aborts.
 */
static void test_decoder_empty_push(void **state)
{
	(void)state;
	struct wire_decoder dec;
	wire_decoder_init(&dec);
	uint8_t byte = 0;
	assert_int_equal(wire_decoder_push(&dec, &byte, 0), 0);
	assert_int_equal(dec.len, 0);
	wire_decoder_fini(&dec);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_hello_good),
	    cmocka_unit_test(test_hello_bad_magic),
	    cmocka_unit_test(test_hello_versions),
	    cmocka_unit_test(test_hello_truncated),
	    cmocka_unit_test(test_hello_cmdline_mismatch),
	    cmocka_unit_test(test_frame_check_string),
	    cmocka_unit_test(test_frame_check_arrays),
	    cmocka_unit_test(test_frame_check_gpu),
	    cmocka_unit_test(test_frame_check_notice),
	    cmocka_unit_test(test_upgrade_v1),
	    cmocka_unit_test(test_upgrade_v3_and_gpu_metrics),
	    cmocka_unit_test(test_frame_check_bye_and_unknown),
	    cmocka_unit_test(test_names),
	    cmocka_unit_test(test_decoder_split_every_boundary),
	    cmocka_unit_test(test_decoder_malformed_header),
	    cmocka_unit_test(test_decoder_bounded_buffer),
	    cmocka_unit_test(test_decoder_partial_frames_compact),
	    cmocka_unit_test(test_decoder_empty_push),
	};
	return cmocka_run_group_tests_name("wire", tests, NULL, NULL);
}
