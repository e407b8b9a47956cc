/*
 * Test target for the string table cap: COUNT ranges (default 200000), each with a distinct
 * message "seq = N" padded with PAD (default 200) '.' characters, paced at BATCH ranges per
 * millisecond (default 100, i.e. ~200k events/s: well inside what the collector must sustain, so
 * no ring overflow), then prints "pid P" and "maxrss_kb K" (peak resident set, collector included).
 *   many_names [COUNT [PAD [BATCH]]]   PAD 0 gives plain "seq = N"; COUNT negative: one name
 *                                      |COUNT| times; BATCH 0: no pacing (a burst)
 */
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long count = argc > 1 ? atol(argv[1]) : 200000;
	long pad = argc > 2 ? atol(argv[2]) : 200;
	long batch = argc > 3 ? atol(argv[3]) : 100;
	struct timespec pace = {.tv_sec = 0, .tv_nsec = 1000000L};
	int same = count < 0;
	struct timespec ts = {.tv_sec = 0, .tv_nsec = 300 * 1000000L};
	struct rusage ru;
	char name[1200];

	if (same)
		count = -count;
	if (pad < 0 || pad > 1000)
		pad = 200;
	for (long i = 0; i < count; i++) {
		int n = snprintf(name, sizeof(name), "seq = %ld ", same ? 0L : i);

		memset(name + n, '.', (size_t)pad);
		name[n + pad] = '\0';
		nvtxRangePushA(name);
		nvtxRangePop();
		if (batch > 0 && i % batch == batch - 1)
			nanosleep(&pace, NULL);
	}
	nanosleep(&ts, NULL);
	getrusage(RUSAGE_SELF, &ru);
	printf("pid %d\n", (int)getpid());
	printf("maxrss_kb %ld\n", ru.ru_maxrss);
	return 0;
}
