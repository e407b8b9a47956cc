/*
 * OS-runtime tracing: blocking libc calls, interposed through LD_PRELOAD, recorded as ranges with
 * their stack when they take longer than a threshold (CUSCOPE_OSRT_THRESHOLD_US, default 100 µs).
 * A call that returns quickly costs two clock reads. Locks are timed only when contended
 * (trylock fails first). errno is preserved. What the wrappers add is timed on 1 call in
 * OSRT_COST_EVERY per thread (the wrapper's own steps before and after the call) and on every
 * recorded call (stack and record), for the overhead budget, which may raise the threshold or
 * turn the wrappers off (osrt_set_threshold). Python GC pauses arrive through cuscope_python_gc,
 * threading names through cuscope_python_thread_name and the hook's warnings through
 * cuscope_python_notice, all called by the sitecustomize that launch mode puts on PYTHONPATH.
 */
#include "cuscope/clock.h"
#include "collector.h"
#include "cuscope/wire.h"
#include "source.h"

#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#define OSRT_STACK_DEPTH 64
/* One call in this many (per thread) times the wrapper itself: a prime, so that a thread that
 * alternates a few calls (write, read, ...) has each of them timed. */
#define OSRT_COST_EVERY 61u
/* A thread's blocking-call stacks are taken while unwinding them has cost that thread under
 * 1/OSRT_STACK_SHARE of its time (a token bucket: OSRT_STACK_BURST_NS to start with and at most);
 * past that a call is still recorded, without its stack. A data-loader thread that blocks over the
 * threshold thousands of times a second would otherwise spend ~20 % of its time unwinding
 * (measured: ~7 µs a stack, tests/bench "loader"). */
#define OSRT_STACK_SHARE    100u
#define OSRT_STACK_BURST_NS 1000000u

/* Set by the sender (start-up, overhead budget), read by every wrapper. */
static _Atomic uint64_t osrt_threshold_ns = 100000;
static _Atomic int osrt_enabled;
static _Atomic uint64_t osrt_added_ns;       /* estimated time the wrappers added to the program */
static _Atomic uint64_t osrt_records;        /* calls recorded (over the threshold) */
static _Atomic uint64_t osrt_stacks_skipped; /* calls recorded without their stack */
static int osrt_skip_noticed;                /* sender thread only */
/* This thread's wrapped calls, for 1-in-N timing. initial-exec: a global-dynamic access would
 * call __tls_get_addr on every wrapped call. */
static __thread __attribute__((tls_model("initial-exec"))) unsigned osrt_calls;
/* This thread's stack budget (ns of unwinding it may still spend) and when it was last refilled. */
static __thread __attribute__((tls_model("initial-exec"))) int64_t osrt_stack_tokens_ns;
static __thread __attribute__((tls_model("initial-exec"))) uint64_t osrt_stack_refill_ns;

void osrt_init(uint64_t threshold_ns, int enabled)
{
	osrt_set_threshold(threshold_ns, enabled);
}

void osrt_set_threshold(uint64_t threshold_ns, int enabled)
{
	atomic_store_explicit(&osrt_threshold_ns, threshold_ns, memory_order_relaxed);
	atomic_store_explicit(&osrt_enabled, enabled, memory_order_relaxed);
}

void osrt_cost(struct wire_cost *cost)
{
	uint64_t skipped = atomic_load_explicit(&osrt_stacks_skipped, memory_order_relaxed);
	if (skipped && !osrt_skip_noticed) {
		osrt_skip_noticed = 1;
		collector_notice(WIRE_NOTICE_INFO,
		                 "blocking calls: a thread blocked so often that unwinding every call would "
		                 "cost it over %u%% of its time; its calls past that are recorded without a "
		                 "stack",
		                 100u / OSRT_STACK_SHARE);
	}
	cost->added_ns = atomic_load_explicit(&osrt_added_ns, memory_order_relaxed);
	cost->events = atomic_load_explicit(&osrt_records, memory_order_relaxed);
	cost->level = atomic_load_explicit(&osrt_enabled, memory_order_relaxed)
	                  ? (uint32_t)(atomic_load_explicit(&osrt_threshold_ns, memory_order_relaxed) / 1000)
	                  : 0;
}

