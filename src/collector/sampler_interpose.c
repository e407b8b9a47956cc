/*
 * The sampler's side of the program's own signal calls (see sampler.c), interposed through
 * LD_PRELOAD: the exec section (sampler_exec_begin/end, called by the interposed exec family),
 * sigaction/signal/bsd_signal/sysv_signal on the signals our handler holds, and the sigwait
 * family and signalfd, which never hand the program a signal of ours.
 */
#include "cuscope/clock.h"
#include "collector.h"
#include "sampler_impl.h"

#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* ---- exec ---- */

/* Queues a signal the program sent itself again, with its siginfo, on the calling thread. */
static void sampler_requeue(const siginfo_t *info)
{
	siginfo_t copy = *info;
	syscall(SYS_rt_tgsigqueueinfo, getpid(), collector_gettid(), info->si_signo, &copy);
}

int sampler_exec_begin(void)
{
	/* Never started, or a vfork child: the timers and perf fds are another process's. */
	if (!sampler_threads_ours())
		return 0;
	sigset_t ours, saved;
	sigemptyset(&ours);
	int held = 0; /* counted: glibc 2.36's sigisemptyset misses signal 64 (an int holds the word) */
	for (int sig = SIGRTMIN; sig <= SIGRTMAX; sig++)
		if (sampler_holds(sig) && sigaddset(&ours, sig) == 0)
			held++;
	if (!held)
		return 0;
	pthread_sigmask(SIG_BLOCK, &ours, &saved);
	sampler_threads_exec_disarm();
	/* Nothing sends ours to this thread from here on: take what is pending. The program's own
	 * signals on a held number (it may use one after the sampler moved) are queued again, as
	 * they would have been pending across its exec without us. */
	siginfo_t theirs[32];
	int n_theirs = 0;
	struct timespec zero = {0, 0};
	siginfo_t info;
	while (sigtimedwait(&ours, &info, &zero) > 0)
		if (!sampler_signal_is_ours(&info) && n_theirs < 32)
			theirs[n_theirs++] = info;
	for (int i = 0; i < n_theirs; i++)
		sampler_requeue(&theirs[i]);
	pthread_sigmask(SIG_SETMASK, &saved, NULL);
	return 1;
}

void sampler_exec_end(void)
{
	sampler_threads_exec_rearm();
}

/* ---- the program's signal dispositions (LD_PRELOAD interposition) ---- */

/* The program's sigaction: signals we hold keep our handler; the program's wish is recorded. */
COLLECTOR_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	sampler_sigaction_resolve();
	if (!sampler_holds(sig))
		return sampler_real_sigaction(sig, act, old);
	return sampler_program_sigaction(sig, act, old);
}

/* signal(), bsd_signal(), sysv_signal(): glibc's versions call its internal sigaction. */
static sighandler_t sampler_signal_common(int sig, sighandler_t handler, int flags)
{
	struct sigaction act, old;
	memset(&act, 0, sizeof act);
	act.sa_handler = handler;
	act.sa_flags = flags;
	sigemptyset(&act.sa_mask);
	if (!(flags & SA_NODEFER) && sig > 0 && sig < _NSIG)
		sigaddset(&act.sa_mask, sig);
	if (sigaction(sig, &act, &old) != 0)
		return SIG_ERR;
	return old.sa_handler;
}

COLLECTOR_EXPORT sighandler_t signal(int sig, sighandler_t handler)
{
	if (!sampler_holds(sig)) {
		static sighandler_t (*real)(int, sighandler_t);
		if (!real)
			real = (sighandler_t(*)(int, sighandler_t))collector_real("signal");
		if (real)
			return real(sig, handler);
	}
	return sampler_signal_common(sig, handler, SA_RESTART);
}

COLLECTOR_EXPORT sighandler_t bsd_signal(int sig, sighandler_t handler)
{
	return signal(sig, handler);
}

COLLECTOR_EXPORT sighandler_t sysv_signal(int sig, sighandler_t handler)
{
	if (!sampler_holds(sig)) {
		static sighandler_t (*real)(int, sighandler_t);
		if (!real)
			real = (sighandler_t(*)(int, sighandler_t))collector_real("sysv_signal");
		if (real)
			return real(sig, handler);
	}
	return sampler_signal_common(sig, handler, SA_RESETHAND | SA_NODEFER);
}

