/*
 * CPU stack sampling: one POSIX timer per thread on that thread's own CPU-time clock
 * (CLOCK_THREAD_CPUTIME_ID semantics, created by the sender for every thread it finds), delivering
 * a real-time signal to exactly that thread. The handler unwinds with libunwind from the signal
 * context and stores raw return addresses in the thread's ring; symbolisation happens later on
 * the sender thread. The application's own SIGPROF/SIGALRM are never touched.
 */
#include "cuscope/clock.h"
#include "cuscope/collector.h"
#include "cuscope/wire.h"

#include <errno.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define UNW_LOCAL_ONLY
#include <libunwind.h>
#include <setjmp.h>

/* Linux encodes a thread's CPU clock as ~tid << 3 | CPUCLOCK_PERTHREAD_MASK | CPUCLOCK_SCHED. */
#define THREAD_CPU_CLOCK(tid) ((clockid_t)((~(unsigned)(tid) << 3) | 4 | 2))

#define MAX_SAMPLED_THREADS 4096

struct sampled_thread {
	pid_t tid;
	timer_t timer; /* timer mode */
	int fd;        /* perf mode: the task-clock event, -1 otherwise */
};

/* perf events: a task-clock sampling event per thread (hrtimer precise, ~1 kHz as asked); where
 * perf events are missing, POSIX CPU-time timers (scheduler-tick resolution, often 100-250 Hz). */
enum sampler_mode { SAMPLER_PERF, SAMPLER_TIMER };
static enum sampler_mode sampler_mode = SAMPLER_PERF;
static int sampler_signal;

/*
 * Unwinding code without unwind tables (JIT code, some driver libraries) can make libunwind read a
 * wild pointer. While a sample unwinds, SIGSEGV/SIGBUS are ours: a fault abandons that sample
 * (siglongjmp) instead of killing the program. The program's own handlers are put back right
 * after each sample, so they stay in charge of every real fault.
 */
static __thread __attribute__((tls_model("initial-exec"))) sigjmp_buf *unwind_escape;
static struct sigaction program_segv, program_bus; /* dispositions before the sample took over */
static _Atomic uint64_t unwind_faults;

static void sampler_fault(int sig, siginfo_t *info, void *context)
{
	sigjmp_buf *escape = unwind_escape;
	if (escape) {
		unwind_escape = NULL;
		atomic_fetch_add_explicit(&unwind_faults, 1, memory_order_relaxed);
		siglongjmp(*escape, 1);
	}
	/* A real fault in another thread while a sample ran: hand it to the program's disposition;
	 * returning re-executes the faulting instruction under it. */
	const struct sigaction *program = sig == SIGBUS ? &program_bus : &program_segv;
	if ((program->sa_flags & SA_SIGINFO) && program->sa_sigaction &&
	    program->sa_sigaction != sampler_fault) {
		program->sa_sigaction(sig, info, context);
		return;
	}
	if (program->sa_handler != SIG_DFL && program->sa_handler != SIG_IGN &&
	    program->sa_sigaction != sampler_fault) {
		program->sa_handler(sig);
		return;
	}
	sigaction(sig, program, NULL);
}
static long sampler_period_ns;
static _Atomic int sampler_on;
static _Atomic uint64_t samples_skipped;
static struct sampled_thread sampled[MAX_SAMPLED_THREADS]; /* sender thread only */
static size_t sampled_count;

/*
 * Dispositions are process-wide: the first thread to start unwinding installs the guard and the
 * last one to finish puts the program's handlers back, so no thread unwinds unguarded. A
 * spinlock (not a mutex) because this runs in signal handlers; the handler never nests in itself.
 */
static _Atomic int unwinders;
static atomic_flag guard_lock = ATOMIC_FLAG_INIT;

static void fault_guard_enter(void)
{
	while (atomic_flag_test_and_set_explicit(&guard_lock, memory_order_acquire))
		;
	if (unwinders++ == 0) {
		struct sigaction guard;
		memset(&guard, 0, sizeof guard);
		guard.sa_sigaction = sampler_fault;
		guard.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
		sigemptyset(&guard.sa_mask);
		sigaction(SIGSEGV, &guard, &program_segv);
		sigaction(SIGBUS, &guard, &program_bus);
	}
	atomic_flag_clear_explicit(&guard_lock, memory_order_release);
}

