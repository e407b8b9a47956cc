/*
 * Workloads for the sampler's do-no-harm tests (t080-t083). Prints deterministic lines only.
 *   sample_stress cpu N       N units of computation in sample_stress_spin on one thread;
 *                             prints "seconds S" (wall, start-up excluded)
 *   sample_stress pingpong N  N pipe round trips between two threads; prints "seconds S"
 *   sample_stress rt early|late
 *                             installs a counting handler for every signal SIGRTMIN..SIGRTMAX
 *                             (early: first thing; late: after 300 ms of CPU), spins 600 ms of
 *                             CPU, then queues one signal of each to itself. Prints "own N" (its
 *                             queued signals that arrived, want all), "foreign M" (any other
 *                             signal on those numbers: must be 0) and "signals K".
 *   sample_stress fds         with a second thread spinning, after 200 ms of CPU (sampling and
 *                             counters running) closes every fd >= 3 like a daemon (but sockets:
 *                             the collector's connection, whose loss is another test's matter),
 *                             opens eventfds (each holding a known value) and epoll fds that take
 *                             those numbers again (perf fds are anonymous inodes like them), then
 *                             pipes; ends the second thread (the collector lets go of its
 *                             descriptors), and for 600 ms of CPU passes a known byte sequence
 *                             through each pipe. Prints "corrupt N" (bytes wrong, missing or extra),
 *                             "closed N" (pipe fds closed or replaced behind its back), "anon N"
 *                             (eventfds and epoll fds opened) and "anon_bad N" (of those, closed,
 *                             replaced, read or unusable); the test wants 0 for each count but anon.
 * Exits 0.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define QUEUED_VALUE 12345

volatile uint64_t sink;

static uint64_t now_ns(clockid_t clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

__attribute__((noinline)) static uint64_t sample_stress_spin(uint64_t x)
{
	for (int i = 0; i < 100000; i++)
		x = x * 6364136223846793005ull + 1;
	return x;
}

/* Spins for ms milliseconds of this thread's CPU time. */
static void spin_cpu_ms(unsigned ms)
{
	uint64_t end = now_ns(CLOCK_THREAD_CPUTIME_ID) + (uint64_t)ms * 1000000ull;
	uint64_t x = 1;
	while (now_ns(CLOCK_THREAD_CPUTIME_ID) < end)
		x = sample_stress_spin(x);
	sink = x;
}

static int run_cpu(long units)
{
	uint64_t start = now_ns(CLOCK_MONOTONIC);
	uint64_t x = 1;
	for (long i = 0; i < units; i++)
		x = sample_stress_spin(x);
	sink = x;
	printf("seconds %.4f\n", (double)(now_ns(CLOCK_MONOTONIC) - start) / 1e9);
	return 0;
}

static int ping[2], pong[2];
static long rounds;

static void *echo_main(void *arg)
{
	(void)arg;
	char c;
	for (long i = 0; i < rounds; i++)
		if (read(ping[0], &c, 1) != 1 || write(pong[1], &c, 1) != 1)
			break;
	return NULL;
}

static int run_pingpong(long n)
{
	rounds = n;
	if (pipe(ping) != 0 || pipe(pong) != 0)
		return 2;
	pthread_t t;
	uint64_t start = now_ns(CLOCK_MONOTONIC);
	pthread_create(&t, NULL, echo_main, NULL);
	char c = 'x';
	for (long i = 0; i < n; i++)
		if (write(ping[1], &c, 1) != 1 || read(pong[0], &c, 1) != 1)
			return 2;
	pthread_join(t, NULL);
	printf("seconds %.4f\n", (double)(now_ns(CLOCK_MONOTONIC) - start) / 1e9);
	return 0;
}

static atomic_int own_count, foreign_count;

static void on_rt(int sig, siginfo_t *info, void *context)
{
	(void)sig;
	(void)context;
	if (info->si_code == SI_QUEUE && info->si_value.sival_int == QUEUED_VALUE && info->si_pid == getpid())
		atomic_fetch_add(&own_count, 1);
	else
		atomic_fetch_add(&foreign_count, 1);
}

static int install_rt_handlers(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_rt;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	for (int sig = SIGRTMIN; sig <= SIGRTMAX; sig++)
		if (sigaction(sig, &sa, NULL) != 0) {
			perror("sigaction");
			return -1;
		}
	/* Every handler must read back as the program's own. */
	for (int sig = SIGRTMIN; sig <= SIGRTMAX; sig++) {
		struct sigaction cur;
		if (sigaction(sig, NULL, &cur) != 0 || cur.sa_sigaction != on_rt) {
			printf("handler of %d reads back wrong\n", sig);
			return -1;
		}
	}
	return 0;
}

static int run_rt(int late)
{
	if (!late && install_rt_handlers() != 0)
		return 2;
	spin_cpu_ms(300);
	if (late && install_rt_handlers() != 0)
		return 2;
	spin_cpu_ms(600);
	int n = 0;
	for (int sig = SIGRTMIN; sig <= SIGRTMAX; sig++, n++) {
		union sigval v = {.sival_int = QUEUED_VALUE};
		if (sigqueue(getpid(), sig, v) != 0)
			perror("sigqueue");
	}
	/* Queued signals to the process arrive at some thread soon; this one is the only one. */
	for (int i = 0; i < 200 && atomic_load(&own_count) < n; i++) {
		struct timespec ts = {0, 5000000L};
		nanosleep(&ts, NULL);
	}
	printf("signals %d\nown %d\nforeign %d\n", n, atomic_load(&own_count), atomic_load(&foreign_count));
	return 0;
}

