/*
 * Benchmark workloads for the CPU-side overhead (sampling, blocking-call tracing), timed by the
 * program itself so that start-up is excluded:
 *   cpu_work cpu N     N units of pure computation on 2 threads; prints "seconds S"
 *   cpu_work block N   N pipe ping-pongs between 2 threads (every read blocks); prints "seconds S"
 *   cpu_work loader N  a data-loader-like pipeline of 8 threads moving N buffers: a reader thread
 *                      (short compute per buffer) hands buffer numbers through a mutex/condvar
 *                      queue to 6 decode threads (short compute each), which pass them through a
 *                      pipe to a collate thread; threads block and wake all the time; prints
 *                      "seconds S"
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long units;
static int ping[2], pong[2];
volatile double work_sink;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static double compute_unit(long seed)
{
	double x = (double)seed;
	for (int i = 0; i < 100000; i++)
		x = x * 1.0000001 + 0.5 / (1.0 + (double)i);
	return x;
}

static void *cpu_thread(void *arg)
{
	double sum = 0;
	for (long i = 0; i < units; i++)
		sum += compute_unit(i + (long)(intptr_t)arg);
	work_sink = sum;
	return NULL;
}

static void *echo_thread(void *arg)
{
	(void)arg;
	char c;
	for (long i = 0; i < units; i++) {
		if (read(ping[0], &c, 1) != 1 || write(pong[1], &c, 1) != 1)
			break;
	}
	return NULL;
}

/* ---- loader: reader -> queue -> 6 decoders -> pipe -> collator ---- */

#define LOADER_DECODERS 6
#define QUEUE_SLOTS     16
#define BUFFER_COUNT    64
#define BUFFER_WORDS    512

static struct {
	pthread_mutex_t lock;
	pthread_cond_t not_empty, not_full;
	long items[QUEUE_SLOTS];
	size_t head, count;
} queue = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER, {0}, 0, 0};
static uint32_t buffers[BUFFER_COUNT][BUFFER_WORDS];
static int collate_pipe[2];

static void queue_push(long item)
{
	pthread_mutex_lock(&queue.lock);
	while (queue.count == QUEUE_SLOTS)
		pthread_cond_wait(&queue.not_full, &queue.lock);
	queue.items[(queue.head + queue.count++) % QUEUE_SLOTS] = item;
	pthread_cond_signal(&queue.not_empty);
	pthread_mutex_unlock(&queue.lock);
}

static long queue_pop(void)
{
	pthread_mutex_lock(&queue.lock);
	while (queue.count == 0)
		pthread_cond_wait(&queue.not_empty, &queue.lock);
	long item = queue.items[queue.head];
	queue.head = (queue.head + 1) % QUEUE_SLOTS;
	queue.count--;
	pthread_cond_signal(&queue.not_full);
	pthread_mutex_unlock(&queue.lock);
	return item;
}

/* A few microseconds of work on one buffer (what a loader does per sample: read, decode). */
__attribute__((noinline)) static uint32_t buffer_work(uint32_t *words, long seed, int rounds)
{
	uint32_t h = (uint32_t)seed * 2654435761u;
	for (int r = 0; r < rounds; r++)
		for (int i = 0; i < BUFFER_WORDS; i++) {
			h = (h ^ words[i]) * 16777619u;
			words[i] = h;
		}
	return h;
}

static void *loader_reader(void *arg)
{
	(void)arg;
	for (long i = 0; i < units; i++) {
		buffer_work(buffers[i % BUFFER_COUNT], i, 1);
		queue_push(i);
	}
	for (int i = 0; i < LOADER_DECODERS; i++)
		queue_push(-1);
	return NULL;
}

static void *loader_decoder(void *arg)
{
	(void)arg;
	for (long item; (item = queue_pop()) >= 0;) {
		buffer_work(buffers[item % BUFFER_COUNT], item, 4);
		if (write(collate_pipe[1], &item, sizeof item) != (ssize_t)sizeof item)
			break;
	}
	return NULL;
}

static void *loader_collator(void *arg)
{
	(void)arg;
	uint64_t sum = 0;
	long item;
	for (long i = 0; i < units; i++) {
		if (read(collate_pipe[0], &item, sizeof item) != (ssize_t)sizeof item)
			break;
		sum += buffers[item % BUFFER_COUNT][0];
	}
	work_sink = (double)sum;
	return NULL;
}

static int run_loader(void)
{
	if (pipe(collate_pipe) != 0)
		return 1;
	pthread_t t[LOADER_DECODERS + 2];
	pthread_create(&t[0], NULL, loader_reader, NULL);
	pthread_create(&t[1], NULL, loader_collator, NULL);
	for (int i = 0; i < LOADER_DECODERS; i++)
		pthread_create(&t[2 + i], NULL, loader_decoder, NULL);
	for (int i = 0; i < LOADER_DECODERS + 2; i++)
		pthread_join(t[i], NULL);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	units = atol(argv[2]);
	pthread_t t[2];
	double start = now_s();
	if (strcmp(argv[1], "cpu") == 0) {
		for (intptr_t i = 0; i < 2; i++)
			pthread_create(&t[i], NULL, cpu_thread, (void *)i);
		for (int i = 0; i < 2; i++)
			pthread_join(t[i], NULL);
	} else if (strcmp(argv[1], "loader") == 0) {
		if (run_loader() != 0)
			return 1;
	} else {
		if (pipe(ping) != 0 || pipe(pong) != 0)
			return 1;
		pthread_create(&t[0], NULL, echo_thread, NULL);
		char c = 'x';
		for (long i = 0; i < units; i++)
			if (write(ping[1], &c, 1) != 1 || read(pong[0], &c, 1) != 1)
				break;
		pthread_join(t[0], NULL);
	}
	printf("seconds %.4f\n", now_s() - start);
	return 0;
}
