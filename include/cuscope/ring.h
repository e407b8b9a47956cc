/*
 * Single-producer single-consumer byte ring of variable-size records: one per application thread,
 * written by that thread without locks or system calls, drained by the collector's sender thread.
 * When full, the producer drops the record and counts it; it never waits.
 */
#ifndef CUSCOPE_RING_H
#define CUSCOPE_RING_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct collector_string;

/* Header of every record in a ring; inline text (not NUL-terminated) follows. */
struct ring_record {
	uint16_t size;     /* total bytes with header and text, multiple of 8; 0 = wrap padding */
	uint16_t kind;     /* enum wire_event_kind */
	uint16_t text_len; /* inline text bytes after the header */
	uint16_t flags;
	uint32_t tid; /* subject thread (NVTX thread naming may name another thread) */
	uint32_t reserved;
	uint64_t time_ns;                          /* CLOCK_MONOTONIC */
	uint64_t value;                            /* kind-specific (range id, category) */
	const struct collector_string *name_ref;   /* registered string, or NULL */
	const struct collector_string *domain_ref; /* NVTX domain, or NULL for the default domain */
};
_Static_assert(sizeof(struct ring_record) == 48, "ring_record layout");

struct ring {
	_Atomic uint64_t head; /* bytes ever written (producer) */
	uint64_t tail_seen; /* producer's last read of tail: avoids touching the consumer's line per record */
	char pad0[48];
	_Atomic uint64_t tail; /* bytes ever consumed (consumer) */
	char pad1[56];
	_Atomic uint64_t dropped; /* records refused because the ring was full */
	uint64_t mask;            /* capacity - 1; capacity is a power of two */
	uint8_t *data;
};

/* Initialises a ring over caller-provided storage of capacity bytes (power of two, >= 4096). */
void ring_init(struct ring *ring, void *storage, size_t capacity);
/*
 * Reserves a record of header + text_len bytes; returns NULL (and counts a drop) when full.
 * Fill it, then ring_commit. Producer side only.
 */
struct ring_record *ring_reserve(struct ring *ring, size_t text_len);
/* Like ring_reserve but fails unless headroom bytes remain free after the record. */
struct ring_record *ring_reserve_headroom(struct ring *ring, size_t text_len, size_t headroom);
/* Publishes the record returned by the last ring_reserve. */
void ring_commit(struct ring *ring, struct ring_record *record);
/* Returns the next record or NULL when empty. Consumer side only. */
const struct ring_record *ring_peek(struct ring *ring);
/* Releases the record returned by ring_peek. */
void ring_release(struct ring *ring, const struct ring_record *record);
/* Bytes currently queued. */
size_t ring_used(struct ring *ring);
/* Producer side: bytes queued as of the producer's last look at the consumer (an upper bound). */
size_t ring_used_upper_bound(const struct ring *ring);
/* Producer side: re-reads the consumer's position and returns the bytes queued. */
size_t ring_refresh_used(struct ring *ring);

#endif