static void fault_guard_leave(void)
{
	while (atomic_flag_test_and_set_explicit(&guard_lock, memory_order_acquire))
		;
	if (--unwinders == 0) {
		sigaction(SIGSEGV, &program_segv, NULL);
		sigaction(SIGBUS, &program_bus, NULL);
	}
	atomic_flag_clear_explicit(&guard_lock, memory_order_release);
}

static void sampler_handler(int sig, siginfo_t *info, void *context)
{
	(void)sig;
	(void)info;
	if (!atomic_load_explicit(&sampler_on, memory_order_relaxed))
		return;
	int saved_errno = errno;
	/* A sample that lands while this thread writes its ring would corrupt the record in progress:
	 * it is taken when the thread leaves the collector instead. */
	if (collector_thread_busy()) {
		collector_note_pending_sample();
		if (info && (info->si_code == POLL_IN || info->si_code == POLL_HUP) && info->si_fd > 0)
			ioctl(info->si_fd, PERF_EVENT_IOC_REFRESH, 1);
		errno = saved_errno;
		return;
	}
	/* A thread in its exit path after its ring was retired: nothing is lost, it has no more work. */
	if (collector_thread_exiting()) {
		if (info && (info->si_code == POLL_IN || info->si_code == POLL_HUP) && info->si_fd > 0)
			ioctl(info->si_fd, PERF_EVENT_IOC_REFRESH, 1);
		errno = saved_errno;
		return;
	}
	int was = collector_thread_enter();
	struct thread_ring *tr = collector_thread_ring_in_signal();
	struct ring_record *rec =
	    tr ? ring_reserve(&tr->ring, WIRE_STACK_MAX_DEPTH * sizeof(uint64_t)) : NULL;
	if (!rec) {
		collector_thread_restore(was);
		atomic_fetch_add_explicit(&samples_skipped, 1, memory_order_relaxed);
		if (info && (info->si_code == POLL_IN || info->si_code == POLL_HUP) && info->si_fd > 0)
			ioctl(info->si_fd, PERF_EVENT_IOC_REFRESH, 1);
		errno = saved_errno;
		return;
	}
	uint64_t *pcs = (uint64_t *)(rec + 1);
	volatile size_t depth = 0;
	fault_guard_enter();
	sigjmp_buf escape;
	if (sigsetjmp(escape, 1) == 0) {
		unwind_escape = &escape;
		unw_cursor_t cursor;
		if (unw_init_local2(&cursor, (unw_context_t *)context, UNW_INIT_SIGNAL_FRAME) == 0) {
			do {
				unw_word_t ip = 0;
				if (unw_get_reg(&cursor, UNW_REG_IP, &ip) < 0 || ip == 0)
					break;
				pcs[depth] = ip;
				depth = depth + 1;
			} while (depth < WIRE_STACK_MAX_DEPTH && unw_step(&cursor) > 0);
		}
	}
	/* A fault ended the walk: keep the frames found so far (the leaf is the useful part). */
	unwind_escape = NULL;
	fault_guard_leave();
	/* perf mode: the event disabled itself at the overflow; arm it for the next one. */
	if (info && (info->si_code == POLL_IN || info->si_code == POLL_HUP) && info->si_fd > 0)
		ioctl(info->si_fd, PERF_EVENT_IOC_REFRESH, 1);
	/* Shrink the record to what was unwound; nothing was written after it yet. */
	size_t text = depth * sizeof(uint64_t);
	rec->size = (uint16_t)((sizeof(struct ring_record) + text + 7) & ~(size_t)7);
	rec->text_len = (uint16_t)text;
	rec->kind = COLLECTOR_REC_SAMPLE;
	rec->flags = 0;
	rec->tid = (uint32_t)tr->tid;
	rec->reserved = 0;
	rec->time_ns = clock_mono_ns();
	rec->value = 0;
	rec->name_ref = NULL;
	rec->domain_ref = NULL;
	ring_commit(&tr->ring, rec);
	/* Only now, with the record committed; and never take a deferred sample from a handler. */
	collector_thread_restore(was);
	errno = saved_errno;
}

