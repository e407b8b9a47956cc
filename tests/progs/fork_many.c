/*
 * Many short-lived children, then one killed: for the check that every process's stream ended
 * with its final counts (record warns about the killed one, however many came before it, and
 * whoever later has its pid).
 *
 *   fork_many N      N children that exit at once (one after another), a pause, then one child
 *                    that sleeps until it is SIGKILLed 1.5 s later (or, on a loaded machine, once
 *                    the viewer has connected to it, up to 20 s); prints "killed P"
 *   fork_many -r     one child SIGKILLed as above, reaped, then (root: through ns_last_pid)
 *                    children until one has the killed child's pid again, which exits normally;
 *                    prints "killed P" and "reused P" (or "noreuse" when the pid could not be had)
 * Exits 0.
 */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void nap(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

/* Sockets process p has open: its collector's listening socket, then the viewer's connection. */
static int socket_count(pid_t p)
{
	char dir[64];
	snprintf(dir, sizeof dir, "/proc/%d/fd", (int)p);
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	int count = 0;
	for (struct dirent *e; (e = readdir(d));) {
		char path[400], target[64];
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		ssize_t n = readlink(path, target, sizeof target - 1);
		count += n > 0 && strncmp(target, "socket:", 7) == 0;
	}
	closedir(d);
	return count;
}

/*
 * Forks a child that sleeps until killed, kills it after 1.5 s and reaps it; returns its pid. The
 * kill waits (up to 20 s) until the viewer has connected to the child's collector (a listening
 * socket and the accepted connection): on a loaded machine a viewer still busy with thousands of
 * earlier streams can take longer than 1.5 s to find it, and a child killed before leaves no
 * stream to check.
 */
static pid_t kill_one(void)
{
	pid_t p = fork();
	if (p == 0) {
		for (;;)
			pause();
	}
	nap(1500);
	for (int waited = 0; waited < 185 && socket_count(p) < 2; waited++)
		nap(100);
	nap(300);
	kill(p, SIGKILL);
	waitpid(p, NULL, 0);
	printf("killed %d\n", (int)p);
	fflush(stdout);
	return p;
}

/* Asks for pid next (root only); 0 when written. */
static int want_pid(pid_t next)
{
	FILE *f = fopen("/proc/sys/kernel/ns_last_pid", "w");
	if (!f)
		return -1;
	int ok = fprintf(f, "%d", (int)next - 1) > 0;
	return fclose(f) == 0 && ok ? 0 : -1;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: fork_many N | fork_many -r\n");
		return 2;
	}
	if (strcmp(argv[1], "-r") == 0) {
		pid_t killed = kill_one();
		for (int attempt = 0; attempt < 200; attempt++) {
			if (want_pid(killed) != 0)
				break;
			pid_t p = fork();
			if (p == 0) {
				if (getpid() == killed)
					nap(300); /* long enough for the viewer to connect */
				exit(0);
			}
			waitpid(p, NULL, 0);
			if (p == killed) {
				printf("reused %d\n", (int)p);
				return 0;
			}
		}
		printf("noreuse\n");
		return 0;
	}
	long n = strtol(argv[1], NULL, 10);
	for (long i = 0; i < n; i++) {
		pid_t p = fork();
		if (p == 0)
			exit(0);
		if (p < 0) {
			perror("fork");
			return 1;
		}
		waitpid(p, NULL, 0);
	}
	nap(1000);
	kill_one();
	return 0;
}
