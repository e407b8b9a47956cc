/*
 * Test target for idle-thread folding: N threads "idle-0".."idle-(N-1)" (default 12) blocked on a
 * condition variable from the start, so they produce no event, while the main thread "busy-main" does
 * "busy" NVTX ranges. Each SIGUSR1 wakes the next idle thread once: it does one "woke" range and blocks
 * again. Runs until SECONDS pass (default 30) or SIGINT/SIGTERM; prints "pid P" at start (flushed).
 *   idle_threads [-n THREADS] [-t SECONDS]
 */
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define MAX_IDLE 64

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake[MAX_IDLE]; /* one each: waking one thread leaves the others blocked */
static int wake_index = -1;           /* the thread to wake, under lock */
static int stopping;                  /* under lock */
static volatile sig_atomic_t got_usr1, got_stop;

static void on_usr1(int sig)
{
	(void)sig;
	got_usr1++;
}

static void on_stop(int sig)
{
	(void)sig;
	got_stop = 1;
}

static void *idle_thread(void *arg)
{
	int index = (int)(long)arg;
	char name[16];
	snprintf(name, sizeof name, "idle-%d", index);
	pthread_setname_np(pthread_self(), name);
	pthread_mutex_lock(&lock);
	while (!stopping) {
		if (wake_index == index) {
			wake_index = -1;
			pthread_mutex_unlock(&lock);
			nvtxRangePushA("woke");
			nvtxRangePop();
			pthread_mutex_lock(&lock);
			continue;
		}
		pthread_cond_wait(&wake[index], &lock);
	}
	pthread_mutex_unlock(&lock);
	return NULL;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	int n = 12, opt;
	double seconds = 30;
	while ((opt = getopt(argc, argv, "n:t:")) != -1) {
		if (opt == 'n')
			n = atoi(optarg);
		else if (opt == 't')
			seconds = atof(optarg);
		else
			return 2;
	}
	if (n < 0 || n > MAX_IDLE)
		return 2;
	signal(SIGUSR1, on_usr1);
	signal(SIGINT, on_stop);
	signal(SIGTERM, on_stop);
	pthread_setname_np(pthread_self(), "busy-main");
	pthread_t threads[MAX_IDLE];
	for (int i = 0; i < n; i++)
		pthread_cond_init(&wake[i], NULL);
	for (int i = 0; i < n; i++)
		pthread_create(&threads[i], NULL, idle_thread, (void *)(long)i);
	printf("pid %d\n", (int)getpid());
	fflush(stdout);
	double end = now_s() + seconds;
	int woken = 0;
	while (!got_stop && now_s() < end) {
		nvtxRangePushA("busy");
		double until = now_s() + 0.02;
		while (now_s() < until)
			;
		nvtxRangePop();
		struct timespec ts = {0, 10 * 1000000L};
		nanosleep(&ts, NULL);
		if (got_usr1 > woken && n > 0) {
			pthread_mutex_lock(&lock);
			wake_index = woken++ % n;
			pthread_cond_signal(&wake[wake_index]);
			pthread_mutex_unlock(&lock);
		}
	}
	pthread_mutex_lock(&lock);
	stopping = 1;
	for (int i = 0; i < n; i++)
		pthread_cond_signal(&wake[i]);
	pthread_mutex_unlock(&lock);
	for (int i = 0; i < n; i++)
		pthread_join(threads[i], NULL);
	return got_stop ? 3 : 0;
}
