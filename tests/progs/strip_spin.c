/* Spends argv[1] seconds of CPU (default 1.5) in a static (local, not exported) function, so a
 * stripped copy can name it only from separate debug data; then prints "done strip_spin". */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double cpu_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static __attribute__((noinline)) unsigned long strip_local_hot(double seconds)
{
	volatile unsigned long x = 1;
	double end = cpu_seconds() + seconds;
	while (cpu_seconds() < end)
		for (int i = 0; i < 100000; i++)
			x = x * 6364136223846793005ul + 1;
	return x;
}

int main(int argc, char **argv)
{
	unsigned long x = strip_local_hot(argc > 1 ? atof(argv[1]) : 1.5);
	printf("done strip_spin %lu\n", x & 1);
	return 0;
}
