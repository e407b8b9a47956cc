/*
 * Test target for nesting under ring-full drops: ITERATIONS times, as fast as it can, a range "A"
 * holding three ranges "B" one after the other. Every 64 iterations it pauses 50 us so the
 * collector's sender drains part of a small ring in the middle of a burst: pushes are then
 * refused and accepted again while ranges are open. Prints "pid P" and "produced N" (events).
 *   nvtx_nest_burst ITERATIONS
 */
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long iterations = argc > 1 ? atol(argv[1]) : 20000;
	if (iterations <= 0)
		return 2;
	printf("pid %d\n", (int)getpid());
	struct timespec pause = {0, 50000};
	for (long i = 0; i < iterations; i++) {
		nvtxRangePushA("A");
		for (int j = 0; j < 3; j++) {
			nvtxRangePushA("B");
			if (i % 64 == 0 && j == 1)
				nanosleep(&pause, NULL);
			nvtxRangePop();
		}
		nvtxRangePop();
	}
	printf("produced %ld\n", iterations * 8);
	return 0;
}
