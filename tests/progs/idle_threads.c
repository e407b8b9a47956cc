/*
 * Test target for idle-thread folding: N threads "idle-0".."idle-(N-1)" (default 12), each blocked on
 * a condition variable and mutex of its own from the start, so they produce no event, while the main thread
 * "busy-main" does "busy" NVTX ranges. Each SIGUSR1 wakes the next idle thread once: it does one "woke" range
 * and blocks again. Runs until SECONDS pass (default 30) or SIGINT/SIGTERM; prints "pid P" at start
 * (flushed). idle_threads [-n THREADS] [-t SECONDS]
 */
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define MAX_IDLE 64

/* One each: a thread starting, waiting or woken never contends for another's lock (a contended lock
 * is a blocking-call event, which would end its idleness). */
struct slot {
	pthread_mutex_t lock;
	pthread_cond_t wake;
	int wakes;    /* wake-ups asked, under lock */
	int stopping; /* under lock */
};

static struct slot slots[MAX_IDLE];
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
	struct slot *s = &slots[index];
	char name[16];
	snprintf(name, sizeof name, "idle-%d", index);
	pthread_setname_np(pthread_self(), name);
	pthread_mutex_lock(&s->lock);
	while (!s->stopping) {
		if (s->wakes) {
			s->wakes--;
			pthread_mutex_unlock(&s->lock);
			nvtxRangePushA("woke");
			nvtxRangePop();
			pthread_mutex_lock(&s->lock);
			continue;
		}
		pthread_cond_wait(&s->wake, &s->lock);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

/* Asks thread index to wake (stop: to end). */
static void slot_poke(int index, int stop)
{
	struct slot *s = &slots[index];
	pthread_mutex_lock(&s->lock);
	if (stop)
		s->stopping = 1;
	else
		s->wakes++;
	pthread_cond_signal(&s->wake);
	pthread_mutex_unlock(&s->lock);
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
	for (int i = 0; i < n; i++) {
		pthread_mutex_init(&slots[i].lock, NULL);
		pthread_cond_init(&slots[i].wake, NULL);
	}
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
		if (got_usr1 > woken && n > 0)
			slot_poke(woken++ % n, 0);
	}
	for (int i = 0; i < n; i++)
		slot_poke(i, 1);
	for (int i = 0; i < n; i++)
		pthread_join(threads[i], NULL);
	return got_stop ? 3 : 0;
}
