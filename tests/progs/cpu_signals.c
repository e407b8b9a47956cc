/*
 * A program that must behave the same under `cuscope record` (CPU sampling on) as without:
 * its own SIGPROF and SIGALRM handlers driven by setitimer(ITIMER_PROF / ITIMER_REAL), 1,000
 * threads created and ended (50 at a time), a fork whose child execs this program again.
 * Prints only deterministic lines; "foreign N" counts SIGPROF/SIGALRM not sent by its itimers
 * (must be 0). Exits 3; the exec'd child exits 7.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static atomic_int prof_count, alrm_count, foreign_count, threads_done;

static void on_signal(int sig, siginfo_t *info, void *context)
{
	(void)context;
	/* setitimer signals come from the kernel; anything else was not ours. */
	if (info->si_code != SI_KERNEL)
		atomic_fetch_add(&foreign_count, 1);
	else if (sig == SIGPROF)
		atomic_fetch_add(&prof_count, 1);
	else
		atomic_fetch_add(&alrm_count, 1);
}

static uint64_t now_ns(clockid_t clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

volatile uint64_t sink;

static void *thread_main(void *arg)
{
	uint64_t x = (uintptr_t)arg;
	for (int i = 0; i < 1000; i++)
		x = x * 6364136223846793005ull + 1;
	sink = x;
	atomic_fetch_add(&threads_done, 1);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "child") == 0) {
		printf("child runs\n");
		return 7;
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_signal;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGPROF, &sa, NULL) || sigaction(SIGALRM, &sa, NULL)) {
		perror("sigaction");
		return 2;
	}
	struct itimerval prof = {{0, 5000}, {0, 5000}}, real = {{0, 10000}, {0, 10000}},
	                 off = {{0, 0}, {0, 0}};
	setitimer(ITIMER_PROF, &prof, NULL);
	setitimer(ITIMER_REAL, &real, NULL);
	/* ~300 ms of CPU: SIGPROF every 5 ms of process CPU, SIGALRM every 10 ms of wall time. */
	uint64_t end = now_ns(CLOCK_PROCESS_CPUTIME_ID) + 300000000ull;
	uint64_t x = 1;
	while (now_ns(CLOCK_PROCESS_CPUTIME_ID) < end)
		for (int i = 0; i < 100000; i++)
			x = x * 6364136223846793005ull + 1;
	sink = x;
	setitimer(ITIMER_PROF, &off, NULL);
	setitimer(ITIMER_REAL, &off, NULL);
	printf("prof %s\n", atomic_load(&prof_count) > 0 ? "ok" : "none");
	printf("alrm %s\n", atomic_load(&alrm_count) > 0 ? "ok" : "none");

	for (int batch = 0; batch < 20; batch++) {
		pthread_t t[50];
		for (int i = 0; i < 50; i++) {
			int rc;
			while ((rc = pthread_create(&t[i], NULL, thread_main,
			                            (void *)(uintptr_t)(batch * 50 + i))) == EAGAIN)
				usleep(1000);
			if (rc) {
				printf("pthread_create: %s\n", strerror(rc));
				return 2;
			}
		}
		for (int i = 0; i < 50; i++)
			pthread_join(t[i], NULL);
	}
	printf("threads %d\n", atomic_load(&threads_done));

	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0) {
		perror("fork");
		return 2;
	}
	if (pid == 0) {
		execl("/proc/self/exe", argv[0], "child", (char *)NULL);
		_exit(127);
	}
	int status;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	printf("child status %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	printf("foreign %d\n", atomic_load(&foreign_count));
	return 3;
}
