/*
 * CPU stack sampling. Each thread gets a POSIX timer on its own CPU-time clock (created by the
 * sender for every thread it finds) that sends a real-time signal to exactly that thread. The
 * kernel checks those timers at its tick, so they cost nothing per context switch (a perf
 * task-clock event re-arms an hrtimer at every switch: a pipe ping-pong ran 3.5x slower with it at
 * 1 kHz on a 2-core VM, and 1.0x with timers), at the price of at most one sample per tick.
 * CUSCOPE_SAMPLER_MODE=perf selects hrtimer-precise perf events instead.
 *
 * The handler unwinds with libunwind from the signal context and stores raw return addresses in
 * the thread's ring; symbolisation happens later on the sender thread.
 *
 * Cost control: the handler times itself and the signal's delivery is measured once on the
 * sender; sampler_cost hands both to the overhead budget (source.c), which sets the rate
 * (sampler_set_rate: lower, back up, or paused). The sender reports the requested, set and
 * achieved rates as process counters.
 *
 * Signals: the signal is one the program does not handle when sampling starts. Once our handler
 * holds a signal it stays ours at the kernel: a program that later installs a handler for it (seen
 * through the interposed sigaction/signal) gets its disposition recorded and honoured for its own
 * signals, while ours, recognised by their timer cookie or perf fd, never reach its handler; the
 * sampler then moves to a free signal when there is one. The application's SIGPROF/SIGALRM are
 * never touched.
 *
 * Blocked signals: a thread that blocks the sampling signal cannot take a sample, and a signal of
 * ours left pending there would reach the program when it unblocks or through sigwait,
 * sigtimedwait or signalfd. So a thread's timer or perf event is armed only while that thread
 * does not block the signal (its SigBlk, read on the sender before arming and at each poll once
 * the thread has run), the interposed sigwait family drops the few of ours still pending (cookie
 * tagged), and the interposed signalfd leaves the signals we hold out of its set. In attach mode
 * there is no interposition: a thread that starts blocking the signal after it was armed may
 * see one of ours in a sigwait or signalfd before the next poll disarms it (at most one per
 * thread, per poll). Calibration signals are sent to the sender thread only.
 *
 * Exec: a signal of ours still pending when the process image is replaced would reach the new
 * image, where its default action kills the program. Before an exec (the interposed exec family,
 * exec.c) sampler_exec_begin disarms every timer and perf event, takes the calling thread's
 * pending signals of ours with the program's mask put back exactly; other threads' signals die
 * with them at the exec. A failed exec re-arms (sampler_exec_end). Attach mode has no
 * interposition: there a sample pending at an exec still kills the new image.
 */
#include "cuscope/clock.h"
#include "collector.h"
#include "cuscope/wire.h"
#include "sampler_impl.h"
#include "source.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <ucontext.h>

/* Linux encodes a thread's CPU clock as ~tid << 3 | CPUCLOCK_PERTHREAD_MASK | CPUCLOCK_SCHED. */
#define THREAD_CPU_CLOCK(tid) ((clockid_t)((~(unsigned)(tid) << 3) | 4 | 2))

#define MAX_SAMPLED_THREADS 4096
/* How often the sender looks at the signal, the masks and the perf fds and reports the rates. */
#define SAMPLER_POLL_NS 100000000ull
/* Cost assumed for an unwind until samples are measured (the overhead budget's first window). */
#define SAMPLER_PRIOR_UNWIND_NS 20000
/* Perf fds the handler may re-arm are those below this number (a larger one is not used). */
#define SAMPLER_FD_MAX 65536

struct sampled_thread {
	pid_t tid;
	timer_t timer;     /* timer mode */
	int fd;            /* perf mode: the task-clock event (collector_fd_own), -1 otherwise */
	int blocked;       /* the thread blocks the sampling signal: timer or event disarmed */
	uint64_t cpu_ns;   /* the thread's CPU time when its mask was last read */
	int blocked_reads; /* consecutive readings of its mask that block the signal (up to 2) */
};

enum sampler_mode { SAMPLER_TIMER, SAMPLER_PERF };
static enum sampler_mode sampler_mode = SAMPLER_TIMER;
static _Atomic int sampler_signal;
/* The per-thread timers and perf events, as sampler_init, sampler_begin and the rates see them. */
static void sampler_threads_init(int perf);
static void sampler_threads_begin(long period_ns);
static unsigned sampler_threads_level(void);

/* libc's sigaction, never ours: resolved once, outside any signal handler. */
static int (*real_sigaction)(int, const struct sigaction *, struct sigaction *);

int sampler_real_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	if (!real_sigaction) {
		errno = ENOSYS;
		return -1;
	}
	return real_sigaction(sig, act, old);
}

/* Finds libc's sigaction if not yet found (dlsym: never from a signal handler). */
void sampler_sigaction_resolve(void)
{
	if (!real_sigaction)
		real_sigaction =
		    (int (*)(int, const struct sigaction *, struct sigaction *))dlsym(RTLD_NEXT, "sigaction");
}

/* Its address is the cookie our timers carry in si_value. */
static const char sampler_cookie = 's';
/* ... and this one the signals that measure delivery (sent to the sender thread only). */
static const char sampler_calibration_cookie = 'c';
/*
 * The perf event id of each perf fd we opened, by descriptor number (0: not ours), for the
 * signal handler, which cannot take the collector's fd table lock. Untouched pages cost nothing.
 */
static _Atomic uint64_t perf_fd_ids[SAMPLER_FD_MAX];

