/* The collector's send queue: order kept across blocks, block wrap and reuse, the bound with and
 * without a reader (every lost event counted by cause), a reader that leaves mid-block, the BYE
 * taken back, the intro put in front, the final write from the first unsent byte. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "cuscope/wire.h"
#include "../../src/collector/sendq.h"

#define HDR sizeof(struct wire_frame_header)

static uint64_t rng_state = 0x2545f4914f6cdd1dull;

static uint64_t rng_next(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ull;
}

/* Payload of frame seq: 8 bytes of seq, then len - 8 bytes derived from it. */
static void fill(uint8_t *buf, uint64_t seq, size_t len)
{
	memcpy(buf, &seq, sizeof seq);
	for (size_t i = sizeof seq; i < len; i++)
		buf[i] = (uint8_t)(seq * 131 + i);
}

/* Appends frame seq with a payload of len bytes (>= 8) carrying `events` events. */
static void append_seq(struct sendq *q, uint64_t seq, size_t len, uint64_t events)
{
	static uint8_t buf[SENDQ_BLOCK_SIZE];
	fill(buf, seq, len);
	/* Split over a and b as the sender does (a struct, then text). */
	size_t a = len / 3 < 8 ? 8 : len / 3;
	assert_int_equal(sendq_append(q, 7, buf, a, buf + a, len - a, events), 0);
}

/* Walks a byte stream of frames: checks each payload against its seq and that the seqs run from
 * *next on; returns the bytes of whole frames consumed. */
static size_t check_frames(const uint8_t *p, size_t n, uint64_t *next)
{
	size_t off = 0;
	while (n - off >= HDR) {
		struct wire_frame_header h;
		memcpy(&h, p + off, HDR);
		if (n - off - HDR < h.length)
			break;
		assert_int_equal(h.type, 7);
		assert_true(h.length >= 8);
		uint64_t seq;
		memcpy(&seq, p + off + HDR, sizeof seq);
		assert_int_equal(seq, *next);
		for (size_t i = sizeof seq; i < h.length; i++)
			assert_int_equal(p[off + HDR + i], (uint8_t)(seq * 131 + i));
		(*next)++;
		off += HDR + h.length;
	}
	return off;
}

/* Checks what the queue holds, block by block: whole frames only, seqs from first on; returns the
 * seq after the last, and the events the blocks carry. */
static uint64_t check_queue(const struct sendq *q, uint64_t first, uint64_t *events)
{
	size_t bytes = 0;
	*events = 0;
	for (const struct sendq_block *b = q->head; b; b = b->next) {
		assert_true(b->len <= SENDQ_BLOCK_SIZE);
		/* A frame never spans two blocks. */
		assert_int_equal(check_frames(b->data, b->len, &first), b->len);
		bytes += b->len;
		*events += b->events;
		if (!b->next)
			assert_ptr_equal(b, q->tail);
	}
	assert_int_equal(bytes, q->queued_bytes);
	return first;
}

/* Frames of random sizes over many blocks arrive at a reader whole and in order. */
static void test_order_across_blocks(void **state)
{
	(void)state;
	struct sendq q;
	sendq_init(&q, (size_t)1 << 30);
	size_t total = 0;
	const uint64_t frames = 600;
	for (uint64_t seq = 0; seq < frames; seq++) {
		size_t len = 8 + (size_t)(rng_next() % 3000);
		if (seq % 50 == 0)
			len = 60000 + (size_t)(rng_next() % 60000); /* forces a new block */
		append_seq(&q, seq, len, 1);
		total += HDR + len;
	}
	uint64_t events;
	assert_int_equal(check_queue(&q, 0, &events), frames);
	assert_int_equal(events, frames);
	assert_int_equal(q.queued_bytes, total);
	assert_true(q.head != q.tail);

	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	uint8_t *got = malloc(total);
	assert_non_null(got);
	size_t have = 0;
	while (have < total) {
		assert_int_equal(sendq_send(&q, sv[0]), 0);
		ssize_t n = read(sv[1], got + have, total - have);
		assert_true(n > 0);
		have += (size_t)n;
	}
	uint64_t next = 0;
	assert_int_equal(check_frames(got, total, &next), total);
	assert_int_equal(next, frames);
	assert_int_equal(q.sent_total, total);
	assert_true(sendq_all_sent(&q));
	assert_int_equal(sendq_unsent(&q), 0);
	free(got);
	close(sv[0]);
	close(sv[1]);
	sendq_fini(&q);
}