/* ---- the program's signal waits (LD_PRELOAD interposition) ---- */

static int (*real_sigtimedwait)(const sigset_t *, siginfo_t *, const struct timespec *);
static int (*real_signalfd)(int, const sigset_t *, int);

/* Resolved once, before the program runs (these wrappers may run in a vfork child). */
__attribute__((constructor)) static void sampler_resolve(void)
{
	sampler_sigaction_resolve();
	real_sigtimedwait =
	    (int (*)(const sigset_t *, siginfo_t *, const struct timespec *))collector_real("sigtimedwait");
	real_signalfd = (int (*)(int, const sigset_t *, int))collector_real("signalfd");
}

/* 1 if set names a signal our handler holds (one of ours may be pending there). */
static int sampler_set_has_held(const sigset_t *set)
{
	for (int sig = SIGRTMIN; sig <= SIGRTMAX; sig++)
		if (sampler_holds(sig) && sigismember(set, sig) == 1)
			return 1;
	return 0;
}

/*
 * sigtimedwait that never returns one of ours: a signal of ours still pending in a thread that
 * blocks it (armed before the thread blocked, disarmed at the next poll) is taken and dropped, as
 * a sample not taken, and the wait goes on for what is left of the timeout.
 */
static int sampler_wait(const sigset_t *set, siginfo_t *info, const struct timespec *timeout)
{
	if (!real_sigtimedwait)
		sampler_resolve(); /* called before our constructor ran */
	if (!real_sigtimedwait) {
		errno = ENOSYS;
		return -1;
	}
	if (!set || !sampler_set_has_held(set))
		return real_sigtimedwait(set, info, timeout);
	siginfo_t local;
	siginfo_t *si = info ? info : &local;
	uint64_t deadline = 0;
	if (timeout)
		deadline =
		    clock_mono_ns() + (uint64_t)timeout->tv_sec * 1000000000ull + (uint64_t)timeout->tv_nsec;
	struct timespec left;
	const struct timespec *wait = timeout;
	for (;;) {
		int sig = real_sigtimedwait(set, si, wait);
		if (sig <= 0 || !sampler_holds(sig) || !sampler_signal_is_ours(si))
			return sig;
		sampler_drop_pending(si);
		if (timeout) {
			uint64_t now = clock_mono_ns(), rest = now < deadline ? deadline - now : 0;
			left.tv_sec = (time_t)(rest / 1000000000ull);
			left.tv_nsec = (long)(rest % 1000000000ull);
			wait = &left; /* zero still takes what else is pending */
		}
	}
}

COLLECTOR_EXPORT int sigtimedwait(const sigset_t *set, siginfo_t *info, const struct timespec *timeout)
{
	return sampler_wait(set, info, timeout);
}

COLLECTOR_EXPORT int sigwaitinfo(const sigset_t *set, siginfo_t *info)
{
	return sampler_wait(set, info, NULL);
}

COLLECTOR_EXPORT int sigwait(const sigset_t *set, int *sig)
{
	siginfo_t info;
	int saved_errno = errno, got;
	do
		got = sampler_wait(set, &info, NULL);
	while (got < 0 && errno == EINTR);
	int err = got < 0 ? errno : 0;
	errno = saved_errno;
	if (got > 0)
		*sig = got;
	return err;
}

/*
 * signalfd cannot be filtered as it is read: the signals our handler holds are left out of its set
 * (they are ones the program does not handle; its own, if it sends any, stay pending as blocked
 * signals do), so a read never hands it one of ours.
 */
COLLECTOR_EXPORT int signalfd(int fd, const sigset_t *mask, int flags)
{
	if (!real_signalfd)
		sampler_resolve(); /* called before our constructor ran */
	if (!real_signalfd) {
		errno = ENOSYS;
		return -1;
	}
	if (!mask || !sampler_set_has_held(mask))
		return real_signalfd(fd, mask, flags);
	sigset_t copy = *mask;
	for (int sig = SIGRTMIN; sig <= SIGRTMAX; sig++)
		if (sampler_holds(sig))
			sigdelset(&copy, sig);
	return real_signalfd(fd, &copy, flags);
}
