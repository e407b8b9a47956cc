/*
 * Test target for loss accounting: prints "pid P", waits until GO_FILE exists (the test stalls
 * the viewer meanwhile), then emits COUNT NVTX marks "burst.mark" as fast as it can, prints
 * "produced COUNT" and exits 0 at once.
 *   burst COUNT GO_FILE
 */
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: burst COUNT GO_FILE\n");
		return 2;
	}
	long count = atol(argv[1]);
	printf("pid %d\n", (int)getpid());
	fflush(stdout);
	struct timespec step = {0, 10000000};
	while (access(argv[2], F_OK) != 0)
		nanosleep(&step, NULL);
	for (long i = 0; i < count; i++)
		nvtxMarkA("burst.mark");
	printf("produced %ld\n", count);
	fflush(stdout);
	return 0;
}
