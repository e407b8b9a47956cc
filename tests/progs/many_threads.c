/*
 * Test target for many threads: CONC (default 32) threads "mt-N" alive together, each doing 50
 * "mt.range" ranges; then SEQ (default 200) short-lived threads "st-N", one after another, each
 * doing 10 "st.range" ranges. Prints "pid P" and "threads T" (threads created).
 *   many_threads [CONC [SEQ]]
 */
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static pthread_barrier_t all_alive;

static void *conc_thread(void *arg)
{
	char name[16];
	struct timespec ts = {.tv_sec = 0, .tv_nsec = 100000L};

	snprintf(name, sizeof(name), "mt-%d", (int)(long)arg);
	pthread_setname_np(pthread_self(), name);
	pthread_barrier_wait(&all_alive);
	for (int i = 0; i < 50; i++) {
		nvtxRangePushA("mt.range");
		nanosleep(&ts, NULL);
		nvtxRangePop();
	}
	pthread_barrier_wait(&all_alive);
	return NULL;
}

static void *seq_thread(void *arg)
{
	char name[16];

	snprintf(name, sizeof(name), "st-%d", (int)(long)arg);
	pthread_setname_np(pthread_self(), name);
	for (int i = 0; i < 10; i++) {
		nvtxRangePushA("st.range");
		nvtxRangePop();
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int conc = argc > 1 ? atoi(argv[1]) : 32;
	int seq = argc > 2 ? atoi(argv[2]) : 200;
	struct timespec ts = {.tv_sec = 0, .tv_nsec = 200 * 1000000L};
	pthread_t *th = calloc((size_t)(conc > 0 ? conc : 1), sizeof(*th));

	if (!th || conc < 1 || seq < 0)
		return 2;
	pthread_barrier_init(&all_alive, NULL, (unsigned)conc);
	for (int i = 0; i < conc; i++)
		pthread_create(&th[i], NULL, conc_thread, (void *)(long)i);
	for (int i = 0; i < conc; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < seq; i++) {
		pthread_t t;

		pthread_create(&t, NULL, seq_thread, (void *)(long)i);
		pthread_join(t, NULL);
	}
	nanosleep(&ts, NULL);
	printf("pid %d\nthreads %d\n", (int)getpid(), conc + seq);
	free(th);
	return 0;
}
