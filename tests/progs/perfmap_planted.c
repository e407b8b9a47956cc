/*
 * jit_perfmap with a perf map that another user could have planted: names its JIT'd loop
 * "planted_loop" in /tmp/perf-PID.map made as MODE says, then spends ~1.5 s of CPU in the loop.
 *   perfmap_planted own           a regular file of ours (the control: it must be read)
 *   perfmap_planted longline      ours, with a 3,000-byte name on the line before the loop's
 *   perfmap_planted link DIR      a symbolic link to DIR/real.map, which holds the entry
 *   perfmap_planted owner UID     a regular file chown'd to UID (run as root)
 *   perfmap_planted fork          ours; then a forked child JITs "forked_loop" into a map of its own
 *                                 pid and spins ~1.5 s there ("child done")
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int write_map(const char *path, const unsigned char *jit, size_t size, int long_line)
{
	FILE *map = fopen(path, "w");
	if (!map)
		return -1;
	if (long_line) {
		fprintf(map, "%lx 1 py::", (unsigned long)(uintptr_t)(jit + 2048));
		for (int i = 0; i < 3000; i++)
			fputc('a' + i % 26, map);
		fputc('\n', map);
	}
	fprintf(map, "%lx %zx planted_loop\n", (unsigned long)(uintptr_t)jit, size);
	return fclose(map);
}

/* loop: dec rdi; jnz loop; ret */
static const unsigned char code[] = {0x48, 0xff, 0xcf, 0x75, 0xfb, 0xc3};

/* A new executable page holding the loop, or NULL. */
static unsigned char *jit_new(void)
{
	unsigned char *jit = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (jit == MAP_FAILED)
		return NULL;
	memcpy(jit, code, sizeof code);
	return mprotect(jit, 4096, PROT_READ | PROT_EXEC) == 0 ? jit : NULL;
}

/* Runs the JIT'd loop for ~1.5 s. */
static void spin(const unsigned char *jit)
{
	void (*loop)(uint64_t) = (void (*)(uint64_t))(uintptr_t)jit;
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	double spent = 0;
	while (spent < 1.5) {
		loop(50000000);
		clock_gettime(CLOCK_MONOTONIC, &b);
		spent = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
	}
}

/* The child of "fork": its own JIT page, named forked_loop in its own map. */
static int forked_child(void)
{
	unsigned char *jit = jit_new();
	char path[64];
	snprintf(path, sizeof path, "/tmp/perf-%d.map", (int)getpid());
	FILE *map = jit ? fopen(path, "w") : NULL;
	if (!map)
		return 1;
	fprintf(map, "%lx %zx forked_loop\n", (unsigned long)(uintptr_t)jit, sizeof code);
	fclose(map);
	spin(jit);
	unlink(path);
	printf("child done\n");
	fflush(stdout); /* _exit does not flush */
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	unsigned char *jit = jit_new();
	if (!jit)
		return 1;
	char path[64], real[4096];
	snprintf(path, sizeof path, "/tmp/perf-%d.map", (int)getpid());
	unlink(path);
	int rc = -1;
	if (strcmp(argv[1], "own") == 0 || strcmp(argv[1], "longline") == 0 || strcmp(argv[1], "fork") == 0) {
		rc = write_map(path, jit, sizeof code, argv[1][0] == 'l');
	} else if (strcmp(argv[1], "link") == 0 && argc > 2) {
		snprintf(real, sizeof real, "%s/real.map", argv[2]);
		rc = write_map(real, jit, sizeof code, 0) == 0 ? symlink(real, path) : -1;
	} else if (strcmp(argv[1], "owner") == 0 && argc > 2) {
		rc = write_map(path, jit, sizeof code, 0) == 0 ? chown(path, (uid_t)atoi(argv[2]), (gid_t)-1)
		                                               : -1;
	}
	if (rc != 0) {
		perror("perfmap_planted");
		unlink(path);
		return 1;
	}
	spin(jit);
	if (strcmp(argv[1], "fork") == 0) {
		fflush(stdout);
		pid_t child = fork();
		if (child == 0)
			_exit(forked_child());
		int status = 1;
		if (child < 0 || waitpid(child, &status, 0) != child || status != 0)
			rc = 1;
	}
	unlink(path);
	printf("jit done\n");
	return rc;
}
