/*
 * Test target for exec under CPU sampling: `exec_loop N [BUSY_US]` burns BUSY_US (default 3000) µs
 * of CPU time, then replaces itself with `exec_loop N-1`, cycling through every exec variant
 * (execv, execve, execvp, execvpe, execl, execle, execlp, fexecve, execveat); generation 0 exits
 * 7. The second half of the busy time runs with every signal blocked (as launchers do around an
 * exec), so a sampler signal that fires then is still pending at the exec; the new image unblocks
 * everything first thing. A sampler signal left pending across an exec kills a generation (the
 * default action of a real-time signal), so the launcher sees a signal instead of 7. The mask set
 * before the exec must arrive unchanged in the new image: a generation exits 9 if it differs.
 * Each generation first tries an exec that fails (ENOENT, else it exits 5) and carries on.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* CPU time of this thread, ns. */
static long long cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* 1 if the blocked set is what the previous generation set: sigfillset (the kernel never
 * blocks SIGKILL and SIGSTOP). */
static int mask_is_full(void)
{
	sigset_t cur, full;
	sigprocmask(SIG_SETMASK, NULL, &cur);
	sigfillset(&full);
	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP && sigismember(&cur, sig) != sigismember(&full, sig))
			return 0;
	return 1;
}

/* Burns us microseconds of this thread's CPU time. */
static void busy(long us)
{
	volatile unsigned long x = 0;
	long long until = cpu_ns() + us * 1000LL;
	while (cpu_ns() < until)
		for (int i = 0; i < 1000; i++)
			x += (unsigned long)i;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	long n = strtol(argv[1], NULL, 10);
	long busy_us = argc > 2 ? strtol(argv[2], NULL, 10) : 3000;
	const char *checked = argc > 3 ? argv[3] : "0";
	if (strcmp(checked, "1") == 0 && !mask_is_full()) {
		fprintf(stderr, "exec_loop: generation %ld: signal mask changed across exec\n", n);
		return 9;
	}
	sigset_t set;
	sigemptyset(&set);
	sigprocmask(SIG_SETMASK, &set, NULL);
	busy(busy_us / 2);
	if (n <= 0)
		return 7;
	sigfillset(&set);
	sigprocmask(SIG_SETMASK, &set, NULL);
	busy(busy_us - busy_us / 2);
	char next[32], busy_arg[32];
	snprintf(next, sizeof next, "%ld", n - 1);
	snprintf(busy_arg, sizeof busy_arg, "%ld", busy_us);
	char exe[4096];
	ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (len <= 0)
		return 3;
	exe[len] = '\0';
	char *args[] = {argv[0], next, busy_arg, "1", NULL};
	/* A failed exec first: the program carries on (sampled again), errno as the exec set it. */
	errno = 0;
	if (execv("/nonexistent/exec_loop", args) == 0 || errno != ENOENT) {
		fprintf(stderr, "exec_loop: a failed exec returned errno %d, want ENOENT\n", errno);
		return 5;
	}
	switch (n % 9) {
	case 0:
		execv(exe, args);
		break;
	case 1:
		execve(exe, args, environ);
		break;
	case 2:
		execvp(exe, args);
		break;
	case 3:
		execvpe(exe, args, environ);
		break;
	case 4:
		execl(exe, argv[0], next, busy_arg, "1", (char *)NULL);
		break;
	case 5:
		execle(exe, argv[0], next, busy_arg, "1", (char *)NULL, environ);
		break;
	case 6:
		execlp(exe, argv[0], next, busy_arg, "1", (char *)NULL);
		break;
	case 7: {
		int fd = open(exe, O_RDONLY | O_CLOEXEC);
		if (fd >= 0)
			fexecve(fd, args, environ);
		break;
	}
	default:
		execveat(AT_FDCWD, exe, args, environ, 0);
		break;
	}
	fprintf(stderr, "exec_loop: exec failed: %s\n", strerror(errno));
	return 4;
}
