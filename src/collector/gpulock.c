/* The per-GPU sampler lock (see gpulock.h): an flock'd file per GPU UUID in the session root. */
#include "gpulock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

void gpulock_name(const uint8_t uuid[16], char out[48])
{
	static const char hex[] = "0123456789abcdef";
	char *p = out + sprintf(out, "gpu-");
	for (int i = 0; i < 16; i++) {
		*p++ = hex[uuid[i] >> 4];
		*p++ = hex[uuid[i] & 15];
	}
	strcpy(p, ".lock");
}

/* The pid a holder wrote into the file, 0 when unreadable. */
static pid_t gpulock_holder(int fd)
{
	char buf[24];
	ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	long pid = strtol(buf, NULL, 10);
	return pid > 0 && pid < (1l << 22) ? (pid_t)pid : 0;
}

int gpulock_take(int dir, const uint8_t uuid[16], pid_t *holder)
{
	char name[48];
	gpulock_name(uuid, name);
	*holder = 0;
	int fd = openat(dir, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0600);
	if (fd < 0)
		return -errno;
	struct stat st;
	/* Only a regular file of ours: the directory is private, this is belt and braces. */
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || st.st_nlink != 1) {
		close(fd);
		return -EPERM;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		int err = errno;
		*holder = gpulock_holder(fd);
		close(fd);
		return err == EWOULDBLOCK ? -EBUSY : -err;
	}
	char pid[24];
	int n = snprintf(pid, sizeof pid, "%d\n", (int)getpid());
	if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)n, 0) != n) {
		/* The pid is only for messages: the lock holds without it. */
	}
	return fd;
}