static uint64_t perf_fd_id(int fd)
{
	return fd >= 0 && fd < SAMPLER_FD_MAX ? atomic_load_explicit(&perf_fd_ids[fd], memory_order_acquire)
	                                      : 0;
}

static void sampler_perf_fd_publish(int fd, uint64_t id)
{
	if (fd >= 0 && fd < SAMPLER_FD_MAX)
		atomic_store_explicit(&perf_fd_ids[fd], id, memory_order_release);
}

/*
 * Signal handler: 1 while fd is still the perf event we opened under that number. The program may
 * have closed it and reused the number for an eventfd or epoll fd (the same anonymous inode), so
 * the event id is compared; only an anonymous inode is asked ('$' ioctls belong to perf alone).
 */
static int perf_fd_live(int fd)
{
	uint64_t want = perf_fd_id(fd), id = 0;
	struct stat st;
	return want && fstat(fd, &st) == 0 && (st.st_mode & S_IFMT) == 0 &&
	       ioctl(fd, PERF_EVENT_IOC_ID, &id) == 0 && id == want;
}

/* 1 if this signal measures delivery: sent by the sender to itself (queued, or by a timer of
 * its own), never to a program thread. */
static int sampler_signal_is_calibration(const siginfo_t *info)
{
	if (!info || info->si_value.sival_ptr != (void *)&sampler_calibration_cookie)
		return 0;
	return (info->si_code == SI_QUEUE && info->si_pid == getpid()) || info->si_code == SI_TIMER;
}

/* 1 if this signal was sent by one of our timers or perf events (not by the program). */
int sampler_signal_is_ours(const siginfo_t *info)
{
	if (!info)
		return 0;
	if (info->si_code == SI_TIMER)
		return info->si_value.sival_ptr == (void *)&sampler_cookie;
	if (info->si_code == POLL_IN || info->si_code == POLL_HUP)
		return perf_fd_id(info->si_fd) != 0;
	return sampler_signal_is_calibration(info);
}

/*
 * Signals whose kernel disposition is our handler, and what the program asked for them (returned
 * by the interposed sigaction and applied to its own signals). Once held, a signal stays held:
 * one of ours may still be pending in some thread.
 */
static _Atomic int signal_held[_NSIG];
static struct sigaction program_action[_NSIG];
static atomic_flag action_lock = ATOMIC_FLAG_INIT;
/* The program installed a handler for the sampling signal: the sender moves to a free one. */
static _Atomic int move_requested;

/*
 * Takes action_lock with every signal blocked on this thread until action_lock_drop: sigaction is
 * async-signal-safe, so a handler may call it (or a held signal may be forwarded) while this
 * thread holds the lock, and would spin forever on it. Other threads hold it only briefly.
 */
static void action_lock_take(sigset_t *saved)
{
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, saved);
	while (atomic_flag_test_and_set_explicit(&action_lock, memory_order_acquire))
		;
}

static void action_lock_drop(const sigset_t *saved)
{
	atomic_flag_clear_explicit(&action_lock, memory_order_release);
	pthread_sigmask(SIG_SETMASK, saved, NULL);
}

/* 1 if our handler holds sig: one of ours may be pending there (not for the handler itself). */
int sampler_holds(int sig)
{
	return sig > 0 && sig < _NSIG && atomic_load(&signal_held[sig]);
}

