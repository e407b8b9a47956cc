/*
 * `cuscope relay`: the remote end of `attach --ssh`. Follows every armed session of this user on
 * this node (one tap each), re-frames their collectors' frames onto stdout (relay.h) and never
 * lets a slow stdout hold a collector back: what does not fit the bounded buffer is dropped and
 * counted per source, and the counts travel as RELAY_LOSS records once there is room.
 */
#include "cuscope/relay.h"
#include "cuscope/clock.h"
#include "cuscope/log.h"
#include "cuscope/safefs.h"
#include "cuscope/session.h"
#include "cuscope/tap.h"
#include "cuscope/wire.h"
#include "cuscope/xalloc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef CUSCOPE_VERSION
#define CUSCOPE_VERSION "unknown"
#endif

#define RELAY_SCAN_NS 500000000ull
#define RELAY_PUMP_MS 20
/* After stdin closed: how long the last bytes may take to leave. */
#define RELAY_LAST_FLUSH_NS 2000000000ull
/* Frames every later one depends on (names, stacks, the process itself) get this much more room
 * than events before they too are dropped: losing one costs more than the bytes. */
#define RELAY_CONTROL_BYTES (2 * RELAY_BUFFER_BYTES)

struct relay_source {
	struct relay_loss lost;
	int loss_dirty; /* lost changed since the last RELAY_LOSS record */
};

struct relay;

/* One followed session directory. */
struct relay_session {
	struct relay *relay;
	char name[256]; /* its name under the root */
	struct tap *tap;
	uint32_t *ids; /* the relay's source number by the tap's source number, 0 = none yet (+1) */
	size_t id_cap;
};

struct relay {
	const struct relay_options *opts;
	char root[4096];
	struct relay_session **sessions; /* each on its own: its tap's callbacks point at it */
	size_t session_count, session_cap;
	struct relay_source *sources;
	size_t source_count, source_cap;
	uint8_t *out; /* bytes for stdout from out_head to out_len */
	size_t out_head, out_len, out_cap;
	int out_failed;
	int any_loss;
	int64_t test_realtime_shift_ns; /* CUSCOPE_TEST_REALTIME_SHIFT_NS (relay_test_shift), 0 = none */
	uint8_t *hello;                 /* a HELLO copy with that shift */
	size_t hello_cap;
};

/* Appends bytes to the output buffer (the caller checked the bound). */
static void relay_put(struct relay *r, const void *data, size_t n)
{
	if (r->out_head && r->out_head == r->out_len)
		r->out_head = r->out_len = 0;
	if (r->out_len + n > r->out_cap && r->out_head) {
		memmove(r->out, r->out + r->out_head, r->out_len - r->out_head);
		r->out_len -= r->out_head;
		r->out_head = 0;
	}
	if (r->out_len + n > r->out_cap)
		xgrow((void **)&r->out, &r->out_cap, r->out_len + n, 1);
	memcpy(r->out + r->out_len, data, n);
	r->out_len += n;
}

static size_t relay_pending(const struct relay *r)
{
	return r->out_len - r->out_head;
}

/* Queues one record if it fits under limit bytes pending; 0, or -ENOBUFS. */
static int relay_record(struct relay *r, uint32_t kind, uint32_t source, uint32_t type, const void *payload,
                        uint32_t length, size_t limit)
{
	struct relay_header h = {kind, source, type, length};
	if (relay_pending(r) + sizeof h + length > limit)
		return -ENOBUFS;
	relay_put(r, &h, sizeof h);
	if (length)
		relay_put(r, payload, length);
	return 0;
}

