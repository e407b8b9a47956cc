/*
 * A tiny protocol buffer writer for the Perfetto export: varints, fixed64, length-delimited
 * fields and nested messages, appended to one growable buffer (a message is built whole, then
 * written out). Field numbers and wire types follow the protobuf encoding rules; strings are
 * written as valid UTF-8 (each invalid byte becomes U+FFFD) since readers expect UTF-8 text.
 */
#ifndef CUSCOPE_DUMP_PB_H
#define CUSCOPE_DUMP_PB_H

#include <stddef.h>
#include <stdint.h>

enum pb_wire {
	PB_VARINT = 0,
	PB_FIXED64 = 1,
	PB_LEN = 2,
};

struct pb {
	uint8_t *buf;
	size_t len; /* bytes written */
	size_t cap; /* bytes allocated */
};

/* Bytes of the varint encoding of v (1..10) written to out (which holds at least 10). */
size_t pb_varint_encode(uint8_t *out, uint64_t v);
void pb_init(struct pb *pb);
void pb_fini(struct pb *pb);
/* Empties the buffer (keeps its memory). */
void pb_reset(struct pb *pb);
void pb_raw(struct pb *pb, const void *bytes, size_t len);
void pb_varint(struct pb *pb, uint64_t v);
/* A varint field: uint32/uint64/bool/enum; negative int32/int64 are passed as their uint64 bits. */
void pb_uint(struct pb *pb, uint32_t field, uint64_t v);
void pb_int(struct pb *pb, uint32_t field, int64_t v);
void pb_fixed64(struct pb *pb, uint32_t field, uint64_t v);
/* A length-delimited field holding len bytes (a string taken as is, or an encoded message). */
void pb_bytes(struct pb *pb, uint32_t field, const void *bytes, size_t len);
/* A string field from the NUL-terminated s, invalid UTF-8 replaced. */
void pb_string(struct pb *pb, uint32_t field, const char *s);
/* Opens a nested message (or any length-delimited field): returns the mark pb_close takes. */
size_t pb_open(struct pb *pb, uint32_t field);
/* Closes the field opened at mark: writes its length, moving the body when it needs more than a byte. */
void pb_close(struct pb *pb, size_t mark);

#endif