/* A signal that is not ours on a signal we hold: do what the program asked for it. */
static void sampler_forward(int sig, siginfo_t *info, void *context)
{
	sigset_t saved;
	action_lock_take(&saved);
	struct sigaction act = program_action[sig];
	if (act.sa_flags & SA_RESETHAND) {
		memset(&program_action[sig], 0, sizeof program_action[sig]);
		program_action[sig].sa_handler = SIG_DFL;
	}
	if (act.sa_handler == SIG_DFL) {
		/* The default action of a real-time signal ends the process: let the kernel do it once
		 * this handler returns and the signal is unblocked (the program's own signal, raised
		 * again under its own disposition). */
		struct sigaction dfl;
		memset(&dfl, 0, sizeof dfl);
		dfl.sa_handler = SIG_DFL;
		sampler_real_sigaction(sig, &dfl, NULL);
		atomic_store(&signal_held[sig], 0);
		action_lock_drop(&saved);
		syscall(SYS_tgkill, getpid(), collector_gettid(), sig);
		return;
	}
	action_lock_drop(&saved);
	if (act.sa_handler == SIG_IGN)
		return;
	sigset_t old;
	pthread_sigmask(SIG_BLOCK, &act.sa_mask, &old);
	if (act.sa_flags & SA_SIGINFO)
		act.sa_sigaction(sig, info, context);
	else
		act.sa_handler(sig);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static _Atomic long sampler_period_ns; /* the period set now (may be longer than asked) */
static _Atomic int sampler_paused;     /* rate 0 (the overhead budget): every timer disarmed */
static long requested_period_ns;
static unsigned requested_hz;
static _Atomic int sampler_on;
static _Atomic uint64_t samples_skipped;
static _Atomic uint64_t samples_seen;  /* our signals, taken or not: the achieved rate */
static _Atomic uint64_t handler_ns;    /* time spent in handlers that took a sample */
static _Atomic uint64_t handler_count; /* ... and how many they were */
static uint64_t delivery_ns;           /* what one signal of ours costs a thread beyond the handler,
                                        * measured at start */
static struct sampled_thread sampled[MAX_SAMPLED_THREADS]; /* under sampler_lock */
static size_t sampled_count;
/*
 * Serialises the timers and perf events between the sender (which makes, re-arms and closes
 * them) and an application thread about to exec (which disarms them). Never taken in a handler.
 */
static pthread_mutex_t sampler_lock = PTHREAD_MUTEX_INITIALIZER;
/* Execs under way (changed under sampler_lock): while non-zero nothing is armed. */
static _Atomic int sampler_exec_pending;
/* The process the sampler's timers and perf fds belong to (a vfork child shares our memory). */
static _Atomic pid_t sampler_pid;

/* perf mode: the event disabled itself at the overflow; arm it for the next one (while the
 * descriptor is still our event: the program may have reused the number). */
static void sampler_rearm(const siginfo_t *info)
{
	if (atomic_load_explicit(&sampler_exec_pending, memory_order_relaxed))
		return; /* an exec is under way: the event stays disabled */
	if ((info->si_code == POLL_IN || info->si_code == POLL_HUP) && perf_fd_live(info->si_fd))
		ioctl(info->si_fd, PERF_EVENT_IOC_REFRESH, 1);
}

/* A signal of ours taken by the program's sigwait family: a sample not taken; a perf event is
 * armed for the next one. */
void sampler_drop_pending(const siginfo_t *info)
{
	atomic_fetch_add_explicit(&samples_skipped, 1, memory_order_relaxed);
	sampler_rearm(info);
}

/*
 * While the sender unblocks the sampling signal to calibrate, a signal of the program's own on
 * that number (process-directed) may be delivered to the sender. It is kept, the handler blocks
 * the signal on the sender from its return on (the interrupted context's mask) so that no more
 * land there, the calibration is abandoned, and the kept ones are sent to the process again once
 * it ends (then a program thread takes them, e.g. its sigwait).
 */
#define SAMPLER_STASH_MAX 8
static _Atomic pid_t calibrating_tid;
static siginfo_t stashed[SAMPLER_STASH_MAX];
static _Atomic unsigned stashed_count;
static _Atomic int calibration_interrupted;

/* Handler side: 1 if info was kept for later (the caller is the calibrating sender). */
static int sampler_calibration_stash(const siginfo_t *info, void *context)
{
	if (atomic_load(&calibrating_tid) != collector_gettid())
		return 0;
	unsigned slot = atomic_load(&stashed_count);
	if (slot >= SAMPLER_STASH_MAX)
		return 0; /* cannot happen with the signal blocked after the first: as before */
	stashed[slot] = *info;
	atomic_store(&stashed_count, slot + 1);
	atomic_store(&calibration_interrupted, 1);
	if (context)
		sigaddset(&((ucontext_t *)context)->uc_sigmask, info->si_signo);
	return 1;
}

/* Sender: unblocks sig on this thread for a calibration; saved gets the mask to restore. */
static void sampler_calibration_begin(int sig, sigset_t *saved)
{
	sigset_t one;
	sigemptyset(&one);
	sigaddset(&one, sig);
	atomic_store(&stashed_count, 0);
	atomic_store(&calibration_interrupted, 0);
	atomic_store(&calibrating_tid, collector_gettid());
	pthread_sigmask(SIG_UNBLOCK, &one, saved);
}

/* Sender: blocks the signal again and hands the program's signals taken meanwhile back to it.
 * Returns 0, or -1 when one came (the measurement is not to be used). */
static int sampler_calibration_end(const sigset_t *saved)
{
	pthread_sigmask(SIG_SETMASK, saved, NULL);
	atomic_store(&calibrating_tid, 0);
	unsigned n = atomic_load(&stashed_count);
	for (unsigned i = 0; i < n; i++) {
		/* A kill() is sent again as one (the kernel lets only the main thread queue a
		 * kill-like siginfo); a sigqueue() with its value. */
		if (stashed[i].si_code == SI_USER)
			kill(getpid(), stashed[i].si_signo);
		else
			syscall(SYS_rt_sigqueueinfo, getpid(), stashed[i].si_signo, &stashed[i]);
	}
	atomic_store(&stashed_count, 0);
	return atomic_load(&calibration_interrupted) ? -1 : 0;
}

static void sampler_handler(int sig, siginfo_t *info, void *context)
{
	int saved_errno = errno;
	if (sampler_signal_is_calibration(info)) {
		errno = saved_errno;
		return;
	}
	if (!sampler_signal_is_ours(info)) {
		if (!sampler_calibration_stash(info, context))
			sampler_forward(sig, info, context);
		errno = saved_errno;
		return;
	}
	atomic_fetch_add_explicit(&samples_seen, 1, memory_order_relaxed);
	if (!atomic_load_explicit(&sampler_on, memory_order_relaxed)) {
		errno = saved_errno;
		return;
	}
	uint64_t t0 = clock_mono_ns();
	/* A sample that lands while this thread writes its ring would corrupt the record in progress:
	 * it is taken when the thread leaves the collector instead. */
	if (collector_thread_busy()) {
		collector_note_pending_sample();
		sampler_rearm(info);
		errno = saved_errno;
		return;
	}
	/* A thread in its exit path after its ring was retired: nothing is lost, it has no more work. */
	if (collector_thread_exiting()) {
		sampler_rearm(info);
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
		sampler_rearm(info);
		errno = saved_errno;
		return;
	}
	uint64_t *pcs = (uint64_t *)(rec + 1);
	size_t depth = sampler_unwind(context, pcs, WIRE_STACK_MAX_DEPTH);
	sampler_rearm(info);
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
	atomic_fetch_add_explicit(&handler_ns, rec->time_ns - t0, memory_order_relaxed);
	atomic_fetch_add_explicit(&handler_count, 1, memory_order_relaxed);
	/* Only now, with the record committed; and never take a deferred sample from a handler. */
	collector_thread_restore(was);
	errno = saved_errno;
}

/*
 * 1 if fd still refers to the perf event we opened: the program may have closed it and reused the
 * number, and st_dev/st_ino alone cannot tell a perf fd from its eventfd or epoll fd (they share
 * one anonymous inode), so the fd registry compares the event id too. A lost number is forgotten.
 */
static int sampler_fd_same(const struct sampled_thread *t)
{
	if (t->fd < 0)
		return 0;
	if (collector_fd_check(t->fd))
		return 1;
	sampler_perf_fd_publish(t->fd, 0);
	return 0;
}

/* Installs our handler on sig and marks it held. */
static int sampler_hold(int sig)
{
	struct sigaction sa, old;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = sampler_handler;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigset_t saved;
	action_lock_take(&saved);
	if (sampler_real_sigaction(sig, &sa, &old) != 0) {
		int err = errno;
		action_lock_drop(&saved);
		errno = err;
		return -1;
	}
	if (!atomic_load(&signal_held[sig])) {
		memset(&program_action[sig], 0, sizeof program_action[sig]);
		program_action[sig].sa_handler = SIG_DFL;
	}
	atomic_store(&signal_held[sig], 1);
	action_lock_drop(&saved);
	return 0;
}

/*
 * The program's sigaction on a signal we hold: its wish is recorded (returned as its old action,
 * applied to its own signals) and our handler stays, with the mask and flags it asked for.
 */
int sampler_program_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	sigset_t saved;
	action_lock_take(&saved);
	if (old)
		*old = program_action[sig];
	if (act) {
		program_action[sig] = *act;
		/* Its mask and restart/stack wishes apply to the kernel disposition too. */
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_sigaction = sampler_handler;
		sa.sa_flags = SA_SIGINFO | (act->sa_flags & (SA_RESTART | SA_ONSTACK | SA_NODEFER));
		sa.sa_mask = act->sa_mask;
		sampler_real_sigaction(sig, &sa, NULL);
		int claims = (act->sa_flags & SA_SIGINFO) || act->sa_handler != SIG_DFL;
		if (claims && sig == atomic_load(&sampler_signal))
			atomic_store(&move_requested, 1);
	}
	action_lock_drop(&saved);
	return 0;
}