/* Writes what stdout takes now, never waiting; a broken stdout ends the relay. */
static void relay_flush(struct relay *r)
{
	while (relay_pending(r) && !r->out_failed) {
		ssize_t n = write(STDOUT_FILENO, r->out + r->out_head, relay_pending(r));
		if (n > 0) {
			r->out_head += (size_t)n;
		} else if (n < 0 && errno == EINTR) {
			continue;
		} else {
			if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
				r->out_failed = 1;
			break;
		}
	}
	/* Loss counts go out once there is room again, newest totals only. */
	if (!r->any_loss)
		return;
	r->any_loss = 0;
	for (size_t s = 0; s < r->source_count; s++) {
		struct relay_source *src = &r->sources[s];
		if (!src->loss_dirty)
			continue;
		if (relay_record(r, RELAY_LOSS, (uint32_t)s, 0, &src->lost, sizeof src->lost,
		                 RELAY_BUFFER_BYTES) == 0)
			src->loss_dirty = 0;
		else
			r->any_loss = 1;
	}
}

/* The relay's number for the tap's source of session s, given one on first sight. */
static uint32_t relay_source_id(struct relay_session *s, int source)
{
	struct relay *r = s->relay;
	if ((size_t)source >= s->id_cap) {
		size_t old = s->id_cap;
		xgrow((void **)&s->ids, &s->id_cap, (size_t)source + 1, sizeof *s->ids);
		memset(s->ids + old, 0, (s->id_cap - old) * sizeof *s->ids);
	}
	if (!s->ids[source]) {
		if (r->source_count == r->source_cap)
			xgrow((void **)&r->sources, &r->source_cap, r->source_count + 1, sizeof *r->sources);
		memset(&r->sources[r->source_count], 0, sizeof *r->sources);
		s->ids[source] = (uint32_t)++r->source_count;
	}
	return s->ids[source] - 1;
}

/* Frames whose loss only costs their own events (cumulative ones are re-sent, newest wins). */
static int relay_droppable(uint32_t type)
{
	return type == WIRE_FRAME_EVENTS || type == WIRE_FRAME_GPU || type == WIRE_FRAME_COUNTERS ||
	       type == WIRE_FRAME_COST || type == WIRE_FRAME_GPU_METRICS;
}

/*
 * For tests only: CUSCOPE_TEST_REALTIME_SHIFT_NS=N (signed) moves the REALTIME half of the clock
 * anchor of every process relayed by N ns, as if this node's wall clock were N ns off (as `record`
 * does with it), so that a test on one machine can plant a clock offset between two "hosts" and
 * check that attach --ssh finds it from their collectives. Never set by cuscope itself.
 */
static int64_t relay_test_shift(void)
{
	const char *text = getenv("CUSCOPE_TEST_REALTIME_SHIFT_NS");
	if (!text || !*text)
		return 0;
	char *end;
	errno = 0;
	long long v = strtoll(text, &end, 10);
	return errno || *end ? 0 : (int64_t)v;
}

static int relay_on_frame(void *ctx, int source, uint32_t type, const void *payload, uint32_t length)
{
	struct relay_session *s = ctx;
	struct relay *r = s->relay;
	if (source < 0)
		return -1;
	if (type == WIRE_FRAME_HELLO && r->test_realtime_shift_ns && length >= sizeof(struct wire_hello)) {
		struct wire_hello hello;
		memcpy(&hello, payload, sizeof hello);
		if (hello.anchor_real_ns) {
			hello.anchor_real_ns += (uint64_t)r->test_realtime_shift_ns;
			xgrow((void **)&r->hello, &r->hello_cap, length, 1);
			memcpy(r->hello, payload, length);
			memcpy(r->hello + offsetof(struct wire_hello, anchor_real_ns), &hello.anchor_real_ns,
			       sizeof hello.anchor_real_ns);
			payload = r->hello;
		}
	}
	uint32_t id = relay_source_id(s, source);
	size_t limit = relay_droppable(type) ? RELAY_BUFFER_BYTES : RELAY_CONTROL_BYTES;
	if (relay_record(r, RELAY_FRAME, id, type, payload, length, limit) == 0)
		return 0;
	/* A tap reads a burst at once: give stdout its chance (never waiting) before dropping. */
	relay_flush(r);
	if (relay_record(r, RELAY_FRAME, id, type, payload, length, limit) == 0)
		return 0;
	struct relay_source *src = &r->sources[id];
	src->lost.frames++;
	src->lost.bytes += length;
	src->loss_dirty = 1;
	r->any_loss = 1;
	return 0;
}

