/*
 * Benchmark producer, two modes.
 *
 * Burst mode: PAIRS push/pop pairs on THREADS threads, in batches of BATCH pairs with a 1 ms pause
 * between batches (excluded from timing) so the collector's sender can drain the ring, after
 * DELAY_MS (default 0) of sleep. Prints the mean app-thread cost per push+pop pair in ns: wall
 * time, then the thread's own CPU time (which leaves out time the thread sat preempted on a busy
 * machine).
 *   nvtx_producer PAIRS BATCH THREADS [DELAY_MS]
 *
 * Paced mode: RATE push/pop pairs per second on one thread for SECONDS, in steps of 1 ms, each
 * making one step's pairs. A thread that was preempted catches up at twice the rate at most (steps
 * at least half a step apart), never in one burst at full speed (which would be another benchmark). Between
 * steps the thread either sleeps until the next step ("sleep": an idle program) or spins on the clock
 * ("busy": a program that keeps its core, leaving the collector and the recorder the other one). Prints the
 * pairs made, the rate achieved and the cost per pair of the steps' own work. nvtx_producer paced RATE
 * SECONDS sleep|busy
 */
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* Paced mode: see the header comment. Returns the exit status. */
static int paced(double rate, double seconds, int busy)
{
	const uint64_t step_ns = 1000000;
	uint64_t total = (uint64_t)(rate * seconds);
	uint64_t done = 0, work_ns = 0;
	uint64_t start = now_ns();
	for (uint64_t step = 1; done < total; step++) {
		uint64_t due = (uint64_t)((double)step * rate * (double)step_ns / 1e9);
		if (due > total)
			due = total;
		uint64_t t0 = now_ns();
		for (; done < due; done++) {
			nvtxRangePushA("bench-range");
			nvtxRangePop();
		}
		uint64_t t1 = now_ns();
		work_ns += t1 - t0;
		/* The next step starts on time, or half a step after this one when behind. */
		uint64_t until = start + step * step_ns;
		if (until < t0 + step_ns / 2)
			until = t0 + step_ns / 2;
		if (busy) {
			while (now_ns() < until)
				;
		} else if (t1 < until) {
			struct timespec ts = {(time_t)(until / 1000000000ull), (long)(until % 1000000000ull)};
			clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
		}
	}
	double elapsed = (double)(now_ns() - start) / 1e9;
	printf("pairs %llu seconds %.3f pairs_per_s %.0f ns_per_pair %.1f\n", (unsigned long long)done,
	       elapsed, (double)done / elapsed, done ? (double)work_ns / (double)done : 0.0);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "paced") == 0) {
		double rate = argc > 2 ? atof(argv[2]) : 1e6;
		double seconds = argc > 3 ? atof(argv[3]) : 10;
		const char *how = argc > 4 ? argv[4] : "sleep";
		if (rate <= 0 || seconds <= 0 || (strcmp(how, "sleep") != 0 && strcmp(how, "busy") != 0)) {
			fprintf(stderr, "usage: nvtx_producer paced RATE SECONDS sleep|busy\n");
			return 2;
		}
		return paced(rate, seconds, strcmp(how, "busy") == 0);
	}
	long pairs = argc > 1 ? atol(argv[1]) : 1000000;
	batch = argc > 2 ? atol(argv[2]) : 4000;
	int threads = argc > 3 ? atoi(argv[3]) : 1;
	long delay_ms = argc > 4 ? atol(argv[4]) : 0;
	if (pairs <= 0 || batch <= 0 || threads <= 0 || threads > 64 || delay_ms < 0)
		return 2;
	struct timespec delay = {(time_t)(delay_ms / 1000), (delay_ms % 1000) * 1000000L};
	while (delay_ms && nanosleep(&delay, &delay) != 0)
		;
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
