#include "cuscope/tap.h"
#include "cuscope/clock.h"
#include "cuscope/perfmap.h"
#include "cuscope/safefs.h"
#include "cuscope/session.h"
#include "cuscope/wire.h"
#include "cuscope/xalloc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define TAP_SCAN_NS 20000000ull
/* Bytes per connection per pump, so one busy peer cannot starve the UI. */
#define TAP_READ_BUDGET (8u << 20)

struct tap_conn {
	int fd;
	int source;
	pid_t pid;
	uint64_t start_ticks; /* the process's start time (/proc/PID/stat), 0 when unknown */
	ino_t inode;
	int got_hello;
	int got_bye;            /* its collector's BYE arrived (an exit, or the answer to a detach) */
	uint64_t start_real_ns; /* its collector's start (handshake), CLOCK_REALTIME; 0 unknown */
	uint64_t final_real_ns; /* when its PID.final was last written (CLOCK_REALTIME); 0 none */
	struct wire_decoder dec;
};

/* Sockets already handled (pid + inode), so a finished process is not reconnected. */
struct tap_seen {
	pid_t pid;
	ino_t inode;
	struct timespec ctime; /* inode numbers are reused: a re-created socket differs in ctime */
};

/* Every stream by source number: which process it came from, to tell an exec from a new pid. */
struct tap_source {
	pid_t pid;
	uint64_t start_ticks; /* 0 when unknown (a PID.final of a process already gone) */
	uint8_t ended_alive;  /* its connection ended while the process lived on (an exec) */
	uint8_t continued;    /* a later stream is the same process */
};

struct tap {
	int dir_fd; /* the session directory, verified once at start */
	struct tap_source *sources;
	size_t source_cap;
	uid_t owner; /* who owns it (and the collectors' files in it) */
	struct tap_callbacks cb;
	struct tap_conn *conns;
	size_t conn_count, conn_cap;
	struct tap_seen *seen;
	size_t seen_count, seen_cap;
	int next_source;
	uint64_t last_scan_ns;
	uint64_t bytes;
	int perf_maps;              /* remove the perf maps of ended processes (tap_remove_perf_maps) */
	struct perfmap_watch ended; /* processes whose connection ended, until they are gone */
};

/*
 * The start time of pid in clock ticks since boot, which an exec keeps and a new process with a
 * reused pid does not; *running says it is not exiting or a zombie. 0 when unreadable.
 */
static uint64_t tap_proc_start(pid_t pid, int *running)
{
	char path[64], buf[1024];
	*running = 0;
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	/* The name may hold anything: fields start after its last ')'. */
	const char *p = strrchr(buf, ')');
	char state;
	unsigned flags;
	unsigned long long start;
	if (!p ||
	    sscanf(p + 1, " %c %*d %*d %*d %*d %*d %u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
	           &state, &flags, &start) != 3)
		return 0;
	*running = state != 'Z' && state != 'X' && !(flags & 0x4); /* PF_EXITING */
	return start;
}

/*
 * Numbers a new stream of pid (start_ticks 0 when unknown) and says whether it continues an
 * earlier one: the same process after exec (same pid and start time; for a PID.final of a
 * process already gone, the last stream of that pid ended while the process lived on).
 */
static int tap_source_new(struct tap *tap, pid_t pid, uint64_t start_ticks)
{
	int source = tap->next_source++;
	xgrow((void **)&tap->sources, &tap->source_cap, (size_t)source + 1, sizeof *tap->sources);
	tap->sources[source] = (struct tap_source){.pid = pid, .start_ticks = start_ticks};
	for (int s = source - 1; s >= 0; s--) {
		struct tap_source *prev = &tap->sources[s];
		if (prev->pid != pid)
			continue;
		int same = start_ticks ? prev->start_ticks == start_ticks : prev->ended_alive;
		if (same && !prev->continued) {
			prev->continued = 1;
			if (tap->cb.continued)
				tap->cb.continued(tap->cb.ctx, s);
		}
		break; /* only the latest stream of that pid can be continued */
	}
	return source;
}

struct tap *tap_new_owned(const char *dir, uid_t owner, const struct tap_callbacks *callbacks, int *err)
{
	/* Another user may own the session (root attaching to their process): every socket is
	 * reached through this one verified fd, never through the path again. */
	int fd = session_open(dir, owner);
	if (fd < 0) {
		if (err)
			*err = fd;
		return NULL;
	}
	struct tap *tap = xcalloc(1, sizeof *tap);
	tap->dir_fd = fd;
	tap->owner = owner;
	tap->cb = *callbacks;
	return tap;
}

