/* The sender's bounded queue of encoded frames: blocks in order, a bound, losses counted by cause. */
#include "sendq.h"

#include "cuscope/wire.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

void sendq_init(struct sendq *q, size_t bound)
{
	memset(q, 0, sizeof *q);
	q->bound = bound;
}

/* An empty block: a recycled one, or fresh pages (never the program's heap). NULL when out of memory. */
static struct sendq_block *sendq_block_new(struct sendq *q)
{
	struct sendq_block *b = q->spare;
	if (b) {
		q->spare = b->next;
		q->spare_count--;
	} else {
		void *mem = mmap(NULL, sizeof *b, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (mem == MAP_FAILED)
			return NULL;
		b = mem;
	}
	b->next = NULL;
	b->len = b->sent = 0;
	b->events = 0;
	return b;
}

static void sendq_block_free(struct sendq *q, struct sendq_block *b)
{
	if (q->spare_count < SENDQ_SPARE_MAX) {
		b->next = q->spare;
		q->spare = b;
		q->spare_count++;
		return;
	}
	munmap(b, sizeof *b);
}

void sendq_fini(struct sendq *q)
{
	while (q->head)
		sendq_pop(q);
	while (q->spare) {
		struct sendq_block *b = q->spare;
		q->spare = b->next;
		munmap(b, sizeof *b);
	}
	q->spare_count = 0;
}

void sendq_forget(struct sendq *q)
{
	q->head = q->tail = NULL;
	q->queued_bytes = 0;
	q->spare = NULL;
	q->spare_count = 0;
}

void sendq_pop(struct sendq *q)
{
	struct sendq_block *b = q->head;
	q->head = b->next;
	if (!q->head)
		q->tail = NULL;
	q->queued_bytes -= b->len;
	sendq_block_free(q, b);
}

int sendq_append(struct sendq *q, uint32_t type, const void *a, size_t a_len, const void *b, size_t b_len,
                 uint64_t events)
{
	struct wire_frame_header hdr = {type, (uint32_t)(a_len + b_len)};
	size_t need = sizeof hdr + a_len + b_len;
	if (need > SENDQ_BLOCK_SIZE)
		return -ENOMEM; /* no frame of the collector's is this large: refused, never split */
	if (!q->tail || SENDQ_BLOCK_SIZE - q->tail->len < need) {
		struct sendq_block *blk = sendq_block_new(q);
		if (!blk)
			return -ENOMEM;
		if (q->tail)
			q->tail->next = blk;
		else
			q->head = blk;
		q->tail = blk;
	}
	uint8_t *dst = q->tail->data + q->tail->len;
	memcpy(dst, &hdr, sizeof hdr);
	if (a_len)
		memcpy(dst + sizeof hdr, a, a_len);
	if (b_len)
		memcpy(dst + sizeof hdr + a_len, b, b_len);
	q->tail->len += need;
	q->tail->events += events;
	q->queued_bytes += need;
	return 0;
}

void sendq_trim(struct sendq *q, uint64_t *lost)
{
	while (q->head && q->queued_bytes > q->bound) {
		lost[WIRE_LOSS_NO_VIEWER] += q->head->events;
		sendq_pop(q);
	}
}

void sendq_push_batch(struct sendq *q, int watched, uint32_t type, const void *data, size_t len,
                      uint64_t count, uint64_t *lost)
{
	if (watched && q->queued_bytes > q->bound) {
		lost[WIRE_LOSS_VIEWER_SLOW] += count;
		return;
	}
	if (sendq_append(q, type, data, len, NULL, 0, count) != 0) {
		lost[WIRE_LOSS_NO_MEMORY] += count;
		return;
	}
	if (!watched)
		sendq_trim(q, lost);
}

void sendq_drop_partial(struct sendq *q, uint64_t *lost)
{
	if (q->head && q->head->sent) {
		lost[WIRE_LOSS_NO_VIEWER] += q->head->events;
		sendq_pop(q);
	}
}

void sendq_clear(struct sendq *q, uint32_t cause, uint64_t *lost)
{
	while (q->head) {
		lost[cause] += q->head->events;
		sendq_pop(q);
	}
}

void sendq_prepend(struct sendq *q, struct sendq *front)
{
	if (front->head) {
		front->tail->next = q->head;
		q->head = front->head;
		if (!q->tail)
			q->tail = front->tail;
		q->queued_bytes += front->queued_bytes;
	}
	while (front->spare) {
		struct sendq_block *b = front->spare;
		front->spare = b->next;
		sendq_block_free(q, b);
	}
	sendq_forget(front);
}

int sendq_retract(struct sendq *q, size_t bytes)
{
	struct sendq_block *t = q->tail;
	if (!t || t->len < bytes || t->sent > t->len - bytes)
		return 0;
	t->len -= bytes;
	q->queued_bytes -= bytes;
	return 1;
}

int sendq_send(struct sendq *q, int fd)
{
	while (q->head) {
		struct sendq_block *b = q->head;
		if (b->sent == b->len) {
			if (b == q->tail)
				break; /* keep filling the tail block */
			sendq_pop(q);
			continue;
		}
		ssize_t n = send(fd, b->data + b->sent, b->len - b->sent, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0)
			return errno == EAGAIN || errno == EINTR ? 0 : -errno;
		b->sent += (size_t)n;
		q->sent_total += (uint64_t)n;
		if (b->sent == b->len && b == q->tail) {
			/* Fully sent tail: recycle it so later frames start a fresh block. */
			sendq_pop(q);
		}
	}
	return 0;
}

int sendq_write_all(const struct sendq *q, int fd, ssize_t (*write_fn)(int, const void *, size_t))
{
	for (const struct sendq_block *b = q->head; b; b = b->next) {
		size_t off = b->sent;
		while (off < b->len) {
			ssize_t n = write_fn(fd, b->data + off, b->len - off);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				return n < 0 ? -errno : -EIO;
			off += (size_t)n;
		}
	}
	return 0;
}

size_t sendq_unsent(const struct sendq *q)
{
	return q->queued_bytes - (q->head ? q->head->sent : 0);
}

int sendq_all_sent(const struct sendq *q)
{
	return !q->head || (q->head == q->tail && q->head->sent == q->head->len);
}
