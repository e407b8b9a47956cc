/* Triggers in a viewer process: evaluation, notices and dumps (trighook.h). */
#include "trighook.h"
#include "cuscope/capture.h"
#include "cuscope/cli.h"
#include "cuscope/log.h"
#include "cuscope/store.h"
#include "cuscope/trigger.h"
#include "cuscope/ui.h"
#include "cuscope/wire.h"
#include "cuscope/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TRIG_GAP_MS_DEFAULT  10.0       /* the view's GPU-gap threshold (ui_gap_min) */
#define TRIG_DUMP_STEP_BYTES (8u << 20) /* per pass: the session keeps reading while a dump runs */
#define TRIG_FINISH_STEP     (64u << 20)

enum trig_window_state {
	TRIG_WINDOW_OPEN = 0,    /* its end lies ahead: later firings may join it */
	TRIG_WINDOW_READY = 1,   /* complete: its dump can be cut */
	TRIG_WINDOW_DONE = 2,    /* dumped (or nothing to dump) */
	TRIG_WINDOW_REMOVED = 3, /* dumped, then removed to keep the bounds (--dump-keep newest) */
};

int trig_hook_on(const struct trig_hook *h)
{
	return h->eng != NULL;
}

/* The dump directory: made 0700 when missing, then it must be a directory we can write. */
static int trig_check_dir(const char *dir, const char *verb)
{
	if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
		log_error("%s%s--dump-dir %s: %s", verb, *verb ? ": " : "", dir, strerror(errno));
		return CLI_EXIT_USAGE;
	}
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || faccessat(fd, ".", W_OK | X_OK, AT_EACCESS) != 0) {
		log_error("%s%s--dump-dir %s: %s", verb, *verb ? ": " : "", dir,
		          fd < 0 && errno == ENOTDIR ? "not a directory" : strerror(errno));
		if (fd >= 0)
			close(fd);
		return CLI_EXIT_USAGE;
	}
	close(fd);
	return 0;
}

int trig_hook_init(struct trig_hook *h, const struct cli_triggers *opt, double gap_ms, struct store *store,
                   unsigned memory_mb, const char *verb)
{
	memset(h, 0, sizeof *h);
	h->last_source = -1;
	if (!opt->count) {
		/* Dump options alone would silently do nothing. */
		if (opt->dump_dir || opt->pre_set || opt->post_set || opt->dump_max || opt->dump_max_mb ||
		    opt->keep_newest) {
			log_error("%s%s--dump-dir, --pre, --post, --dump-max, --dump-max-mb and --dump-keep "
			          "go with "
			          "--trigger EXPR",
			          verb, *verb ? ": " : "");
			return CLI_EXIT_USAGE;
		}
		return 0;
	}
	if (opt->dump_dir && trig_check_dir(opt->dump_dir, verb) != 0)
		return CLI_EXIT_USAGE;
	struct trigger_spec specs[CLI_TRIGGERS_MAX];
	for (size_t i = 0; i < opt->count; i++) {
		const char *why = NULL;
		if (trigger_parse(opt->exprs[i], &specs[i], &why) != 0) {
			log_error("%s%s--trigger '%s': %s; use %s", verb, *verb ? ": " : "", opt->exprs[i],
			          why, TRIGGER_GRAMMAR);
			return CLI_EXIT_USAGE;
		}
	}
	h->opt = opt;
	h->pre_ns = opt->pre_set ? opt->pre_ns : TRIG_PRE_DEFAULT_NS;
	h->post_ns = opt->post_set ? opt->post_ns : TRIG_POST_DEFAULT_NS;
	h->dump_max = opt->dump_max ? opt->dump_max : TRIG_DUMP_MAX;
	h->dump_max_bytes = (uint64_t)(opt->dump_max_mb ? opt->dump_max_mb : TRIG_DUMP_MAX_MB) << 20;
	/* --gap-ms 0 turns the view's shading off; explained gaps then use its default. */
	double g = gap_ms > 0 ? gap_ms : TRIG_GAP_MS_DEFAULT;
	struct trigger_config cfg = {
	    .rearm_ns = h->post_ns, .gap_min_ns = (uint64_t)(g * 1e6), .gpu_lag_ns = TRIGGER_GPU_LAG_NS};
	h->eng = trigger_engine_new(specs, opt->count, &cfg);
	h->store = store;
	if (!store) {
		h->store = store_new();
		h->own_store = 1;
		store_set_memory_limit(h->store, (size_t)(memory_mb ? memory_mb : UI_MEMORY_MB_DEFAULT)
		                                     << 20);
	}
	return 0;
}

