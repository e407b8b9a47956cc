/* SPSC ring unit tests: record round trip, wrap padding, drops when full, headroom, two threads. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cuscope/ring.h"

#define REC sizeof(struct ring_record)

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng_next(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ull;
}

static size_t record_bytes(size_t text_len)
{
	return (REC + text_len + 7) & ~(size_t)7;
}

/* Text of record seq: text_len bytes derived from seq. */
static void fill_text(char *text, uint64_t seq, size_t text_len)
{
	for (size_t i = 0; i < text_len; i++)
		text[i] = (char)((seq * 31 + i) & 0xff);
}

static int text_matches(const char *text, uint64_t seq, size_t text_len)
{
	for (size_t i = 0; i < text_len; i++)
		if (text[i] != (char)((seq * 31 + i) & 0xff))
			return 0;
	return 1;
}

/* Writes a record with value = seq and derived text, keeping headroom; returns 1 or 0 when dropped. */
static int produce_headroom(struct ring *ring, uint64_t seq, size_t text_len, size_t headroom)
{
	struct ring_record *r =
	    headroom ? ring_reserve_headroom(ring, text_len, headroom) : ring_reserve(ring, text_len);
	if (!r)
		return 0;
	assert_int_equal(r->size, record_bytes(text_len));
	assert_int_equal(r->text_len, text_len);
	r->kind = (uint16_t)(seq % 17 + 1);
	r->flags = 0;
	r->tid = (uint32_t)(seq ^ 0xabcd);
	r->reserved = 0;
	r->time_ns = seq * 1000 + 7;
	r->value = seq;
	r->name_ref = NULL;
	r->domain_ref = NULL;
	fill_text((char *)(r + 1), seq, text_len);
	ring_commit(ring, r);
	return 1;
}

static int produce(struct ring *ring, uint64_t seq, size_t text_len)
{
	return produce_headroom(ring, seq, text_len, 0);
}

/* Checks that rec is exactly what produce(seq, text_len) wrote. */
static void check_record(const struct ring_record *r, uint64_t seq, size_t text_len)
{
	assert_int_equal(r->value, seq);
	assert_int_equal(r->text_len, text_len);
	assert_int_equal(r->size, record_bytes(text_len));
	assert_int_equal(r->kind, seq % 17 + 1);
	assert_int_equal(r->tid, (uint32_t)(seq ^ 0xabcd));
	assert_int_equal(r->time_ns, seq * 1000 + 7);
	assert_true(text_matches((const char *)(r + 1), seq, text_len));
}

static void test_round_trip(void **state)
{
	(void)state;
	uint64_t storage[4096 / 8];
	struct ring ring;
	ring_init(&ring, storage, sizeof storage);
	assert_null(ring_peek(&ring));
	assert_int_equal(ring_used(&ring), 0);
	size_t lens[] = {0, 1, 7, 8, 9, 100, 255};
	size_t total = 0;
	for (size_t i = 0; i < sizeof lens / sizeof *lens; i++) {
		assert_int_equal(produce(&ring, i, lens[i]), 1);
		total += record_bytes(lens[i]);
		assert_int_equal(ring_used(&ring), total);
	}
	for (size_t i = 0; i < sizeof lens / sizeof *lens; i++) {
		const struct ring_record *r = ring_peek(&ring);
		assert_non_null(r);
		/* Peeking twice gives the same record. */
		assert_ptr_equal(ring_peek(&ring), r);
		check_record(r, i, lens[i]);
		ring_release(&ring, r);
		total -= record_bytes(lens[i]);
		assert_int_equal(ring_used(&ring), total);
	}
	assert_null(ring_peek(&ring));
	assert_int_equal(atomic_load(&ring.dropped), 0);
}