/* Static names handed to the sender by reference (interned there once). */
#define OSRT_NAME(fn) static struct collector_string osrt_name_##fn = {(char *)#fn, sizeof #fn - 1, 0, 0, 0}

static inline int osrt_active(void)
{
	return atomic_load_explicit(&collector_running, memory_order_relaxed) && !collector_thread_busy();
}

/* Start of a wrapped call while tracing is on: a clock reading on the calls that time the wrapper
 * (before the remaining checks, so that the timed span has them), else 0. */
static inline uint64_t osrt_cost_start(void)
{
	return osrt_calls++ % OSRT_COST_EVERY == 0 ? clock_mono_ns() : 0;
}

/* Tracing is on (one load: the whole cost of a wrapper while it is off). */
static inline int osrt_on(void)
{
	return atomic_load_explicit(&osrt_enabled, memory_order_relaxed);
}

/* 1 when this thread's stack budget allows a stack now (see OSRT_STACK_SHARE). */
static int osrt_stack_allowed(uint64_t now)
{
	if (!osrt_stack_refill_ns) {
		osrt_stack_tokens_ns = OSRT_STACK_BURST_NS;
	} else {
		osrt_stack_tokens_ns += (int64_t)((now - osrt_stack_refill_ns) / OSRT_STACK_SHARE);
		if (osrt_stack_tokens_ns > (int64_t)OSRT_STACK_BURST_NS)
			osrt_stack_tokens_ns = OSRT_STACK_BURST_NS;
	}
	osrt_stack_refill_ns = now;
	return osrt_stack_tokens_ns > 0;
}

/* Records one blocking call that took [start, end) with the caller's stack (budget allowing). */
static void osrt_record(const struct collector_string *name, uint64_t start, uint64_t end)
{
	uint64_t pcs[OSRT_STACK_DEPTH];
	int depth = 0, skip = 0;
	if (osrt_stack_allowed(end)) {
		/* libunwind itself may read/write (address validation): those calls must not be traced. */
		int was = collector_thread_enter();
		/* Skip this function and the wrapper: the stack starts at the program's call. */
		depth = sampler_backtrace(pcs, OSRT_STACK_DEPTH);
		collector_thread_leave(was);
		skip = depth > 2 ? 2 : 0;
		osrt_stack_tokens_ns -= (int64_t)(clock_mono_ns() - end);
	} else {
		atomic_fetch_add_explicit(&osrt_stacks_skipped, 1, memory_order_relaxed);
	}
	if (depth < 0)
		depth = skip = 0;
	collector_emit_stack(WIRE_EV_OSRT, start, end, name, pcs + skip, (size_t)(depth - skip));
	atomic_fetch_add_explicit(&osrt_records, 1, memory_order_relaxed);
	/* The stack and the record, all of it added to the program's call. */
	atomic_fetch_add_explicit(&osrt_added_ns, clock_mono_ns() - end, memory_order_relaxed);
}

/*
 * End of a wrapped call [t0, t1): on a timed call (cost_start != 0) adds the wrapper's own steps
 * (cost_start..t0 and t1..now, each about one clock reading), scaled to every call it stands
 * for; records the call when it blocked long enough.
 */
static void osrt_finish(const struct collector_string *name, uint64_t cost_start, uint64_t t0, uint64_t t1)
{
	if (cost_start)
		atomic_fetch_add_explicit(&osrt_added_ns,
		                          ((t0 - cost_start) + (clock_mono_ns() - t1)) * OSRT_COST_EVERY,
		                          memory_order_relaxed);
	if (t1 - t0 >= atomic_load_explicit(&osrt_threshold_ns, memory_order_relaxed))
		osrt_record(name, t0, t1);
}

