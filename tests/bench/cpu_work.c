/*
 * Benchmark workloads for the CPU-side overhead (sampling, blocking-call tracing), timed by the
 * program itself so that start-up is excluded:
 *   cpu_work cpu N     N units of pure computation on 2 threads; prints "seconds S"
 *   cpu_work block N   N pipe ping-pongs between 2 threads (every read blocks); prints "seconds S"
 */
#include <pthread.h>
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
