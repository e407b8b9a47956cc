/*
 * A bounded byte queue between one producer that must never wait and one consumer that may be
 * slow (the log keeper: the program's output pipe is drained at once, the disk written later).
 * What does not fit is refused and counted by the caller, never waited for.
 */
#ifndef CUSCOPE_BYTEQ_H
#define CUSCOPE_BYTEQ_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

struct byteq {
	char *buf;
	size_t cap;          /* bytes */
	uint64_t head, tail; /* bytes ever put / taken */
	int closed;          /* the producer is done: take returns 0 once empty */
	pthread_mutex_t lock;
	pthread_cond_t ready;
};

/* 0, or -ENOMEM. */
int byteq_init(struct byteq *q, size_t cap);
void byteq_fini(struct byteq *q);
/* Copies what fits of data (never waits); returns the bytes taken in, the rest is the caller's. */
size_t byteq_put(struct byteq *q, const void *data, size_t n);
/* Marks the producer done and wakes the consumer. */
void byteq_close(struct byteq *q);
/* Waits for bytes and copies up to max of them into out; 0 once closed and empty. */
size_t byteq_take(struct byteq *q, void *out, size_t max);

#endif
