/* Protocol buffer writer (src/dump/pb.c): varints, fixed64, strings, nested lengths past one byte. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../src/dump/pb.h"

static void expect_bytes(const struct pb *pb, const void *want, size_t len)
{
	assert_int_equal(pb->len, len);
	assert_memory_equal(pb->buf, want, len);
}

/* Known encodings from the protobuf encoding guide, and the 10-byte maximum. */
static void test_varint(void **state)
{
	(void)state;
	static const struct {
		uint64_t v;
		size_t n;
		uint8_t bytes[10];
	} cases[] = {
	    {0, 1, {0x00}},
	    {1, 1, {0x01}},
	    {127, 1, {0x7f}},
	    {128, 2, {0x80, 0x01}},
	    {150, 2, {0x96, 0x01}},
	    {300, 2, {0xac, 0x02}},
	    {16383, 2, {0xff, 0x7f}},
	    {16384, 3, {0x80, 0x80, 0x01}},
	    {UINT32_MAX, 5, {0xff, 0xff, 0xff, 0xff, 0x0f}},
	    {UINT64_MAX, 10, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		uint8_t out[10];
		assert_int_equal(pb_varint_encode(out, cases[i].v), cases[i].n);
		assert_memory_equal(out, cases[i].bytes, cases[i].n);
	}
}

/* Tags carry field << 3 | wire type; a negative int is its 64-bit two's complement (10 bytes). */
static void test_fields(void **state)
{
	(void)state;
	struct pb pb;
	pb_init(&pb);
	pb_uint(&pb, 1, 150);
	expect_bytes(&pb, "\x08\x96\x01", 3);
	pb_reset(&pb);
	pb_uint(&pb, 58, 3); /* a two-byte tag */
	expect_bytes(&pb, "\xd0\x03\x03", 3);
	pb_reset(&pb);
	pb_int(&pb, 2, -1);
	expect_bytes(&pb, "\x10\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 11);
	pb_reset(&pb);
	pb_fixed64(&pb, 47, 0x0102030405060708ull);
	expect_bytes(&pb, "\xf9\x02\x08\x07\x06\x05\x04\x03\x02\x01", 10);
	pb_reset(&pb);
	pb_string(&pb, 2, "testing");
	expect_bytes(&pb, "\x12\x07testing", 9);
	pb_reset(&pb);
	pb_bytes(&pb, 8, NULL, 0);
	expect_bytes(&pb, "\x42\x00", 2);
	pb_fini(&pb);
}

/* Strings stay valid UTF-8: controls and valid sequences kept, each invalid byte becomes U+FFFD. */
static void test_string_utf8(void **state)
{
	(void)state;
	struct pb pb;
	pb_init(&pb);
	pb_string(&pb, 1, "a\x1b[2J\xc2\x9b\xc3\xa9");
	expect_bytes(&pb,
	             "\x0a\x09"
	             "a\x1b[2J\xc2\x9b\xc3\xa9",
	             11);
	pb_reset(&pb);
	pb_string(&pb, 1, "x\xff\xc3(\xe2\x82");
	expect_bytes(&pb,
	             "\x0a\x0e"
	             "x\xef\xbf\xbd\xef\xbf\xbd(\xef\xbf\xbd\xef\xbf\xbd",
	             16);
	pb_fini(&pb);
}

/* Nested messages: the length is written when closed, the body moved when it needs more bytes. */
static void test_nested(void **state)
{
	(void)state;
	struct pb pb;
	pb_init(&pb);
	size_t outer = pb_open(&pb, 11);
	pb_uint(&pb, 9, 1);
	size_t inner = pb_open(&pb, 4);
	pb_uint(&pb, 3, 7);
	pb_close(&pb, inner);
	pb_close(&pb, outer);
	expect_bytes(&pb, "\x5a\x06\x48\x01\x22\x02\x18\x07", 8);

	/* 300 bytes of body: a two-byte length, the body intact after the move. */
	pb_reset(&pb);
	char body[301];
	for (int i = 0; i < 300; i++)
		body[i] = (char)('a' + i % 26);
	body[300] = 0;
	size_t m = pb_open(&pb, 1);
	size_t s = pb_open(&pb, 2);
	pb_raw(&pb, body, 300);
	pb_close(&pb, s);
	pb_uint(&pb, 3, 1);
	pb_close(&pb, m);
	/* outer body: tag 0x12, len 300 (0xac 0x02), 300 bytes, then 0x18 0x01 = 305 bytes (0xb1 0x02) */
	assert_int_equal(pb.len, 3 + 305);
	assert_memory_equal(pb.buf, "\x0a\xb1\x02\x12\xac\x02", 6);
	assert_memory_equal(pb.buf + 6, body, 300);
	assert_memory_equal(pb.buf + 306, "\x18\x01", 2);

	/* 70000 bytes: a three-byte length. */
	pb_reset(&pb);
	m = pb_open(&pb, 1);
	for (int i = 0; i < 70000; i++)
		pb_raw(&pb, "z", 1);
	pb_close(&pb, m);
	assert_int_equal(pb.len, 1 + 3 + 70000);
	assert_memory_equal(pb.buf, "\x0a\xf0\xa2\x04", 4);
	assert_int_equal(pb.buf[4], 'z');
	assert_int_equal(pb.buf[pb.len - 1], 'z');
	pb_fini(&pb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_varint),
	    cmocka_unit_test(test_fields),
	    cmocka_unit_test(test_string_utf8),
	    cmocka_unit_test(test_nested),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
