/*
 * The sender's bounded queue of encoded frames (private to the collector): blocks of whole frames
 * in order, written to the viewer's socket as it reads, kept as the flight recorder while nobody
 * reads. It never grows past its bound by more than what a caller forces in (strings, counters,
 * the intro): batches over the bound are refused or the oldest history is evicted, and every
 * event lost either way is counted by its wire loss cause. One thread only (the sender's).
 */
#ifndef CUSCOPE_COLLECTOR_SENDQ_H
#define CUSCOPE_COLLECTOR_SENDQ_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define SENDQ_BLOCK_SIZE (128 * 1024)
/* Recycled blocks kept: mapping and faulting in fresh pages for every block costs more than a copy. */
#define SENDQ_SPARE_MAX 16

/* A block of encoded frames (frames never span blocks). */
struct sendq_block {
	struct sendq_block *next;
	size_t len;      /* bytes filled */
	size_t sent;     /* bytes already written out */
	uint64_t events; /* events it carries, counted as lost when it is evicted */
	uint8_t data[SENDQ_BLOCK_SIZE];
};

struct sendq {
	struct sendq_block *head, *tail;
	size_t queued_bytes; /* bytes of the queued blocks, sent or not */
	size_t bound;        /* bytes: the flight-recorder window, and what a slow viewer may leave */
	uint64_t sent_total; /* bytes ever written out (progress of a reader) */
	struct sendq_block *spare;
	unsigned spare_count;
};

/* An empty queue of the given bound (bytes). */
void sendq_init(struct sendq *q, size_t bound);
/* Unmaps every block, queued and spare; the queue is empty afterwards. */
void sendq_fini(struct sendq *q);
/* In a forked child: forgets every block without touching it (the parent's state is not trusted). */
void sendq_forget(struct sendq *q);

/* Appends one frame (header, then a_len bytes of a and b_len of b) carrying `events` events,
 * whatever the bound; 0 or -ENOMEM. */
int sendq_append(struct sendq *q, uint32_t type, const void *a, size_t a_len, const void *b, size_t b_len,
                 uint64_t events);
/*
 * Queues one batch frame of `count` events under the bound: with a reader (watched) that is behind,
 * the new events are refused (lost[WIRE_LOSS_VIEWER_SLOW]) rather than the queue growing; without
 * one, the oldest history is evicted instead (lost[WIRE_LOSS_NO_VIEWER]). No memory:
 * lost[WIRE_LOSS_NO_MEMORY]. lost is indexed by wire loss cause.
 */
void sendq_push_batch(struct sendq *q, int watched, uint32_t type, const void *data, size_t len,
                      uint64_t count, uint64_t *lost);
/* Evicts the oldest blocks while the queue is over its bound; their events go to
 * lost[WIRE_LOSS_NO_VIEWER]. */
void sendq_trim(struct sendq *q, uint64_t *lost);
/* Drops the head block. */
void sendq_pop(struct sendq *q);
/* A reader left in the middle of the head block, which another cannot resume: drops it, its
 * events to lost[WIRE_LOSS_NO_VIEWER]. */
void sendq_drop_partial(struct sendq *q, uint64_t *lost);
/* Drops every block; their events go to lost[cause]. */
void sendq_clear(struct sendq *q, uint32_t cause, uint64_t *lost);
/* Puts front's blocks before q's (front is empty afterwards). Takes over front's spares. */
void sendq_prepend(struct sendq *q, struct sendq *front);
/* Takes back the last `bytes` appended, if none of them was written out yet; 1 if it did. */
int sendq_retract(struct sendq *q, size_t bytes);

/* Writes queued bytes to the socket fd until it would block; 0, or -errno when the peer is gone
 * (the caller disconnects). */
int sendq_send(struct sendq *q, int fd);
/* Writes every unsent byte to fd (a file) with write_fn (write(2)'s signature), blocking; the
 * queue is unchanged. 0 or -errno. */
int sendq_write_all(const struct sendq *q, int fd, ssize_t (*write_fn)(int, const void *, size_t));
/* Bytes not written out yet. */
size_t sendq_unsent(const struct sendq *q);
/* 1 when every queued byte was written out (or nothing is queued). */
int sendq_all_sent(const struct sendq *q);

#endif
