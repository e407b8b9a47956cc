#include "cuscope/ring.h"

#include <string.h>

void ring_init(struct ring *ring, void *storage, size_t capacity)
{
	memset(ring, 0, sizeof *ring);
	ring->data = storage;
	ring->mask = capacity - 1;
}

static size_t ring_record_size(size_t text_len)
{
	return (sizeof(struct ring_record) + text_len + 7) & ~(size_t)7;
}

struct ring_record *ring_reserve(struct ring *ring, size_t text_len)
{
	return ring_reserve_headroom(ring, text_len, 0);
}

struct ring_record *ring_reserve_headroom(struct ring *ring, size_t text_len, size_t headroom)
{
	size_t need = ring_record_size(text_len);
	struct ring_record *record = ring_reserve_bytes(ring, need, headroom);
	if (record) {
		record->size = (uint16_t)need;
		record->text_len = (uint16_t)text_len;
	}
	return record;
}

void *ring_reserve_bytes(struct ring *ring, size_t need, size_t headroom)
{
	if (need > UINT16_MAX) {
		/* The size field is 16 bits: a larger record can never be represented. */
		atomic_fetch_add_explicit(&ring->dropped, 1, memory_order_relaxed);
		return NULL;
	}
	uint64_t head = atomic_load_explicit(&ring->head, memory_order_relaxed);
	size_t capacity = ring->mask + 1;
	size_t offset = head & ring->mask;
	size_t to_end = capacity - offset;
	/* Records never wrap: if the end is too short, pad it and start again at offset 0. */
	size_t total = need <= to_end ? need : to_end + need;
	if (head + total + headroom - ring->tail_seen > capacity) {
		/* Only now look at the consumer's progress (a shared cache line). */
		ring->tail_seen = atomic_load_explicit(&ring->tail, memory_order_acquire);
		if (head + total + headroom - ring->tail_seen > capacity) {
			atomic_fetch_add_explicit(&ring->dropped, 1, memory_order_relaxed);
			return NULL;
		}
	}
	if (need > to_end) {
		/* A padding record needs only its size field; to_end is at least 8 by alignment. */
		uint16_t zero = 0;
		memcpy(ring->data + offset, &zero, sizeof zero);
		head += to_end;
		atomic_store_explicit(&ring->head, head, memory_order_release);
		offset = 0;
	}
	return ring->data + offset;
}

void ring_commit(struct ring *ring, struct ring_record *record)
{
	uint64_t head = atomic_load_explicit(&ring->head, memory_order_relaxed);
	atomic_store_explicit(&ring->head, head + record->size, memory_order_release);
}

const struct ring_record *ring_peek(struct ring *ring)
{
	uint64_t tail = atomic_load_explicit(&ring->tail, memory_order_relaxed);
	uint64_t head = atomic_load_explicit(&ring->head, memory_order_acquire);
	while (tail != head) {
		size_t offset = tail & ring->mask;
		size_t to_end = ring->mask + 1 - offset;
		const struct ring_record *record = (const struct ring_record *)(ring->data + offset);
		if (to_end >= sizeof(uint16_t) && record->size != 0)
			return record;
		/* Padding up to the end of the buffer: skip it. */
		tail += to_end;
		atomic_store_explicit(&ring->tail, tail, memory_order_release);
	}
	return NULL;
}

void ring_release(struct ring *ring, const struct ring_record *record)
{
	uint64_t tail = atomic_load_explicit(&ring->tail, memory_order_relaxed);
	atomic_store_explicit(&ring->tail, tail + record->size, memory_order_release);
}

void ring_batch_begin(struct ring *ring, struct ring_batch *batch)
{
	batch->pos = atomic_load_explicit(&ring->tail, memory_order_relaxed);
	batch->released = batch->pos;
	batch->end = atomic_load_explicit(&ring->head, memory_order_acquire);
}

void ring_batch_end(struct ring *ring, struct ring_batch *batch)
{
	if (batch->pos != batch->released)
		atomic_store_explicit(&ring->tail, batch->pos, memory_order_release);
	batch->released = batch->pos;
}

size_t ring_used(struct ring *ring)
{
	return (size_t)(atomic_load_explicit(&ring->head, memory_order_acquire) -
	                atomic_load_explicit(&ring->tail, memory_order_acquire));
}

size_t ring_refresh_used(struct ring *ring)
{
	ring->tail_seen = atomic_load_explicit(&ring->tail, memory_order_acquire);
	return ring_used_upper_bound(ring);
}
