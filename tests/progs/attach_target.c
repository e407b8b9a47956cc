/*
 * Target for the attach tests: runs for SECONDS (default 6), spending most of its CPU time in the
 * named function cuscope_attach_hot with short sleeps between bursts, then prints "attach_target
 * done bursts=N" and exits with code 3. Prints "pid P" first.
 *   attach_target [SECONDS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

volatile double attach_sink;

__attribute__((noinline)) void cuscope_attach_hot(long n)
{
	double x = 0;
	for (long i = 0; i < n; i++)
		x += (double)i * 0.5;
	attach_sink = x;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 6.0;
	printf("pid %d\n", (int)getpid());
	fflush(stdout);
	double end = now_s() + seconds;
	long bursts = 0;
	while (now_s() < end) {
		cuscope_attach_hot(2000000);
		bursts++;
		usleep(1000);
	}
	printf("attach_target done bursts=%ld\n", bursts > 0 ? 1L : 0L);
	return 3;
}