static int tap_conn_feed(struct tap *tap, struct tap_conn *c, const char *buf, size_t n);
static void tap_take_final(struct tap *tap, struct tap_conn *c);

struct tap *tap_new(const char *dir, const struct tap_callbacks *callbacks)
{
	return tap_new_owned(dir, getuid(), callbacks, NULL);
}

static void tap_conn_close(struct tap *tap, size_t index)
{
	struct tap_conn *c = &tap->conns[index];
	/* What the collector could not send before it exited continues this stream from a file. */
	tap_take_final(tap, c);
	int running;
	if (c->start_ticks && tap_proc_start(c->pid, &running) == c->start_ticks && running)
		tap->sources[c->source].ended_alive = 1;
	if (tap->perf_maps)
		perfmap_watch_add(&tap->ended, c->pid, c->start_ticks);
	close(c->fd);
	wire_decoder_fini(&c->dec);
	/* A collector turns a second viewer away by closing before its handshake. */
	if (!c->got_hello && tap->cb.refused)
		tap->cb.refused(tap->cb.ctx, c->pid);
	if (tap->cb.closed)
		tap->cb.closed(tap->cb.ctx, c->source);
	tap->conns[index] = tap->conns[--tap->conn_count];
}

void tap_free(struct tap *tap)
{
	if (!tap)
		return;
	while (tap->conn_count) {
		struct tap_conn *c = &tap->conns[tap->conn_count - 1];
		close(c->fd);
		wire_decoder_fini(&c->dec);
		tap->conn_count--;
	}
	if (tap->perf_maps)
		perfmap_watch_poll(&tap->ended);
	perfmap_watch_fini(&tap->ended);
	free(tap->conns);
	free(tap->seen);
	free(tap->sources);
	close(tap->dir_fd);
	free(tap);
}

static int tap_seen_has(const struct tap *tap, pid_t pid, const struct stat *st)
{
	for (size_t i = 0; i < tap->seen_count; i++)
		if (tap->seen[i].pid == pid && tap->seen[i].inode == st->st_ino &&
		    tap->seen[i].ctime.tv_sec == st->st_ctim.tv_sec &&
		    tap->seen[i].ctime.tv_nsec == st->st_ctim.tv_nsec)
			return 1;
	return 0;
}

static void tap_seen_add(struct tap *tap, pid_t pid, const struct stat *st)
{
	xgrow((void **)&tap->seen, &tap->seen_cap, tap->seen_count + 1, sizeof *tap->seen);
	tap->seen[tap->seen_count++] = (struct tap_seen){pid, st->st_ino, st->st_ctim};
}

/* Parses "1234.final" into a pid; 0 if name is not one. */
static pid_t tap_final_pid(const char *name)
{
	char *end;
	long pid = strtol(name, &end, 10);
	if (name[0] < '1' || name[0] > '9' || strcmp(end, ".final") != 0 || pid <= 0 || pid > 0x3fffffff)
		return 0;
	return (pid_t)pid;
}

/* A PID.final whose process never had a connection (it exited before the viewer came): the
 * whole stream is in the file; it becomes a source of its own. */
static void tap_final_alone(struct tap *tap, pid_t pid)
{
	for (size_t i = 0; i < tap->conn_count; i++)
		if (tap->conns[i].pid == pid)
			return; /* taken when that connection ends */
	struct tap_conn c;
	memset(&c, 0, sizeof c);
	c.fd = -1;
	c.pid = pid;
	c.source = tap_source_new(tap, pid, 0);
	wire_decoder_init(&c.dec);
	tap_take_final(tap, &c);
	wire_decoder_fini(&c.dec);
	/* No connection, so no watch for its end: the map CPython wrote for --python-perf goes now,
	 * when it was written while this process ran (it has ended: its final stream is complete). */
	if (tap->perf_maps && c.got_hello)
		perfmap_remove_ended(pid, tap->owner, c.start_real_ns, c.final_real_ns);
	if (tap->cb.closed)
		tap->cb.closed(tap->cb.ctx, c.source);
}

static void tap_scan(struct tap *tap);

void tap_finish(struct tap *tap)
{
	tap_scan(tap);
}

void tap_remove_perf_maps(struct tap *tap)
{
	tap->perf_maps = 1;
	tap->ended.owner = tap->owner;
}