/* A real-time signal nobody handles (default disposition, not ours), highest first; 0 if none. */
static int sampler_free_signal(void)
{
	for (int sig = SIGRTMAX; sig >= SIGRTMIN; sig--) {
		struct sigaction cur;
		if (atomic_load(&signal_held[sig]) || sampler_real_sigaction(sig, NULL, &cur) != 0)
			continue;
		if (!(cur.sa_flags & SA_SIGINFO) && cur.sa_handler == SIG_DFL)
			return sig;
	}
	return 0;
}

/* Delivery cost assumed where it cannot be measured (rt_tgsigqueueinfo refused). */
#define SAMPLER_DELIVERY_FALLBACK_NS 2000

/*
 * Measures what one signal costs to deliver and return from on this machine. Only on the sender
 * (the caller), never on a program thread: a program that starts with signals blocked (a mask
 * inherited across exec) or consumes them with sigwait would otherwise be handed ours. Each one
 * carries the calibration cookie, so the handler drops it; the signal is unblocked on this thread
 * meanwhile, so each is delivered before rt_tgsigqueueinfo returns and none is left pending.
 */
static void sampler_calibrate(int sig)
{
	enum { ROUNDS = 16 };
	uint64_t best = UINT64_MAX;
	pid_t pid = getpid(), tid = collector_gettid();
	sigset_t saved;
	sampler_calibration_begin(sig, &saved);
	for (int i = 0; i < ROUNDS; i++) {
		siginfo_t si;
		memset(&si, 0, sizeof si);
		si.si_signo = sig;
		si.si_code = SI_QUEUE;
		si.si_pid = pid;
		si.si_uid = getuid();
		si.si_value.sival_ptr = (void *)&sampler_calibration_cookie;
		uint64_t t0 = clock_mono_ns();
		if (syscall(SYS_rt_tgsigqueueinfo, pid, tid, sig, &si) != 0)
			break;
		uint64_t t = clock_mono_ns() - t0;
		if (t < best)
			best = t;
	}
	int interrupted = sampler_calibration_end(&saved) != 0;
	delivery_ns = best == UINT64_MAX || interrupted ? SAMPLER_DELIVERY_FALLBACK_NS : best;
}

int sampler_init(unsigned hz)
{
	if (hz == 0)
		return 0;
	sampler_sigaction_resolve();
	if (!real_sigaction) {
		collector_notice(WIRE_NOTICE_WARNING, "CPU sampling unavailable: sigaction not found");
		return -1;
	}
	const char *mode = getenv("CUSCOPE_SAMPLER_MODE");
	int perf = mode && strcmp(mode, "perf") == 0;
	/* A re-attach reuses the signal our handler still holds. */
	int sig = atomic_load(&sampler_signal);
	if (!sig || !atomic_load(&signal_held[sig]))
		sig = sampler_free_signal();
	if (!sig) {
		collector_notice(WIRE_NOTICE_WARNING,
		                 "CPU sampling unavailable: the program handles every real-time signal");
		return -1;
	}
	if (sampler_hold(sig) != 0) {
		collector_notice(WIRE_NOTICE_WARNING, "CPU sampling unavailable: sigaction: %s",
		                 strerror(errno));
		return -1;
	}
	atomic_store(&sampler_signal, sig);
	requested_hz = hz;
	requested_period_ns = 1000000000L / (long)hz;
	atomic_store(&move_requested, 0);
	sampler_threads_init(perf);
	return 0;
}

