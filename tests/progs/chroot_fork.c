/*
 * Test target for collector messages in a confined child: chroots into DIR (root only), then
 * forks a child that marks one NVTX range and exits 0; the parent waits and exits with the
 * child's status. Inside the chroot the session directory cannot be reached, so the child's
 * collector cannot listen: whatever it has to say must not land on the program's stderr.
 *   chroot_fork DIR
 */
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <string.h>
#include <errno.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: chroot_fork DIR\n");
		return 2;
	}
	nvtxMarkA("chroot_fork.parent");
	if (chroot(argv[1]) != 0 || chdir("/") != 0) {
		printf("chroot_fork: chroot %s: %s\n", argv[1], strerror(errno));
		return 3;
	}
	fflush(stdout);
	pid_t child = fork();
	if (child < 0)
		return 4;
	if (child == 0) {
		nvtxMarkA("chroot_fork.child");
		printf("chroot_fork: child %d done\n", (int)getpid());
		return 0;
	}
	int status = 0;
	if (waitpid(child, &status, 0) != child)
		return 5;
	printf("chroot_fork: parent done\n");
	return WIFEXITED(status) ? WEXITSTATUS(status) : 6;
}
