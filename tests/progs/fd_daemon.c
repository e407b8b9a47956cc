/*
 * Test target for fd ownership: behaves like a daemon that closes every inherited fd (3..1023)
 * at start, then opens DIR/f0..f15 (they get the freed numbers, the collector's among them) and
 * for SECONDS rewrites and rereads each file through its own offset with known content, also
 * emitting NVTX marks. Any byte read from its files by someone else, a file closed behind its
 * back or swapped, shows up as a mismatch. At the end prints "fd_daemon: ok" (exit 0) or the first
 * problem (exit 1), and the CPU time the collector's sender thread used so far as "sender_cpu_ms N".
 *   fd_daemon DIR SECONDS
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define FILES 16
#define BYTES 4096

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* utime+stime of the thread named cuscope-sender, in ms; -1 if there is none. */
static long sender_cpu_ms(void)
{
	DIR *d = opendir("/proc/self/task");
	long ms = -1;
	struct dirent *de;
	while (d && (de = readdir(d))) {
		char path[300], buf[1024];
		snprintf(path, sizeof path, "/proc/self/task/%s/stat", de->d_name);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		size_t n = fread(buf, 1, sizeof buf - 1, f);
		fclose(f);
		buf[n] = '\0';
		char *p = strrchr(buf, ')');
		if (!strstr(buf, "(cuscope-sender)") || !p)
			continue;
		unsigned long utime = 0, stime = 0;
		/* fields after ')': state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt
		 * utime stime */
		if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime, &stime) == 2)
			ms = (long)((utime + stime) * 1000 / (unsigned long)sysconf(_SC_CLK_TCK));
	}
	if (d)
		closedir(d);
	return ms;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: fd_daemon DIR SECONDS\n");
		return 2;
	}
	for (int fd = 3; fd < 1024; fd++)
		close(fd);
	int fds[FILES];
	struct stat ids[FILES];
	for (int i = 0; i < FILES; i++) {
		char path[4096];
		snprintf(path, sizeof path, "%s/f%d", argv[1], i);
		fds[i] = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
		if (fds[i] < 0 || fstat(fds[i], &ids[i]) != 0) {
			printf("fd_daemon: open %s: %s\n", path, strerror(errno));
			return 1;
		}
	}
	printf("fd_daemon: files on fds %d..%d\n", fds[0], fds[FILES - 1]);
	fflush(stdout);
	double end = now_s() + atof(argv[2]);
	unsigned round = 0;
	char want[BYTES], got[BYTES];
	while (now_s() < end) {
		round++;
		nvtxMarkA("fd_daemon.round");
		for (int i = 0; i < FILES; i++) {
			memset(want, 'a' + (int)((round + (unsigned)i) % 26), sizeof want);
			struct stat st;
			if (fstat(fds[i], &st) != 0 || st.st_ino != ids[i].st_ino ||
			    st.st_dev != ids[i].st_dev) {
				printf("fd_daemon: fd %d is no longer f%d (closed or swapped)\n", fds[i], i);
				return 1;
			}
			if (lseek(fds[i], 0, SEEK_SET) != 0 || write(fds[i], want, BYTES) != BYTES ||
			    lseek(fds[i], 0, SEEK_CUR) != BYTES) {
				printf("fd_daemon: f%d: write or offset wrong (%s)\n", i, strerror(errno));
				return 1;
			}
			if (lseek(fds[i], 0, SEEK_SET) != 0 || read(fds[i], got, BYTES) != BYTES ||
			    memcmp(got, want, BYTES) != 0 || lseek(fds[i], 0, SEEK_CUR) != BYTES) {
				printf("fd_daemon: f%d: content or offset changed behind the program\n", i);
				return 1;
			}
		}
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
	printf("sender_cpu_ms %ld\n", sender_cpu_ms());
	printf("rounds %u\n", round);
	printf("fd_daemon: ok\n");
	return 0;
}
