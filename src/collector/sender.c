/*
 * The collector's sender thread: drains every thread's ring, interns strings, tracks the thread
 * list (/proc/self/task, following renames), keeps a bounded queue of encoded frames that is the
 * flight recorder while no viewer is connected, and writes it to the viewer's socket without ever
 * blocking an application thread.
 */
#include "cuscope/clock.h"
#include "cuscope/session.h"
#include "source.h"
#include "sender.h"
#include "drain.h"
#include "frames.h"
#include "threads.h"
#include "viewer.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#define THREAD_SCAN_NS 200000000ull
#define LOSS_REPORT_NS 250000000ull
#define COST_REPORT_NS 1000000000ull
/*
 * Start-up is lazy: the sender thread sleeps until the process has lived
 * collector_config.lazy_start_ns or made its first ring (an event), and only then makes its
 * socket, scans /proc, starts sampling and counters. A child that ends before (a shell loop of
 * /bin/true) writes its final record from its exiting thread (sender_exit_early) and pays for
 * none of that.
 */

enum sender_state { SENDER_IDLE, SENDER_LAZY, SENDER_RUNNING, SENDER_ENDED_EARLY };
static _Atomic int sender_state;
static _Atomic int first_event; /* the process made an event: the lazy wait ends */
static struct sender snd = {.listen_fd = -1, .viewer_fd = -1};
/* Futex word: 1 once the sender thread has finished its final flush (waited on by _exit). */
static _Atomic uint32_t sender_done;
/* How long the final flush keeps sending to a slow viewer before the rest goes to PID.final. */
static _Atomic uint64_t final_send_ns = 2000000000ull;

void sender_counter(uint64_t time_ns, pid_t tid, const char *event, uint64_t value)
{
	struct sender *s = &snd;
	struct wire_counter c = {time_ns, value, (uint32_t)tid, frames_intern(s, event, strlen(event))};
	frames_flush_events(s);
	if (sendq_append(&s->q, WIRE_FRAME_COUNTERS, &c, sizeof c, NULL, 0, 0) != 0)
		s->lost[WIRE_LOSS_NO_MEMORY]++;
	else if (s->viewer_fd < 0)
		sendq_trim(&s->q, s->lost);
}

void sender_gpu_metrics(const struct wire_gpu_metric *samples, size_t n)
{
	struct sender *s = &snd;
	if (!n)
		return;
	frames_flush_events(s);
	if (sendq_append(&s->q, WIRE_FRAME_GPU_METRICS, samples, n * sizeof *samples, NULL, 0, n) != 0)
		s->lost[WIRE_LOSS_NO_MEMORY] += n;
	else if (s->viewer_fd < 0)
		sendq_trim(&s->q, s->lost);
}

void sender_gpu_event(const struct wire_gpu_event *ev)
{
	struct sender *s = &snd;
	s->gpu_events[s->gpu_event_count++] = *ev;
	if (s->gpu_event_count == GPU_EVENTS_PER_FRAME)
		frames_flush_gpu(s);
}

void sender_gpu_context(const struct wire_gpu_event *ev)
{
	struct sender *s = &snd;
	if (s->context_count < MAX_GPU_CONTEXTS)
		s->contexts[s->context_count++] = *ev;
	sender_gpu_event(ev);
}

void sender_gpu_device(const struct wire_gpu_device *dev)
{
	struct sender *s = &snd;
	if (s->device_count < MAX_GPU_DEVICES)
		s->devices[s->device_count++] = *dev;
	frames_flush_gpu(s);
	if (sendq_append(&s->q, WIRE_FRAME_GPU_DEVICE, dev, sizeof *dev, NULL, 0, 0) != 0)
		s->lost[WIRE_LOSS_NO_MEMORY]++;
}

uint32_t sender_string_generation(void)
{
	struct sender *s = &snd;
	return s->generation;
}

uint32_t sender_intern(const char *text, size_t length)
{
	struct sender *s = &snd;
	return frames_intern(s, text, length);
}

int sender_move_session(const char *dir)
{
	return viewer_move_session(dir);
}

/* Futex word the sender sleeps on: an application thread whose ring is half full sets it to 1
 * and wakes the sender, using no fd (the program may own any number). */
static _Atomic uint32_t collector_wake_word;