static void relay_on_closed(void *ctx, int source)
{
	struct relay_session *s = ctx;
	if (source < 0)
		return;
	uint32_t id = relay_source_id(s, source);
	relay_flush(s->relay); /* its last loss count first */
	relay_record(s->relay, RELAY_CLOSED, id, 0, NULL, 0, RELAY_CONTROL_BYTES);
}

static void relay_say(struct relay_session *s, int source, const char *text)
{
	uint32_t id = source >= 0 ? relay_source_id(s, source) : UINT32_MAX;
	size_t n = strlen(text);
	relay_record(s->relay, RELAY_ERROR, id, 0, text, (uint32_t)(n > 1024 ? 1024 : n),
	             RELAY_CONTROL_BYTES);
}

static void relay_on_error(void *ctx, int source, pid_t pid, const char *message)
{
	char line[1200];
	snprintf(line, sizeof line, "pid %d: %s", (int)pid, message);
	relay_say(ctx, source, line);
}

static void relay_on_refused(void *ctx, pid_t pid)
{
	char line[200];
	snprintf(line, sizeof line, "pid %d already has another viewer", (int)pid);
	relay_say(ctx, -1, line);
}

/* Whether pid's environment has SLURM_JOB_ID=job (read as the same user; unreadable = no). */
static int relay_pid_in_job(pid_t pid, const char *job)
{
	char path[64], want[128];
	snprintf(path, sizeof path, "/proc/%d/environ", (int)pid);
	int n = snprintf(want, sizeof want, "SLURM_JOB_ID=%s", job);
	if (n <= 0 || (size_t)n >= sizeof want)
		return 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return 0;
	/* Bounded: an environment past 1 MiB is not searched further. */
	size_t cap = 1u << 20, len = 0;
	char *buf = xmalloc(cap + 1);
	ssize_t got;
	while (len < cap && (got = read(fd, buf + len, cap - len)) > 0)
		len += (size_t)got;
	close(fd);
	buf[len] = '\0';
	int found = 0;
	for (size_t i = 0; i < len && !found; i += strlen(buf + i) + 1)
		found = strcmp(buf + i, want) == 0;
	free(buf);
	return found;
}

/* Whether the session directory fd holds a socket of a process in the job. */
static int relay_session_in_job(int dir, const char *job)
{
	DIR *d = safefs_opendir(dir);
	if (!d)
		return 0;
	struct dirent *de;
	int found = 0;
	while (!found && (de = readdir(d))) {
		pid_t pid = session_socket_pid(de->d_name);
		found = pid > 0 && relay_pid_in_job(pid, job);
	}
	closedir(d);
	return found;
}

/* Starts following the session directory name under the root, once. */
static void relay_follow(struct relay *r, int root_fd, const char *name)
{
	for (size_t i = 0; i < r->session_count; i++)
		if (strcmp(r->sessions[i]->name, name) == 0)
			return;
	int fd = safefs_open_dir_at(root_fd, name, getuid(), SAFEFS_PRIVATE);
	if (fd < 0)
		return;
	int wanted = !r->opts->job || relay_session_in_job(fd, r->opts->job);
	close(fd);
	char path[4400];
	if (!wanted || snprintf(path, sizeof path, "%s/%s", r->root, name) >= (int)sizeof path ||
	    strlen(name) >= sizeof((struct relay_session *)0)->name)
		return;
	if (r->session_count == r->session_cap)
		xgrow((void **)&r->sessions, &r->session_cap, r->session_count + 1, sizeof *r->sessions);
	struct relay_session *s = xcalloc(1, sizeof *s);
	s->relay = r;
	snprintf(s->name, sizeof s->name, "%s", name);
	struct tap_callbacks cb = {.ctx = s,
	                           .frame = relay_on_frame,
	                           .closed = relay_on_closed,
	                           .error = relay_on_error,
	                           .refused = relay_on_refused};
	s->tap = tap_new(path, &cb);
	if (s->tap)
		r->sessions[r->session_count++] = s;
	else
		free(s);
}

