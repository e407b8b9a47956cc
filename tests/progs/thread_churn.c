/*
 * Test target for rings of ended threads: sleeps DELAY_MS (so a test can stop the viewer), makes
 * BURST push/pop pairs (the viewer falls behind), then runs THREADS short-lived threads one after
 * another, each making one range. Prints "pid P" first and "rss_kb_growth N" at the end: its
 * resident set after the threads minus before them.
 *   thread_churn DELAY_MS BURST THREADS
 */
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long rss_kb(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kb = -1;
	while (f && fgets(line, sizeof line, f))
		if (strncmp(line, "VmRSS:", 6) == 0)
			kb = atol(line + 6);
	if (f)
		fclose(f);
	return kb;
}

static void *one_range(void *arg)
{
	(void)arg;
	nvtxRangePushA("churn");
	nvtxRangePop();
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 4)
		return 2;
	long delay_ms = atol(argv[1]), burst = atol(argv[2]), threads = atol(argv[3]);
	printf("pid %d\n", (int)getpid());
	fflush(stdout);
	struct timespec d = {delay_ms / 1000, (delay_ms % 1000) * 1000000L};
	nanosleep(&d, NULL);
	for (long i = 0; i < burst; i++) {
		nvtxRangePushA("burst");
		nvtxRangePop();
	}
	long before = rss_kb();
	for (long i = 0; i < threads; i++) {
		pthread_t t;
		if (pthread_create(&t, NULL, one_range, NULL) != 0)
			return 2;
		pthread_join(t, NULL);
		if (i % 64 == 0) {
			struct timespec pause = {0, 2000000L}; /* the sender gets its turns meanwhile */
			nanosleep(&pause, NULL);
		}
	}
	printf("rss_kb_growth %ld\n", rss_kb() - before);
	return 0;
}
