/*
 * Programs the collector must not harm through signals or its exit path (t086-t089). Prints
 * deterministic lines only.
 *   signal_harm blockexec        blocks every signal and execs itself as "unblock" (a mask
 *                                inherited across exec)
 *   signal_harm unblock          prints "pending N" (signals pending at start), spins 300 ms of
 *                                CPU with everything blocked, unblocks everything, spins 300 ms
 *                                more and prints "alive"
 *   signal_harm wait KIND        blocks every signal (daemon style) and for 20 rounds spins 30 ms
 *                                of CPU, sends itself one signal and takes what is pending with
 *                                KIND: timedwait (sigtimedwait, zero timeout, its own signal on
 *                                SIGRTMAX, which it does not handle), waitinfo (sigwaitinfo, the
 *                                same), wait (sigwait; it has a handler on SIGRTMAX so the sampler
 *                                uses a lower one, dequeued first) or signalfd (SIGUSR1; reads
 *                                until empty). Prints "own N" (its own signals received, want 20)
 *                                and "unexpected M" (anything else: want 0)
 *   signal_harm exit-iterate     a thread holds the loader's lock inside a dl_iterate_phdr
 *                                callback for ever; a SIGALRM handler then calls _exit(7)
 *   signal_harm exit-dlopen LIB  a thread dlopens LIB, whose constructor sets the flag named by
 *                                HARM_FLAG and blocks for ever (the loader's lock held); a SIGALRM
 *                                handler then calls _exit(7)
 *   signal_harm exit-plain       spins 300 ms of CPU in signal_harm_spin and calls _exit(5)
 *   signal_harm vfork N          N vfork children that _exit(3) at once; prints "vfork ok K"
 *   signal_harm sigaction-storm  calls sigaction on SIGRTMAX 200000 times while a SIGALRM every
 *                                50 us runs a handler that calls sigaction on it too; prints
 *                                "storm N alarms M"
 *   signal_harm flood MS         blocks every signal and for MS ms of wall time sends itself
 *                                SIGRTMAX (process-directed, not handled) and takes each with
 *                                sigtimedwait; then waits up to 1 s for the rest. Prints
 *                                "sent N got M" (want M = N; the sampler calibrates meanwhile)
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS 20
#define VALUE  4242

volatile uint64_t sink;

static uint64_t cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

__attribute__((noinline)) static uint64_t signal_harm_spin(uint64_t x)
{
	for (int i = 0; i < 100000; i++)
		x = x * 6364136223846793005ull + 1;
	return x;
}

static void spin_cpu_ms(unsigned ms)
{
	uint64_t end = cpu_ns() + (uint64_t)ms * 1000000ull;
	uint64_t x = 1;
	while (cpu_ns() < end)
		x = signal_harm_spin(x);
	sink = x;
}

static int run_blockexec(char **argv)
{
	sigset_t all;
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, NULL);
	char *args[] = {argv[0], "unblock", NULL};
	execv("/proc/self/exe", args);
	perror("exec");
	return 127;
}

static int run_unblock(void)
{
	sigset_t pending;
	sigpending(&pending);
	int n = 0;
	for (int sig = 1; sig < NSIG; sig++)
		if (sigismember(&pending, sig) == 1)
			n++;
	printf("pending %d\n", n);
	spin_cpu_ms(300);
	sigset_t all;
	sigfillset(&all);
	sigprocmask(SIG_UNBLOCK, &all, NULL);
	spin_cpu_ms(300);
	printf("alive\n");
	return 0;
}

static void on_signal(int sig)
{
	(void)sig;
}

/* 1 if info is the program's own signal of this round. */
static int is_own(const siginfo_t *info, int sig, int round)
{
	return info->si_signo == sig && info->si_code == SI_QUEUE && info->si_pid == getpid() &&
	       info->si_value.sival_int == VALUE + round;
}