int sampler_begin(void)
{
	int sig = atomic_load(&sampler_signal);
	if (!requested_hz || !sig || !atomic_load(&signal_held[sig]))
		return -1;
	if (sampler_unwind_init() != 0) {
		collector_notice(WIRE_NOTICE_WARNING, "CPU sampling unavailable: libunwind address space");
		return -1;
	}
	/* The rate asked; the overhead budget may lower it before the first thread is armed. */
	sampler_threads_begin(requested_period_ns);
	return 0;
}

/*
 * Arms (on = 1, at the period set now) or disarms one thread's timer or perf event; callers hold
 * sampler_lock. A disarmed perf fd also sends no signal at all: closing it (at exec) or its
 * thread's end would otherwise signal POLL_HUP. A perf fd is used only while it is still ours.
 * A thread that blocks the sampling signal stays disarmed (see sampler_check_masks).
 */
static void sampler_arm(struct sampled_thread *t, int on)
{
	on = on && !t->blocked && !atomic_load(&sampler_paused);
	if (t->fd >= 0) {
		if (!sampler_fd_same(t))
			return;
		int flags = fcntl(t->fd, F_GETFL);
		if (on) {
			fcntl(t->fd, F_SETFL, flags | O_ASYNC);
			ioctl(t->fd, PERF_EVENT_IOC_REFRESH, 1);
		} else {
			ioctl(t->fd, PERF_EVENT_IOC_DISABLE, 0);
			fcntl(t->fd, F_SETFL, flags & ~O_ASYNC);
		}
		return;
	}
	long period = on ? atomic_load(&sampler_period_ns) : 0;
	struct itimerspec its = {{period / 1000000000L, period % 1000000000L},
	                         {period / 1000000000L, period % 1000000000L}};
	timer_settime(t->timer, 0, &its, NULL);
}

/*
 * perf mode: a task-clock event on tid that signals tid at every period of its CPU time, armed
 * only when arm is set. Returns the fd (registered with collector_fd_own) or -errno.
 */
static int sampler_open_perf(struct sampled_thread *t, int arm)
{
	struct perf_event_attr attr;
	memset(&attr, 0, sizeof attr);
	attr.size = sizeof attr;
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_TASK_CLOCK;
	attr.sample_period = (uint64_t)atomic_load(&sampler_period_ns);
	attr.disabled = 1;
	attr.wakeup_events = 1;
	int fd = (int)syscall(SYS_perf_event_open, &attr, t->tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fd >= SAMPLER_FD_MAX) {
		/* The handler could not tell its signals from the program's: a timer instead. */
		close(fd);
		return -EMFILE;
	}
	uint64_t id = 0;
	if (ioctl(fd, PERF_EVENT_IOC_ID, &id) != 0 || id == 0) {
		int err = errno ? errno : EINVAL;
		close(fd);
		return -err;
	}
	if (collector_fd_own(fd) < 0)
		return -ENOMEM;
	t->fd = fd;
	sampler_perf_fd_publish(fd, id);
	struct f_owner_ex owner = {F_OWNER_TID, t->tid};
	/* Armed at once, unless an exec is under way (sampler_exec_end arms it if that fails) or the
	 * thread blocks the signal. */
	arm = arm && !t->blocked && !atomic_load(&sampler_exec_pending) && !atomic_load(&sampler_paused);
	if (fcntl(fd, F_SETSIG, atomic_load(&sampler_signal)) != 0 || fcntl(fd, F_SETOWN_EX, &owner) != 0 ||
	    (arm && (fcntl(fd, F_SETFL, O_ASYNC) != 0 || ioctl(fd, PERF_EVENT_IOC_REFRESH, 1) != 0))) {
		int err = errno;
		sampler_perf_fd_publish(fd, 0);
		collector_fd_close(fd);
		t->fd = -1;
		return -err;
	}
	return fd;
}

/* timer mode: a timer on tid's CPU clock that signals tid, armed only when arm is set; 0 or -errno. */
static int sampler_open_timer(struct sampled_thread *t, int sig, int arm)
{
	struct sigevent sev;
	memset(&sev, 0, sizeof sev);
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = sig;
	sev.sigev_value.sival_ptr = (void *)&sampler_cookie;
	sev._sigev_un._tid = t->tid;
	if (timer_create(THREAD_CPU_CLOCK(t->tid), &sev, &t->timer) != 0)
		return -errno;
	sampler_arm(t, arm && !atomic_load(&sampler_exec_pending));
	return 0;
}

/* Stops sampling one thread; a perf fd is closed only while it is still ours. */
static void sampler_release(struct sampled_thread *t)
{
	if (t->fd >= 0) {
		sampler_perf_fd_publish(t->fd, 0);
		collector_fd_close(t->fd);
		t->fd = -1;
	} else {
		timer_delete(t->timer);
	}
}

/* ns on CPU of tid so far; 0 or -1 (the thread is gone). */
static int sampler_thread_cpu(pid_t tid, uint64_t *out)
{
	struct timespec ts;
	if (clock_gettime(THREAD_CPU_CLOCK(tid), &ts) != 0)
		return -1;
	*out = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	return 0;
}

/*
 * 1 if thread tid blocks sig now, 0 if not, -1 if unknown (thread gone, no /proc): SigBlk of
 * /proc/self/task/TID/status, read on the sender through a descriptor checked before each use.
 */
