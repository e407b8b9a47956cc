#include "cuscope/byteq.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int byteq_init(struct byteq *q, size_t cap)
{
	memset(q, 0, sizeof *q);
	q->buf = malloc(cap);
	if (!q->buf)
		return -ENOMEM;
	q->cap = cap;
	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->ready, NULL);
	return 0;
}

void byteq_fini(struct byteq *q)
{
	free(q->buf);
	pthread_mutex_destroy(&q->lock);
	pthread_cond_destroy(&q->ready);
	q->buf = NULL;
}

size_t byteq_put(struct byteq *q, const void *data, size_t n)
{
	pthread_mutex_lock(&q->lock);
	size_t room = q->cap - (size_t)(q->head - q->tail);
	if (n > room)
		n = room;
	const char *src = data;
	for (size_t done = 0; done < n;) {
		size_t at = (size_t)((q->head + done) % q->cap);
		size_t step = q->cap - at < n - done ? q->cap - at : n - done;
		memcpy(q->buf + at, src + done, step);
		done += step;
	}
	q->head += n;
	if (n)
		pthread_cond_signal(&q->ready);
	pthread_mutex_unlock(&q->lock);
	return n;
}

void byteq_close(struct byteq *q)
{
	pthread_mutex_lock(&q->lock);
	q->closed = 1;
	pthread_cond_signal(&q->ready);
	pthread_mutex_unlock(&q->lock);
}

size_t byteq_take(struct byteq *q, void *out, size_t max)
{
	pthread_mutex_lock(&q->lock);
	while (q->head == q->tail && !q->closed)
		pthread_cond_wait(&q->ready, &q->lock);
	size_t n = (size_t)(q->head - q->tail);
	if (n > max)
		n = max;
	char *dst = out;
	for (size_t done = 0; done < n;) {
		size_t at = (size_t)((q->tail + done) % q->cap);
		size_t step = q->cap - at < n - done ? q->cap - at : n - done;
		memcpy(dst + done, q->buf + at, step);
		done += step;
	}
	q->tail += n;
	pthread_mutex_unlock(&q->lock);
	return n;
}