/* The libc function behind ours, with its own prototype (typeof keeps the two in step). */
#define OSRT_REAL(fn)                                                                                        \
	static __typeof__(fn) *real_##fn;                                                                    \
	if (!real_##fn)                                                                                      \
		real_##fn = (__typeof__(fn) *)collector_real(#fn);                                           \
	if (!real_##fn) {                                                                                    \
		errno = ENOSYS;                                                                              \
		return -1;                                                                                   \
	}

/* Times a call expression; records it when it blocked long enough. */
#define OSRT_TIMED(fn, rettype, call)                                                                        \
	do {                                                                                                 \
		if (!osrt_on())                                                                              \
			return call;                                                                         \
		uint64_t tc = osrt_cost_start();                                                             \
		if (!osrt_active())                                                                          \
			return call;                                                                         \
		uint64_t t0 = clock_mono_ns();                                                               \
		rettype rc = call;                                                                           \
		int saved = errno;                                                                           \
		uint64_t t1 = clock_mono_ns();                                                               \
		osrt_finish(&osrt_name_##fn, tc, t0, t1);                                                    \
		errno = saved;                                                                               \
		return rc;                                                                                   \
	} while (0)

OSRT_NAME(nanosleep);
OSRT_NAME(clock_nanosleep);
OSRT_NAME(usleep);
OSRT_NAME(sleep);
OSRT_NAME(read);
OSRT_NAME(write);
OSRT_NAME(readv);
OSRT_NAME(writev);
OSRT_NAME(pread64);
OSRT_NAME(pwrite64);
OSRT_NAME(recv);
OSRT_NAME(recvfrom);
OSRT_NAME(recvmsg);
OSRT_NAME(send);
OSRT_NAME(sendto);
OSRT_NAME(sendmsg);
OSRT_NAME(poll);
OSRT_NAME(ppoll);
OSRT_NAME(select);
OSRT_NAME(pselect);
OSRT_NAME(epoll_wait);
OSRT_NAME(epoll_pwait);
OSRT_NAME(accept);
OSRT_NAME(accept4);
OSRT_NAME(connect);
OSRT_NAME(pthread_mutex_lock);
OSRT_NAME(pthread_cond_wait);
OSRT_NAME(pthread_cond_timedwait);
OSRT_NAME(sem_wait);
OSRT_NAME(sem_timedwait);
OSRT_NAME(waitpid);
OSRT_NAME(wait4);
OSRT_NAME(fsync);
OSRT_NAME(fdatasync);

COLLECTOR_EXPORT int nanosleep(const struct timespec *req, struct timespec *rem)
{
	OSRT_REAL(nanosleep);
	OSRT_TIMED(nanosleep, int, real_nanosleep(req, rem));
}

COLLECTOR_EXPORT int clock_nanosleep(clockid_t clock, int flags, const struct timespec *req,
                                     struct timespec *rem)
{
	static int (*real_clock_nanosleep)(clockid_t, int, const struct timespec *, struct timespec *);
	if (!real_clock_nanosleep)
		real_clock_nanosleep = (int (*)(clockid_t, int, const struct timespec *,
		                                struct timespec *))collector_real("clock_nanosleep");
	if (!real_clock_nanosleep)
		return ENOSYS; /* returns the error, like the real one */
	OSRT_TIMED(clock_nanosleep, int, real_clock_nanosleep(clock, flags, req, rem));
}

COLLECTOR_EXPORT int usleep(useconds_t usec)
{
	OSRT_REAL(usleep);
	OSRT_TIMED(usleep, int, real_usleep(usec));
}

COLLECTOR_EXPORT unsigned int sleep(unsigned int seconds)
{
	static unsigned int (*real_sleep)(unsigned int);
	if (!real_sleep)
		real_sleep = (unsigned int (*)(unsigned int))collector_real("sleep");
	if (!real_sleep)
		return seconds;
	OSRT_TIMED(sleep, unsigned int, real_sleep(seconds));
}

COLLECTOR_EXPORT ssize_t read(int fd, void *buf, size_t count)
{
	OSRT_REAL(read);
	OSRT_TIMED(read, ssize_t, real_read(fd, buf, count));
}

COLLECTOR_EXPORT ssize_t write(int fd, const void *buf, size_t count)
{
	OSRT_REAL(write);
	OSRT_TIMED(write, ssize_t, real_write(fd, buf, count));
}

COLLECTOR_EXPORT ssize_t readv(int fd, const struct iovec *iov, int iovcnt)
{
	OSRT_REAL(readv);
	OSRT_TIMED(readv, ssize_t, real_readv(fd, iov, iovcnt));
}

COLLECTOR_EXPORT ssize_t writev(int fd, const struct iovec *iov, int iovcnt)
{
	OSRT_REAL(writev);
	OSRT_TIMED(writev, ssize_t, real_writev(fd, iov, iovcnt));
}

COLLECTOR_EXPORT ssize_t pread64(int fd, void *buf, size_t count, off_t offset)
{
	OSRT_REAL(pread64);
	OSRT_TIMED(pread64, ssize_t, real_pread64(fd, buf, count, offset));
}

COLLECTOR_EXPORT ssize_t pwrite64(int fd, const void *buf, size_t count, off_t offset)
{
	OSRT_REAL(pwrite64);
	OSRT_TIMED(pwrite64, ssize_t, real_pwrite64(fd, buf, count, offset));
}

COLLECTOR_EXPORT ssize_t recv(int fd, void *buf, size_t len, int flags)
{
	OSRT_REAL(recv);
	OSRT_TIMED(recv, ssize_t, real_recv(fd, buf, len, flags));
}

COLLECTOR_EXPORT ssize_t recvfrom(int fd, void *buf, size_t len, int flags, struct sockaddr *addr,
                                  socklen_t *alen)
{
	OSRT_REAL(recvfrom);
	OSRT_TIMED(recvfrom, ssize_t, real_recvfrom(fd, buf, len, flags, addr, alen));
}

COLLECTOR_EXPORT ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
	OSRT_REAL(recvmsg);
	OSRT_TIMED(recvmsg, ssize_t, real_recvmsg(fd, msg, flags));
}

COLLECTOR_EXPORT ssize_t send(int fd, const void *buf, size_t len, int flags)
{
	OSRT_REAL(send);
	OSRT_TIMED(send, ssize_t, real_send(fd, buf, len, flags));
}

COLLECTOR_EXPORT ssize_t sendto(int fd, const void *buf, size_t len, int flags, const struct sockaddr *addr,
                                socklen_t alen)
{
	OSRT_REAL(sendto);
	OSRT_TIMED(sendto, ssize_t, real_sendto(fd, buf, len, flags, addr, alen));
}

COLLECTOR_EXPORT ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	OSRT_REAL(sendmsg);
	OSRT_TIMED(sendmsg, ssize_t, real_sendmsg(fd, msg, flags));
}

