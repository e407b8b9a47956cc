/* The relay stream's decoder (attach --ssh reads bytes from a remote command): records split at
 * any byte arrive whole and in order, and a foreign first line, another version or a record out
 * of bounds is refused with one line instead of being trusted. */
#include "cuscope/relay.h"
#include "cuscope/wire.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <errno.h>

struct seen {
	int records;
	uint32_t kinds[8], sources[8], types[8], lengths[8];
	char payload0[32];
};

static int on_record(void *ctx, const struct relay_header *h, const void *payload)
{
	struct seen *s = ctx;
	if (s->records < 8) {
		s->kinds[s->records] = h->kind;
		s->sources[s->records] = h->source;
		s->types[s->records] = h->type;
		s->lengths[s->records] = h->length;
		if (s->records == 0 && h->length < sizeof s->payload0)
			memcpy(s->payload0, payload, h->length);
	}
	s->records++;
	return 0;
}

/* Appends one record to buf at *len. */
static void put(uint8_t *buf, size_t *len, uint32_t kind, uint32_t source, uint32_t type, const void *p,
                uint32_t n)
{
	struct relay_header h = {kind, source, type, n};
	memcpy(buf + *len, &h, sizeof h);
	memcpy(buf + *len + sizeof h, p, n);
	*len += sizeof h + n;
}

static size_t good_stream(uint8_t *buf)
{
	size_t len =
	    (size_t)sprintf((char *)buf, RELAY_LINE_PREFIX "%d %s node7\n", RELAY_PROTO, relay_version());
	struct relay_loss l = {5, 500};
	put(buf, &len, RELAY_FRAME, 0, WIRE_FRAME_EVENTS, "abcdef", 6);
	put(buf, &len, RELAY_LOSS, 0, 0, &l, sizeof l);
	put(buf, &len, RELAY_FRAME, 1, WIRE_FRAME_STRING, "", 0);
	put(buf, &len, RELAY_CLOSED, 0, 0, "", 0);
	return len;
}

static void split_anywhere(void **state)
{
	(void)state;
	uint8_t buf[1024];
	size_t len = good_stream(buf);
	for (size_t step = 1; step <= len; step++) {
		struct relay_decoder d;
		struct seen s = {0};
		struct relay_sink sink = {&s, on_record};
		char cause[256];
		relay_decoder_init(&d);
		for (size_t off = 0; off < len; off += step) {
			size_t n = len - off < step ? len - off : step;
			assert_int_equal(relay_decoder_feed(&d, buf + off, n, &sink, cause, sizeof cause), 0);
		}
		assert_int_equal(s.records, 4);
		assert_string_equal(d.host, "node7");
		assert_int_equal(s.kinds[0], RELAY_FRAME);
		assert_int_equal(s.types[0], WIRE_FRAME_EVENTS);
		assert_memory_equal(s.payload0, "abcdef", 6);
		assert_int_equal(s.kinds[1], RELAY_LOSS);
		assert_int_equal(s.sources[2], 1);
		assert_int_equal(s.lengths[2], 0);
		assert_int_equal(s.kinds[3], RELAY_CLOSED);
		relay_decoder_fini(&d);
	}
}

static int feed_all(const void *buf, size_t len, char *cause, size_t size, struct seen *s)
{
	struct relay_decoder d;
	struct relay_sink sink = {s, on_record};
	relay_decoder_init(&d);
	int rc = relay_decoder_feed(&d, buf, len, &sink, cause, size);
	relay_decoder_fini(&d);
	return rc;
}

static void refuses_foreign(void **state)
{
	(void)state;
	char cause[256];
	struct seen s = {0};
	const char *motd = "Last login: yesterday\n";
	assert_int_equal(feed_all(motd, strlen(motd), cause, sizeof cause, &s), -EPROTO);
	assert_non_null(strstr(cause, "not a cuscope relay"));
	assert_non_null(strstr(cause, "Last login"));

	const char *old = RELAY_LINE_PREFIX "1 0.0.1-old n\n";
	assert_int_equal(feed_all(old, strlen(old), cause, sizeof cause, &s), -EPROTO);
	assert_non_null(strstr(cause, "version mismatch: the remote cuscope is 0.0.1-old"));

	/* A first line that never ends is not read without bound. */
	char endless[RELAY_LINE_MAX + 10];
	memset(endless, 'x', sizeof endless);
	assert_int_equal(feed_all(endless, sizeof endless, cause, sizeof cause, &s), -EPROTO);
	assert_int_equal(s.records, 0);
}

static void refuses_out_of_bounds(void **state)
{
	(void)state;
	uint8_t buf[1024];
	size_t base =
	    (size_t)sprintf((char *)buf, RELAY_LINE_PREFIX "%d %s n\n", RELAY_PROTO, relay_version());
	struct relay_header bad[] = {
	    {RELAY_FRAME, 0, 3, WIRE_MAX_FRAME + 1}, /* longer than a collector may send */
	    {RELAY_KIND_MAX, 0, 0, 0},               /* an unknown kind */
	    {0, 0, 0, 0},
	    {RELAY_LOSS, 0, 0, 8}, /* a loss record of the wrong size */
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char cause[256];
		struct seen s = {0};
		memcpy(buf + base, &bad[i], sizeof bad[i]);
		memset(buf + base + sizeof bad[i], 0, 16);
		assert_int_equal(feed_all(buf, base + sizeof bad[i] + 16, cause, sizeof cause, &s), -EPROTO);
		assert_non_null(strstr(cause, "corrupt"));
		assert_int_equal(s.records, 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(split_anywhere),
	    cmocka_unit_test(refuses_foreign),
	    cmocka_unit_test(refuses_out_of_bounds),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