static int sampler_thread_blocks(pid_t tid, int sig)
{
	char path[64], buf[4096];
	snprintf(path, sizeof path, "/proc/self/task/%d/status", (int)tid);
	int fd = collector_fd_own(open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY));
	if (fd < 0)
		return -1;
	size_t used = 0;
	while (used < sizeof buf - 1 && collector_fd_check(fd)) {
		ssize_t n = read(fd, buf + used, sizeof buf - 1 - used);
		if (n <= 0)
			break;
		used += (size_t)n;
	}
	if (collector_fd_close(fd) != 0)
		return -1; /* the number was the program's meanwhile: nothing read is ours */
	buf[used] = '\0';
	const char *line = strstr(buf, "\nSigBlk:");
	if (!line)
		return -1;
	char *end;
	unsigned long long mask = strtoull(line + 8, &end, 16);
	if (end == line + 8)
		return -1;
	return sig >= 1 && sig <= 64 && (mask >> (sig - 1) & 1);
}

/*
 * Reads tid's mask (after its CPU time: a mask changed later shows as CPU time at the next poll)
 * and decides whether it blocks the sampling signal. An armed thread is taken as blocking only
 * after two readings in a row: our own handler blocks the signal while it runs, so one reading
 * may catch a sample in progress (a few per cent of a sampled thread's time). A thread not armed
 * yet (first) is never armed while it blocks.
 */
static void sampler_read_mask(struct sampled_thread *t, int sig, int first)
{
	uint64_t cpu = 0;
	if (sampler_thread_cpu(t->tid, &cpu) == 0)
		t->cpu_ns = cpu;
	int blocks = sampler_thread_blocks(t->tid, sig);
	if (blocks < 0)
		return; /* unknown: left as it was */
	t->blocked_reads = blocks ? (t->blocked_reads < 2 ? t->blocked_reads + 1 : 2) : 0;
	t->blocked = blocks && (first || t->blocked || t->blocked_reads >= 2);
}

static void sampler_thread_add_locked(pid_t tid);

void sampler_thread_added(pid_t tid)
{
	pthread_mutex_lock(&sampler_lock);
	sampler_thread_add_locked(tid);
	pthread_mutex_unlock(&sampler_lock);
}

static void sampler_thread_add_locked(pid_t tid)
{
	if (!atomic_load(&sampler_on) || sampled_count == MAX_SAMPLED_THREADS)
		return;
	struct sampled_thread *t = &sampled[sampled_count];
	memset(t, 0, sizeof *t);
	t->tid = tid;
	t->fd = -1;
	/* A thread that blocks the signal (a mask inherited across exec or from its creator, a
	 * sigwait or signalfd user) is never armed: ours would wait there for the program. */
	sampler_read_mask(t, atomic_load(&sampler_signal), 1);
	if (sampler_mode == SAMPLER_PERF) {
		int fd = sampler_open_perf(t, !t->blocked);
		if (fd >= 0) {
			sampled_count++;
			return;
		}
		if (fd == -ESRCH)
			return;
		if (fd != -EMFILE) {
			sampler_mode = SAMPLER_TIMER;
			collector_notice(WIRE_NOTICE_WARNING,
			                 "perf events unavailable for sampling (%s): using CPU-time timers, "
			                 "limited to the kernel tick rate",
			                 strerror(-fd));
		}
	}
	int rc = sampler_open_timer(t, atomic_load(&sampler_signal), !t->blocked);
	if (rc != 0) {
		/* ESRCH / EINVAL: the thread ended between the scan and now. */
		if (rc != -ESRCH && rc != -EINVAL) {
			static int warned;
			if (!warned++)
				collector_notice(WIRE_NOTICE_WARNING, "CPU sampling: timer_create failed: %s",
				                 strerror(-rc));
		}
		return;
	}
	sampled_count++;
}

void sampler_thread_removed(pid_t tid)
{
	pthread_mutex_lock(&sampler_lock);
	for (size_t i = 0; i < sampled_count; i++) {
		if (sampled[i].tid == tid) {
			sampler_release(&sampled[i]);
			sampled[i] = sampled[--sampled_count];
			break;
		}
	}
	pthread_mutex_unlock(&sampler_lock);
}

void sampler_stop(void)
{
	pthread_mutex_lock(&sampler_lock);
	atomic_store(&sampler_on, 0);
	for (size_t i = 0; i < sampled_count; i++)
		sampler_release(&sampled[i]);
	sampled_count = 0;
	pthread_mutex_unlock(&sampler_lock);
}

void sampler_forget_after_fork(void)
{
	/* The forking thread may have raced the sender for the lock: nobody else runs here now. */
	pthread_mutex_init(&sampler_lock, NULL);
	atomic_store(&sampler_exec_pending, 0);
	atomic_store(&sampler_pid, getpid());
	/* POSIX timers are not inherited; perf fds are, and count the parent's threads: close them. */
	for (size_t i = 0; i < sampled_count; i++)
		if (sampled[i].fd >= 0)
			sampler_release(&sampled[i]);
	sampled_count = 0;
}

uint64_t sampler_skipped(void)
{
	return atomic_load(&samples_skipped);
}

/*
 * Sets the rate of every sampled thread: hz samples per thread CPU-second, or 0 to pause (every
 * timer and perf event disarmed; threads found meanwhile are not armed). A thread that blocks the
 * signal stays disarmed; during an exec nothing is armed (sampler_exec_end arms what may be).
 */
