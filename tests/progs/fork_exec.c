/*
 * Test target for child processes.
 *   fork_exec          parent: "parent.before" x2, fork; the child execs this program with
 *                      argument "child"; the parent waits, then "parent.after" x1.
 *   fork_exec noexec   the same, but the child does not exec: it runs "forked.range" x2 in the
 *                      copy of the parent (the collector inherited, like a DataLoader worker).
 *   fork_exec child    (exec'd child) "child.range" x5, "child.mark" x1 (Mark), exit 3.
 * The parent prints "parent P child C status S" (S = the child's exit code).
 */
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Sleeps for ms milliseconds, restarting after signals. */
static void sleep_ms(long ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) != 0)
		;
}

static int run_child(void)
{
	for (int i = 0; i < 5; i++) {
		nvtxRangePushA("child.range");
		sleep_ms(2);
		nvtxRangePop();
	}
	nvtxMarkA("child.mark");
	sleep_ms(200);
	return 3;
}

int main(int argc, char **argv)
{
	int noexec = argc > 1 && strcmp(argv[1], "noexec") == 0;
	int status = 0;
	pid_t child;

	if (argc > 1 && strcmp(argv[1], "child") == 0)
		return run_child();

	for (int i = 0; i < 2; i++) {
		nvtxRangePushA("parent.before");
		sleep_ms(2);
		nvtxRangePop();
	}
	fflush(stdout);
	child = fork();
	if (child < 0) {
		perror("fork_exec: fork");
		return 1;
	}
	if (child == 0) {
		if (noexec) {
			for (int i = 0; i < 2; i++) {
				nvtxRangePushA("forked.range");
				sleep_ms(2);
				nvtxRangePop();
			}
			sleep_ms(200);
			exit(4);
		}
		execl("/proc/self/exe", argv[0], "child", (char *)NULL);
		perror("fork_exec: exec");
		_exit(127);
	}
	if (waitpid(child, &status, 0) != child) {
		perror("fork_exec: waitpid");
		return 1;
	}
	nvtxRangePushA("parent.after");
	sleep_ms(2);
	nvtxRangePop();
	printf("parent %d child %d status %d\n", (int)getpid(), (int)child,
	       WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
	sleep_ms(100);
	return 0;
}
