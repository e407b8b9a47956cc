/*
 * Planted stalls for the trigger tests (t260-t274), after a "warmup" range (the collector's
 * start-up stays out of the steps). Every stall prints the CLOCK_MONOTONIC instant
 * its trigger's condition becomes true ("crossing NS"), which a test compares with the firing.
 *
 * usage:
 *   trigger_stall ranges COUNT STEP_MS EVERY LONG_MS DUR_MS [TAIL_MS]
 *       COUNT "step" ranges of STEP_MS; every EVERY-th one (1-based) runs LONG_MS instead and
 *       crosses DUR_MS after its start; then TAIL_MS (default 300) of quiet steps
 *   trigger_stall hang DUR_MS
 *       a few quick steps, then a "hang" range that never ends (until the process is killed);
 *       crosses DUR_MS after its start; prints "hung" once inside it
 *   trigger_stall gap GAP_MS CROSS_MS...
 *       (stand-in CUDA at CUSCOPE_CUPTI_PATH, as fake_cuda_app) kernels, then a nanosleep of
 *       GAP_MS between two kernels: the GPU idles from the end of the first; one crossing line per
 *       CROSS_MS (gap start + CROSS_MS), then a few more kernels and 400 ms of quiet
 *   trigger_stall busy SECONDS [STEPS_PER_S]
 *       a busy NVTX workload for the cost measure: "step" ranges of 50 "op" ranges each, no stall;
 *       as fast as it can, or paced at STEPS_PER_S (the same stream whatever the viewer costs)
 */
#include <dlfcn.h>
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long long mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void sleep_ms(double ms)
{
	struct timespec ts = {(time_t)(ms / 1000), (long)((ms - (double)(long)(ms / 1000) * 1000) * 1e6)};
	while (nanosleep(&ts, &ts) != 0)
		;
}

static int ranges(int argc, char **argv)
{
	if (argc < 7)
		return 2;
	int count = atoi(argv[2]), every = atoi(argv[4]);
	double step = atof(argv[3]), lng = atof(argv[5]), dur = atof(argv[6]);
	double tail = argc > 7 ? atof(argv[7]) : 300;
	for (int i = 1; i <= count; i++) {
		int is_long = every > 0 && i % every == 0;
		long long t0 = mono_ns();
		nvtxRangePushA("step");
		sleep_ms(is_long ? lng : step);
		nvtxRangePop();
		/* A short step that a loaded machine stretched past DUR crosses too: said as well, so
		 * that tests count the crossings that happened, not only the planted ones. */
		if (is_long || mono_ns() - t0 > (long long)(dur * 1e6)) {
			printf("crossing %lld\n", t0 + (long long)(dur * 1e6));
			fflush(stdout);
		}
	}
	for (long long end = mono_ns() + (long long)(tail * 1e6); mono_ns() < end;) {
		nvtxRangePushA("tail");
		sleep_ms(step);
		nvtxRangePop();
	}
	return 0;
}

static int hang(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	double dur = atof(argv[2]);
	for (int i = 0; i < 5; i++) {
		nvtxRangePushA("step");
		sleep_ms(5);
		nvtxRangePop();
	}
	long long t0 = mono_ns();
	nvtxRangePushA("hang");
	printf("crossing %lld\nhung\n", t0 + (long long)(dur * 1e6));
	fflush(stdout);
	for (;;)
		pause();
}

static int gap(int argc, char **argv)
{
	if (argc < 4)
		return 2;
	const char *cudart = getenv("CUSCOPE_CUPTI_PATH");
	void *h = cudart && *cudart ? dlopen(cudart, RTLD_NOW) : NULL;
	void (*launch)(unsigned, unsigned, const char *) =
	    h ? (void (*)(unsigned, unsigned, const char *))dlsym(h, "fake_cuda_launch") : NULL;
	void (*init)(void) = h ? (void (*)(void))dlsym(h, "fake_cuda_init") : NULL;
	if (!launch || !init) {
		fprintf(stderr, "trigger_stall: no stand-in CUDA at CUSCOPE_CUPTI_PATH\n");
		return 3;
	}
	init();
	for (int i = 0; i < 20; i++) {
		launch(1, 0, "main");
		sleep_ms(1);
	}
	launch(1, 0, "main");
	/* The kernel ends a few microseconds after the launch returns (the stand-in's timing). */
	long long gap_start = mono_ns();
	sleep_ms(atof(argv[2]));
	launch(1, 0, "main");
	for (int i = 3; i < argc; i++)
		printf("crossing %lld\n", gap_start + (long long)(atof(argv[i]) * 1e6));
	fflush(stdout);
	for (int i = 0; i < 20; i++) {
		launch(1, 0, "main");
		sleep_ms(1);
	}
	sleep_ms(400);
	return 0;
}

static int busy(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	long long start = mono_ns(), end = start + (long long)(atof(argv[2]) * 1e9);
	double rate = argc > 3 ? atof(argv[3]) : 0;
	unsigned long n = 0;
	while (mono_ns() < end) {
		/* Paced: wait for this step's slot (sleeps of at least 1 ms, the rest catches up). */
		long long due = rate > 0 ? start + (long long)((double)n * 1e9 / rate) : 0;
		if (rate > 0 && due - mono_ns() >= 1000000)
			sleep_ms((double)(due - mono_ns()) / 1e6);
		nvtxRangePushA("step");
		for (int i = 0; i < 50; i++) {
			nvtxRangePushA("op");
			nvtxRangePop();
		}
		nvtxRangePop();
		n++;
	}
	printf("steps %lu\n", n);
	return 0;
}

int main(int argc, char **argv)
{
	int rc = 2;
	printf("pid %d\n", (int)getpid());
	fflush(stdout);
	/* The first NVTX call starts the collector's injection: its cost stays out of the steps. */
	nvtxRangePushA("warmup");
	nvtxRangePop();
	if (argc > 1 && strcmp(argv[1], "ranges") == 0)
		rc = ranges(argc, argv);
	else if (argc > 1 && strcmp(argv[1], "hang") == 0)
		rc = hang(argc, argv);
	else if (argc > 1 && strcmp(argv[1], "gap") == 0)
		rc = gap(argc, argv);
	else if (argc > 1 && strcmp(argv[1], "busy") == 0)
		rc = busy(argc, argv);
	if (rc == 2)
		fprintf(stderr, "usage: trigger_stall ranges|hang|gap|busy ... (see the source)\n");
	return rc;
}