/* Connects to sockets not seen before; removes sockets of processes that no longer exist. */
static void tap_scan(struct tap *tap)
{
	if (tap->perf_maps)
		perfmap_watch_poll(&tap->ended);
	DIR *d = safefs_opendir(tap->dir_fd);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d))) {
		pid_t final_pid = tap_final_pid(de->d_name);
		if (final_pid) {
			tap_final_alone(tap, final_pid);
			continue;
		}
		pid_t pid = session_socket_pid(de->d_name);
		if (!pid)
			continue;
		struct stat st;
		if (fstatat(tap->dir_fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISSOCK(st.st_mode))
			continue;
		if (tap_seen_has(tap, pid, &st))
			continue;
		int fd = session_connect_at(tap->dir_fd, de->d_name);
		if (fd < 0) {
			/* A socket left behind by a killed process: nobody will ever answer it. */
			if (fd == -ECONNREFUSED && kill(pid, 0) != 0 && errno == ESRCH) {
				unlinkat(tap->dir_fd, de->d_name, 0);
				tap_seen_add(tap, pid, &st);
			}
			continue;
		}
		tap_seen_add(tap, pid, &st);
		xgrow((void **)&tap->conns, &tap->conn_cap, tap->conn_count + 1, sizeof *tap->conns);
		struct tap_conn *c = &tap->conns[tap->conn_count++];
		memset(c, 0, sizeof *c);
		int running;
		c->fd = fd;
		c->pid = pid;
		c->inode = st.st_ino;
		/* Read once connected: the process listening on the socket is alive now. */
		c->start_ticks = tap_proc_start(pid, &running);
		c->source = tap_source_new(tap, pid, c->start_ticks);
		wire_decoder_init(&c->dec);
	}
	closedir(d);
}

/* Decodes n bytes of c's stream and dispatches the frames; 0, or -1 if c must be closed. */
static int tap_conn_feed(struct tap *tap, struct tap_conn *c, const char *buf, size_t n)
{
	tap->bytes += (uint64_t)n;
	if (wire_decoder_push(&c->dec, buf, n) != 0)
		return -1;
	uint32_t type, length;
	const void *payload;
	const char *cause = NULL;
	int rc;
	while ((rc = wire_decoder_next(&c->dec, &type, &payload, &length, &cause)) == 1) {
		if (!c->got_hello && type != WIRE_FRAME_HELLO) {
			cause = "peer did not start with a handshake";
			rc = -EPROTO;
			break;
		}
		if (type == WIRE_FRAME_HELLO) {
			const char *why;
			if (wire_hello_check(payload, length, &why) != 0) {
				cause = why;
				rc = -EPROTO;
				break;
			}
			c->got_hello = 1;
			/* Its collector's start on the wall clock, through the clock anchor it sent. */
			struct wire_hello h;
			memcpy(&h, payload, sizeof h);
			if (h.anchor_real_ns && h.anchor_mono_ns >= h.start_mono_ns &&
			    h.anchor_real_ns > h.anchor_mono_ns - h.start_mono_ns)
				c->start_real_ns = h.anchor_real_ns - (h.anchor_mono_ns - h.start_mono_ns);
		}
		if (type == WIRE_FRAME_BYE)
			c->got_bye = 1;
		/* How a process ended is written by the viewer that launched it, into its own capture;
		 * a peer (socket or PID.final) claiming it is forging its end. */
		if (type == WIRE_FRAME_EXIT) {
			cause = "sent an exit record, which only a capture written by cuscope may hold";
			rc = -EPROTO;
			break;
		}
		if (tap->cb.frame(tap->cb.ctx, c->source, type, payload, length) != 0)
			return -1;
	}
	if (rc < 0) {
		if (tap->cb.error)
			tap->cb.error(tap->cb.ctx, c->source, c->pid, cause ? cause : "protocol error");
		return -1;
	}
	return 0;
}

/*
 * Feeds DIR/PID.final, the rest of c's stream the collector left at exit (a stalled or late
 * viewer), into c's decoder, then removes it. Only a regular file of ours, never through a link.
 */
static void tap_take_final(struct tap *tap, struct tap_conn *c)
{
	char name[64];
	snprintf(name, sizeof name, "%d.final", (int)c->pid);
	int fd = openat(tap->dir_fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return;
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != tap->owner) {
		close(fd);
		return;
	}
	c->final_real_ns = (uint64_t)st.st_mtim.tv_sec * 1000000000ull + (uint64_t)st.st_mtim.tv_nsec;
	unlinkat(tap->dir_fd, name, 0);
	char buf[65536];
	ssize_t n;
	while ((n = read(fd, buf, sizeof buf)) > 0)
		if (tap_conn_feed(tap, c, buf, (size_t)n) != 0)
			break;
	close(fd);
}