#define FD_PIPES 8
#define FD_ANON  64

static atomic_int worker_stop;

/* A second sampled thread (its own perf fds) that ends only after the program reused the numbers. */
static void *fds_worker(void *arg)
{
	(void)arg;
	uint64_t x = 2;
	while (!atomic_load(&worker_stop))
		x = sample_stress_spin(x);
	sink = x;
	return NULL;
}

/* 1 if fd is still the anonymous-inode file of the given kind ("eventfd", "eventpoll"). */
static int anon_is(int fd, const char *kind)
{
	char path[64], link[128] = "", want[64];
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	snprintf(want, sizeof want, "anon_inode:[%s]", kind);
	ssize_t n = readlink(path, link, sizeof link - 1);
	if (n <= 0)
		return 0;
	link[n] = '\0';
	return strcmp(link, want) == 0;
}

static int run_fds(void)
{
	pthread_t worker;
	if (pthread_create(&worker, NULL, fds_worker, NULL) != 0)
		return 2;
	spin_cpu_ms(200);
	/* Daemon style: every fd >= 3 but sockets (the collector's connection, whose loss is another
	 * test's matter) is closed; the numbers the collector held (perf sampling and counter events,
	 * all anonymous inodes like eventfd and epoll) come back as the program's eventfds and epoll
	 * fds, then pipes. */
	struct rlimit rl;
	int max = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 65536 ? (int)rl.rlim_cur : 65536;
	int closed_count = 0;
	for (int fd = 3; fd < max; fd++) {
		struct stat st;
		if (fstat(fd, &st) != 0 || S_ISSOCK(st.st_mode))
			continue;
		close(fd);
		closed_count++;
	}
	/* At least as many as were closed, so every number the collector had is the program's now. */
	int anon_count = closed_count + 4 < FD_ANON ? closed_count + 4 : FD_ANON;
	int anon[FD_ANON];
	for (int i = 0; i < anon_count; i++) {
		anon[i] = i % 2 == 0 ? eventfd((unsigned)(1000 + i), EFD_NONBLOCK) : epoll_create1(0);
		if (anon[i] < 0) {
			perror("eventfd/epoll");
			return 2;
		}
	}
	int p[FD_PIPES][2];
	struct stat ids[FD_PIPES][2];
	for (int i = 0; i < FD_PIPES; i++) {
		if (pipe2(p[i], O_NONBLOCK) != 0) {
			perror("pipe2");
			return 2;
		}
		fstat(p[i][0], &ids[i][0]);
		fstat(p[i][1], &ids[i][1]);
	}
	/* The worker ends now: the collector lets go of its sampling and counter descriptors, whose
	 * numbers are the program's eventfds and epoll fds. */
	atomic_store(&worker_stop, 1);
	pthread_join(worker, NULL);
	long corrupt = 0, closed = 0;
	unsigned char next_out = 0, next_in[FD_PIPES] = {0};
	uint64_t end = now_ns(CLOCK_THREAD_CPUTIME_ID) + 600000000ull;
	while (now_ns(CLOCK_THREAD_CPUTIME_ID) < end) {
		for (int i = 0; i < FD_PIPES; i++) {
			unsigned char b = (unsigned char)(next_out + i);
			if (write(p[i][1], &b, 1) != 1)
				corrupt++;
		}
		sink = sample_stress_spin(sink);
		for (int i = 0; i < FD_PIPES; i++) {
			unsigned char got[4];
			ssize_t n = read(p[i][0], got, sizeof got);
			if (n != 1 || got[0] != (unsigned char)(next_in[i] + i))
				corrupt++;
			next_in[i]++;
		}
		next_out++;
	}
	for (int i = 0; i < FD_PIPES; i++)
		for (int e = 0; e < 2; e++) {
			struct stat st;
			if (fstat(p[i][e], &st) != 0 || st.st_ino != ids[i][e].st_ino ||
			    st.st_dev != ids[i][e].st_dev)
				closed++;
		}
	/* Each eventfd still holds exactly its value (nobody read it) and each epoll fd still works. */
	long anon_bad = 0;
	for (int i = 0; i < anon_count; i++) {
		if (i % 2 == 0) {
			uint64_t v = 0;
			if (!anon_is(anon[i], "eventfd") ||
			    read(anon[i], &v, sizeof v) != (ssize_t)sizeof v || v != (uint64_t)(1000 + i)) {
				anon_bad++;
				fprintf(stderr, "eventfd %d: value %llu\n", anon[i], (unsigned long long)v);
			}
		} else {
			struct epoll_event ev;
			if (!anon_is(anon[i], "eventpoll") || epoll_wait(anon[i], &ev, 1, 0) != 0) {
				anon_bad++;
				fprintf(stderr, "epoll fd %d replaced or closed\n", anon[i]);
			}
		}
	}
	printf("corrupt %ld\nclosed %ld\nanon %d\nanon_bad %ld\n", corrupt, closed, anon_count, anon_bad);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 3 && strcmp(argv[1], "cpu") == 0)
		return run_cpu(atol(argv[2]));
	if (argc == 3 && strcmp(argv[1], "pingpong") == 0)
		return run_pingpong(atol(argv[2]));
	if (argc == 3 && strcmp(argv[1], "rt") == 0)
		return run_rt(strcmp(argv[2], "late") == 0);
	if (argc == 2 && strcmp(argv[1], "fds") == 0)
		return run_fds();
	fprintf(stderr, "usage: sample_stress cpu N | pingpong N | rt early|late | fds\n");
	return 2;
}