int sampler_init(unsigned hz)
{
	if (hz == 0)
		return 0;
	sampler_signal = SIGRTMAX - 2;
	struct sigaction old;
	/* Our own handler is still installed after a detach: a re-attach reuses it. */
	if (sigaction(sampler_signal, NULL, &old) == 0 && old.sa_handler != SIG_DFL &&
	    old.sa_handler != SIG_IGN && old.sa_sigaction != sampler_handler) {
		collector_notice(WIRE_NOTICE_WARNING,
		                 "CPU sampling unavailable: signal %d already has a handler in this program",
		                 sampler_signal);
		return -1;
	}
	/* Cache per thread so unwinding never takes a global lock inside the signal handler. */
	unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = sampler_handler;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(sampler_signal, &sa, NULL) != 0) {
		collector_notice(WIRE_NOTICE_WARNING, "CPU sampling unavailable: sigaction: %s",
		                 strerror(errno));
		return -1;
	}
	sampler_period_ns = 1000000000L / (long)hz;
	atomic_store(&sampler_on, 1);
	return 0;
}

/* perf mode: a task-clock event on tid that signals tid at every period of its CPU time. */
static int sampler_open_perf(pid_t tid)
{
	struct perf_event_attr attr;
	memset(&attr, 0, sizeof attr);
	attr.size = sizeof attr;
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_TASK_CLOCK;
	attr.sample_period = (uint64_t)sampler_period_ns;
	attr.disabled = 1;
	attr.wakeup_events = 1;
	int fd = (int)syscall(SYS_perf_event_open, &attr, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct f_owner_ex owner = {F_OWNER_TID, tid};
	if (fcntl(fd, F_SETFL, O_ASYNC) != 0 || fcntl(fd, F_SETSIG, sampler_signal) != 0 ||
	    fcntl(fd, F_SETOWN_EX, &owner) != 0 || ioctl(fd, PERF_EVENT_IOC_REFRESH, 1) != 0) {
		int err = errno;
		close(fd);
		return -err;
	}
	return fd;
}

void sampler_thread_added(pid_t tid)
{
	if (!atomic_load(&sampler_on) || sampled_count == MAX_SAMPLED_THREADS)
		return;
	if (sampler_mode == SAMPLER_PERF) {
		int fd = sampler_open_perf(tid);
		if (fd >= 0) {
			sampled[sampled_count++] = (struct sampled_thread){tid, 0, fd};
			return;
		}
		if (fd == -ESRCH)
			return;
		sampler_mode = SAMPLER_TIMER;
		collector_notice(
		    WIRE_NOTICE_WARNING,
		    "perf events unavailable for sampling (%s): using CPU-time timers, limited to the "
		    "kernel tick rate",
		    strerror(-fd));
	}
	struct sigevent sev;
	memset(&sev, 0, sizeof sev);
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = sampler_signal;
	sev._sigev_un._tid = tid;
	timer_t timer;
	if (timer_create(THREAD_CPU_CLOCK(tid), &sev, &timer) != 0) {
		/* ESRCH / EINVAL: the thread ended between the scan and now. */
		if (errno != ESRCH && errno != EINVAL) {
			static int warned;
			if (!warned++)
				collector_notice(WIRE_NOTICE_WARNING, "CPU sampling: timer_create failed: %s",
				                 strerror(errno));
		}
		return;
	}
	struct itimerspec its = {{0, sampler_period_ns}, {0, sampler_period_ns}};
	if (its.it_interval.tv_nsec >= 1000000000L) {
		its.it_interval.tv_sec = its.it_value.tv_sec = its.it_interval.tv_nsec / 1000000000L;
		its.it_interval.tv_nsec = its.it_value.tv_nsec = its.it_interval.tv_nsec % 1000000000L;
	}
	timer_settime(timer, 0, &its, NULL);
	sampled[sampled_count++] = (struct sampled_thread){tid, timer, -1};
}

void sampler_thread_removed(pid_t tid)
{
	for (size_t i = 0; i < sampled_count; i++) {
		if (sampled[i].tid == tid) {
			if (sampled[i].fd >= 0)
				close(sampled[i].fd);
			else
				timer_delete(sampled[i].timer);
			sampled[i] = sampled[--sampled_count];
			return;
		}
	}
}

void sampler_stop(void)
{
	atomic_store(&sampler_on, 0);
	for (size_t i = 0; i < sampled_count; i++) {
		if (sampled[i].fd >= 0)
			close(sampled[i].fd);
		else
			timer_delete(sampled[i].timer);
	}
	sampled_count = 0;
}

void sampler_forget_after_fork(void)
{
	/* POSIX timers are not inherited; perf fds are, and count the parent's threads: close them. */
	for (size_t i = 0; i < sampled_count; i++)
		if (sampled[i].fd >= 0)
			close(sampled[i].fd);
	sampled_count = 0;
}

uint64_t sampler_skipped(void)
{
	return atomic_load(&samples_skipped);
}
