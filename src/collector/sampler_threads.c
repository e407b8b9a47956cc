/*
 * The sampler's per-thread part (see sampler.c): a CPU-time timer or perf task-clock event for
 * every thread the sender finds (open, arm, release), the masks that keep a thread that blocks
 * the signal disarmed, perf fds the program took over, the rate set on all of them, a move to
 * another signal, and the disarming around an exec.
 */
#include "collector.h"
#include "cuscope/wire.h"
#include "sampler_impl.h"
#include "source.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Linux encodes a thread's CPU clock as ~tid << 3 | CPUCLOCK_PERTHREAD_MASK | CPUCLOCK_SCHED. */
#define THREAD_CPU_CLOCK(tid) ((clockid_t)((~(unsigned)(tid) << 3) | 4 | 2))

#define MAX_SAMPLED_THREADS 4096

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
static _Atomic long sampler_period_ns; /* the period set now (may be longer than asked) */
static _Atomic int sampler_paused;     /* rate 0 (the overhead budget): every timer disarmed */
_Atomic int sampler_on;
static struct sampled_thread sampled[MAX_SAMPLED_THREADS]; /* under sampler_lock */
static size_t sampled_count;
/*
 * Serialises the timers and perf events between the sender (which makes, re-arms and closes
 * them) and an application thread about to exec (which disarms them). Never taken in a handler.
 */
static pthread_mutex_t sampler_lock = PTHREAD_MUTEX_INITIALIZER;
/* Execs under way (changed under sampler_lock): while non-zero nothing is armed. */
_Atomic int sampler_exec_pending;
/* The process the sampler's timers and perf fds belong to (a vfork child shares our memory). */
static _Atomic pid_t sampler_pid;

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
	sampler_perf_fd_retire(t->fd, t->tid);
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
	/* Registered first: the program may take the number at any time, even now. */
	if (collector_fd_own(fd, 0) < 0)
		return -ENOMEM;
	if (fd >= SAMPLER_FD_MAX) {
		/* The handler could not tell its signals from the program's: a timer instead. */
		collector_fd_close(fd);
		return -EMFILE;
	}
	uint64_t id = 0;
	errno = 0;
	if (!collector_fd_check(fd) || ioctl(fd, PERF_EVENT_IOC_ID, &id) != 0 || id == 0) {
		int err = errno ? errno : EINVAL;
		collector_fd_close(fd);
		return -err;
	}
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

/* How a thread's sampling ends (sampler_release). */
enum sampler_end {
	SAMPLER_END_STOP,   /* the thread runs on: its queued samples must not reach the program */
	SAMPLER_END_GONE,   /* the thread has exited: no signal of its can be pending any more */
	SAMPLER_END_FORKED, /* a forked child's copy of the parent's fd: the parent's event goes on */
};

/*
 * Stops sampling one thread; a perf fd is disarmed and closed only while it is still ours. A
 * forked child's fd shares its open file with the parent's event, which must go on: it is only
 * closed.
 */
static void sampler_release(struct sampled_thread *t, enum sampler_end end)
{
	if (t->fd >= 0 && end != SAMPLER_END_STOP) {
		sampler_perf_fd_publish(t->fd, 0);
		collector_fd_close(t->fd);
		t->fd = -1;
	} else if (t->fd >= 0) {
		if (sampler_fd_same(t)) {
			/* Retired first (a handler then re-arms it no more), then disarmed: an armed perf
			 * fd signals POLL_HUP as it closes. */
			sampler_perf_fd_retire(t->fd, t->tid);
			ioctl(t->fd, PERF_EVENT_IOC_DISABLE, 0);
			fcntl(t->fd, F_SETFL, fcntl(t->fd, F_GETFL) & ~O_ASYNC);
		}
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
	if (collector_fd_read_file(path, buf, sizeof buf) <= 0)
		return -1; /* gone, or the number was the program's meanwhile: nothing read is ours */
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
			sampler_release(&sampled[i], SAMPLER_END_GONE);
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
		sampler_release(&sampled[i], SAMPLER_END_STOP);
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
			sampler_release(&sampled[i], SAMPLER_END_FORKED);
	sampled_count = 0;
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

/* Sends every sampled thread's signals to sig instead. */
void sampler_retarget(int sig)
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
void sampler_threads_check(void)
{
	if (sampler_mode == SAMPLER_PERF)
		sampler_check_fds();
	sampler_check_masks();
}

/* sampler_init: perf events or CPU-time timers, and the process the sampler's timers belong to. */
void sampler_threads_init(int perf)
{
	sampler_mode = perf ? SAMPLER_PERF : SAMPLER_TIMER;
	atomic_store(&sampler_pid, getpid());
}

/* sampler_begin: sampling runs at period_ns; threads found from now on are armed. */
void sampler_threads_begin(long period_ns)
{
	atomic_store(&sampler_period_ns, period_ns);
	atomic_store(&sampler_paused, 0);
	atomic_store(&sampler_on, 1);
}

/* The rate set now in samples per thread CPU-second (also once stopped); 0 while paused. */
unsigned sampler_threads_level(void)
{
	long period = atomic_load(&sampler_period_ns);
	return period > 0 && !atomic_load(&sampler_paused) ? (unsigned)(1000000000L / period) : 0;
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