COLLECTOR_EXPORT int poll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	OSRT_REAL(poll);
	OSRT_TIMED(poll, int, real_poll(fds, nfds, timeout));
}

COLLECTOR_EXPORT int ppoll(struct pollfd *fds, nfds_t nfds, const struct timespec *ts, const sigset_t *mask)
{
	OSRT_REAL(ppoll);
	OSRT_TIMED(ppoll, int, real_ppoll(fds, nfds, ts, mask));
}

COLLECTOR_EXPORT int select(int n, fd_set *r, fd_set *w, fd_set *e, struct timeval *tv)
{
	OSRT_REAL(select);
	OSRT_TIMED(select, int, real_select(n, r, w, e, tv));
}

COLLECTOR_EXPORT int pselect(int n, fd_set *r, fd_set *w, fd_set *e, const struct timespec *ts,
                             const sigset_t *mask)
{
	OSRT_REAL(pselect);
	OSRT_TIMED(pselect, int, real_pselect(n, r, w, e, ts, mask));
}

COLLECTOR_EXPORT int epoll_wait(int epfd, struct epoll_event *events, int maxevents, int timeout)
{
	OSRT_REAL(epoll_wait);
	OSRT_TIMED(epoll_wait, int, real_epoll_wait(epfd, events, maxevents, timeout));
}