/* Looks for session directories under the root that are not followed yet. */
static void relay_scan(struct relay *r)
{
	int fd = safefs_open_dir(r->root, getuid(), SAFEFS_PRIVATE);
	if (fd < 0)
		return;
	DIR *d = safefs_opendir(fd);
	if (d) {
		struct dirent *de;
		while ((de = readdir(d)))
			if (de->d_name[0] != '.')
				relay_follow(r, fd, de->d_name);
		closedir(d);
	}
	close(fd);
}

/* Reads stdin (its content is not used); 1 once it closed. */
static int relay_stdin_closed(void)
{
	char buf[256];
	ssize_t n = read(STDIN_FILENO, buf, sizeof buf);
	return n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN);
}

int relay_run(const struct relay_options *opts)
{
	static struct relay r; /* its sessions' callbacks point into it */
	memset(&r, 0, sizeof r);
	r.opts = opts;
	r.test_realtime_shift_ns = relay_test_shift();
	if (session_root(r.root, sizeof r.root) != 0) {
		log_error("relay: no session root (HOME/XDG_RUNTIME_DIR unusable?)");
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	int flags = fcntl(STDOUT_FILENO, F_GETFL);
	if (flags < 0 || fcntl(STDOUT_FILENO, F_SETFL, flags | O_NONBLOCK) < 0) {
		log_error("relay: stdout: %s", strerror(errno));
		return 1;
	}
	char host[256] = "";
	if (opts->host)
		snprintf(host, sizeof host, "%s", opts->host);
	else
		gethostname(host, sizeof host - 1);
	for (char *p = host; *p; p++)
		if (*p <= ' ' || *p == 0x7f)
			*p = '_';
	char line[RELAY_LINE_MAX];
	int n = snprintf(line, sizeof line, RELAY_LINE_PREFIX "%d %s %s\n", RELAY_PROTO, CUSCOPE_VERSION,
	                 host[0] ? host : "-");
	relay_put(&r, line, (size_t)n);
	uint64_t last_scan = 0, turn = 0;
	for (;;) {
		uint64_t now = clock_mono_ns();
		if (!last_scan || now - last_scan >= RELAY_SCAN_NS) {
			relay_scan(&r);
			last_scan = now;
		}
		/*
		 * One session waits for its collectors' data (a single poll can span only one tap);
		 * the others are read without waiting. The waiting one goes round, and its wait is
		 * short once there are several, so no session's data waits long and an idle relay
		 * with many sessions does not spin.
		 */
		int stdin_ready = 0;
		if (r.session_count == 0) {
			struct pollfd p[2] = {{STDIN_FILENO, POLLIN, 0}, {STDOUT_FILENO, POLLOUT, 0}};
			stdin_ready = poll(p, relay_pending(&r) ? 2 : 1, RELAY_PUMP_MS) > 0 && p[0].revents;
		} else {
			size_t waiter = (size_t)(turn++ % r.session_count);
			int wait_ms = r.session_count == 1 ? RELAY_PUMP_MS : RELAY_PUMP_MS / 4;
			for (size_t i = 0; i < r.session_count; i++) {
				stdin_ready |=
				    tap_pump(r.sessions[i]->tap, i == waiter ? wait_ms : 0, STDIN_FILENO);
				relay_flush(&r);
			}
		}
		if (stdin_ready && relay_stdin_closed())
			break;
		relay_flush(&r);
		if (r.out_failed)
			break;
	}
	/* The collectors run on: their final counts (a BYE marked detached) go out last. */
	for (size_t i = 0; i < r.session_count; i++)
		tap_detach(r.sessions[i]->tap, 500);
	uint64_t until = clock_mono_ns() + RELAY_LAST_FLUSH_NS;
	for (relay_flush(&r); relay_pending(&r) && !r.out_failed && clock_mono_ns() < until;
	     relay_flush(&r)) {
		struct pollfd p = {STDOUT_FILENO, POLLOUT, 0};
		if (poll(&p, 1, 100) < 0 && errno != EINTR)
			break;
	}
	for (size_t i = 0; i < r.session_count; i++) {
		tap_free(r.sessions[i]->tap);
		free(r.sessions[i]->ids);
		free(r.sessions[i]);
	}
	free(r.sessions);
	free(r.sources);
	free(r.out);
	free(r.hello);
	return 0;
}

const char *relay_version(void)
{
	return CUSCOPE_VERSION;
}

/* ---- the viewer side: reading a relay's stream ---- */

void relay_decoder_init(struct relay_decoder *d)
{
	memset(d, 0, sizeof *d);
}

void relay_decoder_fini(struct relay_decoder *d)
{
	free(d->buf);
	memset(d, 0, sizeof *d);
}

/* Checks the first line; 0 or -EPROTO with cause. */
static int relay_decoder_line(struct relay_decoder *d, char *cause, size_t cause_size)
{
	int proto = 0;
	char version[64] = "", host[256] = "";
	if (strncmp(d->line, RELAY_LINE_PREFIX, strlen(RELAY_LINE_PREFIX)) != 0 ||
	    sscanf(d->line + strlen(RELAY_LINE_PREFIX), "%d %63s %255s", &proto, version, host) != 3) {
		snprintf(cause, cause_size,
		         "the remote command is not a cuscope relay (it said \"%.60s\"): check "
		         "--remote-cuscope",
		         d->line);
		return -EPROTO;
	}
	snprintf(d->version, sizeof d->version, "%s", version);
	snprintf(d->host, sizeof d->host, "%s", host);
	if (proto != RELAY_PROTO || strcmp(version, CUSCOPE_VERSION) != 0) {
		snprintf(cause, cause_size,
		         "version mismatch: the remote cuscope is %s (relay protocol %d), this one is %s "
		         "(protocol %d); install the same version there or name it with --remote-cuscope",
		         version, proto, CUSCOPE_VERSION, RELAY_PROTO);
		return -EPROTO;
	}
	return 0;
}

int relay_decoder_feed(struct relay_decoder *d, const void *data, size_t n, const struct relay_sink *sink,
                       char *cause, size_t cause_size)
{
	const char *p = data;
	while (!d->have_line && n) {
		char c = *p++;
		n--;
		if (c == '\n') {
			d->line[d->line_len] = '\0';
			d->have_line = 1;
			int rc = relay_decoder_line(d, cause, cause_size);
			if (rc)
				return rc;
		} else if (d->line_len + 1 >= sizeof d->line || (unsigned char)c < ' ') {
			d->line[d->line_len] = '\0';
			snprintf(cause, cause_size,
			         "the remote command is not a cuscope relay (it said \"%.60s\"): check "
			         "--remote-cuscope",
			         d->line);
			return -EPROTO;
		} else {
			d->line[d->line_len++] = c;
		}
	}
	if (!n)
		return 0;
	if (d->len + n > d->cap)
		xgrow((void **)&d->buf, &d->cap, d->len + n, 1);
	memcpy(d->buf + d->len, p, n);
	d->len += n;
	size_t off = 0;
	int rc = 0;
	while (d->len - off >= sizeof(struct relay_header)) {
		struct relay_header h;
		memcpy(&h, d->buf + off, sizeof h);
		if (h.kind == 0 || h.kind >= RELAY_KIND_MAX || h.length > WIRE_MAX_FRAME ||
		    (h.kind == RELAY_LOSS && h.length != sizeof(struct relay_loss))) {
			snprintf(cause, cause_size,
			         "the relay's stream is corrupt (record kind %u, %u bytes)", h.kind,
			         h.length);
			rc = -EPROTO;
			break;
		}
		if (d->len - off - sizeof h < h.length)
			break;
		rc = sink->record(sink->ctx, &h, d->buf + off + sizeof h);
		off += sizeof h + h.length;
		if (rc)
			break;
	}
	memmove(d->buf, d->buf + off, d->len - off);
	d->len -= off;
	return rc;
}
