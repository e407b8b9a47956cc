/*
 * Test target: forks while another thread holds one of the dynamic loader's locks, so the child
 * inherits that lock held for good: `iterate` (default) sits inside a dl_iterate_phdr callback for
 * HOLD_MS; `dlopen LIB` sits in dlopen of LIB (tests/progs/lib/slow_ctor.so) while its constructor
 * spins. The child
 * then makes a wrapped call its parent never made (fdatasync) and a blocking call long enough to
 * be recorded with its stack (nanosleep 300 ms), and exits 0; it must never touch the loader itself. The
 * parent waits for it at most 10 s and exits 0 if it ended, 1 if it hung (then kills it). fork_loader_lock
 * [HOLD_MS [dlopen LIB]]   (HOLD_MS default 1500) Prints "pid P", then "child C exited" or "child C hung".
 */
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static atomic_int holding;
static long hold_ms = 1500;
static const char *slow_lib; /* dlopen mode: the library whose constructor spins */
static char flag_path[256];

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0)
		;
}

static int hold_lock(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)info;
	(void)size;
	(void)data;
	atomic_store(&holding, 1);
	/* Spins rather than sleeps: nothing the collector wraps is called with the lock held. */
	struct timespec start, now;
	clock_gettime(CLOCK_MONOTONIC, &start);
	do
		clock_gettime(CLOCK_MONOTONIC, &now);
	while ((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000 < hold_ms);
	return 1;
}

static void *holder_main(void *arg)
{
	(void)arg;
	if (slow_lib)
		dlopen(slow_lib, RTLD_NOW);
	else
		dl_iterate_phdr(hold_lock, NULL);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		hold_ms = atol(argv[1]);
	if (argc > 3 && strcmp(argv[2], "dlopen") == 0) {
		slow_lib = argv[3];
		char ms[32];
		snprintf(ms, sizeof ms, "%ld", hold_ms);
		snprintf(flag_path, sizeof flag_path, "/tmp/fork_loader_lock.%d", (int)getpid());
		setenv("SLOW_CTOR_MS", ms, 1);
		setenv("SLOW_CTOR_FLAG", flag_path, 1);
	}
	printf("pid %d\n", (int)getpid());
	fflush(stdout);
	/* Let the collector start its sampling and symbolizing first. */
	sleep_ms(300);
	pthread_t holder;
	if (pthread_create(&holder, NULL, holder_main, NULL) != 0)
		return 2;
	while (!atomic_load(&holding) && !(slow_lib && access(flag_path, F_OK) == 0))
		sleep_ms(1);
	if (slow_lib)
		unlink(flag_path);
	pid_t child = fork();
	if (child < 0)
		return 2;
	if (child == 0) {
		/* A wrapped call the parent never made: its libc function is not looked up now. */
		fdatasync(-1);
		sleep_ms(300); /* a blocking call: recorded with its stack */
		_exit(0);
	}
	int status = 0;
	for (int i = 0; i < 1000; i++) {
		if (waitpid(child, &status, WNOHANG) == child) {
			printf("child %d exited\n", (int)child);
			pthread_join(holder, NULL);
			return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
		}
		sleep_ms(10);
	}
	printf("child %d hung\n", (int)child);
	kill(child, SIGKILL);
	waitpid(child, &status, 0);
	pthread_join(holder, NULL);
	return 1;
}
