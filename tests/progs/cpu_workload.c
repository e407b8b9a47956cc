/*
 * CPU-side test target with known truth, one named thread per behaviour:
 *   hotspin  ~1 s of CPU in cuscope_hot_spin (its samples' leaf)
 *   sleeper  nanosleep 20 ms x 5
 *   reader   read() on a pipe, blocked ~30 ms x 3 by "writer", which sleeps then writes one byte
 *   waiter   pthread_mutex_lock contended ~20 ms x 4 ("locker" holds the mutex 20 ms each round)
 * usage: cpu_workload [hot|osrt|all]  (default all). Prints "tid NAME TID" for each thread it ran.
 */
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Names the thread and prints its tid with one write(): no lock that could be contended and be
 * counted as one more blocking pthread_mutex_lock. */
static void announce(const char *name)
{
	char line[64];
	pthread_setname_np(pthread_self(), name);
	int n = snprintf(line, sizeof line, "tid %s %ld\n", name, (long)syscall(SYS_gettid));
	if (write(1, line, (size_t)n) != n)
		perror("write");
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0)
		;
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

volatile uint64_t hot_sink;

/* Spins until this thread has used `ns` of CPU; the samples' leaf is this function. */
__attribute__((noinline)) void cuscope_hot_spin(uint64_t ns)
{
	uint64_t end = thread_cpu_ns() + ns;
	uint64_t x = 1;
	for (;;) {
		for (int i = 0; i < 2000000; i++)
			x = x * 6364136223846793005ull + 1442695040888963407ull;
		hot_sink = x;
		if (thread_cpu_ns() >= end)
			break;
	}
}

static void *hot_main(void *arg)
{
	(void)arg;
	announce("hotspin");
	cuscope_hot_spin(1000000000ull);
	return NULL;
}

static void *sleeper_main(void *arg)
{
	(void)arg;
	announce("sleeper");
	for (int i = 0; i < 5; i++) {
		struct timespec ts = {0, 20000000L};
		nanosleep(&ts, NULL);
	}
	return NULL;
}

static int pipe_fd[2];
static sem_t reader_ready;

static void *reader_main(void *arg)
{
	(void)arg;
	announce("reader");
	for (int i = 0; i < 3; i++) {
		char c;
		sem_post(&reader_ready);
		if (read(pipe_fd[0], &c, 1) != 1)
			perror("read");
	}
	return NULL;
}

static void *writer_main(void *arg)
{
	(void)arg;
	announce("writer");
	for (int i = 0; i < 3; i++) {
		while (sem_wait(&reader_ready) != 0)
			;
		sleep_ms(30);
		if (write(pipe_fd[1], "x", 1) != 1)
			perror("write");
	}
	return NULL;
}

static pthread_mutex_t contended = PTHREAD_MUTEX_INITIALIZER;
static sem_t lock_held, lock_done;

static void *locker_main(void *arg)
{
	(void)arg;
	announce("locker");
	for (int i = 0; i < 4; i++) {
		pthread_mutex_lock(&contended);
		sem_post(&lock_held);
		sleep_ms(20);
		pthread_mutex_unlock(&contended);
		while (sem_wait(&lock_done) != 0)
			;
	}
	return NULL;
}

static void *waiter_main(void *arg)
{
	(void)arg;
	announce("waiter");
	for (int i = 0; i < 4; i++) {
		while (sem_wait(&lock_held) != 0)
			;
		pthread_mutex_lock(&contended);
		pthread_mutex_unlock(&contended);
		sem_post(&lock_done);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "all";
	int hot = strcmp(mode, "osrt") != 0, osrt = strcmp(mode, "hot") != 0;
	pthread_t t[6];
	int n = 0;
	if (pipe(pipe_fd) != 0 || sem_init(&reader_ready, 0, 0) || sem_init(&lock_held, 0, 0) ||
	    sem_init(&lock_done, 0, 0)) {
		perror("setup");
		return 2;
	}
	announce("main");
	if (hot)
		pthread_create(&t[n++], NULL, hot_main, NULL);
	if (osrt) {
		pthread_create(&t[n++], NULL, sleeper_main, NULL);
		pthread_create(&t[n++], NULL, reader_main, NULL);
		pthread_create(&t[n++], NULL, writer_main, NULL);
		pthread_create(&t[n++], NULL, locker_main, NULL);
		pthread_create(&t[n++], NULL, waiter_main, NULL);
	}
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	char line[32];
	int len = snprintf(line, sizeof line, "done %s\n", mode);
	return write(1, line, (size_t)len) == len ? 0 : 1;
}
