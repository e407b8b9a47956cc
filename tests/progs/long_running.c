/*
 * Long-running test and demo target: a main thread "lr-main" doing "step" ranges (each holding
 * "fwd" and "bwd"), loader threads "loader-N" doing "load" ranges, an "epoch" mark every 10
 * steps. Runs until SECONDS pass (default: forever) or SIGINT/SIGTERM arrives.
 *
 *   long_running [-t SECONDS] [-o DONEFILE] [-n LOADERS] [-d]
 *     -t  stop after SECONDS (fractions allowed); exit 0
 *     -o  at the end write "done steps=N loads=M code=C" to DONEFILE (after printing it)
 *     -n  number of loader threads (default 2)
 *     -d  leave SIGINT/SIGTERM at their default action (die by the signal)
 * A caught SIGINT/SIGTERM ends the run cleanly with exit code 100 + signal number (102, 115).
 * Prints "pid P" at start (flushed) and "done steps=N loads=M code=C" at the end (C: exit code).
 */
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_LOADERS 16

static volatile sig_atomic_t got_signal;
static atomic_int stop;
static atomic_long loads;

/* Sleeps for ms milliseconds; returns early when a signal arrives. */
static void sleep_ms(long ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void on_signal(int sig)
{
	got_signal = sig;
}

static void *loader(void *arg)
{
	char name[16];
	sigset_t all;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL); /* signals go to the main thread */
	snprintf(name, sizeof(name), "loader-%d", (int)(long)arg);
	pthread_setname_np(pthread_self(), name);
	while (!atomic_load(&stop)) {
		nvtxRangePushA("load");
		sleep_ms(3);
		nvtxRangePop();
		atomic_fetch_add(&loads, 1);
		sleep_ms(1);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	double seconds = -1, start;
	const char *done_file = NULL;
	int nloaders = 2, default_signals = 0, opt, code;
	pthread_t th[MAX_LOADERS];
	long steps = 0;
	FILE *f;

	while ((opt = getopt(argc, argv, "t:o:n:d")) != -1) {
		switch (opt) {
		case 't':
			seconds = atof(optarg);
			break;
		case 'o':
			done_file = optarg;
			break;
		case 'n':
			nloaders = atoi(optarg);
			if (nloaders < 0 || nloaders > MAX_LOADERS)
				nloaders = 2;
			break;
		case 'd':
			default_signals = 1;
			break;
		default:
			fprintf(stderr, "usage: long_running [-t SECONDS] [-o DONEFILE] [-n LOADERS] [-d]\n");
			return 2;
		}
	}
	if (!default_signals) {
		struct sigaction sa;

		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_signal;
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
	}
	pthread_setname_np(pthread_self(), "lr-main");
	printf("pid %d\n", (int)getpid());
	fflush(stdout);
	for (int i = 0; i < nloaders; i++)
		pthread_create(&th[i], NULL, loader, (void *)(long)i);

	start = now_s();
	while (!got_signal && (seconds < 0 || now_s() - start < seconds)) {
		nvtxRangePushA("step");
		nvtxRangePushA("fwd");
		sleep_ms(5);
		nvtxRangePop();
		nvtxRangePushA("bwd");
		sleep_ms(5);
		nvtxRangePop();
		nvtxRangePop();
		steps++;
		if (steps % 10 == 0)
			nvtxMarkA("epoch");
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < nloaders; i++)
		pthread_join(th[i], NULL);
	code = got_signal ? 100 + got_signal : 0;
	printf("done steps=%ld loads=%ld code=%d\n", steps, atomic_load(&loads), code);
	fflush(stdout);
	if (done_file && (f = fopen(done_file, "w")) != NULL) {
		fprintf(f, "done steps=%ld loads=%ld code=%d\n", steps, atomic_load(&loads), code);
		fclose(f);
	}
	return code;
}
