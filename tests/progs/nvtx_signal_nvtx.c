/*
 * Test target for NVTX calls from a signal handler that interrupts NVTX calls of the same thread:
 * the main thread makes "main" push/pop pairs (BATCHES x 1000, a short pause after each batch so
 * the collector keeps up) while another thread sends it SIGUSR1 every 20 us; the handler makes one
 * "sig" push/pop pair. Prints "pid P", "main N" and "sig M" (pairs made).
 *   nvtx_signal_nvtx [BATCHES]
 */
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static atomic_long sig_pairs;
static atomic_int stop;
static pthread_t main_thread;

static void on_usr1(int sig)
{
	(void)sig;
	nvtxRangePushA("sig");
	nvtxRangePop();
	atomic_fetch_add(&sig_pairs, 1);
}

static void *killer(void *arg)
{
	(void)arg;
	struct timespec gap = {0, 20000};
	while (!atomic_load(&stop)) {
		pthread_kill(main_thread, SIGUSR1);
		nanosleep(&gap, NULL);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	long batches = argc > 1 ? atol(argv[1]) : 1000;
	if (batches <= 0)
		return 2;
	printf("pid %d\n", (int)getpid());
	main_thread = pthread_self();
	nvtxRangePushA("main"); /* the thread's ring exists before the first signal */
	nvtxRangePop();
	long main_pairs = 1;
	struct sigaction sa = {.sa_handler = on_usr1, .sa_flags = SA_RESTART};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	pthread_t th;
	pthread_create(&th, NULL, killer, NULL);
	struct timespec pause = {0, 300000};
	for (long b = 0; b < batches; b++) {
		for (int i = 0; i < 1000; i++) {
			nvtxRangePushA("main");
			nvtxRangePop();
		}
		main_pairs += 1000;
		while (nanosleep(&pause, &pause) != 0)
			;
		pause.tv_nsec = 300000;
	}
	atomic_store(&stop, 1);
	pthread_join(th, NULL);
	signal(SIGUSR1, SIG_IGN);
	printf("main %ld\nsig %ld\n", main_pairs, (long)atomic_load(&sig_pairs));
	return 0;
}
