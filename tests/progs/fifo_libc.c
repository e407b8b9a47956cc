/*
 * A target whose memory map names a FIFO: it maps DIR/libc.so.6 executable (one page of zeros,
 * so a name match is all it has of a C library), deletes it and leaves a FIFO named
 * "libc.so.6 (deleted)" where the maps line points. Whoever opens mapped paths by name blocks
 * forever on it. The page lies below the real C library, so a search of the maps file meets it
 * first. Prints "pid P" (flushed), then waits for a signal.
 *
 *   fifo_libc DIR
 */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: fifo_libc DIR\n");
		return 2;
	}
	char lib[PATH_MAX], fifo[PATH_MAX + 16];
	snprintf(lib, sizeof lib, "%s/libc.so.6", argv[1]);
	snprintf(fifo, sizeof fifo, "%s (deleted)", lib);
	int fd = open(lib, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || ftruncate(fd, 4096) != 0) {
		perror(lib);
		return 1;
	}
	/* Low in the address space, so the maps file lists it before the real C library. */
	void *p = mmap((void *)0x200000000ul, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	close(fd);
	if (p == MAP_FAILED || unlink(lib) != 0 || mkfifo(fifo, 0644) != 0) {
		perror("fifo_libc");
		return 1;
	}
	printf("pid %d\n", (int)getpid());
	fflush(stdout);
	for (;;)
		pause();
}
