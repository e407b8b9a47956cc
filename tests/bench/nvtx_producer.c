/*
 * Benchmark producer: PAIRS push/pop pairs on THREADS threads, in batches of BATCH pairs with a
 * 1 ms pause between batches (excluded from timing) so the collector's sender can drain the ring.
 * Prints the mean app-thread cost per push+pop pair in ns: wall time, then the thread's own CPU
 * time (which leaves out time the thread sat preempted on a busy machine).
 *   nvtx_producer PAIRS BATCH THREADS
 */
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long pairs_per_thread, batch;

static uint64_t clock_ns(clockid_t clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t now_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

static uint64_t cpu_total[64];
static uint64_t *busy_base;

static void *produce(void *arg)
{
	uint64_t *busy_ns = arg;
	uint64_t *cpu_ns = &cpu_total[busy_ns - (uint64_t *)busy_base];
	struct timespec pause = {0, 1000000};
	for (long done = 0; done < pairs_per_thread;) {
		long n = pairs_per_thread - done < batch ? pairs_per_thread - done : batch;
		uint64_t c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
		uint64_t t0 = now_ns();
		for (long i = 0; i < n; i++) {
			nvtxRangePushA("bench-range");
			nvtxRangePop();
		}
		*busy_ns += now_ns() - t0;
		*cpu_ns += clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
		done += n;
		nanosleep(&pause, NULL);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	long pairs = argc > 1 ? atol(argv[1]) : 1000000;
	batch = argc > 2 ? atol(argv[2]) : 4000;
	int threads = argc > 3 ? atoi(argv[3]) : 1;
	if (pairs <= 0 || batch <= 0 || threads <= 0 || threads > 64)
		return 2;
	pairs_per_thread = pairs / threads;
	pthread_t th[64];
	static uint64_t busy[64];
	busy_base = busy;
	for (int i = 0; i < threads; i++)
		pthread_create(&th[i], NULL, produce, &busy[i]);
	uint64_t total = 0, cpu = 0;
	for (int i = 0; i < threads; i++) {
		pthread_join(th[i], NULL);
		total += busy[i];
		cpu += cpu_total[i];
	}
	double pairs_done = (double)(pairs_per_thread * threads);
	printf("pairs %ld ns_per_pair %.1f cpu_ns_per_pair %.1f\n", pairs_per_thread * threads,
	       (double)total / pairs_done, (double)cpu / pairs_done);
	return 0;
}
