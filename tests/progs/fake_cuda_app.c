/*
 * A "CUDA program" for the CPU-only CUPTI tests (t210-t214): it links nothing CUDA. It loads the
 * stand-in (tests/support/fake_cupti.c, at CUSCOPE_CUPTI_PATH, where the collector finds it as
 * libcupti), which plays the CUDA runtime and driver: its first call, cudaFree(0), loads
 * CUDA_INJECTION64_PATH and calls InitializeInjection as the driver does; fake_cuda_launch plays
 * the runtime's calls.
 *
 * usage: fake_cuda_app LAUNCHES EXTRA THREADS [concurrent|short]
 *   The main thread launches LAUNCHES kernels (each after EXTRA cudaGetDevice calls; after them one
 *   cudaMemcpyAsync, one cudaStreamSynchronize, then a cuCtxSynchronize through the driver), then THREADS
 *   threads do the same: all at once (concurrent, the default), or one after another, each
 *   ending right after its last call (short). Prints "tid LABEL TID" for every launching thread,
 *   the main thread's time per launch, and the fake library's report line. Without
 *   CUDA_INJECTION64_PATH it runs untraced (the baseline of that time).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static void (*launch)(unsigned n, unsigned extra, const char *label);
static void (*driver_sync)(void);
static unsigned launches, extra;
static pthread_barrier_t start_line;
static int concurrent = 1;

struct worker {
	pthread_t thread;
	char label[16];
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	printf("tid %s %ld\n", w->label, (long)syscall(SYS_gettid));
	fflush(stdout);
	if (concurrent)
		pthread_barrier_wait(&start_line);
	launch(launches, extra, w->label);
	driver_sync();
	return NULL; /* ends right after its last CUDA call */
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: fake_cuda_app LAUNCHES EXTRA THREADS [concurrent|short]\n");
		return 2;
	}
	launches = (unsigned)atoi(argv[1]);
	extra = (unsigned)atoi(argv[2]);
	int threads = atoi(argv[3]);
	if (argc > 4)
		concurrent = strcmp(argv[4], "short") != 0;
	if (threads < 0 || threads > 64)
		threads = 0;

	/* The stand-in plays libcudart too: loaded as a CUDA program loads it. */
	const char *cudart = getenv("CUSCOPE_CUPTI_PATH");
	void *h = cudart && *cudart ? dlopen(cudart, RTLD_NOW) : NULL;
	launch = h ? (void (*)(unsigned, unsigned, const char *))dlsym(h, "fake_cuda_launch") : NULL;
	void (*init)(void) = h ? (void (*)(void))dlsym(h, "fake_cuda_init") : NULL;
	void (*report)(void) = h ? (void (*)(void))dlsym(h, "fake_cuda_report") : NULL;
	driver_sync = h ? (void (*)(void))dlsym(h, "fake_cuda_driver_sync") : NULL;
	if (!launch || !init || !report || !driver_sync) {
		fprintf(stderr, "fake_cuda_app: no stand-in CUDA at CUSCOPE_CUPTI_PATH=%s\n",
		        cudart ? cudart : "");
		return 3;
	}
	/* cudaFree(0), the usual first call: inside it, CUDA injects CUDA_INJECTION64_PATH. */
	init();

	printf("tid main %ld\n", (long)syscall(SYS_gettid));
	fflush(stdout);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	launch(launches, extra, "main");
	clock_gettime(CLOCK_MONOTONIC, &t1);
	driver_sync();
	/* FAKE_CUDA_APP_SECONDS: the main thread goes on launching that long (to be attached to). */
	const char *seconds = getenv("FAKE_CUDA_APP_SECONDS");
	for (struct timespec now = t1; seconds && now.tv_sec - t0.tv_sec < atoi(seconds);
	     clock_gettime(CLOCK_MONOTONIC, &now)) {
		launch(launches, extra, "main");
		struct timespec pause = {0, 10000000};
		nanosleep(&pause, NULL);
	}
	/* The main thread's cost of a launch with its cheap calls (what tracing adds shows here). */
	long long ns = (t1.tv_sec - t0.tv_sec) * 1000000000ll + (t1.tv_nsec - t0.tv_nsec);
	printf("main_ns_per_launch %lld\n", launches ? ns / launches : 0);
	/* Where the main thread's first launches lie on CLOCK_MONOTONIC, for the clock checks. */
	printf("main_span_ns %lld %lld\n", t0.tv_sec * 1000000000ll + t0.tv_nsec,
	       t1.tv_sec * 1000000000ll + t1.tv_nsec);

	struct worker workers[64];
	if (concurrent && threads)
		pthread_barrier_init(&start_line, NULL, (unsigned)threads);
	for (int i = 0; i < threads; i++) {
		snprintf(workers[i].label, sizeof workers[i].label, "w%d", i);
		if (pthread_create(&workers[i].thread, NULL, worker_main, &workers[i]) != 0) {
			fprintf(stderr, "fake_cuda_app: pthread_create failed\n");
			return 5;
		}
		if (!concurrent)
			pthread_join(workers[i].thread, NULL);
	}
	if (concurrent)
		for (int i = 0; i < threads; i++)
			pthread_join(workers[i].thread, NULL);
	report();
	return 0;
}