static void test_full_ring_drops(void **state)
{
	(void)state;
	uint64_t storage[4096 / 8];
	struct ring ring;
	ring_init(&ring, storage, sizeof storage);
	/* 48-byte records: 85 fit in 4096 bytes (4080), the 86th does not. */
	size_t fitted = 0;
	while (produce(&ring, fitted, 0))
		fitted++;
	assert_int_equal(fitted, 4096 / REC);
	assert_int_equal(atomic_load(&ring.dropped), 1);
	assert_int_equal(ring_used(&ring), fitted * REC);
	assert_null(ring_reserve(&ring, 0));
	assert_null(ring_reserve(&ring, 100));
	assert_int_equal(atomic_load(&ring.dropped), 3);
	/* Free one record: the next one wraps (16 bytes of padding at the end) and lands at offset 0. */
	const struct ring_record *r = ring_peek(&ring);
	check_record(r, 0, 0);
	ring_release(&ring, r);
	struct ring_record *w = ring_reserve(&ring, 0);
	assert_non_null(w);
	assert_ptr_equal((void *)w, (void *)storage);
	w->value = 999;
	w->kind = 1;
	ring_commit(&ring, w);
	/* Now truly full again: 4096 - 16 padding - 84 * 48 - 48 == 0 bytes free. */
	assert_int_equal(ring_used(&ring), 4096);
	assert_null(ring_reserve(&ring, 0));
	assert_int_equal(atomic_load(&ring.dropped), 4);
	/* The consumer sees 1..84 in order, skips the padding, then 999. */
	for (uint64_t seq = 1; seq < fitted; seq++) {
		r = ring_peek(&ring);
		assert_non_null(r);
		check_record(r, seq, 0);
		ring_release(&ring, r);
	}
	r = ring_peek(&ring);
	assert_non_null(r);
	assert_ptr_equal((const void *)r, (void *)storage);
	assert_int_equal(r->value, 999);
	ring_release(&ring, r);
	assert_null(ring_peek(&ring));
	assert_int_equal(ring_used(&ring), 0);
	/* Drops never affected the data: the dropped count is all that changed. */
	assert_int_equal(atomic_load(&ring.dropped), 4);
}

static void test_headroom(void **state)
{
	(void)state;
	uint64_t storage[4096 / 8];
	struct ring ring;
	ring_init(&ring, storage, sizeof storage);
	/* Exactly enough room: record plus headroom equals the capacity. */
	struct ring_record *r = ring_reserve_headroom(&ring, 0, 4096 - REC);
	assert_non_null(r);
	assert_int_equal(atomic_load(&ring.dropped), 0);
	/* One byte more headroom is refused and counted. */
	assert_null(ring_reserve_headroom(&ring, 0, 4096 - REC + 1));
	assert_int_equal(atomic_load(&ring.dropped), 1);
	/* 83 records leave 112 bytes free. */
	size_t n = 0;
	for (; n < 83; n++)
		assert_int_equal(produce(&ring, n, 0), 1);
	assert_int_equal(ring_used(&ring), 4096 - 112);
	/* A record with 65 bytes of headroom needs 113: refused and counted; 64 fits. */
	assert_int_equal(produce_headroom(&ring, n, 0, 65), 0);
	assert_int_equal(atomic_load(&ring.dropped), 2);
	assert_int_equal(produce_headroom(&ring, n, 0, 64), 1); /* 64 left */
	assert_int_equal(produce_headroom(&ring, n + 1, 0, 17), 0);
	assert_int_equal(atomic_load(&ring.dropped), 3);
	/* The kept headroom takes one more plain record (a pop after its push). */
	assert_int_equal(produce(&ring, n + 1, 0), 1);
	assert_int_equal(ring_used(&ring), 4096 - 16);
	assert_int_equal(atomic_load(&ring.dropped), 3);
	for (uint64_t seq = 0; seq < n + 2; seq++) {
		const struct ring_record *c = ring_peek(&ring);
		assert_non_null(c);
		check_record(c, seq, 0);
		ring_release(&ring, c);
	}
	assert_null(ring_peek(&ring));
}

static void test_used_upper_bound(void **state)
{
	(void)state;
	uint64_t storage[4096 / 8];
	struct ring ring;
	ring_init(&ring, storage, sizeof storage);
	for (uint64_t i = 0; i < 10; i++)
		assert_int_equal(produce(&ring, i, 0), 1);
	assert_int_equal(ring_used_upper_bound(&ring), 10 * REC);
	for (int i = 0; i < 10; i++)
		ring_release(&ring, ring_peek(&ring));
	/* The producer has not looked at the consumer since: still the stale upper bound. */
	assert_int_equal(ring_used_upper_bound(&ring), 10 * REC);
	assert_int_equal(ring_used(&ring), 0);
	assert_int_equal(ring_refresh_used(&ring), 0);
	assert_int_equal(ring_used_upper_bound(&ring), 0);
}