void trig_hook_share_store(struct trig_hook *h, struct store *store)
{
	if (h->own_store)
		store_free(h->store);
	h->store = store;
	h->own_store = 0;
}

void trig_hook_frame(struct trig_hook *h, int source, uint32_t type, const void *payload, uint32_t length)
{
	if (!h->eng || source < 0)
		return;
	if (type == WIRE_FRAME_HELLO && length >= sizeof(struct wire_hello)) {
		struct wire_hello hello;
		memcpy(&hello, payload, sizeof hello);
		size_t cap = h->source_cap;
		if ((size_t)source >= cap) {
			xgrow((void **)&h->source_pid, &cap, (size_t)source + 1, sizeof *h->source_pid);
			memset(&h->source_pid[h->source_cap], 0,
			       (cap - h->source_cap) * sizeof *h->source_pid);
			h->source_cap = cap;
		}
		h->source_pid[source] = hello.pid;
		h->last_source = source;
	}
	if (h->own_store) {
		/* A stream the store refuses is the session's to report (record_error, live_frame). */
		const char *cause = NULL;
		store_feed(h->store, source, type, payload, length, &cause);
	}
}

/* The newest source of pid (an exec continues a process in a later one), else the newest of all. */
static int trig_source_of(const struct trig_hook *h, pid_t pid)
{
	for (size_t s = h->source_cap; pid && s-- > 0;)
		if (h->source_pid[s] == pid)
			return (int)s;
	return h->last_source;
}

/* A file name for the next dump that names nothing already there (nothing is overwritten). */
static int trig_dump_name(struct trig_hook *h, char *path, size_t size)
{
	for (int tries = 0; tries < 1000; tries++) {
		h->seq++;
		int n = snprintf(path, size, "%s/trigger-%d-%03u.cuscope", h->opt->dump_dir, (int)getpid(),
		                 h->seq);
		if (n < 0 || (size_t)n >= size)
			return -1;
		char partial[600];
		snprintf(partial, sizeof partial, "%s.partial", path);
		struct stat sb;
		if (lstat(path, &sb) != 0 && errno == ENOENT && lstat(partial, &sb) != 0 && errno == ENOENT)
			return 0;
	}
	return -1;
}

/* Windows that will be (or are) on disk: what --dump-max counts with --dump-keep oldest. */
static unsigned trig_dumps_planned(const struct trig_hook *h)
{
	unsigned n = 0;
	for (size_t i = 0; i < h->win_n; i++)
		if (h->win[i].path[0] && h->win[i].state != TRIG_WINDOW_REMOVED)
			n++;
	return n;
}

/* The window a firing at t belongs to: the open one holding t, else a new one. */
static struct trig_window *trig_window_for(struct trig_hook *h, uint64_t t)
{
	for (size_t i = h->win_n; i-- > 0;) {
		struct trig_window *w = &h->win[i];
		if (w->state == TRIG_WINDOW_OPEN && t >= w->from_ns && t <= w->to_ns)
			return w;
	}
	xgrow((void **)&h->win, &h->win_cap, h->win_n + 1, sizeof *h->win);
	struct trig_window *w = &h->win[h->win_n++];
	memset(w, 0, sizeof *w);
	w->from_ns = t > h->pre_ns ? t - h->pre_ns : 0;
	w->to_ns = t + h->post_ns;
	if (!h->opt->dump_dir)
		return w;
	if (h->full || (!h->opt->keep_newest && trig_dumps_planned(h) >= h->dump_max)) {
		if (!h->said_full++)
			log_warn(
			    "trigger: --dump-max %u reached (--dump-keep oldest): later firings are only "
			    "noted in the capture",
			    h->dump_max);
		return w;
	}
	if (trig_dump_name(h, w->path, sizeof w->path) != 0) {
		log_warn("trigger: no free dump file name in %s", h->opt->dump_dir);
		w->path[0] = '\0';
	}
	return w;
}