/* Reads what is available on one connection; returns 0, or -1 if it must be closed. */
static int tap_conn_read(struct tap *tap, struct tap_conn *c)
{
	char buf[65536];
	size_t budget = TAP_READ_BUDGET;
	while (budget) {
		ssize_t n = read(c->fd, buf, sizeof buf);
		if (n == 0)
			return -1;
		if (n < 0)
			return errno == EAGAIN || errno == EINTR ? 0 : -1;
		budget = (size_t)n >= budget ? 0 : budget - (size_t)n;
		if (tap_conn_feed(tap, c, buf, (size_t)n) != 0)
			return -1;
	}
	return 0;
}

int tap_pump(struct tap *tap, int timeout_ms, int extra_fd)
{
	uint64_t now = clock_mono_ns();
	if (now - tap->last_scan_ns >= TAP_SCAN_NS) {
		tap->last_scan_ns = now;
		tap_scan(tap);
	}
	size_t n = tap->conn_count;
	struct pollfd *pfd = xcalloc(n + 1, sizeof *pfd);
	for (size_t i = 0; i < n; i++)
		pfd[i] = (struct pollfd){tap->conns[i].fd, POLLIN, 0};
	pfd[n] = (struct pollfd){extra_fd, POLLIN, 0};
	/* New sockets appear without an fd to poll on: cap the wait so scans stay frequent. */
	if (timeout_ms > 20 || timeout_ms < 0)
		timeout_ms = 20;
	int ready = poll(pfd, n + (extra_fd >= 0 ? 1 : 0), timeout_ms);
	int extra_ready = 0;
	if (ready > 0) {
		/* Walk backwards: closing swaps the last connection into the closed slot. */
		for (size_t i = n; i-- > 0;) {
			if (!pfd[i].revents)
				continue;
			if (tap_conn_read(tap, &tap->conns[i]) != 0)
				tap_conn_close(tap, i);
		}
		extra_ready = extra_fd >= 0 && (pfd[n].revents & (POLLIN | POLLHUP | POLLERR));
	}
	free(pfd);
	return extra_ready;
}

int tap_detach(struct tap *tap, int timeout_ms)
{
	/* Every collector is asked at once, so the wait is one bound, not one per process. */
	struct wire_request req = {WIRE_REQUEST_MAGIC, WIRE_REQUEST_DETACH};
	for (size_t i = 0; i < tap->conn_count; i++) {
		struct tap_conn *c = &tap->conns[i];
		/* A failed send is not retried, but the connection is still read: a collector that
		 * closed after its exit may have left its final frames unread in our buffer. */
		if (!c->got_bye)
			(void)send(c->fd, &req, sizeof req, MSG_NOSIGNAL | MSG_DONTWAIT);
	}
	uint64_t deadline = clock_mono_ns() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0) * 1000000ull;
	struct pollfd *pfd = xcalloc(tap->conn_count + 1, sizeof *pfd);
	for (;;) {
		/* Connections still owing their answer; answered ones are not read further. */
		size_t n = 0;
		for (size_t i = 0; i < tap->conn_count; i++)
			if (!tap->conns[i].got_bye)
				pfd[n++] = (struct pollfd){tap->conns[i].fd, POLLIN, 0};
		uint64_t now = clock_mono_ns();
		if (!n || now >= deadline)
			break;
		uint64_t left_ms = (deadline - now + 999999) / 1000000;
		if (poll(pfd, n, (int)left_ms) <= 0)
			continue;
		/* Backwards, as in tap_pump: closing swaps the last connection into the closed slot. */
		for (size_t i = tap->conn_count; i-- > 0;) {
			struct tap_conn *c = &tap->conns[i];
			if (c->got_bye)
				continue;
			short revents = 0;
			for (size_t k = 0; k < n; k++)
				if (pfd[k].fd == c->fd)
					revents = pfd[k].revents;
			if (revents && tap_conn_read(tap, c) != 0)
				tap_conn_close(tap, i); /* its process ended meanwhile: its own end is in */
		}
	}
	free(pfd);
	int unanswered = 0;
	for (size_t i = 0; i < tap->conn_count; i++)
		unanswered += !tap->conns[i].got_bye;
	return unanswered;
}

int tap_connection_count(const struct tap *tap)
{
	return (int)tap->conn_count;
}

uint64_t tap_bytes(const struct tap *tap)
{
	return tap->bytes;
}