static void test_wrap_many_times(void **state)
{
	(void)state;
	uint64_t storage[4096 / 8];
	struct ring ring;
	ring_init(&ring, storage, sizeof storage);
	enum { N = 100000 };
	/* Lengths of the records accepted but not consumed yet, in order (a FIFO of seq numbers). */
	static uint64_t fifo_seq[N];
	static uint16_t fifo_len[N];
	size_t fifo_head = 0, fifo_tail = 0;
	uint64_t dropped = 0, consumed = 0, bytes_queued = 0;
	uint64_t seq = 0;
	while (seq < N) {
		/* A burst of production, then a burst of consumption, of random sizes. */
		unsigned burst = (unsigned)(rng_next() % 24);
		for (unsigned i = 0; i < burst && seq < N; i++, seq++) {
			size_t len = (size_t)(rng_next() % 400);
			if (produce(&ring, seq, len)) {
				fifo_seq[fifo_head] = seq;
				fifo_len[fifo_head] = (uint16_t)len;
				fifo_head++;
				bytes_queued += record_bytes(len);
			} else {
				dropped++;
			}
			assert_int_equal(atomic_load(&ring.dropped), dropped);
		}
		burst = (unsigned)(rng_next() % 24);
		for (unsigned i = 0; i < burst; i++) {
			const struct ring_record *r = ring_peek(&ring);
			if (fifo_tail == fifo_head) {
				assert_null(r);
				break;
			}
			assert_non_null(r);
			check_record(r, fifo_seq[fifo_tail], fifo_len[fifo_tail]);
			ring_release(&ring, r);
			bytes_queued -= record_bytes(fifo_len[fifo_tail]);
			fifo_tail++;
			consumed++;
		}
		/* used counts records plus any padding not yet skipped: never less, never over capacity. */
		assert_true(ring_used(&ring) >= bytes_queued);
		assert_true(ring_used(&ring) <= 4096);
	}
	const struct ring_record *r;
	while ((r = ring_peek(&ring)) != NULL) {
		assert_true(fifo_tail < fifo_head);
		check_record(r, fifo_seq[fifo_tail], fifo_len[fifo_tail]);
		ring_release(&ring, r);
		fifo_tail++;
		consumed++;
	}
	assert_int_equal(fifo_tail, fifo_head);
	assert_int_equal(consumed + dropped, N);
	assert_int_equal(ring_used(&ring), 0);
	/* The ring went around many times and most records got through. */
	assert_true(atomic_load(&ring.head) > 1000u * 4096);
	assert_true(consumed > N / 2);
	assert_true(dropped > 0);
}

/* ---- two threads ---- */

struct stress {
	struct ring ring;
	uint64_t total;
	atomic_int done;
	uint64_t produced_ok;
};

static void *producer_main(void *arg)
{
	struct stress *s = arg;
	for (uint64_t seq = 0; seq < s->total; seq++) {
		size_t len = (size_t)(seq * 7 % 97);
		struct ring_record *r = ring_reserve(&s->ring, len);
		if (!r)
			continue;
		r->kind = 1;
		r->flags = 0;
		r->tid = 0;
		r->reserved = 0;
		r->time_ns = seq;
		r->value = seq;
		r->name_ref = NULL;
		r->domain_ref = NULL;
		fill_text((char *)(r + 1), seq, len);
		ring_commit(&s->ring, r);
		s->produced_ok++;
	}
	atomic_store(&s->done, 1);
	return NULL;
}

static void test_two_thread_stress(void **state)
{
	(void)state;
	struct stress *s = calloc(1, sizeof *s);
	assert_non_null(s);
	void *storage = aligned_alloc(64, 8192);
	assert_non_null(storage);
	ring_init(&s->ring, storage, 8192);
	s->total = 2000000;
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, producer_main, s), 0);
	uint64_t received = 0, gaps = 0;
	int64_t last = -1;
	int bad_text = 0;
	for (;;) {
		int finished = atomic_load(&s->done);
		const struct ring_record *r;
		while ((r = ring_peek(&s->ring)) != NULL) {
			uint64_t seq = r->value;
			/* Order is kept; a gap is only ever a dropped record. */
			if ((int64_t)seq <= last)
				fail_msg("record %llu after %lld", (unsigned long long)seq, (long long)last);
			gaps += seq - (uint64_t)(last + 1);
			last = (int64_t)seq;
			size_t len = (size_t)(seq * 7 % 97);
			if (r->text_len != len || r->time_ns != seq ||
			    !text_matches((const char *)(r + 1), seq, len))
				bad_text++;
			ring_release(&s->ring, r);
			received++;
		}
		if (finished)
			break;
	}
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_null(ring_peek(&s->ring));
	assert_int_equal(bad_text, 0);
	gaps += s->total - (uint64_t)(last + 1);
	assert_int_equal(received, s->produced_ok);
	assert_int_equal(received + atomic_load(&s->ring.dropped), s->total);
	assert_int_equal(gaps, atomic_load(&s->ring.dropped));
	free(storage);
	free(s);
}

