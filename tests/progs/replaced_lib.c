/*
 * Built as is: a program that dlopens the library argv[1], waits until the file argv[2] exists
 * (the test replaces the library on disk meanwhile), then spends argv[3] seconds of CPU (default
 * 1.5) in it and prints "done replaced_lib". Built with -DREPLACED_LIB -DHOT=name -shared: the
 * library, whose exported replaced_entry spins in a static function called HOT.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#ifdef REPLACED_LIB
static double cpu_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static __attribute__((noinline)) unsigned long HOT(double seconds)
{
	volatile unsigned long x = 1;
	double end = cpu_seconds() + seconds;
	while (cpu_seconds() < end)
		for (int i = 0; i < 100000; i++)
			x = x * 6364136223846793005ul + 1;
	return x;
}

unsigned long replaced_entry(double seconds);
unsigned long replaced_entry(double seconds)
{
	return HOT(seconds);
}
#else
#include <dlfcn.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	void *lib = dlopen(argv[1], RTLD_NOW);
	unsigned long (*entry)(double) = NULL;
	if (lib)
		*(void **)&entry = dlsym(lib, "replaced_entry");
	if (!entry) {
		fprintf(stderr, "replaced_lib: %s\n", dlerror());
		return 1;
	}
	printf("loaded\n");
	fflush(stdout);
	for (int i = 0; i < 3000 && access(argv[2], F_OK) != 0; i++)
		usleep(10000);
	unsigned long x = entry(argc > 3 ? atof(argv[3]) : 1.5);
	printf("done replaced_lib %lu\n", x & 1);
	return 0;
}
#endif
