/*
 * Test target for a burst faster than the viewer reads: sleeps DELAY_MS (so the recorder is
 * connected), then makes PAIRS "burst" push/pop pairs as fast as it can. Prints "pid P" and
 * "pairs N".
 *   nvtx_burst_late PAIRS DELAY_MS
 */
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long pairs = argc > 1 ? atol(argv[1]) : 1000000;
	long delay_ms = argc > 2 ? atol(argv[2]) : 300;
	if (pairs <= 0 || delay_ms < 0)
		return 2;
	printf("pid %d\n", (int)getpid());
	struct timespec delay = {(time_t)(delay_ms / 1000), (delay_ms % 1000) * 1000000L};
	while (nanosleep(&delay, &delay) != 0)
		;
	for (long i = 0; i < pairs; i++) {
		nvtxRangePushA("burst");
		nvtxRangePop();
	}
	printf("pairs %ld\n", pairs);
	return 0;
}
