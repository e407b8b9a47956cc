/*
 * The exec family, interposed (LD_PRELOAD): before the process image is replaced every source's
 * before_exec runs (source.h); the sampler's stops it and takes its pending signals (a real-time signal of
 * ours pending across an exec would kill the new image: its handler is gone, the default action terminates);
 * a failed exec carries on sampling. glibc's exec functions call its internal execve directly, so each one is
 * wrapped. posix_spawn, system and popen replace a child made by clone, which inherits neither timers nor
 * pending signals: nothing to do there. A vfork child shares our memory but not our timers: the
 * sampler leaves it alone (its pid differs).
 */
#include "collector.h"
#include "source.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <unistd.h>

/* Before the real exec (every source's before_exec); returns what exec_after needs. errno is kept. */
static unsigned exec_before(void)
{
	int saved_errno = errno;
	/* Inside the collector: the sampler lock is not a blocking call of the program's. */
	int was = collector_thread_enter();
	unsigned held = source_each_before_exec();
	collector_thread_restore(was);
	errno = saved_errno;
	return held;
}

/* After an exec that returned (it failed): sampling goes on. errno is kept. */
static void exec_after(unsigned held)
{
	if (!held)
		return;
	int saved_errno = errno;
	int was = collector_thread_enter();
	source_each_after_exec(held);
	collector_thread_restore(was);
	errno = saved_errno;
}

/* The libc function behind ours; -1/ENOSYS when there is none. */
#define EXEC_REAL(fn)                                                                                        \
	static __typeof__(fn) *real_##fn;                                                                    \
	if (!real_##fn)                                                                                      \
		real_##fn = (__typeof__(fn) *)collector_real(#fn);                                           \
	if (!real_##fn) {                                                                                    \
		errno = ENOSYS;                                                                              \
		return -1;                                                                                   \
	}

/* Runs call between exec_before and exec_after; an exec that returns has failed. */
#define EXEC_WRAP(call)                                                                                      \
	do {                                                                                                 \
		unsigned held = exec_before();                                                               \
		int rc = call;                                                                               \
		exec_after(held);                                                                            \
		return rc;                                                                                   \
	} while (0)

COLLECTOR_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	EXEC_REAL(execve);
	EXEC_WRAP(real_execve(path, argv, envp));
}

COLLECTOR_EXPORT int execv(const char *path, char *const argv[])
{
	EXEC_REAL(execv);
	EXEC_WRAP(real_execv(path, argv));
}

COLLECTOR_EXPORT int execvp(const char *file, char *const argv[])
{
	EXEC_REAL(execvp);
	EXEC_WRAP(real_execvp(file, argv));
}

COLLECTOR_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	EXEC_REAL(execvpe);
	EXEC_WRAP(real_execvpe(file, argv, envp));
}

COLLECTOR_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	EXEC_REAL(fexecve);
	EXEC_WRAP(real_fexecve(fd, argv, envp));
}

COLLECTOR_EXPORT int execveat(int dirfd, const char *path, char *const argv[], char *const envp[], int flags)
{
	EXEC_REAL(execveat);
	EXEC_WRAP(real_execveat(dirfd, path, argv, envp, flags));
}

/* Counts the arguments after arg0 up to the terminating NULL (execl*). */
static size_t exec_count_args(const char *arg0, va_list ap)
{
	size_t n = 1;
	if (!arg0)
		return 0;
	while (va_arg(ap, const char *))
		n++;
	return n;
}

/* Fills argv (n + 1 slots) from arg0 and ap, through the terminating NULL; for execle
 * (want_envp) returns the environment that follows it. */
static char *const *exec_fill_args(char **argv, size_t n, const char *arg0, va_list ap, int want_envp)
{
	argv[0] = (char *)arg0;
	for (size_t i = 1; i < n; i++)
		argv[i] = va_arg(ap, char *);
	if (n)
		(void)va_arg(ap, char *); /* the NULL */
	argv[n] = NULL;
	return want_envp ? va_arg(ap, char *const *) : NULL;
}

/* execl, execlp and execle build the vector like glibc's do, then call the vector form. */
COLLECTOR_EXPORT int execl(const char *path, const char *arg, ...)
{
	EXEC_REAL(execv);
	va_list ap;
	va_start(ap, arg);
	size_t n = exec_count_args(arg, ap);
	va_end(ap);
	char *argv[n + 1];
	va_start(ap, arg);
	exec_fill_args(argv, n, arg, ap, 0);
	va_end(ap);
	EXEC_WRAP(real_execv(path, argv));
}

COLLECTOR_EXPORT int execlp(const char *file, const char *arg, ...)
{
	EXEC_REAL(execvp);
	va_list ap;
	va_start(ap, arg);
	size_t n = exec_count_args(arg, ap);
	va_end(ap);
	char *argv[n + 1];
	va_start(ap, arg);
	exec_fill_args(argv, n, arg, ap, 0);
	va_end(ap);
	EXEC_WRAP(real_execvp(file, argv));
}

COLLECTOR_EXPORT int execle(const char *path, const char *arg, ...)
{
	EXEC_REAL(execve);
	va_list ap;
	va_start(ap, arg);
	size_t n = exec_count_args(arg, ap);
	va_end(ap);
	char *argv[n + 1];
	va_start(ap, arg);
	char *const *envp = exec_fill_args(argv, n, arg, ap, 1);
	va_end(ap);
	EXEC_WRAP(real_execve(path, argv, envp));
}
