/*
 * Test library (fork_loader_lock): its constructor runs inside dlopen, which holds the dynamic
 * loader's lock meanwhile; it creates $SLOW_CTOR_FLAG (so the loader knows it is inside) and spins
 * for $SLOW_CTOR_MS (default 1500) without calling anything a collector wraps. The flag is created
 * new (O_EXCL, O_NOFOLLOW): a name planted in /tmp by another user is never written through.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

__attribute__((constructor)) static void slow_ctor(void)
{
	const char *flag = getenv("SLOW_CTOR_FLAG");
	const char *ms_text = getenv("SLOW_CTOR_MS");
	long ms = ms_text ? atol(ms_text) : 1500;
	if (flag) {
		/* The raw system calls: a collector's open/close wrappers are not in the way. */
		long fd = syscall(SYS_openat, AT_FDCWD, flag,
		                  O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd >= 0)
			syscall(SYS_close, fd);
	}
	struct timespec start, now;
	clock_gettime(CLOCK_MONOTONIC, &start);
	do
		clock_gettime(CLOCK_MONOTONIC, &now);
	while ((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000 < ms);
}
