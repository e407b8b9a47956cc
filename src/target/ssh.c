/*
 * `attach --ssh`: a relay per host through the user's own ssh (BatchMode: no prompt can land on
 * the terminal), read without ever blocking on one host; see ssh.h.
 */
#include "cuscope/ssh.h"
#include "cuscope/escape.h"
#include "cuscope/clock.h"
#include "cuscope/relay.h"
#include "cuscope/wire.h"
#include "cuscope/xalloc.h"

#include <errno.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define SSH_BACKOFF_MIN_NS 1000000000ull
#define SSH_BACKOFF_MAX_NS 30000000000ull
#define SSH_LINE_MAX       300

enum ssh_state { SSH_DOWN, SSH_RUNNING, SSH_FAILED };

struct ssh_host {
	char *name;
	enum ssh_state state;
	pid_t pid;
	int in_fd, out_fd, err_fd; /* the relay's stdin (ours to close), stdout, stderr; -1 = closed */
	struct relay_decoder dec;
	uint32_t base;     /* local source number of this run's relay source 0 */
	uint32_t next;     /* local sources used so far (the next run starts here) */
	int too_many;      /* the relays named more than SSH_SOURCES_MAX sources: given up */
	uint64_t retry_ns; /* DOWN: when to start again */
	uint64_t backoff_ns;
	unsigned starts;
	char err_part[SSH_LINE_MAX]; /* a stderr line being read */
	size_t err_len;
	char line[SSH_LINE_MAX + 64]; /* last line shown */
	char err_last[SSH_LINE_MAX];  /* this run's last stderr line, "" for none */
	char remote[sizeof(((struct relay_decoder *)0)->host) + 96];
};

struct ssh_hosts {
	struct ssh_host *hosts;
	int count;
	struct ssh_config config;
	char **via_words; /* the template split at blanks, NULL without --via */
	int via_count;
	struct ssh_callbacks cb;
	int current;   /* the host being dispatched (for the sink) */
	int finishing; /* ssh_hosts_finish: relays that end stay down */
	int idle;      /* ssh_hosts_new_idle: no relay is started, bytes come from ssh_hosts_feed */
};

int ssh_parse_hosts(const char *list, char ***hosts, char *cause, size_t cause_size)
{
	int count = 0;
	char **out = NULL;
	size_t cap = 0;
	const char *p = list;
	for (;;) {
		const char *end = strchr(p, ',');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		int ok = n > 0 && n < 256 && p[0] != '-';
		for (size_t i = 0; ok && i < n; i++)
			ok = (p[i] >= 'a' && p[i] <= 'z') || (p[i] >= 'A' && p[i] <= 'Z') ||
			     (p[i] >= '0' && p[i] <= '9') || strchr("._-@:[]", p[i]);
		if (!ok) {
			snprintf(cause, cause_size,
			         "'%.*s' is not a host name (letters, digits, . _ - @ : [ ], not starting "
			         "with -)",
			         (int)(n > 64 ? 64 : n), p);
			for (int i = 0; i < count; i++)
				free(out[i]);
			free(out);
			return -1;
		}
		if ((size_t)count == cap)
			xgrow((void **)&out, &cap, (size_t)count + 1, sizeof *out);
		out[count++] = xstrndup(p, n);
		if (!end)
			break;
		p = end + 1;
	}
	*hosts = out;
	return count;
}

#define SSH_HOSTS_FILE_MAX (64u << 10)
#define SSH_SOURCES_MAX    65536u /* processes relayed from one host over all its runs */
#define SSH_SOURCE_GAP_MAX 64u    /* source numbers a relay may skip at once */
#define SSH_HOSTS_MAX      4096

/* Appends name (n bytes) to the comma list at *out (length *len, capacity *cap). */
static void ssh_list_add(char **out, size_t *len, size_t *cap, const char *name, size_t n)
{
	xgrow((void **)out, cap, *len + n + 2, 1);
	if (*len)
		(*out)[(*len)++] = ',';
	memcpy(*out + *len, name, n);
	*len += n;
	(*out)[*len] = '\0';
}