/*
 * Regression (fixed): a record larger than 65535 bytes fits the uint16_t size
 * field only after truncation. ring_reserve checks need > UINT16_MAX only on its slow path (ring
 * nearly full), so on a big ring with room it returns a record whose size was cut modulo 65536.
 */
static void test_oversized_record_refused(void **state)
{
	(void)state;
	size_t cap = 256 * 1024;
	void *storage = aligned_alloc(64, cap);
	assert_non_null(storage);
	struct ring ring;
	ring_init(&ring, storage, cap);
	struct ring_record *r = ring_reserve(&ring, 70000);
	int refused = r == NULL;
	free(storage);
	assert_true(refused);
	assert_int_equal(atomic_load(&ring.dropped), 1);
}

/* ---- byte records and the batch consumer ---- */

/* A record of another layout: only the leading 16-bit size is the ring's. */
struct byte_rec {
	uint16_t size;
	uint16_t len;
	uint32_t pad;
	uint64_t seq;
};

/* Writes byte record seq with len bytes of text through the inline fast path, else the general
 * one; returns 1 or 0 when dropped. */
static int produce_bytes(struct ring *ring, uint64_t seq, size_t len, size_t headroom)
{
	size_t need = (sizeof(struct byte_rec) + len + 7) & ~(size_t)7;
	void *p = ring_try_reserve(ring, need, headroom);
	if (!p)
		p = ring_reserve_bytes(ring, need, headroom);
	if (!p)
		return 0;
	struct byte_rec *r = p;
	r->size = (uint16_t)need;
	r->len = (uint16_t)len;
	r->seq = seq;
	fill_text((char *)(r + 1), seq, len);
	ring_commit_bytes(ring, need);
	return 1;
}

static void test_try_reserve_leaves_edges_to_the_slow_path(void **state)
{
	(void)state;
	size_t cap = 256 * 1024;
	void *storage = aligned_alloc(64, cap);
	assert_non_null(storage);
	struct ring ring;
	ring_init(&ring, storage, cap);
	/* Oversized: never from the fast path (a 16-bit size cannot hold it), refused and counted. */
	int fast = ring_try_reserve(&ring, 70000, 0) != NULL;
	int slow = ring_reserve_bytes(&ring, 70000, 0) != NULL;
	assert_false(fast);
	assert_false(slow);
	assert_int_equal(atomic_load(&ring.dropped), 1);
	/* Near the end of the buffer the fast path declines; the slow path pads and wraps. */
	uint64_t seq = 0;
	while (ring.mask + 1 - (atomic_load(&ring.head) & ring.mask) > 64)
		assert_int_equal(produce_bytes(&ring, seq++, 8, 0), 1);
	size_t left = ring.mask + 1 - (atomic_load(&ring.head) & ring.mask);
	assert_null(ring_try_reserve(&ring, left + 8, 0));
	struct ring_batch batch;
	ring_batch_begin(&ring, &batch);
	uint64_t got = 0;
	const struct byte_rec *r;
	while ((r = ring_batch_next(&ring, &batch)) != NULL)
		assert_int_equal(r->seq, got++);
	ring_batch_end(&ring, &batch);
	assert_int_equal(got, seq);
	/* Needs more than is left before the end: padding, then the record at offset 0. */
	assert_int_equal(produce_bytes(&ring, seq, left, 0), 1);
	ring_batch_begin(&ring, &batch);
	r = ring_batch_next(&ring, &batch);
	assert_non_null(r);
	assert_ptr_equal((const void *)r, storage);
	assert_int_equal(r->seq, seq);
	assert_true(text_matches((const char *)(r + 1), seq, left));
	assert_null(ring_batch_next(&ring, &batch));
	ring_batch_end(&ring, &batch);
	assert_int_equal(ring_used(&ring), 0);
	assert_int_equal(atomic_load(&ring.dropped), 1);
	free(storage);
}