/* Writes firing f as a notice into the capture, on the stream of its process. */
static void trig_notice(struct trig_hook *h, struct capture_writer *w, const struct trigger_firing *f,
                        const struct trig_window *win)
{
	struct trigger_notice n = {
	    .time_ns = f->time_ns, .value_ns = f->value_ns, .pre_ns = h->pre_ns, .pid = f->pid};
	/* The pre-window as far as the stream reaches back (an attached flight recorder may hold less). */
	uint64_t first = store_first_ns(h->store);
	if (h->file_from_ns > first)
		first = h->file_from_ns;
	uint64_t from = win->from_ns > first ? win->from_ns : first;
	n.held_ns = f->time_ns > from ? f->time_ns - from : 0;
	if (n.held_ns > h->pre_ns)
		n.held_ns = h->pre_ns;
	snprintf(n.cause, sizeof n.cause, "%s", f->cause ? f->cause : "");
	snprintf(n.file, sizeof n.file, "%s", win->path);
	snprintf(n.expr, sizeof n.expr, "%s", trig_hook_expr(h, f));
	char text[sizeof(struct wire_notice) + WIRE_MAX_STRING];
	size_t len = trigger_notice_format(&n, text + sizeof(struct wire_notice), WIRE_MAX_STRING);
	struct wire_notice wn = {WIRE_NOTICE_INFO, WIRE_NOTICE_TOPIC_TRIGGER, (uint32_t)len};
	memcpy(text, &wn, sizeof wn);
	int source = trig_source_of(h, f->pid);
	if (w && source >= 0)
		capture_writer_frame(w, (uint32_t)source, WIRE_FRAME_NOTICE, text,
		                     (uint32_t)(sizeof wn + len));
	uint64_t start = 0;
	struct store_process_info pi;
	if (store_process_count(h->store)) {
		store_process_get(h->store, 0, &pi);
		start = pi.start_ns;
	}
	log_warn("trigger %s fired at +%.3f s (pid %d)%s%s", n.expr,
	         f->time_ns > start ? (double)(f->time_ns - start) / 1e9 : 0.0, (int)f->pid,
	         win->path[0] ? "; window dump: " : "", win->path);
}

/* Removes a dump we wrote, to hold the bounds. */
static void trig_remove(struct trig_hook *h, struct trig_window *win, const char *why)
{
	if (unlink(win->path) != 0 && errno != ENOENT)
		log_warn("trigger: cannot remove %s: %s", win->path, strerror(errno));
	else
		log_warn("trigger: removed %s (%s)", win->path, why);
	win->state = TRIG_WINDOW_REMOVED;
	h->dumps_written--;
	h->dump_bytes -= win->bytes;
}

/* After a dump: --dump-max and --dump-max-mb hold, by --dump-keep. */
static void trig_bounds(struct trig_hook *h, struct trig_window *just)
{
	if (!h->opt->keep_newest) {
		if (h->dumps_written > h->dump_max || h->dump_bytes > h->dump_max_bytes) {
			trig_remove(h, just, "--dump-max-mb reached, --dump-keep oldest");
			h->full = 1;
		}
		return;
	}
	/* A window bigger than the whole allowance cannot be kept by any policy: say why once, with
	 * what to change, rather than leave the user with removals only. */
	if (just->bytes > h->dump_max_bytes && !h->said_too_big++)
		log_warn("trigger: a window dump holds %.1f MB, more than --dump-max-mb %llu allows on its "
		         "own: it is removed; raise --dump-max-mb or shorten --pre/--post (the capture "
		         "keeps everything)",
		         (double)just->bytes / 1e6, (unsigned long long)(h->dump_max_bytes >> 20));
	for (size_t i = 0;
	     i < h->win_n && (h->dumps_written > h->dump_max || h->dump_bytes > h->dump_max_bytes); i++) {
		struct trig_window *o = &h->win[i];
		if (o->state == TRIG_WINDOW_DONE && o->path[0] && o->bytes)
			trig_remove(h, o, "--dump-keep newest");
	}
}