void sampler_set_rate(unsigned hz)
{
	pthread_mutex_lock(&sampler_lock);
	int was_paused = atomic_load(&sampler_paused);
	long period = hz ? 1000000000L / (long)hz : atomic_load(&sampler_period_ns);
	atomic_store(&sampler_period_ns, period);
	atomic_store(&sampler_paused, hz == 0);
	for (size_t i = 0; i < sampled_count; i++) {
		struct sampled_thread *t = &sampled[i];
		if (t->fd >= 0) {
			uint64_t p = (uint64_t)period;
			if (hz && sampler_fd_same(t))
				ioctl(t->fd, PERF_EVENT_IOC_PERIOD, &p);
			/* A perf event armed twice would signal twice per refresh: only on a change. */
			if ((hz == 0) != was_paused && !atomic_load(&sampler_exec_pending))
				sampler_arm(t, hz != 0);
		} else if (!atomic_load(&sampler_exec_pending)) {
			sampler_arm(t, 1);
		}
	}
	pthread_mutex_unlock(&sampler_lock);
}

unsigned sampler_rate(void)
{
	return atomic_load(&sampler_on) ? sampler_threads_level() : 0;
}

unsigned sampler_requested_rate(void)
{
	return atomic_load(&sampler_on) ? requested_hz : 0;
}

uint64_t sampler_prior_cost_ns(void)
{
	return SAMPLER_PRIOR_UNWIND_NS + (delivery_ns ? delivery_ns : SAMPLER_DELIVERY_FALLBACK_NS);
}

/*
 * What sampling added to the program's threads so far: the handlers' own time (each times
 * itself) plus one measured signal delivery for every signal of ours a thread took, sample or
 * not (deferred, skipped, paused).
 */
void sampler_cost(struct wire_cost *cost)
{
	uint64_t seen = atomic_load(&samples_seen);
	cost->added_ns = atomic_load(&handler_ns) + seen * delivery_ns;
	cost->events = atomic_load(&handler_count);
	/* The level set, also once stopped at exit (the final counts); none before sampling began. */
	cost->level = requested_hz ? sampler_threads_level() : 0;
}

/* Sends every sampled thread's signals to sig instead. */
static void sampler_retarget(int sig)
{
	pthread_mutex_lock(&sampler_lock);
	atomic_store(&sampler_signal, sig);
	for (size_t i = 0; i < sampled_count; i++) {
		struct sampled_thread *t = &sampled[i];
		if (t->fd >= 0) {
			if (sampler_fd_same(t))
				fcntl(t->fd, F_SETSIG, sig);
			continue;
		}
		timer_t old = t->timer;
		if (sampler_open_timer(t, sig, !t->blocked) == 0)
			timer_delete(old);
		else
			t->timer = old; /* the thread is ending: its old timer goes with it */
	}
	pthread_mutex_unlock(&sampler_lock);
}

/* The program claimed the sampling signal: move to a free one, else stay (its own signals are
 * passed to its handler, ours never are) and say so once. */
static void sampler_move(void)
{
	int from = atomic_load(&sampler_signal);
	int to = sampler_free_signal();
	if (to && sampler_hold(to) == 0) {
		sampler_retarget(to);
		collector_notice(WIRE_NOTICE_INFO,
		                 "CPU sampling moved from signal %d to %d: the program installed a handler "
		                 "for %d",
		                 from, to, from);
		return;
	}
	collector_notice(WIRE_NOTICE_INFO,
	                 "CPU sampling stays on signal %d although the program handles it (no free "
	                 "real-time signal): its own signals reach its handler, the sampler's never do",
	                 from);
}

/* perf mode: a perf fd the program closed (or replaced) is opened again, once per thread. */
static void sampler_check_fds(void)
{
	pthread_mutex_lock(&sampler_lock);
	for (size_t i = 0; i < sampled_count;) {
		struct sampled_thread *t = &sampled[i];
		if (t->fd < 0 || sampler_fd_same(t)) {
			i++;
			continue;
		}
		t->fd = -1; /* the number is not ours any more: never closed, never used */
		static int said;
		if (!said++)
			collector_notice(WIRE_NOTICE_WARNING,
			                 "the program closed a CPU-sampling descriptor of thread %d; opened "
			                 "again",
			                 t->tid);
		if (sampler_open_perf(t, !t->blocked) >= 0) {
			i++;
			continue;
		}
		sampled[i] = sampled[--sampled_count];
	}
	pthread_mutex_unlock(&sampler_lock);
}

/*
 * A thread arms only while it does not block the sampling signal. Its mask can change only while
 * it runs, so it is read again only for threads whose CPU time moved since the last reading (and
 * for all after a move to another signal).
 */
static void sampler_check_masks(void)
{
	static int checked_sig;
	pthread_mutex_lock(&sampler_lock);
	int sig = atomic_load(&sampler_signal);
	int all = sig != checked_sig;
	checked_sig = sig;
	for (size_t i = 0; i < sampled_count; i++) {
		struct sampled_thread *t = &sampled[i];
		uint64_t cpu;
		if (!all && sampler_thread_cpu(t->tid, &cpu) == 0 && cpu == t->cpu_ns)
			continue;
		int was = t->blocked;
		if (all)
			t->blocked_reads = 0; /* readings of another signal */
		sampler_read_mask(t, sig, 0);
		/* An exec under way keeps everything disarmed; sampler_exec_end arms what may be. */
		if (t->blocked != was && !atomic_load(&sampler_exec_pending))
			sampler_arm(t, !t->blocked);
		/* Said once it lasts while the thread runs (pthread_create and handlers block briefly). */
		static int said;
		if (was && t->blocked && !all && !said++)
			collector_notice(
			    WIRE_NOTICE_INFO,
			    "CPU sampling: thread %d blocks signal %d (the sampler's) while it runs; "
			    "it is not sampled while it does",
			    (int)t->tid, sig);
	}
	pthread_mutex_unlock(&sampler_lock);
}