static void test_batch_releases_as_it_goes(void **state)
{
	(void)state;
	uint64_t storage[8192 / 8];
	struct ring ring;
	ring_init(&ring, storage, sizeof storage);
	uint64_t n = 0;
	while (produce_bytes(&ring, n, 8, 0))
		n++;
	assert_int_equal(n, 8192 / 24);
	struct ring_batch batch;
	ring_batch_begin(&ring, &batch);
	const struct byte_rec *r;
	uint64_t got = 0;
	while ((r = ring_batch_next(&ring, &batch)) != NULL) {
		assert_int_equal(r->seq, got);
		got++;
		if (got == n / 2) {
			/* Mid-batch, more than an eighth was handed back: the producer has room, and
			 * what it writes now belongs to the next batch. */
			assert_true(atomic_load(&ring.tail) >= 8192 / 8);
			assert_int_equal(produce_bytes(&ring, n, 8, 0), 1);
		}
	}
	assert_int_equal(got, n);
	ring_batch_end(&ring, &batch);
	ring_batch_begin(&ring, &batch);
	r = ring_batch_next(&ring, &batch);
	assert_non_null(r);
	assert_int_equal(r->seq, n);
	assert_null(ring_batch_next(&ring, &batch));
	ring_batch_end(&ring, &batch);
	assert_int_equal(ring_used(&ring), 0);
}

struct batch_stress {
	struct ring ring;
	uint64_t total;
	atomic_int done;
	uint64_t produced_ok;
};

static void *batch_producer_main(void *arg)
{
	struct batch_stress *s = arg;
	for (uint64_t seq = 0; seq < s->total; seq++)
		s->produced_ok +=
		    (uint64_t)produce_bytes(&s->ring, seq, (size_t)(seq * 7 % 97), seq % 3 ? 0 : 256);
	atomic_store(&s->done, 1);
	return NULL;
}

static void test_batch_two_thread_stress(void **state)
{
	(void)state;
	struct batch_stress *s = calloc(1, sizeof *s);
	assert_non_null(s);
	void *storage = aligned_alloc(64, 8192);
	assert_non_null(storage);
	ring_init(&s->ring, storage, 8192);
	s->total = 2000000;
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, batch_producer_main, s), 0);
	uint64_t received = 0, gaps = 0;
	int64_t last = -1;
	int bad = 0;
	for (;;) {
		int finished = atomic_load(&s->done);
		struct ring_batch batch;
		const struct byte_rec *r;
		ring_batch_begin(&s->ring, &batch);
		while ((r = ring_batch_next(&s->ring, &batch)) != NULL) {
			/* Order is kept; a gap is only ever a dropped record. */
			if ((int64_t)r->seq <= last)
				fail_msg("record %llu after %lld", (unsigned long long)r->seq,
				         (long long)last);
			gaps += r->seq - (uint64_t)(last + 1);
			last = (int64_t)r->seq;
			size_t len = (size_t)(r->seq * 7 % 97);
			if (r->len != len || r->size != ((sizeof *r + len + 7) & ~(size_t)7) ||
			    !text_matches((const char *)(r + 1), r->seq, len))
				bad++;
			received++;
		}
		ring_batch_end(&s->ring, &batch);
		if (finished && ring_used(&s->ring) == 0)
			break;
	}
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(bad, 0);
	gaps += s->total - (uint64_t)(last + 1);
	assert_int_equal(received, s->produced_ok);
	assert_int_equal(received + atomic_load(&s->ring.dropped), s->total);
	assert_int_equal(gaps, atomic_load(&s->ring.dropped));
	free(storage);
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_round_trip),
	    cmocka_unit_test(test_full_ring_drops),
	    cmocka_unit_test(test_headroom),
	    cmocka_unit_test(test_used_upper_bound),
	    cmocka_unit_test(test_wrap_many_times),
	    cmocka_unit_test(test_two_thread_stress),
	    cmocka_unit_test(test_oversized_record_refused),
	    cmocka_unit_test(test_try_reserve_leaves_edges_to_the_slow_path),
	    cmocka_unit_test(test_batch_releases_as_it_goes),
	    cmocka_unit_test(test_batch_two_thread_stress),
	};
	return cmocka_run_group_tests_name("ring", tests, NULL, NULL);
}
