/*
 * The libc functions behind the collector's wrappers, looked up once when the collector is loaded.
 * A wrapper first called in a forked child must not look its function up then: dlsym takes the
 * dynamic loader's lock, which the child inherits held for good when another thread of the parent
 * held it at the fork (collector_loader_usable). Names not in the table are looked up when asked
 * (only while the loader is usable).
 */
#include "collector.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <string.h>

struct real_fn {
	const char *name;
	const char *version; /* dlvsym's version, or NULL for the default symbol */
	void *fn;
};

static struct real_fn reals[] = {
    {"_exit", NULL, NULL},
    {"accept", NULL, NULL},
    {"accept4", NULL, NULL},
    {"clock_nanosleep", NULL, NULL},
    {"close", NULL, NULL},
    {"close_range", NULL, NULL},
    {"closefrom", NULL, NULL},
    {"connect", NULL, NULL},
    {"dup2", NULL, NULL},
    {"dup3", NULL, NULL},
    {"epoll_pwait", NULL, NULL},
    {"epoll_wait", NULL, NULL},
    {"execve", NULL, NULL},
    {"execveat", NULL, NULL},
    {"execvpe", NULL, NULL},
    {"execvp", NULL, NULL},
    {"execv", NULL, NULL},
    {"execl", NULL, NULL},
    {"execle", NULL, NULL},
    {"execlp", NULL, NULL},
    {"fexecve", NULL, NULL},
    {"fdatasync", NULL, NULL},
    {"fsync", NULL, NULL},
    {"nanosleep", NULL, NULL},
    {"poll", NULL, NULL},
    {"ppoll", NULL, NULL},
    {"prctl", NULL, NULL},
    {"pread64", NULL, NULL},
    {"pselect", NULL, NULL},
    {"pthread_cond_timedwait", "GLIBC_2.3.2", NULL},
    {"pthread_cond_timedwait", NULL, NULL},
    {"pthread_cond_wait", "GLIBC_2.3.2", NULL},
    {"pthread_cond_wait", NULL, NULL},
    {"pthread_mutex_lock", NULL, NULL},
    {"pthread_mutex_trylock", NULL, NULL},
    {"pthread_setname_np", NULL, NULL},
    {"pwrite64", NULL, NULL},
    {"read", NULL, NULL},
    {"readv", NULL, NULL},
    {"recv", NULL, NULL},
    {"recvfrom", NULL, NULL},
    {"recvmsg", NULL, NULL},
    {"select", NULL, NULL},
    {"sem_timedwait", NULL, NULL},
    {"sem_wait", NULL, NULL},
    {"send", NULL, NULL},
    {"sendmsg", NULL, NULL},
    {"sendto", NULL, NULL},
    {"sigaction", NULL, NULL},
    {"signal", NULL, NULL},
    {"signalfd", NULL, NULL},
    {"sigtimedwait", NULL, NULL},
    {"sleep", NULL, NULL},
    {"sysv_signal", NULL, NULL},
    {"usleep", NULL, NULL},
    {"wait4", NULL, NULL},
    {"waitpid", NULL, NULL},
    {"write", NULL, NULL},
    {"writev", NULL, NULL},
};

/* Runs before the program (and before any fork it makes); the collector's other constructors may
 * run first, and a lookup then simply takes the slow path. */
__attribute__((constructor)) static void collector_reals_resolve(void)
{
	for (size_t i = 0; i < sizeof reals / sizeof reals[0]; i++)
		reals[i].fn = reals[i].version ? dlvsym(RTLD_NEXT, reals[i].name, reals[i].version)
		                               : dlsym(RTLD_NEXT, reals[i].name);
}

void *collector_real_version(const char *name, const char *version)
{
	for (size_t i = 0; i < sizeof reals / sizeof reals[0]; i++)
		if (strcmp(reals[i].name, name) == 0 &&
		    (version ? reals[i].version && strcmp(reals[i].version, version) == 0
		             : !reals[i].version)) {
			if (reals[i].fn)
				return reals[i].fn;
			break;
		}
	if (!atomic_load(&collector_loader_usable))
		return NULL;
	return version ? dlvsym(RTLD_NEXT, name, version) : dlsym(RTLD_NEXT, name);
}

void *collector_real(const char *name)
{
	return collector_real_version(name, NULL);
}
