/* The viewer connection: the listening socket, the handshake a new viewer
 * gets (HELLO and the state it needs), sending, requests (detach), sockets the program took over,
 * a move to another session, and the final file for a viewer that is late. */
#include "viewer.h"
#include "cuscope/clock.h"
#include "cuscope/safefs.h"
#include "cuscope/session.h"
#include "drain.h"
#include "frames.h"
#include "source.h"
#include "threads.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

/* A session directory an attach asked for (see sender_move_session), taken by the sender. */
static char move_dir[256];
static _Atomic int move_pending;
static _Atomic int viewer_connected;

/* ---- viewer connection ---- */

/* The process's command line (NUL-separated, cut at cap - 1 bytes); its length, 0 when unreadable. */
static int viewer_read_cmdline(char *buf, size_t cap)
{
	ssize_t n = collector_fd_read_file("/proc/self/cmdline", buf, cap);
	return n > 0 ? (int)n : 0;
}

/* Frames a new viewer needs before the queued history: HELLO, every string, thread names, losses. */
int viewer_build_intro(struct sender *s)
{
	/* Built in a queue of its own (with the main queue's spare blocks), then put in front. */
	struct sendq history = s->q;
	sendq_init(&s->q, history.bound);
	s->q.spare = history.spare;
	s->q.spare_count = history.spare_count;
	history.spare = NULL;
	history.spare_count = 0;

	struct wire_hello hello;
	memset(&hello, 0, sizeof hello);
	memcpy(hello.magic, WIRE_MAGIC, 8);
	hello.version = WIRE_VERSION;
	hello.hello_size = sizeof hello;
	hello.pid = getpid();
	hello.ppid = getppid();
	hello.start_mono_ns = s->start_mono_ns;
	clock_anchor(&hello.anchor_mono_ns, &hello.anchor_real_ns);
	hello.features = WIRE_FEATURE_NVTX | WIRE_FEATURE_THREADS |
	                 (collector_config.attached ? WIRE_FEATURE_ATTACHED : 0);
	gethostname(hello.host, sizeof hello.host - 1);
	hello.ids = collector_config.rank.ids;
	hello.rank = collector_config.rank.rank;
	hello.local_rank = collector_config.rank.local_rank;
	hello.world_size = collector_config.rank.world_size;
	hello.restart_count = collector_config.rank.restart_count;
	char cmdline[4096];
	int cmd_len = viewer_read_cmdline(cmdline, sizeof cmdline);
	hello.cmdline_len = (uint32_t)cmd_len;
	int ok =
	    sendq_append(&s->q, WIRE_FRAME_HELLO, &hello, sizeof hello, cmdline, (size_t)cmd_len, 0) == 0;
	for (uint32_t id = 1; ok && id < s->strings.count; id++) {
		size_t len;
		const char *text = strtab_text(&s->strings, id, &len);
		struct wire_string ws = {id, (uint32_t)len};
		ok = sendq_append(&s->q, WIRE_FRAME_STRING, &ws, sizeof ws, text, len, 0) == 0;
	}
	for (size_t i = 0; ok && i < s->thread_count; i++) {
		const struct known_thread *t = &s->threads[i];
		const char *name = threads_display_name(t);
		int is_new;
		struct wire_event ev = {
		    .time_ns = t->first_ns, .tid = (uint32_t)t->tid, .kind = WIRE_EV_THREAD_NAME};
		ev.name_id = strtab_intern(&s->strings, name, strlen(name), &is_new);
		if (is_new) {
			struct wire_string ws = {ev.name_id, (uint32_t)strlen(name)};
			sendq_append(&s->q, WIRE_FRAME_STRING, &ws, sizeof ws, name, strlen(name), 0);
		}
		ok = sendq_append(&s->q, WIRE_FRAME_EVENTS, &ev, sizeof ev, NULL, 0, 1) == 0;
	}
	for (size_t i = 0; ok && i < s->device_count; i++)
		ok = sendq_append(&s->q, WIRE_FRAME_GPU_DEVICE, &s->devices[i], sizeof s->devices[i], NULL, 0,
		                  0) == 0;
	if (ok && s->context_count)
		ok = sendq_append(&s->q, WIRE_FRAME_GPU, s->contexts,
		                  s->context_count * sizeof s->contexts[0], NULL, 0, 0) == 0;
	s->notices_sent = 0;
	if (ok)
		frames_queue_notices(s);
	if (ok) {
		struct wire_loss losses[WIRE_LOSS_CAUSE_MAX];
		size_t len = frames_build_losses(s, losses);
		ok = sendq_append(&s->q, WIRE_FRAME_LOSSES, losses, len, NULL, 0, 0) == 0;
	}
	struct sendq intro = s->q;
	s->q = history;
	if (!ok) {
		uint64_t none[WIRE_LOSS_CAUSE_MAX] = {0};
		sendq_clear(&intro, 0, none); /* the intro carries no events of the history */
	}
	sendq_prepend(&s->q, &intro);
	return ok;
}