/* Moves the dumps forward by up to budget bytes. */
static void trig_dumps(struct trig_hook *h, struct capture_writer *w, size_t budget)
{
	while (h->next_dump < h->win_n) {
		struct trig_window *win = &h->win[h->next_dump];
		if (win->state == TRIG_WINDOW_OPEN)
			return;
		if (!win->path[0] || !w) {
			win->state = TRIG_WINDOW_DONE;
			win->path[0] = '\0';
			h->next_dump++;
			continue;
		}
		if (!h->snap) {
			const char *cause = NULL;
			h->snap = capture_snapshot_start(w, win->path, win->from_ns, win->to_ns, &cause);
			if (!h->snap) {
				log_warn("trigger: dump %s: %s", win->path, cause);
				win->state = TRIG_WINDOW_DONE;
				win->path[0] = '\0';
				h->next_dump++;
				continue;
			}
		}
		int rc = capture_snapshot_step(h->snap, budget);
		if (rc == 0)
			return;
		uint64_t done, total;
		capture_snapshot_progress(h->snap, &done, &total);
		capture_snapshot_free(h->snap);
		h->snap = NULL;
		win->state = TRIG_WINDOW_DONE;
		h->next_dump++;
		if (rc < 0) {
			log_warn("trigger: writing %s failed: %s", win->path, strerror(-rc));
			continue;
		}
		win->bytes = total ? total : 1;
		h->dumps_written++;
		h->dump_bytes += win->bytes;
		trig_bounds(h, win);
	}
}

size_t trig_hook_step(struct trig_hook *h, struct capture_writer *w)
{
	if (!h->eng)
		return 0;
	/* Now is the collector's clock as far as its stream reached (events, and its cost readings
	 * every second while a target is silent): never ahead of what it sent, so a range whose end
	 * is still on its way is not taken for a hang. */
	uint64_t now = store_last_ns(h->store);
	size_t added = trigger_engine_eval(h->eng, h->store, now);
	size_t total = trigger_engine_firing_count(h->eng);
	for (; h->handled < total; h->handled++) {
		const struct trigger_firing *f = trigger_engine_firing(h->eng, h->handled);
		trig_notice(h, w, f, trig_window_for(h, f->time_ns));
	}
	for (size_t i = h->next_dump; i < h->win_n; i++)
		if (h->win[i].state == TRIG_WINDOW_OPEN && now >= h->win[i].to_ns)
			h->win[i].state = TRIG_WINDOW_READY;
	trig_dumps(h, w, TRIG_DUMP_STEP_BYTES);
	return added;
}

void trig_hook_file_restarted(struct trig_hook *h)
{
	if (h->eng)
		h->file_from_ns = store_last_ns(h->store);
}

void trig_hook_finish(struct trig_hook *h, struct capture_writer *w)
{
	if (!h->eng)
		return;
	trig_hook_step(h, w);
	/* The session ended: every window holds what there is. */
	for (size_t i = h->next_dump; i < h->win_n; i++)
		if (h->win[i].state == TRIG_WINDOW_OPEN)
			h->win[i].state = TRIG_WINDOW_READY;
	while (h->next_dump < h->win_n)
		trig_dumps(h, w, TRIG_FINISH_STEP);
}

void trig_hook_fini(struct trig_hook *h)
{
	if (h->snap)
		capture_snapshot_free(h->snap);
	trigger_engine_free(h->eng);
	if (h->own_store)
		store_free(h->store);
	free(h->source_pid);
	free(h->win);
	memset(h, 0, sizeof *h);
	h->last_source = -1;
}

size_t trig_hook_firing_count(const struct trig_hook *h)
{
	return h->eng ? trigger_engine_firing_count(h->eng) : 0;
}

const struct trigger_firing *trig_hook_firing(const struct trig_hook *h, size_t index)
{
	return trigger_engine_firing(h->eng, index);
}

const char *trig_hook_expr(const struct trig_hook *h, const struct trigger_firing *f)
{
	return trigger_engine_spec(h->eng, f->trigger)->expr;
}