/* Sender, each poll: perf fds the program took over are opened again, and threads arm or disarm
 * as their masks start or stop blocking the signal. */
static void sampler_threads_check(void)
{
	if (sampler_mode == SAMPLER_PERF)
		sampler_check_fds();
	sampler_check_masks();
}

/* sampler_init: perf events or CPU-time timers, and the process the sampler's timers belong to. */
static void sampler_threads_init(int perf)
{
	sampler_mode = perf ? SAMPLER_PERF : SAMPLER_TIMER;
	atomic_store(&sampler_pid, getpid());
}

/* sampler_begin: sampling runs at period_ns; threads found from now on are armed. */
static void sampler_threads_begin(long period_ns)
{
	atomic_store(&sampler_period_ns, period_ns);
	atomic_store(&sampler_paused, 0);
	atomic_store(&sampler_on, 1);
}

/* The rate set now in samples per thread CPU-second (also once stopped); 0 while paused. */
static unsigned sampler_threads_level(void)
{
	long period = atomic_load(&sampler_period_ns);
	return period > 0 && !atomic_load(&sampler_paused) ? (unsigned)(1000000000L / period) : 0;
}

/* CPU time of the program's threads so far: the process's minus the sender's (the caller). */
static uint64_t sampler_program_cpu_ns(void)
{
	struct timespec p, s;
	if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &p) != 0 ||
	    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &s) != 0)
		return 0;
	uint64_t pn = (uint64_t)p.tv_sec * 1000000000ull + (uint64_t)p.tv_nsec;
	uint64_t sn = (uint64_t)s.tv_sec * 1000000000ull + (uint64_t)s.tv_nsec;
	return pn > sn ? pn - sn : 0;
}

void sampler_poll(uint64_t now_ns)
{
	static uint64_t last_ns, cpu_at_start;
	if (!atomic_load(&sampler_on))
		return;
	if (!cpu_at_start)
		cpu_at_start = sampler_program_cpu_ns() + 1;
	if (now_ns && now_ns - last_ns < SAMPLER_POLL_NS)
		return;
	last_ns = now_ns ? now_ns : clock_mono_ns();
	if (atomic_exchange(&move_requested, 0))
		sampler_move();
	/* Without the interposer (attach), a handler the program installed replaces ours outright. */
	int sig = atomic_load(&sampler_signal);
	struct sigaction cur;
	if (sampler_real_sigaction(sig, NULL, &cur) == 0 && cur.sa_sigaction != sampler_handler) {
		atomic_store(&signal_held[sig], 0);
		sampler_move();
	}
	/* Here, on the sender: never on a program thread (see sampler_calibrate). */
	if (!delivery_ns && now_ns) {
		/* Not in perf mode either an A/B of a timer signalling this thread for tens of ms (what
		 * its interrupts cost): the sampling signal would be unblocked here that long, and a
		 * program's own signal of that number sent meanwhile lands on this thread and reaches
		 * the program late (t087). Perf-mode estimates leave that interrupt cost out. */
		sampler_calibrate(atomic_load(&sampler_signal));
	}
	sampler_threads_check();
	/* Requested, set and achieved rates, process-wide (tid = pid). */
	pid_t pid = getpid();
	uint64_t cpu = sampler_program_cpu_ns() - (cpu_at_start - 1);
	uint64_t seen = atomic_load(&samples_seen);
	sender_counter(last_ns, pid, "sampling-requested-hz", requested_hz);
	sender_counter(last_ns, pid, "sampling-hz", sampler_rate());
	if (cpu >= 10000000ull)
		sender_counter(last_ns, pid, "sampling-achieved-hz",
		               (uint64_t)((double)seen * 1e9 / (double)cpu + 0.5));
}

/*
 * Takes sampler_lock from an application thread. Bounded: an exec from the program's signal
 * handler may interrupt this very thread inside sampler_exec_begin; returns 0 if not taken.
 */
static int sampler_lock_app_thread(void)
{
	for (int i = 0; i < 20000; i++) {
		if (pthread_mutex_trylock(&sampler_lock) == 0)
			return 1;
		sched_yield();
	}
	return 0;
}

/* 1 if the timers and perf fds are this process's (not the one a vfork child shares memory with). */
int sampler_threads_ours(void)
{
	return atomic_load(&sampler_pid) == getpid();
}

/* An application thread about to exec: disarms everything until sampler_threads_exec_rearm. */
void sampler_threads_exec_disarm(void)
{
	int locked = sampler_lock_app_thread();
	atomic_fetch_add(&sampler_exec_pending, 1);
	if (locked) {
		for (size_t i = 0; i < sampled_count; i++)
			sampler_arm(&sampled[i], 0);
		pthread_mutex_unlock(&sampler_lock);
	}
}

/* The exec failed: once no other is under way, every thread that may be is armed again. */
void sampler_threads_exec_rearm(void)
{
	int locked = sampler_lock_app_thread();
	if (atomic_fetch_sub(&sampler_exec_pending, 1) == 1 && locked && atomic_load(&sampler_on))
		for (size_t i = 0; i < sampled_count; i++)
			sampler_arm(&sampled[i], 1);
	if (locked)
		pthread_mutex_unlock(&sampler_lock);
}
