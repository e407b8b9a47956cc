/*
 * Test target for the ranks stats section: 4 "step" ranges of STEP_MS each (a nested "forward" of
 * half of it), with 3 short "aten::mul" ranges at the top level after each step (more frequent, but
 * torch operators are never steps). With "worker", a forked child (a DataLoader worker: same rank)
 * runs 6 "load" ranges of its own while the parent steps. Prints "pid P".
 */
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0)
		;
}

int main(int argc, char **argv)
{
	if (argc < 2 || atol(argv[1]) <= 0) {
		fprintf(stderr, "usage: rank_steps STEP_MS [worker]\n");
		return 2;
	}
	long step_ms = atol(argv[1]);
	printf("pid %d\n", (int)getpid());
	fflush(stdout);
	pid_t worker = -1;
	if (argc > 2 && strcmp(argv[2], "worker") == 0) {
		worker = fork();
		if (worker == 0) {
			for (int i = 0; i < 6; i++) {
				nvtxRangePushA("load");
				sleep_ms(2);
				nvtxRangePop();
			}
			_exit(0);
		}
	}
	for (int i = 0; i < 4; i++) {
		nvtxRangePushA("step");
		nvtxRangePushA("forward");
		sleep_ms(step_ms / 2);
		nvtxRangePop();
		sleep_ms(step_ms - step_ms / 2);
		nvtxRangePop();
		for (int k = 0; k < 3; k++) {
			nvtxRangePushA("aten::mul");
			nvtxRangePop();
		}
	}
	if (worker > 0)
		waitpid(worker, NULL, 0);
	return 0;
}
