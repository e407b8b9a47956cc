/*
 * Test target for captures on one time axis: waits until the CLOCK_REALTIME instant given in ns
 * (argv[1]), then runs 3 "step" ranges of 20 ms each. Several copies given one instant (and
 * recorded apart) begin their first step at the same wall time, within the scheduler's wake-up.
 * Prints "pid P" and "start REALTIME_NS" (when its first step began).
 */
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: nvtx_at REALTIME_NS\n");
		return 2;
	}
	long long at = strtoll(argv[1], NULL, 10);
	printf("pid %d\n", (int)getpid());
	nvtxRangePushA("warmup"); /* the collector is up before the instant */
	nvtxRangePop();
	struct timespec ts = {.tv_sec = (time_t)(at / 1000000000), .tv_nsec = (long)(at % 1000000000)};
	while (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &ts, NULL) != 0)
		;
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	for (int i = 0; i < 3; i++) {
		nvtxRangePushA("step");
		struct timespec step = {0, 20 * 1000000L};
		nanosleep(&step, NULL);
		nvtxRangePop();
	}
	printf("start %lld\n", (long long)now.tv_sec * 1000000000LL + now.tv_nsec);
	return 0;
}
