/*
 * Test target with known truth: named threads doing nested push/pop ranges, a rename through
 * prctl, a thread named only through NVTX, marks and one wide-character range.
 * Prints "pid P" and "tid NAME TID" lines so a test can match threads exactly.
 *
 * Expected NVTX rows (default domain):
 *   w1.outer 5, w1.inner 20 (>= 2 ms each), w1.leaf 5     worker-1
 *   w2.outer 3, w2.inner 6, w2.after 4                     worker-2, renamed renamed-2 before w2.after
 *   n.range 2                                              thread named by nvtxNameOsThreadA only
 *   tick 7 (Mark), "wide-µs-✓" 1                           main thread
 * Threads: main (comm nvtx_threads), worker-1, renamed-2, the NVTX-named one, idle-thread (no NVTX).
 */
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define W1_OUTER 5
#define W1_INNER 4
#define W2_OUTER 3
#define W2_INNER 2
#define W2_AFTER 4
#define MARKS    7

static pthread_barrier_t done_barrier; /* every thread waits here so all are alive together */

struct worker {
	const char *name;
	pid_t tid;
};

static struct worker workers[4] = {
    {.name = "worker-1"},
    {.name = "renamed-2"},
    {.name = "nvtx-named"},
    {.name = "idle-thread"},
};

/* Sleeps for ms milliseconds, restarting after signals. */
static void sleep_ms(long ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) != 0)
		;
}

static pid_t my_tid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

/* worker-1: outer x5 each holding inner x4; the first inner of each outer holds one leaf. */
static void *worker1(void *arg)
{
	struct worker *w = arg;

	w->tid = my_tid();
	pthread_setname_np(pthread_self(), "worker-1");
	for (int i = 0; i < W1_OUTER; i++) {
		nvtxRangePushA("w1.outer");
		for (int j = 0; j < W1_INNER; j++) {
			nvtxRangePushA("w1.inner");
			if (j == 0) {
				nvtxRangePushA("w1.leaf");
				nvtxRangePop();
			}
			sleep_ms(2);
			nvtxRangePop();
		}
		nvtxRangePop();
	}
	pthread_barrier_wait(&done_barrier);
	return NULL;
}

/* worker-2: named worker-2, nested ranges, then renamed renamed-2 with prctl and more ranges. */
static void *worker2(void *arg)
{
	struct worker *w = arg;

	w->tid = my_tid();
	pthread_setname_np(pthread_self(), "worker-2");
	for (int i = 0; i < W2_OUTER; i++) {
		nvtxRangePushA("w2.outer");
		for (int j = 0; j < W2_INNER; j++) {
			nvtxRangePushA("w2.inner");
			sleep_ms(1);
			nvtxRangePop();
		}
		nvtxRangePop();
	}
	prctl(PR_SET_NAME, "renamed-2", 0, 0, 0);
	for (int i = 0; i < W2_AFTER; i++) {
		nvtxRangePushA("w2.after");
		sleep_ms(20);
		nvtxRangePop();
	}
	pthread_barrier_wait(&done_barrier);
	return NULL;
}

/* A thread whose OS name is inherited; NVTX alone names it. */
static void *nvtx_named(void *arg)
{
	struct worker *w = arg;

	w->tid = my_tid();
	nvtxNameOsThreadA((uint32_t)w->tid, "nvtx-named");
	for (int i = 0; i < 2; i++) {
		nvtxRangePushA("n.range");
		sleep_ms(1);
		nvtxRangePop();
	}
	pthread_barrier_wait(&done_barrier);
	return NULL;
}

/* A named thread that emits no NVTX at all and lives for a while. */
static void *idle_thread(void *arg)
{
	struct worker *w = arg;

	w->tid = my_tid();
	pthread_setname_np(pthread_self(), "idle-thread");
	sleep_ms(600);
	pthread_barrier_wait(&done_barrier);
	return NULL;
}

int main(void)
{
	void *(*fns[4])(void *) = {worker1, worker2, nvtx_named, idle_thread};
	pthread_t th[4];

	pthread_barrier_init(&done_barrier, NULL, 5);
	for (int i = 0; i < 4; i++) {
		if (pthread_create(&th[i], NULL, fns[i], &workers[i]) != 0) {
			fprintf(stderr, "nvtx_threads: pthread_create failed\n");
			return 1;
		}
	}
	for (int i = 0; i < MARKS; i++) {
		nvtxMarkA("tick");
		sleep_ms(1);
	}
	nvtxRangePushW(L"wide-\u00b5s-\u2713");
	sleep_ms(1);
	nvtxRangePop();

	pthread_barrier_wait(&done_barrier);
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	printf("pid %d\n", (int)getpid());
	for (int i = 0; i < 4; i++)
		printf("tid %s %d\n", workers[i].name, (int)workers[i].tid);
	return 0;
}