void viewer_disconnect(struct sender *s)
{
	/* Closed only while the number is still ours: the program may have closed and reused it. */
	collector_fd_close(s->viewer_fd);
	s->viewer_fd = -1;
	atomic_store(&viewer_connected, 0);
	/* A half-sent block cannot be resumed by another viewer: drop it. */
	sendq_drop_partial(&s->q, s->lost);
}

static void viewer_request_reset(void);

void viewer_accept(struct sender *s)
{
	for (;;) {
		int fd = accept4(s->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return;
		/* Registered before anything else: the program may close the number at any time. */
		if (collector_fd_own(fd, S_IFSOCK) < 0)
			continue;
		/* One viewer at a time; others and foreign users are turned away. */
		if (s->viewer_fd >= 0 || session_peer_allowed(fd) != 1) {
			collector_fd_close(fd);
			continue;
		}
		s->viewer_fd = fd;
		viewer_request_reset();
		drain_rings(s);
		if (!viewer_build_intro(s)) {
			collector_fd_close(fd);
			s->viewer_fd = -1;
			continue;
		}
		s->ever_connected = 1;
		atomic_store(&viewer_connected, 1);
	}
}

/* Writes queued blocks until the socket would block. */
void viewer_send(struct sender *s)
{
	int fd = s->viewer_fd;
	/* Given up by the program since the loop's check (its close went through inject.c): nothing
	 * is sent into what may be its socket now; the next check forgets the number. */
	if (fd < 0 || !collector_fd_use_begin(fd))
		return;
	int rc = sendq_send(&s->q, fd);
	collector_fd_use_end(fd);
	if (rc != 0)
		viewer_disconnect(s);
}

/* ---- requests from the viewer (see struct wire_request) ---- */

/* How long a detach answer may take to send; the viewer waits 1 s for it. */
#define DETACH_SEND_NS 800000000ull

/* The part of a request read so far: requests are 8 bytes, read whole across short reads. */
static struct {
	uint8_t bytes[sizeof(struct wire_request)];
	size_t len;
} viewer_req;

/* A new viewer's requests start from their first byte. */
static void viewer_request_reset(void)
{
	viewer_req.len = 0;
}

/* Takes bytes the viewer sent; returns 1 when they complete a detach request (others are ignored). */
static int viewer_request_feed(const uint8_t *buf, size_t n)
{
	int detach = 0;
	while (n) {
		size_t take = sizeof viewer_req.bytes - viewer_req.len;
		if (take > n)
			take = n;
		memcpy(viewer_req.bytes + viewer_req.len, buf, take);
		viewer_req.len += take;
		buf += take;
		n -= take;
		if (viewer_req.len < sizeof viewer_req.bytes)
			break;
		struct wire_request req;
		memcpy(&req, viewer_req.bytes, sizeof req);
		viewer_req.len = 0;
		if (req.magic == WIRE_REQUEST_MAGIC && req.type == WIRE_REQUEST_DETACH)
			detach = 1;
	}
	return detach;
}

/* Sends the queue to the viewer until it is empty, the viewer is gone, or max_ns have passed. */
static void viewer_flush_within(struct sender *s, uint64_t max_ns)
{
	uint64_t deadline = clock_mono_ns() + max_ns;
	while (s->viewer_fd >= 0 && s->q.head) {
		viewer_send(s);
		if (s->viewer_fd < 0 || sendq_all_sent(&s->q))
			return;
		uint64_t now = clock_mono_ns();
		if (now >= deadline)
			return;
		uint64_t left_ms = (deadline - now) / 1000000 + 1;
		struct pollfd p = {s->viewer_fd, POLLOUT, 0};
		poll(&p, 1, left_ms < 10 ? (int)left_ms : 10);
	}
}

/*
 * Answers a detach request (sender thread only: the program never waits for it): what the rings
 * hold, notices, the losses so far and a BYE marked detached, sent within DETACH_SEND_NS; then the
 * viewer is let go as after a hang-up (an attached collector stops, an armed one keeps its flight
 * recorder). A BYE that could not be sent is taken back out of the queue, so that a later viewer
 * of an armed process does not read it as the end of the stream.
 */
static void viewer_answer_detach(struct sender *s)
{
	if (atomic_load_explicit(&s->stop, memory_order_acquire))
		return; /* exiting: the final flush sends the real end */
	/* What the sources hold outside the rings goes into this answer, before the BYE; an attached
	 * collector stops after it. */
	source_each_flush(collector_config.attached);
	drain_rings(s);
	frames_queue_notices(s);
	frames_queue_losses(s);
	struct wire_bye bye = {clock_mono_ns(), -1, WIRE_BYE_DETACHED};
	const size_t bye_size = sizeof(struct wire_frame_header) + sizeof bye;
	if (sendq_append(&s->q, WIRE_FRAME_BYE, &bye, sizeof bye, NULL, 0, 0) == 0) {
		viewer_flush_within(s, DETACH_SEND_NS);
		/* Nothing was queued since the BYE: if unsent, it is the end of the tail block. */
		sendq_retract(&s->q, bye_size);
	}
	viewer_disconnect(s);
}

void viewer_check_hangup(struct sender *s, short revents)
{
	if (s->viewer_fd < 0)
		return;
	if (revents & (POLLHUP | POLLERR)) {
		viewer_disconnect(s);
		return;
	}
	if (revents & POLLIN) {
		uint8_t buf[256];
		ssize_t n = recv(s->viewer_fd, buf, sizeof buf, MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
			viewer_disconnect(s);
		else if (n > 0 && viewer_request_feed(buf, (size_t)n))
			viewer_answer_detach(s);
	}
}

/* Creates the listening socket at s->socket_path and registers it; 0 or -errno. */
int viewer_listen(struct sender *s)
{
	char dir[PATH_MAX], name[NAME_MAX + 1];
	int err = safefs_split(s->socket_path, dir, sizeof dir, name, sizeof name);
	if (err)
		return err;
	/* Both fds registered as soon as they exist: the program may take either number meanwhile. */
	int dfd = collector_fd_open(dir, O_RDONLY | O_DIRECTORY, 0);
	if (dfd < 0)
		return dfd;
	int fd = collector_fd_own(socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), S_IFSOCK);
	err = fd < 0 ? -EMFILE : !collector_fd_check(dfd) ? -EBADF : session_listen_at(dfd, name, fd);
	/* A directory fd taken over while binding: the socket may not be where the viewers look. */
	if (collector_fd_close(dfd) != 0 && !err)
		err = -EBADF;
	if (err) {
		if (fd >= 0)
			collector_fd_close(fd);
		return err;
	}
	s->listen_fd = fd;
	return 0;
}

/*
 * Checks that the sockets are still ours before they are used: a program that closed them
 * (daemon style) may have the numbers for its own files now. A lost viewer connection is
 * dropped (counted); a lost listening socket is made again, a few times at most.
 */
static void viewer_take_move(struct sender *s);

void viewer_check_fds(struct sender *s)
{
	viewer_take_move(s);
	if (s->viewer_fd >= 0 && !collector_fd_check(s->viewer_fd)) {
		s->viewer_fd = -1; /* not ours to close any more */
		atomic_store(&viewer_connected, 0);
		sendq_drop_partial(&s->q, s->lost);
	}
	if (s->listen_fd >= 0 && !collector_fd_check(s->listen_fd))
		s->listen_fd = -1;
	uint64_t now = clock_mono_ns();
	if (s->listen_fd < 0 && s->listen_failures < 8 && now >= s->listen_retry_ns &&
	    !atomic_load_explicit(&s->stop, memory_order_relaxed)) {
		if (viewer_listen(s) != 0) {
			s->listen_failures++;
			s->listen_retry_ns = now + 250000000ull;
		}
	}
}

/* Any thread: asks the sender to listen in dir (see sender_move_session). */
int viewer_move_session(const char *dir)
{
	if (strlen(dir) >= sizeof move_dir)
		return -ENAMETOOLONG;
	if (atomic_load(&viewer_connected))
		return -EBUSY;
	int expected = 0;
	if (!atomic_compare_exchange_strong(&move_pending, &expected, 1))
		return -EBUSY;
	strcpy(move_dir, dir);
	atomic_store_explicit(&move_pending, 2, memory_order_release);
	collector_wake_sender();
	return 0;
}

/* Sender thread: listens in the session an attach asked for, leaving the old one. */
static void viewer_take_move(struct sender *s)
{
	if (atomic_load_explicit(&move_pending, memory_order_acquire) != 2)
		return;
	char path[sizeof s->socket_path];
	if (s->viewer_fd < 0 && session_socket_path(path, sizeof path, move_dir, getpid()) == 0) {
		if (s->listen_fd >= 0)
			collector_fd_close(s->listen_fd);
		s->listen_fd = -1;
		unlink(s->socket_path);
		snprintf(collector_config.session_dir, sizeof collector_config.session_dir, "%s", move_dir);
		memcpy(s->socket_path, path, sizeof path);
		s->listen_failures = 0;
		s->listen_retry_ns = 0;
	}
	atomic_store(&move_pending, 0);
}

/* 1 while an attach asked the sender to move (the lazy start ends for it). */
int viewer_move_pending(void)
{
	return atomic_load(&move_pending) != 0;
}

/* Closes the viewer connection and the listening socket (still ours only) and removes the socket. */
void viewer_close(struct sender *s)
{
	if (s->viewer_fd >= 0)
		collector_fd_close(s->viewer_fd);
	s->viewer_fd = -1;
	atomic_store(&viewer_connected, 0);
	if (s->listen_fd >= 0)
		collector_fd_close(s->listen_fd);
	s->listen_fd = -1;
	unlink(s->socket_path);
}

/* Forked child: the parent's sockets are closed here, never used (the viewer must see the parent's
 * EOF); the socket file is the parent's and stays. */
void viewer_forget_after_fork(struct sender *s)
{
	if (s->listen_fd >= 0)
		collector_fd_close(s->listen_fd);
	if (s->viewer_fd >= 0)
		collector_fd_close(s->viewer_fd);
	s->listen_fd = s->viewer_fd = -1;
	atomic_store(&viewer_connected, 0);
	atomic_store(&move_pending, 0);
	s->ever_connected = 0;
}

/*
 * Writes the unsent rest of the stream (from the first unsent byte: the viewer's decoder goes on
 * where the socket stopped) to SESSION/PID.final, 0600, created beside it and renamed into
 * place, so a viewer that is late or stalled still gets every event and the final counts.
 * Returns 0 or -errno (then the viewer reports the counts missing).
 */
int viewer_write_final(struct sender *s)
{
	char path[sizeof s->socket_path], tmp[sizeof s->socket_path + 16];
	if (snprintf(path, sizeof path, "%s/%d.final", collector_config.session_dir, (int)getpid()) >=
	        (int)sizeof path ||
	    snprintf(tmp, sizeof tmp, "%s/.%d.final.tmp", collector_config.session_dir, (int)getpid()) >=
	        (int)sizeof tmp)
		return -ENAMETOOLONG;
	/* Every short-lived child writes one: a leftover is removed only when it is in the way. */
	int fd = collector_fd_open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0600);
	if (fd == -EEXIST && unlink(tmp) == 0)
		fd = collector_fd_open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0600);
	if (fd < 0)
		return fd;
	/* Each write checked: the program may take the number while the file is written. */
	int rc = sendq_write_all(&s->q, fd, collector_fd_write);
	if (collector_fd_close(fd) != 0 && !rc)
		rc = -EBADF;
	if (!rc && rename(tmp, path) != 0)
		rc = -errno;
	if (rc)
		unlink(tmp);
	return rc;
}
