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

/*
 * Producer side, for records of any layout whose first 16 bits are their size: need bytes (a
 * multiple of 8, at most UINT16_MAX) with headroom bytes free after them. Pads the end of the
 * buffer when the record would not fit before it; NULL (a drop counted) when the ring is full.
 * The caller writes the size field and publishes with ring_commit_bytes(need).
 */
void *ring_reserve_bytes(struct ring *ring, size_t need, size_t headroom);

/*
 * The common case of ring_reserve_bytes, inlined on hot paths: the record fits before the end of
 * the buffer and within what the producer last saw of the consumer. NULL means "ask
 * ring_reserve_bytes", not "full".
 */
static inline void *ring_try_reserve(struct ring *ring, size_t need, size_t headroom)
{
	uint64_t head = atomic_load_explicit(&ring->head, memory_order_relaxed);
	size_t capacity = ring->mask + 1;
	size_t offset = head & ring->mask;
	if (__builtin_expect(need > UINT16_MAX || offset + need > capacity ||
	                         head + need + headroom - ring->tail_seen > capacity,
	                     0))
		return NULL;
	return ring->data + offset;
}

/* Publishes the need bytes reserved last. */
static inline void ring_commit_bytes(struct ring *ring, size_t need)
{
	uint64_t head = atomic_load_explicit(&ring->head, memory_order_relaxed);
	atomic_store_explicit(&ring->head, head + need, memory_order_release);
}

/* Returns the next record or NULL when empty. Consumer side only. */
const struct ring_record *ring_peek(struct ring *ring);
/* Releases the record returned by ring_peek. */
void ring_release(struct ring *ring, const struct ring_record *record);

/*
 * Consumer side, in batches: the records published when ring_batch_begin looked, read without a
 * shared-line access per record; the space is handed back to the producer every `release_every`
 * bytes and at ring_batch_end.
 */
struct ring_batch {
	uint64_t pos;      /* next byte to read */
	uint64_t end;      /* the producer's head when the batch began */
	uint64_t released; /* tail as last stored */
};
void ring_batch_begin(struct ring *ring, struct ring_batch *batch);
/* The next record (size > 0, wrap padding skipped), or NULL at the end of the batch. The record
 * stays readable until the next call (or ring_batch_end). */
static inline const void *ring_batch_next(struct ring *ring, struct ring_batch *batch)
{
	while (batch->pos != batch->end) {
		size_t offset = batch->pos & ring->mask;
		const uint8_t *p = ring->data + offset;
		uint16_t size;
		__builtin_memcpy(&size, p, sizeof size);
		if (__builtin_expect(size != 0, 1)) {
			/* Hand back space now and then, so a long batch does not starve the producer. */
			if (batch->pos - batch->released >= (ring->mask + 1) / 8) {
				atomic_store_explicit(&ring->tail, batch->pos, memory_order_release);
				batch->released = batch->pos;
			}
			batch->pos += size;
			return p;
		}
		/* Padding up to the end of the buffer: skip it. */
		batch->pos += ring->mask + 1 - offset;
	}
	return NULL;
}
/* Releases everything the batch read. */
void ring_batch_end(struct ring *ring, struct ring_batch *batch);

/* Bytes currently queued. */
size_t ring_used(struct ring *ring);
/* Producer side: bytes queued as of the producer's last look at the consumer (an upper bound). */
static inline size_t ring_used_upper_bound(const struct ring *ring)
{
	return (size_t)(atomic_load_explicit(&ring->head, memory_order_relaxed) - ring->tail_seen);
}
/* Producer side: re-reads the consumer's position and returns the bytes queued. */
size_t ring_refresh_used(struct ring *ring);

#endif