COLLECTOR_EXPORT int epoll_pwait(int epfd, struct epoll_event *events, int maxevents, int timeout,
                                 const sigset_t *mask)
{
	OSRT_REAL(epoll_pwait);
	OSRT_TIMED(epoll_pwait, int, real_epoll_pwait(epfd, events, maxevents, timeout, mask));
}

COLLECTOR_EXPORT int accept(int fd, struct sockaddr *addr, socklen_t *alen)
{
	OSRT_REAL(accept);
	OSRT_TIMED(accept, int, real_accept(fd, addr, alen));
}

COLLECTOR_EXPORT int accept4(int fd, struct sockaddr *addr, socklen_t *alen, int flags)
{
	OSRT_REAL(accept4);
	OSRT_TIMED(accept4, int, real_accept4(fd, addr, alen, flags));
}

COLLECTOR_EXPORT int connect(int fd, const struct sockaddr *addr, socklen_t alen)
{
	OSRT_REAL(connect);
	OSRT_TIMED(connect, int, real_connect(fd, addr, alen));
}

COLLECTOR_EXPORT int pthread_mutex_lock(pthread_mutex_t *mutex)
{
	static int (*real_lock)(pthread_mutex_t *);
	static int (*real_trylock)(pthread_mutex_t *);
	if (!real_lock) {
		real_trylock = (int (*)(pthread_mutex_t *))collector_real("pthread_mutex_trylock");
		real_lock = (int (*)(pthread_mutex_t *))collector_real("pthread_mutex_lock");
	}
	if (!real_lock)
		return ENOSYS;
	/* Only contended locks are worth a clock read: try first. */
	if (!osrt_on() || !osrt_active() || !real_trylock)
		return real_lock(mutex);
	int rc = real_trylock(mutex);
	if (rc != EBUSY)
		return rc == 0 ? 0 : real_lock(mutex);
	uint64_t tc = osrt_cost_start();
	uint64_t t0 = clock_mono_ns();
	rc = real_lock(mutex);
	int saved = errno;
	uint64_t t1 = clock_mono_ns();
	osrt_finish(&osrt_name_pthread_mutex_lock, tc, t0, t1);
	errno = saved;
	return rc;
}

COLLECTOR_EXPORT int pthread_cond_wait(pthread_cond_t *cond, pthread_mutex_t *mutex)
{
	static int (*real)(pthread_cond_t *, pthread_mutex_t *);
	/* Versioned: the default symbol is the current ABI, matching what the program linked. */
	if (!real)
		real = (int (*)(pthread_cond_t *, pthread_mutex_t *))collector_real_version(
		    "pthread_cond_wait", "GLIBC_2.3.2");
	if (!real)
		real = (int (*)(pthread_cond_t *, pthread_mutex_t *))collector_real("pthread_cond_wait");
	if (!real)
		return ENOSYS;
	if (!osrt_on())
		return real(cond, mutex);
	uint64_t tc = osrt_cost_start(); /* before the check: the timed span includes it */
	if (!osrt_active())
		return real(cond, mutex);
	uint64_t t0 = clock_mono_ns();
	int rc = real(cond, mutex);
	int saved = errno;
	uint64_t t1 = clock_mono_ns();
	osrt_finish(&osrt_name_pthread_cond_wait, tc, t0, t1);
	errno = saved;
	return rc;
}

COLLECTOR_EXPORT int pthread_cond_timedwait(pthread_cond_t *cond, pthread_mutex_t *mutex,
                                            const struct timespec *abstime)
{
	static int (*real)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *);
	if (!real)
		real = (int (*)(pthread_cond_t *, pthread_mutex_t *,
		                const struct timespec *))collector_real_version("pthread_cond_timedwait",
		                                                                "GLIBC_2.3.2");
	if (!real)
		real = (int (*)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *))collector_real(
		    "pthread_cond_timedwait");
	if (!real)
		return ENOSYS;
	if (!osrt_on())
		return real(cond, mutex, abstime);
	uint64_t tc = osrt_cost_start(); /* before the check: the timed span includes it */
	if (!osrt_active())
		return real(cond, mutex, abstime);
	uint64_t t0 = clock_mono_ns();
	int rc = real(cond, mutex, abstime);
	int saved = errno;
	uint64_t t1 = clock_mono_ns();
	osrt_finish(&osrt_name_pthread_cond_timedwait, tc, t0, t1);
	errno = saved;
	return rc;
}