/* A frame that does not fit the tail's room starts a new block; popped blocks are reused, and no
 * more than SENDQ_SPARE_MAX are kept. */
static void test_block_wrap_and_reuse(void **state)
{
	(void)state;
	struct sendq q;
	sendq_init(&q, (size_t)1 << 30);
	size_t big = SENDQ_BLOCK_SIZE / 2; /* two do not fit one block with their headers */
	append_seq(&q, 0, big, 1);
	append_seq(&q, 1, big, 1);
	assert_true(q.head != q.tail);
	assert_int_equal(q.head->len, HDR + big);
	assert_int_equal(q.tail->len, HDR + big);
	/* A small one still fits the tail. */
	append_seq(&q, 2, 100, 1);
	assert_int_equal(q.tail->len, 2 * HDR + big + 100);
	/* Exactly filling a block's remainder stays in it. */
	size_t rest = SENDQ_BLOCK_SIZE - q.tail->len - HDR;
	append_seq(&q, 3, rest, 1);
	assert_int_equal(q.tail->len, SENDQ_BLOCK_SIZE);
	uint64_t events;
	assert_int_equal(check_queue(&q, 0, &events), 4);

	/* Reuse: a popped block comes back as the next new one. */
	struct sendq_block *first = q.head;
	sendq_pop(&q);
	assert_int_equal(q.spare_count, 1);
	append_seq(&q, 4, big, 1);
	assert_ptr_equal(q.tail, first);
	assert_int_equal(q.spare_count, 0);
	assert_int_equal(check_queue(&q, 1, &events), 5);

	/* Many blocks dropped at once: the spare list stays bounded. */
	for (uint64_t seq = 5; seq < 5 + 3 * SENDQ_SPARE_MAX; seq++)
		append_seq(&q, seq, big + 16, 1);
	uint64_t lost[WIRE_LOSS_CAUSE_MAX] = {0};
	sendq_clear(&q, WIRE_LOSS_VIEWER_SLOW, lost);
	assert_null(q.head);
	assert_null(q.tail);
	assert_int_equal(q.queued_bytes, 0);
	assert_int_equal(lost[WIRE_LOSS_VIEWER_SLOW], 5 + 3 * SENDQ_SPARE_MAX - 1);
	assert_int_equal(q.spare_count, SENDQ_SPARE_MAX);
	sendq_fini(&q);
	assert_null(q.spare);
}

/* No reader: the queue keeps the newest history within its bound, and every evicted event is
 * counted as no_viewer. */
static void test_bound_without_reader(void **state)
{
	(void)state;
	struct sendq q;
	const size_t bound = 4 * SENDQ_BLOCK_SIZE;
	sendq_init(&q, bound);
	uint64_t lost[WIRE_LOSS_CAUSE_MAX] = {0};
	static uint8_t buf[40000];
	const uint64_t batches = 200;
	uint64_t pushed = 0;
	for (uint64_t seq = 0; seq < batches; seq++) {
		size_t len = 8 + (size_t)(rng_next() % (sizeof buf - 8));
		uint64_t count = 1 + rng_next() % 100;
		fill(buf, seq, len);
		sendq_push_batch(&q, 0, 7, buf, len, count, lost);
		pushed += count;
		assert_true(q.queued_bytes <= bound);
		uint64_t held;
		uint64_t first = seq + 1;
		/* The queue ends with the newest batch, contiguous from its first block on. */
		if (q.head) {
			uint64_t s0;
			memcpy(&s0, q.head->data + HDR, sizeof s0);
			first = s0;
		}
		assert_int_equal(check_queue(&q, first, &held), seq + 1);
		assert_int_equal(lost[WIRE_LOSS_NO_VIEWER] + held, pushed);
	}
	assert_true(lost[WIRE_LOSS_NO_VIEWER] > 0);
	assert_int_equal(lost[WIRE_LOSS_VIEWER_SLOW], 0);
	assert_int_equal(lost[WIRE_LOSS_NO_MEMORY], 0);
	sendq_fini(&q);
}