static int run_wait(const char *kind)
{
	int own_sig = strcmp(kind, "signalfd") == 0 ? SIGUSR1 : SIGRTMAX;
	if (strcmp(kind, "wait") == 0) {
		/* The program handles SIGRTMAX (blocked, so the handler never runs): the sampler moves
		 * below it, and a pending signal of the sampler's would be taken before the program's. */
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = on_signal;
		sigaction(SIGRTMAX, &sa, NULL);
	}
	sigset_t all;
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, NULL);
	int sfd = -1;
	if (strcmp(kind, "signalfd") == 0 && (sfd = signalfd(-1, &all, SFD_NONBLOCK | SFD_CLOEXEC)) < 0) {
		perror("signalfd");
		return 2;
	}
	int own = 0, unexpected = 0;
	for (int round = 0; round < ROUNDS; round++) {
		spin_cpu_ms(30);
		union sigval v = {.sival_int = VALUE + round};
		if (sigqueue(getpid(), own_sig, v) != 0) {
			perror("sigqueue");
			return 2;
		}
		if (strcmp(kind, "timedwait") == 0) {
			struct timespec zero = {0, 0};
			siginfo_t info;
			while (sigtimedwait(&all, &info, &zero) > 0) {
				if (is_own(&info, own_sig, round))
					own++;
				else if (unexpected++ < 3)
					printf("got signal %d code %d\n", info.si_signo, info.si_code);
			}
		} else if (strcmp(kind, "waitinfo") == 0) {
			siginfo_t info;
			for (;;) {
				if (sigwaitinfo(&all, &info) < 0)
					return 2;
				if (is_own(&info, own_sig, round)) {
					own++;
					break;
				}
				if (unexpected++ < 3)
					printf("got signal %d code %d\n", info.si_signo, info.si_code);
			}
		} else if (strcmp(kind, "wait") == 0) {
			int sig = 0;
			for (;;) {
				if (sigwait(&all, &sig) != 0)
					return 2;
				if (sig == own_sig) {
					own++;
					break;
				}
				if (unexpected++ < 3)
					printf("got signal %d\n", sig);
			}
		} else if (sfd >= 0) {
			struct signalfd_siginfo si;
			while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
				if ((int)si.ssi_signo == own_sig && si.ssi_code == SI_QUEUE &&
				    si.ssi_int == VALUE + round)
					own++;
				else if (unexpected++ < 3)
					printf("got signal %u code %d\n", si.ssi_signo, si.ssi_code);
			}
		} else {
			fprintf(stderr, "unknown wait kind %s\n", kind);
			return 2;
		}
	}
	if (strcmp(kind, "wait") == 0) {
		/* sigwait tells no sender: one of ours taken instead of the program's own leaves that
		 * one pending here. */
		struct timespec zero = {0, 0};
		sigset_t mine;
		sigemptyset(&mine);
		sigaddset(&mine, own_sig);
		while (sigtimedwait(&mine, NULL, &zero) > 0)
			unexpected++;
	}
	printf("own %d\nunexpected %d\n", own, unexpected);
	return 0;
}

static atomic_int loader_held;

static void on_alarm_exit(int sig)
{
	(void)sig;
	_exit(7);
}

/* Holds the loader's lock (dl_iterate_phdr's) for ever. */
static int hold_iterate(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)info, (void)size, (void)data;
	atomic_store(&loader_held, 1);
	for (;;)
		pause();
	return 0;
}

static void *iterate_main(void *arg)
{
	(void)arg;
	dl_iterate_phdr(hold_iterate, NULL);
	return NULL;
}

static void *dlopen_main(void *arg)
{
	dlopen((const char *)arg, RTLD_NOW);
	return NULL;
}

/* Spins until a thread holds the loader's lock, then exits from a SIGALRM handler. */
static int run_exit_locked(void *(*holder)(void *), void *arg)
{
	static volatile int flag;
	char text[32];
	snprintf(text, sizeof text, "%lx", (unsigned long)(uintptr_t)&flag);
	setenv("HARM_FLAG", text, 1);
	spin_cpu_ms(100);
	signal(SIGALRM, on_alarm_exit);
	pthread_t t;
	if (pthread_create(&t, NULL, holder, arg) != 0)
		return 2;
	/* Only spinning from here (no libc call that may resolve a symbol through the loader). */
	uint64_t x = 1;
	for (long i = 0; !atomic_load(&loader_held) && !flag; i++)
		x = signal_harm_spin(x);
	sink = x;
	raise(SIGALRM);
	return 3; /* not reached */
}

