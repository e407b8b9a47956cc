/* Protocol buffer writer (see pb.h). */
#include "pb.h"

#include "cuscope/escape.h"
#include "cuscope/xalloc.h"

#include <stdlib.h>
#include <string.h>

size_t pb_varint_encode(uint8_t *out, uint64_t v)
{
	size_t n = 0;
	while (v >= 0x80) {
		out[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	out[n++] = (uint8_t)v;
	return n;
}

void pb_init(struct pb *pb)
{
	memset(pb, 0, sizeof *pb);
}

void pb_fini(struct pb *pb)
{
	free(pb->buf);
	memset(pb, 0, sizeof *pb);
}

void pb_reset(struct pb *pb)
{
	pb->len = 0;
}

/* Makes room for n more bytes. */
static void pb_reserve(struct pb *pb, size_t n)
{
	if (pb->cap - pb->len < n)
		xgrow((void **)&pb->buf, &pb->cap, pb->len + n, 1);
}

void pb_raw(struct pb *pb, const void *bytes, size_t len)
{
	if (!len)
		return;
	pb_reserve(pb, len);
	memcpy(pb->buf + pb->len, bytes, len);
	pb->len += len;
}

void pb_varint(struct pb *pb, uint64_t v)
{
	pb_reserve(pb, 10);
	pb->len += pb_varint_encode(pb->buf + pb->len, v);
}

static void pb_tag(struct pb *pb, uint32_t field, enum pb_wire wire)
{
	pb_varint(pb, (uint64_t)field << 3 | wire);
}

void pb_uint(struct pb *pb, uint32_t field, uint64_t v)
{
	pb_tag(pb, field, PB_VARINT);
	pb_varint(pb, v);
}

void pb_int(struct pb *pb, uint32_t field, int64_t v)
{
	pb_uint(pb, field, (uint64_t)v);
}

void pb_fixed64(struct pb *pb, uint32_t field, uint64_t v)
{
	uint8_t le[8];
	for (int i = 0; i < 8; i++)
		le[i] = (uint8_t)(v >> (8 * i));
	pb_tag(pb, field, PB_FIXED64);
	pb_raw(pb, le, sizeof le);
}

void pb_bytes(struct pb *pb, uint32_t field, const void *bytes, size_t len)
{
	pb_tag(pb, field, PB_LEN);
	pb_varint(pb, len);
	pb_raw(pb, bytes, len);
}

static void pb_sink(void *ctx, const char *bytes, size_t len)
{
	pb_raw(ctx, bytes, len);
}

void pb_string(struct pb *pb, uint32_t field, const char *s)
{
	size_t mark = pb_open(pb, field);
	escape_write(s, strlen(s), ESCAPE_UTF8, pb_sink, pb);
	pb_close(pb, mark);
}

size_t pb_open(struct pb *pb, uint32_t field)
{
	pb_tag(pb, field, PB_LEN);
	pb_reserve(pb, 1);
	pb->buf[pb->len++] = 0; /* the length; most bodies are under 128 bytes */
	return pb->len;
}

void pb_close(struct pb *pb, size_t mark)
{
	size_t body = pb->len - mark;
	uint8_t len[10];
	size_t k = pb_varint_encode(len, body);
	if (k > 1) {
		pb_reserve(pb, k - 1);
		memmove(pb->buf + mark + k - 1, pb->buf + mark, body);
		pb->len += k - 1;
	}
	memcpy(pb->buf + mark - 1, len, k);
}