/* A reader that is behind: new batches are refused (viewer_slow) rather than the queue growing
 * past its bound, and what is queued stays the oldest, in order. */
static void test_bound_with_slow_reader(void **state)
{
	(void)state;
	struct sendq q;
	const size_t bound = 2 * SENDQ_BLOCK_SIZE;
	sendq_init(&q, bound);
	uint64_t lost[WIRE_LOSS_CAUSE_MAX] = {0};
	static uint8_t buf[10000];
	uint64_t queued_seq = 0, refused = 0;
	for (uint64_t i = 0; i < 500; i++) {
		fill(buf, queued_seq, sizeof buf);
		size_t before = q.queued_bytes;
		sendq_push_batch(&q, 1, 7, buf, sizeof buf, 3, lost);
		if (q.queued_bytes == before) {
			refused += 3;
		} else {
			queued_seq++;
		}
		/* Over the bound by one batch at most. */
		assert_true(q.queued_bytes <= bound + HDR + sizeof buf);
	}
	assert_true(refused > 0);
	assert_int_equal(lost[WIRE_LOSS_VIEWER_SLOW], refused);
	assert_int_equal(lost[WIRE_LOSS_NO_VIEWER], 0);
	uint64_t held;
	assert_int_equal(check_queue(&q, 0, &held), queued_seq);
	assert_int_equal(held, 3 * queued_seq);
	/* Frames a reader must get (strings, the intro) still go in over the bound. */
	append_seq(&q, queued_seq, 100, 0);
	assert_true(q.queued_bytes > bound);
	sendq_fini(&q);
}

/* A reader that leaves in the middle of a block: that block is dropped (counted), the rest kept;
 * the final write starts at the first unsent byte. */
static void test_partial_reader(void **state)
{
	(void)state;
	struct sendq q;
	sendq_init(&q, (size_t)1 << 30);
	for (uint64_t seq = 0; seq < 8; seq++)
		append_seq(&q, seq, 50000, 10);
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	int small = 4096;
	setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
	assert_int_equal(sendq_send(&q, sv[0]), 0); /* fills the socket, then would block */
	assert_true(q.sent_total > 0);
	assert_true(q.sent_total < q.queued_bytes);
	assert_int_equal(sendq_unsent(&q), q.queued_bytes - q.head->sent);
	assert_false(sendq_all_sent(&q));

	/* The final file gets exactly the bytes the reader has not taken. */
	FILE *f = tmpfile();
	assert_non_null(f);
	assert_int_equal(sendq_write_all(&q, fileno(f), write), 0);
	size_t unsent = sendq_unsent(&q);
	size_t sent = (size_t)q.sent_total;
	assert_int_equal(lseek(fileno(f), 0, SEEK_END), (off_t)unsent);
	uint8_t *got = malloc(sent + unsent);
	assert_non_null(got);
	size_t have = 0;
	while (have < sent) {
		ssize_t n = read(sv[1], got + have, sent - have);
		assert_true(n > 0);
		have += (size_t)n;
	}
	assert_int_equal(pread(fileno(f), got + sent, unsent, 0), (ssize_t)unsent);
	uint64_t next = 0;
	assert_int_equal(check_frames(got, sent + unsent, &next), sent + unsent);
	assert_int_equal(next, 8);
	free(got);
	fclose(f);

	/* The reader leaves: its half-sent head block is dropped and counted. */
	uint64_t lost[WIRE_LOSS_CAUSE_MAX] = {0};
	uint64_t head_events = q.head->events;
	sendq_drop_partial(&q, lost);
	assert_int_equal(lost[WIRE_LOSS_NO_VIEWER], head_events);
	assert_true(q.head == NULL || q.head->sent == 0);
	/* Nothing partly sent now: nothing more to drop. */
	sendq_drop_partial(&q, lost);
	assert_int_equal(lost[WIRE_LOSS_NO_VIEWER], head_events);

	/* A peer that is gone is an error for the caller. */
	close(sv[1]);
	append_seq(&q, 99, 100, 1);
	int rc;
	while ((rc = sendq_send(&q, sv[0])) == 0 && !sendq_all_sent(&q))
		;
	assert_int_equal(rc, -EPIPE);
	close(sv[0]);
	sendq_fini(&q);
}

