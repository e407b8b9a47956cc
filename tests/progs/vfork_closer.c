/*
 * Test target: vfork children that close every inherited fd before exec, as Python's subprocess
 * and posix_spawn do (close_range(3, ~0U, 0), then close and dup2 in the child). A vfork child
 * shares the parent's memory but has its own fd table, so what it closes must not count as the
 * parent closing the collector's fds (it would drop them unclosed and make new ones: leaked). NVTX
 * marks before, between and after the children; prints "marks N", "children N", and the number of
 * open fds after the first child and at the end ("fds_first N", "fds_last N").
 *   vfork_closer [CHILDREN]
 */
#include <nvtx3/nvToolsExt.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* One child: vfork, close everything inherited, exec. Its own function: the child shares this
 * frame until exec, and main's locals stay out of it. */
static void spawn_closer(void)
{
	pid_t pid = vfork();
	if (pid == 0) {
		dup2(0, 100);
		close(100);
		close_range(3, ~0U, 0);
		execl("/bin/true", "true", (char *)NULL);
		_exit(127);
	}
	if (pid > 0)
		waitpid(pid, NULL, 0);
}

static int open_fds(void)
{
	int n = 0;
	for (int fd = 0; fd < 4096; fd++)
		n += fcntl(fd, F_GETFD) >= 0;
	return n;
}

int main(int argc, char **argv)
{
	int children = argc > 1 ? atoi(argv[1]) : 20;
	int marks = 0, fds_first = -1;
	struct timespec pause = {0, 20 * 1000000L};
	for (int i = 0; i < children; i++) {
		nvtxMarkA("vfork_closer.mark");
		marks++;
		spawn_closer();
		nanosleep(&pause, NULL);
		if (i == 0)
			fds_first = open_fds();
	}
	for (int i = 0; i < 50; i++) {
		nvtxMarkA("vfork_closer.mark");
		marks++;
		nanosleep(&pause, NULL);
	}
	printf("marks %d\nchildren %d\nfds_first %d\nfds_last %d\n", marks, children, fds_first, open_fds());
	return 0;
}
