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
 *
 * Files: this one holds the signal (held, forwarded, moved), the handler, the calibration,
 * sampler_init/begin, the poll with its rate reports, and the cost; sampler_threads.c each
 * thread's timer or perf event (open, arm, masks, stop, fork) and the rate set on them;
 * sampler_unwind.c the fault guard and our libunwind address space; sampler_interpose.c the exec
 * section and the program's sigaction family and signal waits. sampler_impl.h is what they share.
 */
#include "cuscope/clock.h"
#include "collector.h"
#include "cuscope/wire.h"
#include "sampler_impl.h"
#include "source.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <pthread.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

/* How often the sender looks at the signal, the masks and the perf fds and reports the rates. */
#define SAMPLER_POLL_NS 100000000ull
/* Cost assumed for an unwind until samples are measured (the overhead budget's first window). */
#define SAMPLER_PRIOR_UNWIND_NS 20000

_Atomic int sampler_signal;

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
		    (int (*)(int, const struct sigaction *, struct sigaction *))collector_real("sigaction");
}

/* Its address is the cookie our timers carry in si_value. */
const char sampler_cookie = 's';
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

void sampler_perf_fd_publish(int fd, uint64_t id)
{
	if (fd >= 0 && fd < SAMPLER_FD_MAX)
		atomic_store_explicit(&perf_fd_ids[fd], id, memory_order_release);
}

/* Marks a retired perf fd's id: never equal to a live event's (kernel ids stay far below 2^63). */
#define PERF_FD_RETIRED (1ull << 63)
/* The thread a retired fd signalled: only there can one of its signals still be pending. */
static _Atomic pid_t perf_fd_owner[SAMPLER_FD_MAX];

void sampler_perf_fd_retire(int fd, pid_t owner)
{
	if (fd < 0 || fd >= SAMPLER_FD_MAX)
		return;
	atomic_store_explicit(&perf_fd_owner[fd], owner, memory_order_relaxed);
	atomic_fetch_or_explicit(&perf_fd_ids[fd], PERF_FD_RETIRED, memory_order_release);
}

/* 1 if a perf signal with this si_fd is ours: a live fd of ours, or one retired on this thread. */
static int perf_signal_fd_ours(int fd)
{
	uint64_t id = perf_fd_id(fd);
	if (!(id & PERF_FD_RETIRED))
		return id != 0;
	return atomic_load_explicit(&perf_fd_owner[fd], memory_order_relaxed) == collector_gettid();
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
	/* A retired fd still counts on its thread: a sample queued before we closed it comes after. */
	if (info->si_code == POLL_IN || info->si_code == POLL_HUP)
		return perf_signal_fd_ours(info->si_fd);
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

static long requested_period_ns;
static unsigned requested_hz;
static _Atomic uint64_t samples_skipped;
static _Atomic uint64_t samples_seen;  /* our signals, taken or not: the achieved rate */
static _Atomic uint64_t handler_ns;    /* time spent in handlers that took a sample */
static _Atomic uint64_t handler_count; /* ... and how many they were */
static uint64_t delivery_ns;           /* what one signal of ours costs a thread beyond the handler,
                                        * measured at start */
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
	/* A forked child: loading libunwind takes the loader's lock, which the probe thread proves
	 * free (collector_loader_usable); this is the sender's thread, so it may wait a little. */
	for (int i = 0; i < 100 && !atomic_load(&collector_loader_usable); i++) {
		struct timespec ms = {0, 1000000};
		nanosleep(&ms, NULL);
	}
	if (!atomic_load(&collector_loader_usable)) {
		collector_notice(WIRE_NOTICE_WARNING,
		                 "CPU sampling unavailable in this process: the dynamic loader's lock was "
		                 "held by another thread when it was forked");
		return -1;
	}
	if (sampler_unwind_init() != 0) {
		collector_notice(WIRE_NOTICE_WARNING, "CPU sampling unavailable: libunwind address space");
		return -1;
	}
	/* The rate asked; the overhead budget may lower it before the first thread is armed. */
	sampler_threads_begin(requested_period_ns);
	return 0;
}

uint64_t sampler_skipped(void)
{
	return atomic_load(&samples_skipped);
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