void collector_wake_sender(void)
{
	/* Only the 0 -> 1 transition makes a system call; the sender resets the word before sleeping. */
	if (atomic_exchange_explicit(&collector_wake_word, 1, memory_order_release) == 0)
		syscall(SYS_futex, &collector_wake_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* Sleeps on the wake word (no fd): a ring half full wakes it, or timeout_ms passes. */
static void sender_sleep(int timeout_ms)
{
	if (atomic_exchange_explicit(&collector_wake_word, 0, memory_order_acquire) != 0)
		return; /* woken since the last drain */
	struct timespec ts = {timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000L};
	syscall(SYS_futex, &collector_wake_word, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0);
}

/*
 * Waits for work: with frames to send, on the viewer's socket (bounded by timeout_ms); otherwise
 * on the wake word, then looks at the sockets without waiting (a new viewer or a hangup waits at
 * most one period).
 */
static void sender_poll_once(struct sender *s, int timeout_ms)
{
	viewer_check_fds(s);
	struct pollfd pfd[2];
	int n = 0, listen_at = -1, viewer_at = -1;
	int want_out = s->viewer_fd >= 0 && s->q.head;
	if (s->listen_fd >= 0) {
		listen_at = n;
		pfd[n++] = (struct pollfd){s->listen_fd, POLLIN, 0};
	}
	if (s->viewer_fd >= 0) {
		viewer_at = n;
		pfd[n++] = (struct pollfd){s->viewer_fd, (short)(POLLIN | (want_out ? POLLOUT : 0)), 0};
	}
	if (!want_out)
		sender_sleep(timeout_ms);
	int ready = n ? poll(pfd, (nfds_t)n, want_out ? timeout_ms : 0) : 0;
	if (ready <= 0)
		return;
	if (viewer_at >= 0)
		viewer_check_hangup(s, pfd[viewer_at].revents);
	if (listen_at >= 0 && (pfd[listen_at].revents & POLLIN))
		viewer_accept(s);
}

static void sender_periodic(struct sender *s, uint64_t now)
{
	/* A connected viewer that stopped reading (suspended, stuck) must not grow the queue without
	 * bound through the frames that are never dropped (strings, counters, losses): let it go; it
	 * can reconnect and start again from the intro. */
	if (s->viewer_fd >= 0 && s->q.queued_bytes > 2 * s->q.bound) {
		viewer_disconnect(s);
		sendq_clear(&s->q, WIRE_LOSS_VIEWER_SLOW, s->lost);
	}
	if (s->viewer_fd >= 0)
		frames_queue_notices(s);
	source_each_poll(now);
	source_budget_poll(now);
	if (s->viewer_fd >= 0 && now - s->last_cost_ns >= COST_REPORT_NS) {
		s->last_cost_ns = now;
		frames_queue_cost(s, now);
	}
	if (now - s->last_scan_ns >= THREAD_SCAN_NS) {
		s->last_scan_ns = now;
		threads_scan(s, now);
	}
	if (now - s->last_loss_ns >= LOSS_REPORT_NS) {
		s->last_loss_ns = now;
		frames_collect_losses(s);
		uint64_t total = frames_loss_total(s);
		if (total != s->last_loss_total && s->viewer_fd >= 0) {
			s->last_loss_total = total;
			frames_queue_losses(s);
		}
	}
}

/*
 * Exit path: last drain, final counts and BYE. A connected viewer gets them over the socket while
 * it keeps reading; whatever it has not taken after a short stall (or 2 s), and everything when a
 * launcher's viewer has not connected yet, goes to PID.final for it. With no viewer expected
 * (armed, never attached; or the viewer left), the process exits at once.
 */
/*
 * At exit: a connected viewer takes the rings' backlog as fast as it reads, for half the final
 * send time at most (from start_ns), so a burst just before exit is not converted at once only to
 * be dropped beyond the queue's bound; then the rest is drained whole, as before.
 */
static void sender_drain_final_backlog(struct sender *s, uint64_t start_ns)
{
	uint64_t deadline = start_ns + atomic_load(&final_send_ns) / 2;
	uint64_t progress_ns = clock_mono_ns();
	while (s->viewer_fd >= 0 && drain_rings_pending()) {
		size_t unsent = sendq_unsent(&s->q);
		size_t drained = drain_rings_paced(s, 1);
		viewer_send(s);
		uint64_t t = clock_mono_ns();
		if (drained || sendq_unsent(&s->q) < unsent)
			progress_ns = t;
		if (t >= deadline || t - progress_ns >= 100000000ull)
			break; /* the viewer stalled: what it has not taken goes to PID.final */
		if (drain_viewer_behind(s))
			sender_poll_once(s, 5);
	}
	drain_rings(s);
}

static void sender_final_flush(struct sender *s)
{
	uint64_t now = clock_mono_ns();
	source_each_stop();
	threads_scan(s, now);
	source_each_poll(0);
	sender_drain_final_backlog(s, now);
	int viewer_expected = collector_config.wait_viewer_ms > 0 && !collector_config.attached;
	if (s->viewer_fd < 0 && (!viewer_expected || s->ever_connected))
		return; /* nobody to hand anything to */
	struct wire_bye bye = {now, -1, 0};
	if (s->viewer_fd < 0) {
		/* A launcher's viewer is coming but not here yet: the whole stream goes to the file. */
		if (!viewer_build_intro(s))
			return;
	}
	frames_queue_notices(s);
	frames_queue_losses(s);
	frames_queue_cost(s, clock_mono_ns());
	sendq_append(&s->q, WIRE_FRAME_BYE, &bye, sizeof bye, NULL, 0, 0);
	uint64_t deadline = now + atomic_load(&final_send_ns), last_progress = clock_mono_ns();
	while (s->viewer_fd >= 0 && s->q.head) {
		uint64_t sent = s->q.sent_total;
		viewer_send(s);
		uint64_t t = clock_mono_ns();
		if (s->q.sent_total != sent)
			last_progress = t;
		if (t >= deadline || t - last_progress >= 100000000ull)
			break; /* stalled: the rest goes to the file */
		if (s->q.head)
			sender_poll_once(s, 5);
	}
	if (s->viewer_fd < 0 && s->ever_connected)
		return; /* the viewer hung up meanwhile */
	if (s->q.head)
		viewer_write_final(s);
}

/* Attach mode: the viewer is gone (or never came), so stop everything and leave the library inert. */
static void sender_detach(struct sender *s)
{
	drain_rings(s);
	source_each_detach();
	viewer_close(s);
	sendq_fini(&s->q);
	s->ever_connected = 0;
	s->thread_count = 0;
	strtab_fini(&s->strings);
	s->started = 0;
	pthread_detach(pthread_self());
	collector_detached(); /* last: a re-attach may start a new sender from here on */
}

static void sender_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * The lazy part of start-up: sleeps until the process has lived lazy_start_ns, made its first
 * ring, been asked to move or to stop. Returns 1 when the sender goes on, 0 when the exiting
 * thread took over (sender_exit_early: this thread must not touch anything).
 */
static int sender_wait_lazy(struct sender *s)
{
	uint64_t deadline = s->start_mono_ns + collector_config.lazy_start_ns;
	for (;;) {
		uint64_t now = clock_mono_ns();
		if (atomic_load_explicit(&s->stop, memory_order_acquire) || now >= deadline ||
		    atomic_load(&first_event) || collector_rings_head() || viewer_move_pending())
			break;
		if (atomic_exchange_explicit(&collector_wake_word, 0, memory_order_acquire) != 0)
			continue; /* woken: look again */
		uint64_t left = deadline - now;
		struct timespec ts = {(time_t)(left / 1000000000ull), (long)(left % 1000000000ull)};
		syscall(SYS_futex, &collector_wake_word, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0);
	}
	int expected = SENDER_LAZY;
	return atomic_compare_exchange_strong(&sender_state, &expected, SENDER_RUNNING) ||
	       expected == SENDER_RUNNING;
}

/* What the lazy start deferred: the socket, sampling, the clock choice, thread tracking. 0, or
 * -errno when the socket cannot be made (the collector then rests: nobody could read it). */
static int sender_begin(struct sender *s)
{
	if (atomic_load_explicit(&s->stop, memory_order_acquire))
		return 0; /* exiting already: only the final record is left to write */
	if (s->listen_fd < 0) {
		int err = viewer_listen(s);
		if (err) {
			/* Never on the program's stderr (a setuid or chroot child's may be anything): a
			 * line in the session directory, if it can be reached at all. */
			sender_log("collector in pid %d cannot listen on %s: %s", (int)getpid(),
			           s->socket_path, strerror(-err));
			return err;
		}
	}
	collector_begin();
	s->tracking = 1;
	return 0;
}

/* clock_ticks_usable, its two files read through fds of ours (the program runs meanwhile). */
static int sender_ticks_usable(void)
{
#if defined(__x86_64__) || defined(__i386__)
	static char cpuinfo[8192]; /* the first CPU's block holds its flags line */
	char source[32];
	if (collector_fd_read_file("/proc/cpuinfo", cpuinfo, sizeof cpuinfo) <= 0 ||
	    collector_fd_read_file("/sys/devices/system/clocksource/clocksource0/current_clocksource", source,
	                           sizeof source) <= 0)
		return 0;
	return clock_ticks_usable_text(cpuinfo, source);
#else
	return 0;
#endif
}

static void *sender_main(void *arg)
{
	struct sender *s = arg;
	collector_mark_own_thread();
	if (!sender_wait_lazy(s))
		return NULL; /* the process ended early; its exiting thread wrote the final record */
	prctl(PR_SET_NAME, "cuscope-sender");
	s->tid = collector_gettid();
	collector_register_own_tid(s->tid);
	s->last_scan_ns = 0;
	/* A burst may be filling the first ring: make room before the slower start-up work. */
	drain_rings(s);
	if (sender_begin(s) != 0) {
		/* Unreachable session: rest like a detached collector (rings are never drained), with
		 * nothing left of this start that a later attach would send or reuse. */
		sendq_fini(&s->q);
		s->ever_connected = 0;
		s->thread_count = 0;
		strtab_fini(&s->strings);
		s->started = 0;
		atomic_store(&sender_state, SENDER_IDLE);
		collector_detached();
		pthread_detach(pthread_self());
		return NULL;
	}
	uint64_t started_ns = clock_mono_ns();
	/* Ticks only where the TSC is invariant and the kernel's clocksource. */
	atomic_store_explicit(&collector_config.use_ticks,
	                      collector_config.ticks_wanted && sender_ticks_usable(), memory_order_relaxed);
	/* Attached late: what the program's first calls would have started starts here. */
	if (collector_config.attached)
		source_each_start_late();
	while (!atomic_load_explicit(&s->stop, memory_order_acquire)) {
		if (collector_config.attached && s->viewer_fd < 0 &&
		    (s->ever_connected || clock_mono_ns() - started_ns > 30000000000ull)) {
			sender_detach(s);
			return NULL;
		}
		size_t drained = drain_rings_paced(s, 1);
		source_count_sender(drained);
		uint64_t now = clock_mono_ns();
		sender_periodic(s, now);
		frames_flush_events(s);
		viewer_send(s);
		sender_poll_once(s, drain_period_ms(drained));
	}
	sender_final_flush(s);
	viewer_close(s);
	atomic_store_explicit(&sender_done, 1, memory_order_release);
	syscall(SYS_futex, &sender_done, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	return NULL;
}

/*
 * A line for the user when no viewer can be told: appended to PID.log in the session directory
 * (0600, never through a link), or dropped. Never written to an fd the program owns.
 */
static void sender_log(const char *fmt, ...)
{
	char path[4096 + 32], line[512];
	if (snprintf(path, sizeof path, "%s/%d.log", collector_config.session_dir, (int)getpid()) >=
	    (int)sizeof path)
		return;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof line - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n > sizeof line - 2)
		n = (int)sizeof line - 2;
	line[n++] = '\n';
	/* Written and closed only while the fd is still ours; otherwise the line is dropped. */
	collector_fd_append(path, line, (size_t)n);
}

int sender_start(void)
{
	struct sender *s = &snd;
	if (strtab_init(&s->strings, collector_config.max_strings,
	                (size_t)collector_config.max_strings * 64) != 0)
		return -ENOMEM;
	s->generation++;
	s->start_mono_ns = clock_mono_ns();
	if (session_socket_path(s->socket_path, sizeof s->socket_path, collector_config.session_dir,
	                        getpid()) != 0) {
		strtab_fini(&s->strings);
		return -ENAMETOOLONG;
	}
	s->listen_failures = 0;
	s->tracking = 0;
	s->q.bound = collector_config.buffer_bytes;
	/* An attach waits for the socket: no lazy start there. */
	int lazy = !collector_config.attached;
	if (!lazy) {
		int err = viewer_listen(s);
		if (err) {
			sender_log("collector in pid %d cannot listen on %s: %s", (int)getpid(),
			           s->socket_path, strerror(-err));
			s->listen_fd = -1;
			strtab_fini(&s->strings);
			return err;
		}
	}
	atomic_store(&first_event, 0);
	atomic_store(&sender_state, lazy ? SENDER_LAZY : SENDER_RUNNING);
	atomic_store(&s->stop, 0);
	atomic_store(&sender_done, 0);
	atomic_store(&final_send_ns, 2000000000ull);
	/* The sender must not inherit signals meant for the application's threads. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = pthread_create(&s->thread, NULL, sender_main, s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		if (s->listen_fd >= 0) {
			collector_fd_close(s->listen_fd);
			unlink(s->socket_path);
		}
		s->listen_fd = -1;
		atomic_store(&sender_state, SENDER_IDLE);
		strtab_fini(&s->strings);
		return -rc;
	}
	s->started = 1;
	return 0;
}

int sender_exit_early(void)
{
	struct sender *s = &snd;
	/* Events in rings or GPU records need the sender's whole drain: only a process without any
	 * ends here. */
	if (atomic_load(&sender_state) != SENDER_LAZY || collector_rings_head() || source_any_buffering())
		return 0;
	int expected = SENDER_LAZY;
	if (!atomic_compare_exchange_strong(&sender_state, &expected, SENDER_ENDED_EARLY))
		return 0;
	/* From here this thread owns the sender's state; the sleeping thread ends when it wakes. */
	s->started = 0;
	int viewer_expected = collector_config.wait_viewer_ms > 0 && !collector_config.attached;
	if (!viewer_expected)
		return 1;                   /* armed, never attached: nothing to hand anyone */
	int was = collector_thread_enter(); /* our own files: no blocking-call records */
	uint64_t now = clock_mono_ns();
	/* The exiting thread names the process's lane (no /proc scan: the sleeping sender may not
	 * have registered itself yet, and other threads made no event). */
	struct known_thread *t = threads_add(s, collector_gettid(), s->start_mono_ns);
	if (t) {
		prctl(PR_GET_NAME, t->comm);
		threads_emit_name(s, t);
	}
	frames_flush_events(s);
	struct wire_bye bye = {now, -1, 0};
	if (viewer_build_intro(s)) {
		frames_queue_notices(s);
		frames_queue_losses(s);
		sendq_append(&s->q, WIRE_FRAME_BYE, &bye, sizeof bye, NULL, 0, 0);
		viewer_write_final(s);
	}
	collector_thread_restore(was);
	return 1;
}

void sender_first_event(void)
{
	if (atomic_load_explicit(&sender_state, memory_order_relaxed) == SENDER_LAZY) {
		atomic_store(&first_event, 1);
		collector_wake_sender();
	}
}

void sender_stop(void)
{
	struct sender *s = &snd;
	if (!s->started)
		return;
	atomic_store_explicit(&s->stop, 1, memory_order_release);
	collector_wake_sender();
	struct timespec deadline;
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += 3 + collector_config.wait_viewer_ms / 1000;
	/* Bounded: a stuck sender must never hold the application's exit hostage. */
	if (pthread_timedjoin_np(s->thread, NULL, &deadline) == 0)
		s->started = 0;
}

void sender_stop_within(uint64_t max_ns)
{
	struct sender *s = &snd;
	if (!s->started)
		return;
	/* The last frames go to the viewer for half the time at most, the rest to PID.final. */
	atomic_store(&final_send_ns, max_ns / 2);
	atomic_store_explicit(&s->stop, 1, memory_order_release);
	collector_wake_sender();
	uint64_t deadline = clock_mono_ns() + max_ns;
	for (;;) {
		if (atomic_load_explicit(&sender_done, memory_order_acquire))
			return;
		uint64_t now = clock_mono_ns();
		if (now >= deadline)
			return;
		uint64_t left = deadline - now;
		struct timespec ts = {(time_t)(left / 1000000000ull), (long)(left % 1000000000ull)};
		syscall(SYS_futex, &sender_done, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0);
	}
}

void sender_forget_after_fork(void)
{
	struct sender *s = &snd;
	/* Everything below belonged to the parent; its memory is leaked on purpose (the parent's
	 * sender may have been mid-update, so nothing is trusted or freed). */
	s->started = 0;
	s->tracking = 0;
	atomic_store(&sender_state, SENDER_IDLE);
	viewer_forget_after_fork(s);
	sendq_forget(&s->q);
	s->event_count = 0;
	s->stacks_len = 0;
	s->stacks_count = 0;
	/* The sender's own symbol cache (no source's): named, not in the table. */
	symbolize_forget();
	s->gpu_event_count = 0;
	s->device_count = s->context_count = 0;
	s->notices_sent = 0;
	s->threads = NULL;
	s->thread_count = s->thread_cap = 0;
	memset(s->lost, 0, sizeof s->lost);
	s->ring_drops_freed = 0;
	s->last_loss_total = 0;
	memset(&s->strings, 0, sizeof s->strings);
}
