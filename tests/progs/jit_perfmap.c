/*
 * A tiny JIT, standing in for CPython's perf trampolines: copies a counting loop into anonymous
 * executable memory, names it "jit_hot_loop" in /tmp/perf-PID.map (the perf map format: START SIZE
 * NAME, hex), and spends ~SECONDS of CPU in it. Samples there can only be named through the map.
 *   jit_perfmap [SECONDS]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 1.5;
	/* loop: dec rdi; jnz loop; ret */
	static const unsigned char code[] = {0x48, 0xff, 0xcf, 0x75, 0xfb, 0xc3};
	unsigned char *jit = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (jit == MAP_FAILED)
		return 1;
	memcpy(jit, code, sizeof code);
	if (mprotect(jit, 4096, PROT_READ | PROT_EXEC) != 0)
		return 1;
	char path[64];
	snprintf(path, sizeof path, "/tmp/perf-%d.map", (int)getpid());
	FILE *map = fopen(path, "w");
	if (!map)
		return 1;
	fprintf(map, "%lx %zx jit_hot_loop\n", (unsigned long)(uintptr_t)jit, sizeof code);
	fclose(map);
	void (*loop)(uint64_t) = (void (*)(uint64_t))(uintptr_t)jit;
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	double spent = 0;
	while (spent < seconds) {
		loop(50000000);
		clock_gettime(CLOCK_MONOTONIC, &b);
		spent = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
	}
	unlink(path);
	printf("jit done\n");
	return 0;
}