char *ssh_hosts_file(const char *path, char *cause, size_t cause_size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0) {
		snprintf(cause, cause_size, "cannot read %s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	/* A FIFO or device could block or never end. */
	if (!S_ISREG(st.st_mode) || st.st_size > (off_t)SSH_HOSTS_FILE_MAX) {
		snprintf(cause, cause_size, "%s is not a host file (a regular file of at most %u KiB)", path,
		         SSH_HOSTS_FILE_MAX >> 10);
		close(fd);
		return NULL;
	}
	char *text = xmalloc((size_t)st.st_size + 1);
	size_t got = 0;
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, text + got, (size_t)st.st_size - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	text[got] = '\0';
	char *out = NULL;
	size_t len = 0, cap = 0;
	int count = 0;
	for (char *line = text, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		char *hash = strchr(line, '#');
		if (hash)
			*hash = '\0';
		line += strspn(line, " \t\r");
		size_t n = strcspn(line, " \t\r");
		if (!n)
			continue;
		if (line[n + strspn(line + n, " \t\r")] != '\0') {
			snprintf(cause, cause_size, "%s: one host name per line ('%.60s')", path, line);
			free(text);
			free(out);
			return NULL;
		}
		if (++count > SSH_HOSTS_MAX)
			break;
		ssh_list_add(&out, &len, &cap, line, n);
	}
	free(text);
	if (!out || count > SSH_HOSTS_MAX) {
		snprintf(cause, cause_size, count ? "%s: more than %d hosts" : "%s names no host", path,
		         SSH_HOSTS_MAX);
		free(out);
		return NULL;
	}
	return out;
}

/* Expands one item of a node list ("gpu[01-03,07]" or "login1") onto the list. 0, or -1 with cause. */
static int ssh_slurm_item(const char *item, size_t n, char **out, size_t *len, size_t *cap, int *count,
                          char *cause, size_t cause_size)
{
	const char *open_b = memchr(item, '[', n);
	if (!open_b) {
		ssh_list_add(out, len, cap, item, n);
		return ++*count > SSH_HOSTS_MAX ? -1 : 0;
	}
	const char *close_b = memchr(open_b, ']', n - (size_t)(open_b - item));
	const char *suffix = close_b ? close_b + 1 : NULL;
	size_t suffix_len = close_b ? n - (size_t)(suffix - item) : 0;
	if (!close_b || memchr(suffix, '[', suffix_len) || open_b == item) {
		snprintf(cause, cause_size,
		         "cannot expand the node list item '%.*s' (one [ranges] per name); give the hosts "
		         "with --hosts FILE (scontrol show hostnames)",
		         (int)(n > 80 ? 80 : n), item);
		return -1;
	}
	size_t prefix_len = (size_t)(open_b - item);
	for (const char *r = open_b + 1; r < close_b;) {
		const char *comma = memchr(r, ',', (size_t)(close_b - r));
		const char *end = comma ? comma : close_b;
		const char *dash = memchr(r, '-', (size_t)(end - r));
		const char *lo_end = dash ? dash : end;
		size_t width = (size_t)(lo_end - r);
		char *stop;
		char digits[24];
		int ok = width > 0 && width < sizeof digits;
		unsigned long lo = 0, hi = 0;
		if (ok) {
			memcpy(digits, r, width);
			digits[width] = '\0';
			lo = strtoul(digits, &stop, 10);
			ok = *stop == '\0' && digits[0] >= '0' && digits[0] <= '9';
		}
		hi = lo;
		if (ok && dash) {
			size_t hw = (size_t)(end - dash - 1);
			ok = hw > 0 && hw < sizeof digits;
			if (ok) {
				memcpy(digits, dash + 1, hw);
				digits[hw] = '\0';
				hi = strtoul(digits, &stop, 10);
				ok = *stop == '\0' && digits[0] >= '0' && digits[0] <= '9' && hi >= lo;
			}
		}
		if (!ok || hi - lo >= SSH_HOSTS_MAX) {
			snprintf(cause, cause_size, "bad range '%.*s' in the node list item '%.*s'",
			         (int)(end - r > 40 ? 40 : end - r), r, (int)(n > 80 ? 80 : n), item);
			return -1;
		}
		for (unsigned long v = lo; v <= hi; v++) {
			char name[512];
			int k = snprintf(name, sizeof name, "%.*s%0*lu%.*s", (int)prefix_len, item,
			                 (int)width, v, (int)suffix_len, suffix);
			if (k < 0 || (size_t)k >= sizeof name)
				return -1;
			ssh_list_add(out, len, cap, name, (size_t)k);
			if (++*count > SSH_HOSTS_MAX)
				return -1;
		}
		r = comma ? comma + 1 : close_b;
	}
	return 0;
}

char *ssh_slurm_nodelist(const char *list, char *cause, size_t cause_size)
{
	char *out = NULL;
	size_t len = 0, cap = 0;
	int count = 0;
	cause[0] = '\0';
	for (const char *p = list; *p;) {
		/* Items are split at commas outside brackets. */
		const char *q = p;
		int depth = 0;
		while (*q && (depth || *q != ',')) {
			depth += *q == '[' ? 1 : *q == ']' ? -1 : 0;
			q++;
		}
		if (q > p &&
		    ssh_slurm_item(p, (size_t)(q - p), &out, &len, &cap, &count, cause, cause_size)) {
			if (!cause[0])
				snprintf(cause, cause_size, "the node list names more than %d hosts",
				         SSH_HOSTS_MAX);
			free(out);
			return NULL;
		}
		p = *q ? q + 1 : q;
	}
	if (!out)
		snprintf(cause, cause_size, "the node list is empty");
	return out;
}

/* Sets the host's line, and passes it on. */
static void ssh_note(struct ssh_hosts *s, int i, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void ssh_note(struct ssh_hosts *s, int i, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(s->hosts[i].line, sizeof s->hosts[i].line, fmt, ap);
	va_end(ap);
	/* What a remote shell wrote reaches a terminal: control bytes become '?'. */
	for (char *c = s->hosts[i].line; *c; c++)
		if ((unsigned char)*c < ' ' || *c == 0x7f)
			*c = '?';
	if (s->cb.note)
		s->cb.note(s->cb.ctx, i, s->hosts[i].line);
}

/* A word quoted for the remote shell that ssh hands its command to. */
static char *ssh_quote(const char *word)
{
	size_t n = 2;
	for (const char *c = word; *c; c++)
		n += *c == '\'' ? 4 : 1;
	char *q = xmalloc(n + 1), *o = q;
	*o++ = '\'';
	for (const char *c = word; *c; c++) {
		if (*c == '\'') {
			memcpy(o, "'\\''", 4);
			o += 4;
		} else {
			*o++ = *c;
		}
	}
	*o++ = '\'';
	*o = '\0';
	return q;
}

/* Replaces every {host} in word. */
static char *ssh_subst(const char *word, const char *host)
{
	size_t cap = strlen(word) + 1, len = 0;
	char *out = xmalloc(cap);
	for (const char *c = word; *c;) {
		const char *add = c;
		size_t n = 1;
		if (strncmp(c, "{host}", 6) == 0) {
			add = host;
			n = strlen(host);
			c += 6;
		} else {
			c++;
		}
		if (len + n + 1 > cap)
			xgrow((void **)&out, &cap, len + n + 1, 1);
		memcpy(out + len, add, n);
		len += n;
	}
	out[len] = '\0';
	return out;
}

/* The command line of host's relay (NULL-terminated, freed by the caller). */
static char **ssh_argv(const struct ssh_hosts *s, const char *host, int *argc_out)
{
	char **argv = xcalloc((size_t)s->via_count + 12, sizeof *argv);
	int n = 0;
	int quote = !s->via_words;
	if (s->via_words) {
		for (int i = 0; i < s->via_count; i++)
			argv[n++] = ssh_subst(s->via_words[i], host);
	} else {
		argv[n++] = xstrdup("ssh");
		argv[n++] = xstrdup("-T");
		argv[n++] = xstrdup("-o");
		argv[n++] = xstrdup("BatchMode=yes");
		argv[n++] = xstrdup("--");
		argv[n++] = xstrdup(host);
	}
	const char *remote[] = {s->config.remote_cuscope, "relay", s->config.job ? "--job" : NULL,
	                        s->config.job};
	for (size_t i = 0; i < sizeof remote / sizeof remote[0] && remote[i]; i++)
		argv[n++] = quote ? ssh_quote(remote[i]) : xstrdup(remote[i]);
	argv[n] = NULL;
	*argc_out = n;
	return argv;
}

static void ssh_close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* A new run of host's relay: its sources are numbered after the last run's, its stream read anew. */
static void ssh_run_begin(struct ssh_host *h)
{
	h->state = SSH_RUNNING;
	h->base = h->next;
	h->err_len = 0;
	h->err_last[0] = '\0';
	h->starts++;
	relay_decoder_fini(&h->dec);
	relay_decoder_init(&h->dec);
}

/* Starts host i's relay; on failure it is DOWN with its backoff. */
static void ssh_start(struct ssh_hosts *s, int i)
{
	struct ssh_host *h = &s->hosts[i];
	int in[2], out[2], err[2];
	if (pipe2(in, O_CLOEXEC) != 0)
		goto fail;
	if (pipe2(out, O_CLOEXEC) != 0) {
		close(in[0]);
		close(in[1]);
		goto fail;
	}
	if (pipe2(err, O_CLOEXEC) != 0) {
		close(in[0]);
		close(in[1]);
		close(out[0]);
		close(out[1]);
		goto fail;
	}
	int argc;
	char **argv = ssh_argv(s, h->name, &argc);
	pid_t pid = fork();
	if (pid == 0) {
		/* Its own process group: the terminal's Ctrl-C is ours to act on, not ssh's. */
		setpgid(0, 0);
		dup2(in[0], STDIN_FILENO);
		dup2(out[1], STDOUT_FILENO);
		dup2(err[1], STDERR_FILENO);
		signal(SIGPIPE, SIG_DFL);
		execvp(argv[0], argv);
		dprintf(STDERR_FILENO, "cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	for (int a = 0; a < argc; a++)
		free(argv[a]);
	free(argv);
	close(in[0]);
	close(out[1]);
	close(err[1]);
	if (pid < 0) {
		close(in[1]);
		close(out[0]);
		close(err[0]);
		goto fail;
	}
	fcntl(in[1], F_SETFL, O_NONBLOCK);
	fcntl(out[0], F_SETFL, O_NONBLOCK);
	fcntl(err[0], F_SETFL, O_NONBLOCK);
	h->pid = pid;
	h->in_fd = in[1];
	h->out_fd = out[0];
	h->err_fd = err[0];
	ssh_run_begin(h);
	return;
fail:
	ssh_note(s, i, "cannot start a relay: %s", strerror(errno));
	h->state = SSH_DOWN;
	h->retry_ns = clock_mono_ns() + h->backoff_ns;
}

/* Waits up to grace_ns for the relay pid (its group) to end, then SIGTERM, then SIGKILL. */
static void ssh_reap(pid_t pid, uint64_t grace_ns)
{
	if (pid <= 0)
		return;
	uint64_t until = clock_mono_ns() + grace_ns;
	for (int sig = 0;; sig = sig ? SIGKILL : SIGTERM) {
		if (sig) {
			kill(-pid, sig);
			kill(pid, sig);
		}
		while (clock_mono_ns() < until) {
			if (waitpid(pid, NULL, WNOHANG) != 0)
				return;
			usleep(5000);
		}
		if (sig == SIGKILL) {
			waitpid(pid, NULL, 0);
			return;
		}
		until = clock_mono_ns() + 500000000ull;
	}
}

/* host i's relay ended or broke: its sources close, it is DOWN (FAILED if retrying is futile). */
static void ssh_down(struct ssh_hosts *s, int i, int futile)
{
	struct ssh_host *h = &s->hosts[i];
	ssh_close_fd(&h->in_fd);
	ssh_close_fd(&h->out_fd);
	ssh_close_fd(&h->err_fd);
	ssh_reap(h->pid, 200000000ull);
	h->pid = 0;
	for (uint32_t src = h->base; src < h->next; src++)
		if (s->cb.closed)
			s->cb.closed(s->cb.ctx, i, src);
	h->base = h->next;
	if (futile || s->finishing) {
		h->state = SSH_FAILED;
		return;
	}
	if (h->dec.have_line)
		h->backoff_ns = SSH_BACKOFF_MIN_NS; /* it worked: start again soon */
	h->state = SSH_DOWN;
	h->retry_ns = clock_mono_ns() + h->backoff_ns;
	ssh_note(s, i, "disconnected (%s); retrying in %.0f s",
	         h->err_last[0] ? h->err_last : "the relay ended", (double)h->backoff_ns / 1e9);
	h->backoff_ns = h->backoff_ns * 2 > SSH_BACKOFF_MAX_NS ? SSH_BACKOFF_MAX_NS : h->backoff_ns * 2;
}

static int ssh_record(void *ctx, const struct relay_header *rh, const void *payload)
{
	struct ssh_hosts *s = ctx;
	int i = s->current;
	struct ssh_host *h = &s->hosts[i];
	/* Relay sources are dense from 0: a record names a source already seen or one of the next
	 * few (a relay that could not send a source's first frame skips its number). A number far
	 * ahead is a broken (or hostile) stream, which must not make us grow tables or call back
	 * once per number skipped; and a host gets at most SSH_SOURCES_MAX over all its runs. */
	if (rh->kind != RELAY_ERROR && rh->source > h->next - h->base + SSH_SOURCE_GAP_MAX)
		return -EPROTO;
	if (rh->kind != RELAY_ERROR && h->base + rh->source >= SSH_SOURCES_MAX) {
		h->too_many = 1;
		return -EPROTO;
	}
	if (rh->kind == RELAY_FRAME && (rh->type == 0 || rh->type >= WIRE_FRAME_TYPE_MAX))
		return -EPROTO;
	uint32_t local = h->base + rh->source;
	if (rh->kind != RELAY_ERROR && local >= h->next)
		h->next = local + 1;
	switch (rh->kind) {
	case RELAY_FRAME:
		s->cb.frame(s->cb.ctx, i, local, rh->type, payload, rh->length);
		break;
	case RELAY_LOSS: {
		struct relay_loss l;
		memcpy(&l, payload, sizeof l);
		if (s->cb.loss)
			s->cb.loss(s->cb.ctx, i, local, l.frames, l.bytes);
		break;
	}
	case RELAY_CLOSED:
		if (s->cb.closed)
			s->cb.closed(s->cb.ctx, i, local);
		break;
	case RELAY_ERROR:
		ssh_note(s, i, "%.*s", (int)(rh->length > 200 ? 200 : rh->length), (const char *)payload);
		break;
	}
	return 0;
}

/* Decodes n bytes of host i's relay stream and dispatches them; a broken stream takes the host down
 * (for good when retrying cannot help). 0, or -EPROTO once it is down. */
static int ssh_consume(struct ssh_hosts *s, int i, const uint8_t *buf, size_t n)
{
	struct ssh_host *h = &s->hosts[i];
	int had_line = h->dec.have_line;
	char cause[400];
	struct relay_sink sink = {s, ssh_record};
	s->current = i;
	cause[0] = '\0';
	int rc = relay_decoder_feed(&h->dec, buf, n, &sink, cause, sizeof cause);
	if (!had_line && h->dec.have_line && !rc) {
		snprintf(h->remote, sizeof h->remote, "%s (cuscope %s)", h->dec.host, h->dec.version);
		ssh_note(s, i, "connected to %s", h->remote);
	}
	if (!rc)
		return 0;
	int mismatch = !had_line || strstr(cause, "version mismatch") || h->too_many;
	if (h->too_many)
		snprintf(cause, sizeof cause, "more than %u processes relayed from this host: given up",
		         SSH_SOURCES_MAX);
	else if (rc != -EPROTO || !cause[0])
		snprintf(cause, sizeof cause, "the relay's stream is corrupt");
	ssh_note(s, i, "%s", cause);
	ssh_down(s, i, mismatch);
	return -EPROTO;
}

/* Reads what host i's relay sent; its end takes the host down. */
static void ssh_read_out(struct ssh_hosts *s, int i)
{
	struct ssh_host *h = &s->hosts[i];
	uint8_t buf[65536];
	/* A bounded amount per pass, so that one busy host cannot starve the others. */
	for (int round = 0; round < 64 && h->out_fd >= 0; round++) {
		ssize_t n = read(h->out_fd, buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0) {
			ssh_down(s, i, 0);
			return;
		}
		if (ssh_consume(s, i, buf, (size_t)n) != 0)
			return;
	}
}

/* Reads host i's stderr into lines (the last one is its line). */
static void ssh_read_err(struct ssh_hosts *s, int i)
{
	struct ssh_host *h = &s->hosts[i];
	char buf[4096];
	ssize_t n = read(h->err_fd, buf, sizeof buf);
	if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
		return;
	if (n <= 0) {
		ssh_close_fd(&h->err_fd);
		return;
	}
	for (ssize_t k = 0; k < n; k++) {
		if (buf[k] == '\n' || buf[k] == '\r') {
			if (h->err_len) {
				h->err_part[h->err_len] = '\0';
				/* The remote side writes these bytes (its shell, banner, relay): escaped
				 * before any terminal, log or status line sees them. */
				char *safe = escape_term_dup(h->err_part);
				snprintf(h->err_last, sizeof h->err_last, "%s", safe);
				ssh_note(s, i, "%s", safe);
				free(safe);
			}
			h->err_len = 0;
		} else if (h->err_len + 1 < sizeof h->err_part) {
			h->err_part[h->err_len++] = buf[k];
		}
	}
}

struct ssh_hosts *ssh_hosts_new(char *const *hosts, int count, const struct ssh_config *config,
                                const struct ssh_callbacks *cb, char *cause, size_t cause_size)
{
	struct ssh_hosts *s = xcalloc(1, sizeof *s);
	s->config = *config;
	s->cb = *cb;
	if (config->via) {
		char *copy = xstrdup(config->via);
		for (char *w = strtok(copy, " \t"); w; w = strtok(NULL, " \t")) {
			s->via_words =
			    xrealloc(s->via_words, sizeof *s->via_words * (size_t)(s->via_count + 1));
			s->via_words[s->via_count++] = xstrdup(w);
		}
		free(copy);
		if (!s->via_count || !strstr(config->via, "{host}")) {
			snprintf(cause, cause_size,
			         "--via needs a command with {host} in it, e.g. 'srun "
			         "--overlap --jobid=J -w {host}'");
			for (int i = 0; i < s->via_count; i++)
				free(s->via_words[i]);
			free(s->via_words);
			free(s);
			return NULL;
		}
	}
	signal(SIGPIPE, SIG_IGN);
	s->count = count;
	s->hosts = xcalloc((size_t)count, sizeof *s->hosts);
	for (int i = 0; i < count; i++) {
		struct ssh_host *h = &s->hosts[i];
		h->name = xstrdup(hosts[i]);
		h->in_fd = h->out_fd = h->err_fd = -1;
		h->backoff_ns = SSH_BACKOFF_MIN_NS;
		relay_decoder_init(&h->dec);
		ssh_start(s, i);
	}
	return s;
}

struct ssh_hosts *ssh_hosts_new_idle(char *const *hosts, int count, const struct ssh_callbacks *cb)
{
	struct ssh_hosts *s = xcalloc(1, sizeof *s);
	s->cb = *cb;
	s->idle = 1;
	s->count = count;
	s->hosts = xcalloc((size_t)count, sizeof *s->hosts);
	for (int i = 0; i < count; i++) {
		struct ssh_host *h = &s->hosts[i];
		h->name = xstrdup(hosts[i]);
		h->in_fd = h->out_fd = h->err_fd = -1;
		h->backoff_ns = SSH_BACKOFF_MIN_NS;
		relay_decoder_init(&h->dec);
		ssh_run_begin(h);
	}
	return s;
}

int ssh_hosts_feed(struct ssh_hosts *s, int host, const void *data, size_t n)
{
	struct ssh_host *h = &s->hosts[host];
	if (!s->idle || h->state == SSH_FAILED)
		return -EPIPE;
	if (h->state == SSH_DOWN)
		ssh_run_begin(h); /* as the relay started again after its backoff */
	return ssh_consume(s, host, data, n);
}

void ssh_hosts_end_run(struct ssh_hosts *s, int host)
{
	if (s->idle && s->hosts[host].state == SSH_RUNNING)
		ssh_down(s, host, 0);
}

int ssh_hosts_pump(struct ssh_hosts *s, int timeout_ms, int extra_fd)
{
	struct pollfd *p = xcalloc((size_t)s->count * 2 + 1, sizeof *p);
	int n = 0;
	uint64_t now = clock_mono_ns();
	for (int i = 0; i < s->count; i++) {
		struct ssh_host *h = &s->hosts[i];
		if (h->state == SSH_DOWN) {
			if (now >= h->retry_ns)
				ssh_start(s, i);
			else if ((int)((h->retry_ns - now) / 1000000) < timeout_ms)
				timeout_ms = (int)((h->retry_ns - now) / 1000000) + 1;
		}
		p[2 * i] = (struct pollfd){h->out_fd, POLLIN, 0};
		p[2 * i + 1] = (struct pollfd){h->err_fd, POLLIN, 0};
	}
	n = 2 * s->count;
	p[n++] = (struct pollfd){extra_fd, POLLIN, 0};
	int ready = 0;
	if (poll(p, (nfds_t)n, timeout_ms) > 0) {
		for (int i = 0; i < s->count; i++) {
			/* stderr first: the reason a relay ended comes before its end. */
			if (p[2 * i + 1].revents && s->hosts[i].err_fd == p[2 * i + 1].fd)
				ssh_read_err(s, i);
			if (p[2 * i].revents && s->hosts[i].out_fd == p[2 * i].fd && p[2 * i].fd >= 0)
				ssh_read_out(s, i);
		}
		ready = extra_fd >= 0 && p[n - 1].revents != 0;
	}
	free(p);
	return ready;
}

void ssh_hosts_finish(struct ssh_hosts *s, int timeout_ms)
{
	s->finishing = 1;
	for (int i = 0; i < s->count; i++) {
		ssh_close_fd(&s->hosts[i].in_fd);
		if (s->hosts[i].state == SSH_DOWN)
			s->hosts[i].state = SSH_FAILED;
	}
	uint64_t until = clock_mono_ns() + (uint64_t)timeout_ms * 1000000ull;
	for (;;) {
		int running = 0;
		for (int i = 0; i < s->count; i++)
			running += s->hosts[i].state == SSH_RUNNING;
		uint64_t now = clock_mono_ns();
		if (!running || now >= until)
			break;
		ssh_hosts_pump(s, (int)((until - now) / 1000000) + 1, -1);
	}
}

void ssh_hosts_free(struct ssh_hosts *s)
{
	if (!s)
		return;
	/* Closing stdin ends a relay by itself; one that does not is terminated. */
	for (int i = 0; i < s->count; i++)
		ssh_close_fd(&s->hosts[i].in_fd);
	for (int i = 0; i < s->count; i++) {
		struct ssh_host *h = &s->hosts[i];
		ssh_reap(h->pid, 1000000000ull);
		h->pid = 0;
		ssh_close_fd(&h->out_fd);
		ssh_close_fd(&h->err_fd);
		relay_decoder_fini(&h->dec);
		free(h->name);
	}
	for (int i = 0; i < s->via_count; i++)
		free(s->via_words[i]);
	free(s->via_words);
	free(s->hosts);
	free(s);
}

const char *ssh_host_name(const struct ssh_hosts *s, int host)
{
	return s->hosts[host].name;
}

int ssh_host_connected(const struct ssh_hosts *s, int host)
{
	return s->hosts[host].state == SSH_RUNNING && s->hosts[host].dec.have_line;
}

const char *ssh_host_line(const struct ssh_hosts *s, int host)
{
	return s->hosts[host].line;
}

const char *ssh_host_remote_name(const struct ssh_hosts *s, int host)
{
	return s->hosts[host].remote;
}

int ssh_host_failed(const struct ssh_hosts *s, int host)
{
	return s->hosts[host].state == SSH_FAILED;
}

unsigned ssh_host_starts(const struct ssh_hosts *s, int host)
{
	return s->hosts[host].starts;
}
