/* Spends argv[1] seconds of CPU (default 1.5) inside libc's memcpy (an internal IFUNC variant
 * such as __memmove_avx_unaligned_erms, named only in libc's .symtab, which Debian strips into
 * libc6-dbg), then prints "done libc_spin". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double cpu_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 1.5;
	size_t size = 8u << 20;
	char *a = malloc(size), *b = malloc(size);
	if (!a || !b)
		return 1;
	memset(a, 1, size);
	void *(*volatile copy)(void *, const void *, size_t) = memcpy; /* a real call into libc */
	unsigned sum = 0;
	double end = cpu_seconds() + seconds;
	while (cpu_seconds() < end) {
		copy(b, a, size);
		copy(a, b, size);
		sum += (unsigned char)b[size / 2];
	}
	printf("done libc_spin %u\n", sum & 1);
	free(a);
	free(b);
	return 0;
}
