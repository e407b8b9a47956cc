/*
 * A steady flood of NVTX push/pop pairs for the live viewer's memory bound: THREADS threads push
 * and pop as fast as they can in batches of 2000 pairs with a 1 ms pause after each (so the
 * collector's sender keeps up), for SECONDS. Prints "pairs N" at the end.
 *   nvtx_flood SECONDS [THREADS]
 */
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static atomic_long pairs;
static double seconds;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *flood(void *arg)
{
	(void)arg;
	struct timespec pause = {0, 1000000};
	double end = now_s() + seconds;
	while (now_s() < end) {
		for (int i = 0; i < 2000; i++) {
			nvtxRangePushA("flood");
			nvtxRangePop();
		}
		atomic_fetch_add(&pairs, 2000);
		nanosleep(&pause, NULL);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	seconds = argc > 1 ? atof(argv[1]) : 10;
	int threads = argc > 2 ? atoi(argv[2]) : 1;
	if (seconds <= 0 || threads <= 0 || threads > 32)
		return 2;
	pthread_t th[32];
	for (int i = 0; i < threads; i++)
		pthread_create(&th[i], NULL, flood, NULL);
	for (int i = 0; i < threads; i++)
		pthread_join(th[i], NULL);
	printf("pairs %ld\n", atomic_load(&pairs));
	return 0;
}