/* The BYE is taken back only while none of its bytes was sent. */
static void test_retract(void **state)
{
	(void)state;
	struct sendq q;
	sendq_init(&q, (size_t)1 << 30);
	append_seq(&q, 0, 1000, 1);
	size_t before = q.queued_bytes;
	append_seq(&q, 1, 24, 0);
	assert_int_equal(sendq_retract(&q, HDR + 24), 1);
	assert_int_equal(q.queued_bytes, before);
	uint64_t events;
	assert_int_equal(check_queue(&q, 0, &events), 1);

	append_seq(&q, 1, 24, 0);
	/* Everything but the last 10 bytes sent: the BYE began to go out. */
	q.head->sent = q.head->len - 10;
	assert_int_equal(sendq_retract(&q, HDR + 24), 0);
	assert_int_equal(q.queued_bytes, before + HDR + 24);
	/* More than the tail holds is never taken. */
	assert_int_equal(sendq_retract(&q, SENDQ_BLOCK_SIZE + 1), 0);
	sendq_fini(&q);
	struct sendq empty;
	sendq_init(&empty, 1);
	assert_int_equal(sendq_retract(&empty, 8), 0);
}

/* The intro goes in front of the history; an empty intro changes nothing. */
static void test_prepend(void **state)
{
	(void)state;
	struct sendq q, intro;
	sendq_init(&q, (size_t)1 << 30);
	sendq_init(&intro, 0);
	sendq_prepend(&q, &intro);
	assert_null(q.head);
	for (uint64_t seq = 10; seq < 20; seq++)
		append_seq(&q, seq, 30000, 1);
	for (uint64_t seq = 0; seq < 10; seq++)
		append_seq(&intro, seq, 30000, 0);
	size_t bytes = q.queued_bytes + intro.queued_bytes;
	sendq_prepend(&q, &intro);
	assert_null(intro.head);
	assert_int_equal(intro.queued_bytes, 0);
	assert_int_equal(q.queued_bytes, bytes);
	uint64_t events;
	assert_int_equal(check_queue(&q, 0, &events), 20);
	assert_int_equal(events, 10);

	/* Into an empty queue: the intro is the whole queue, tail included. */
	struct sendq empty;
	sendq_init(&empty, (size_t)1 << 30);
	sendq_init(&intro, 0);
	append_seq(&intro, 0, 100, 0);
	sendq_prepend(&empty, &intro);
	assert_non_null(empty.tail);
	append_seq(&empty, 1, 100, 1);
	assert_int_equal(check_queue(&empty, 0, &events), 2);
	sendq_fini(&empty);
	sendq_fini(&q);
}

/* A frame larger than a block is refused whole, never split or written past the block. */
static void test_oversized_refused(void **state)
{
	(void)state;
	struct sendq q;
	sendq_init(&q, 0);
	static uint8_t buf[SENDQ_BLOCK_SIZE];
	assert_int_equal(sendq_append(&q, 7, buf, sizeof buf, NULL, 0, 1), -ENOMEM);
	assert_null(q.head);
	uint64_t lost[WIRE_LOSS_CAUSE_MAX] = {0};
	sendq_push_batch(&q, 1, 7, buf, sizeof buf, 5, lost);
	assert_int_equal(lost[WIRE_LOSS_NO_MEMORY], 5);
	assert_int_equal(sendq_append(&q, 7, buf, SENDQ_BLOCK_SIZE - HDR, NULL, 0, 1), 0);
	assert_int_equal(q.queued_bytes, SENDQ_BLOCK_SIZE);
	sendq_fini(&q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_order_across_blocks),
	    cmocka_unit_test(test_block_wrap_and_reuse),
	    cmocka_unit_test(test_bound_without_reader),
	    cmocka_unit_test(test_bound_with_slow_reader),
	    cmocka_unit_test(test_partial_reader),
	    cmocka_unit_test(test_retract),
	    cmocka_unit_test(test_prepend),
	    cmocka_unit_test(test_oversized_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