/* One vfork child that _exits at once; 1 if it ended with 3. */
__attribute__((noinline)) static int vfork_once(void)
{
	pid_t pid = vfork();
	if (pid == 0)
		_exit(3);
	int status = 0;
	return pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 3;
}

static int run_vfork(int n)
{
	int ok = 0;
	for (int i = 0; i < n; i++)
		ok += vfork_once();
	spin_cpu_ms(200);
	printf("vfork ok %d\n", ok);
	return 0;
}

static atomic_int alarms;

static void on_alarm_sigaction(int sig)
{
	(void)sig;
	struct sigaction old;
	sigaction(SIGRTMAX, NULL, &old);
	atomic_fetch_add(&alarms, 1);
}

static int run_sigaction_storm(void)
{
	spin_cpu_ms(150); /* the sampler holds its signal by now */
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_alarm_sigaction;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGALRM, &sa, NULL);
	struct itimerval it = {{0, 50}, {0, 50}};
	setitimer(ITIMER_REAL, &it, NULL);
	struct sigaction mine;
	memset(&mine, 0, sizeof mine);
	mine.sa_handler = on_signal;
	int n = 0;
	for (; n < 200000; n++)
		sigaction(SIGRTMAX, &mine, NULL);
	struct itimerval off = {{0, 0}, {0, 0}};
	setitimer(ITIMER_REAL, &off, NULL);
	printf("storm %d alarms %s\n", n, atomic_load(&alarms) > 0 ? "some" : "none");
	return 0;
}

static int run_flood(long ms)
{
	sigset_t all, mine;
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, NULL);
	sigemptyset(&mine);
	sigaddset(&mine, SIGRTMAX);
	struct timespec zero = {0, 0}, now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	uint64_t end =
	    (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec + (uint64_t)ms * 1000000ull;
	long sent = 0, got = 0;
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec >= end)
			break;
		if (kill(getpid(), SIGRTMAX) == 0)
			sent++;
		while (sigtimedwait(&mine, NULL, &zero) > 0)
			got++;
	}
	struct timespec second = {1, 0};
	while (got < sent && sigtimedwait(&mine, NULL, &second) > 0)
		got++;
	printf("sent %ld got %ld\n", sent, got);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 2 && strcmp(argv[1], "blockexec") == 0)
		return run_blockexec(argv);
	if (argc == 2 && strcmp(argv[1], "unblock") == 0)
		return run_unblock();
	if (argc == 3 && strcmp(argv[1], "wait") == 0)
		return run_wait(argv[2]);
	if (argc == 2 && strcmp(argv[1], "exit-iterate") == 0)
		return run_exit_locked(iterate_main, NULL);
	if (argc == 3 && strcmp(argv[1], "exit-dlopen") == 0)
		return run_exit_locked(dlopen_main, argv[2]);
	if (argc == 2 && strcmp(argv[1], "exit-plain") == 0) {
		spin_cpu_ms(300);
		_exit(5);
	}
	if (argc == 3 && strcmp(argv[1], "vfork") == 0)
		return run_vfork(atoi(argv[2]));
	if (argc == 2 && strcmp(argv[1], "sigaction-storm") == 0)
		return run_sigaction_storm();
	if (argc == 3 && strcmp(argv[1], "flood") == 0)
		return run_flood(atol(argv[2]));
	fprintf(stderr,
	        "usage: signal_harm blockexec | unblock | wait timedwait|waitinfo|wait|signalfd | "
	        "exit-iterate | exit-dlopen LIB | exit-plain | vfork N | sigaction-storm | flood MS\n");
	return 2;
}