COLLECTOR_EXPORT int sem_wait(sem_t *sem)
{
	OSRT_REAL(sem_wait);
	OSRT_TIMED(sem_wait, int, real_sem_wait(sem));
}

COLLECTOR_EXPORT int sem_timedwait(sem_t *sem, const struct timespec *abstime)
{
	OSRT_REAL(sem_timedwait);
	OSRT_TIMED(sem_timedwait, int, real_sem_timedwait(sem, abstime));
}

COLLECTOR_EXPORT pid_t waitpid(pid_t pid, int *status, int options)
{
	OSRT_REAL(waitpid);
	OSRT_TIMED(waitpid, pid_t, real_waitpid(pid, status, options));
}

COLLECTOR_EXPORT pid_t wait4(pid_t pid, int *status, int options, struct rusage *usage)
{
	OSRT_REAL(wait4);
	OSRT_TIMED(wait4, pid_t, real_wait4(pid, status, options, usage));
}

COLLECTOR_EXPORT int fsync(int fd)
{
	OSRT_REAL(fsync);
	OSRT_TIMED(fsync, int, real_fsync(fd));
}

COLLECTOR_EXPORT int fdatasync(int fd)
{
	OSRT_REAL(fdatasync);
	OSRT_TIMED(fdatasync, int, real_fdatasync(fd));
}

/* ---- Python garbage collection (called through ctypes from sitecustomize) ---- */

static __thread uint64_t gc_start_ns;
static struct collector_string gc_names[3] = {
    {(char *)"gc gen 0", 8, 0, 0, 0},
    {(char *)"gc gen 1", 8, 0, 0, 0},
    {(char *)"gc gen 2", 8, 0, 0, 0},
};

COLLECTOR_EXPORT void cuscope_python_gc(int starting, int generation)
{
	if (!atomic_load_explicit(&collector_running, memory_order_relaxed))
		return;
	uint64_t now = clock_mono_ns();
	if (starting) {
		gc_start_ns = now;
		return;
	}
	if (!gc_start_ns)
		return;
	if (generation < 0 || generation > 2)
		generation = 2;
	collector_emit_stack(WIRE_EV_GC, gc_start_ns, now, &gc_names[generation], NULL, 0);
	gc_start_ns = 0;
}

/* ---- Python thread names (called through ctypes from sitecustomize) ---- */

/* The thread table keeps 63 bytes of a name (known_thread.nvtx_name). */
#define OSRT_PY_NAME_MAX 63

/*
 * A Python thread's `threading` name for native thread id tid, recorded like an NVTX thread name
 * (it wins over the kernel's comm). Called once per thread start or rename, never per Python call;
 * cut to the table's size at a UTF-8 character boundary. The viewer escapes it before display.
 */
COLLECTOR_EXPORT void cuscope_python_thread_name(unsigned long tid, const char *name)
{
	if (!name || !tid || tid > INT32_MAX ||
	    !atomic_load_explicit(&collector_running, memory_order_relaxed))
		return;
	size_t len = strnlen(name, OSRT_PY_NAME_MAX + 1);
	if (len > OSRT_PY_NAME_MAX) {
		len = OSRT_PY_NAME_MAX;
		while (len && ((unsigned char)name[len] & 0xc0) == 0x80)
			len--;
	}
	collector_emit(WIRE_EV_THREAD_NAME, (uint32_t)tid, 0, NULL, NULL, name, len);
}

/* A one-line warning from the Python hook (e.g. perf trampolines asked for but unavailable). */
COLLECTOR_EXPORT void cuscope_python_notice(const char *text)
{
	if (text && atomic_load_explicit(&collector_running, memory_order_relaxed))
		collector_notice(WIRE_NOTICE_WARNING, "%.200s", text);
}
