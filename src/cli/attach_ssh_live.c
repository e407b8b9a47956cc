/*
 * `cuscope attach --ssh HOST,...` without --record: every host's armed processes in one live view.
 * Each host's times move onto this machine's clock by its processes' anchors, refined while
 * watching by matching the hosts' NCCL collectives (clock_align.h); the window `d` dumps is kept
 * in a live file (livekeep.h).
 */
#include "attach_ssh.h"
#include "cuscope/capture.h"
#include "cuscope/clock.h"
#include "cuscope/clock_align.h"
#include "cuscope/log.h"
#include "cuscope/ssh.h"
#include "cuscope/store.h"
#include "cuscope/u64.h"
#include "cuscope/ui.h"
#include "cuscope/wire.h"
#include "cuscope/xalloc.h"
#include "livekeep.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- the live view: every host's sources in one store ---- */

#define ATTACH_SSH_FRAME_NS        33000000ull  /* at most ~30 frames per second, as live mode */
#define ATTACH_SSH_KEEP_FLUSH_NS   500000000ull /* the live capture file: flushed, bounded */
#define ATTACH_SSH_LATENCY_SKIP_NS 3000000000ull
#define ATTACH_SSH_REFIT_NS        1000000000ull  /* collectives matched again this often */
#define ATTACH_SSH_REFIT_WINDOW_NS 3000000000ull  /* once fitted, the collectives of this last span */
#define ATTACH_SSH_RETRY_MAX_NS    30000000000ull /* a host not fitted yet is tried again at most this late */
#define ATTACH_SSH_SAY_NS          30000000000ull /* an unchanged alignment is written this often */
#define ATTACH_SSH_REF_WAIT_NS     5000000000ull  /* the reference waits this long for every host */

/* One host's clock: its anchor's move, refined by matching its collectives (clock_align.h). */
struct attach_ssh_clock {
	int anchored;        /* a HELLO gave its anchor: path holds its move */
	int64_t anchor_move; /* ns */
	struct clock_align_path path;
	uint64_t high_ns; /* the host's newest time moved so far (its own clock) */
	int fitted;       /* fit is the last good fit, which path follows */
	struct clock_align_fit fit;
	struct store_capture_clock shown; /* what the status line, the manifest and stats say */
	uint64_t retry_at_ns,
	    retry_ns;     /* not fitted yet: matched again then (backing off: all its ends are read) */
	uint64_t said_ns; /* when shown was last written to the manifest */
	int64_t said_offset_ns;
	const char *said_method;
};

struct attach_ssh_live {
	struct store *store;
	struct ui *ui;
	struct ssh_hosts *relays;
	int **ids; /* per host: store source + 1 by the host's local source, 0 = none yet */
	size_t *id_caps;
	int next_id;
	uint64_t *lost; /* per host: frames the relay dropped (sum of its sources' newest totals) */
	/* One time axis for every host, this machine's: a host's times move by its clock anchor's
	 * offset (REALTIME - MONOTONIC of its first process) minus ours, as several captures are
	 * aligned (so as well as the hosts' wall clocks agree), and the view's "now" is right. Where
	 * hosts run NCCL collectives the move is refined live (attach_ssh_refit). */
	struct attach_ssh_clock *clocks; /* per host */
	int ref_host;                    /* the host others' collectives are matched to, -1 = none yet */
	int64_t ref_offset;              /* REALTIME - MONOTONIC here */
	uint64_t refit_at_ns;            /* the next refit */
	uint64_t began_ns;               /* when the view started */
	uint64_t ref_retry_at_ns, ref_retry_ns; /* no reference yet: looked for again then */
	unsigned said_rotations;                /* the live file's restarts the manifest was written for */
	uint64_t refits, refit_cpu_ns, refit_cpu_max_ns;
	uint8_t *moved; /* a frame copy with its times moved */
	size_t moved_cap;
	struct live_keep keep; /* every host's frames, as shown, for `d` dumps */
	char note[1024];       /* one line per host, joined for the status line */
	/* CUSCOPE_LATENCY=1: event -> drawn, for hosts that share our CLOCK_MONOTONIC (127.0.0.1). */
	int latency;
	uint64_t start_ns;      /* events older than this are not counted (ATTACH_SSH_LATENCY_SKIP_NS) */
	uint64_t pending[4096]; /* times of events ingested since the last frame drawn */
	size_t pending_count;
	uint64_t *samples; /* ns */
	size_t sample_count, sample_cap;
};

/* Notes the oldest and the newest event of an EVENTS frame (the frame's spread of latency). */
static void attach_ssh_latency_note(struct attach_ssh_live *lv, uint32_t type, const void *payload,
                                    uint32_t length)
{
	size_t n = length / sizeof(struct wire_event);
	if (!lv->latency || type != WIRE_FRAME_EVENTS || !n || lv->pending_count + 2 > 4096)
		return;
	struct wire_event first, last;
	memcpy(&first, payload, sizeof first);
	memcpy(&last, (const char *)payload + (n - 1) * sizeof last, sizeof last);
	if (first.time_ns >= lv->start_ns)
		lv->pending[lv->pending_count++] = first.time_ns;
	if (n > 1 && last.time_ns >= lv->start_ns)
		lv->pending[lv->pending_count++] = last.time_ns;
}

static void attach_ssh_latency_drawn(struct attach_ssh_live *lv, uint64_t drawn_ns)
{
	for (size_t i = 0; i < lv->pending_count; i++) {
		if (drawn_ns <= lv->pending[i])
			continue;
		if (lv->sample_count == lv->sample_cap)
			xgrow((void **)&lv->samples, &lv->sample_cap, lv->sample_count + 1,
			      sizeof *lv->samples);
		lv->samples[lv->sample_count++] = drawn_ns - lv->pending[i];
	}
	lv->pending_count = 0;
}

static void attach_ssh_latency_report(struct attach_ssh_live *lv)
{
	if (!lv->latency)
		return;
	if (lv->refits)
		log_error("clock refits: %llu, CPU %.3f ms in all (mean %.1f us, max %.1f us)",
		          (unsigned long long)lv->refits, (double)lv->refit_cpu_ns / 1e6,
		          (double)lv->refit_cpu_ns / 1e3 / (double)lv->refits,
		          (double)lv->refit_cpu_max_ns / 1e3);
	if (!lv->sample_count) {
		log_error("latency: no events were drawn");
		return;
	}
	size_t n = lv->sample_count;
	u64_sort(lv->samples, n);
	log_error("latency: event -> drawn through the relays: p50 %.1f ms  p99 %.1f ms  max %.1f ms  (%zu "
	          "samples: each frame's oldest and newest event)",
	          (double)u64_percentile(lv->samples, n, 0.50) / 1e6,
	          (double)u64_percentile(lv->samples, n, 0.99) / 1e6, (double)lv->samples[n - 1] / 1e6, n);
}

/* A host's time moved onto the common axis by its path (capture_frame_move); notes the newest. */
static uint64_t attach_ssh_move(void *ctx, uint64_t t)
{
	struct attach_ssh_clock *clk = ctx;
	if (t > clk->high_ns)
		clk->high_ns = t;
	return t + (uint64_t)clock_align_path_move(&clk->path, t);
}

/* The store's source for host's local source (sources are dense in the store, across hosts). */
static int attach_ssh_live_id(struct attach_ssh_live *lv, int host, uint32_t source)
{
	if (source >= lv->id_caps[host]) {
		size_t old = lv->id_caps[host];
		xgrow((void **)&lv->ids[host], &lv->id_caps[host], (size_t)source + 1, sizeof **lv->ids);
		memset(lv->ids[host] + old, 0, (lv->id_caps[host] - old) * sizeof **lv->ids);
	}
	if (!lv->ids[host][source])
		lv->ids[host][source] = ++lv->next_id;
	return lv->ids[host][source] - 1;
}

static void attach_ssh_live_frame(void *ctx, int host, uint32_t source, uint32_t type, const void *payload,
                                  uint32_t length)
{
	struct attach_ssh_live *lv = ctx;
	int id = attach_ssh_live_id(lv, host, source);
	uint8_t *hello = NULL;
	if (type == WIRE_FRAME_HELLO && length >= sizeof(struct wire_hello)) {
		/* The process's host is the name the user reached it by (see attach_ssh_frame). */
		hello = xmalloc(length);
		memcpy(hello, payload, length);
		char name[sizeof((struct wire_hello *)0)->host] = {0};
		snprintf(name, sizeof name, "%s", ssh_host_name(lv->relays, host));
		memcpy(hello + offsetof(struct wire_hello, host), name, sizeof name);
		payload = hello;
	}
	struct attach_ssh_clock *clk = &lv->clocks[host];
	if (type == WIRE_FRAME_HELLO && length >= sizeof(struct wire_hello) && !clk->anchored) {
		struct wire_hello h;
		memcpy(&h, payload, sizeof h);
		/* Both halves are read together by the collector at start; either 0 means none. */
		if (h.anchor_mono_ns && h.anchor_real_ns) {
			int64_t offset = (int64_t)(h.anchor_real_ns - h.anchor_mono_ns);
			/* unsigned: a crafted anchor wraps rather than overflows */
			clk->anchor_move = (int64_t)((uint64_t)offset - (uint64_t)lv->ref_offset);
			clock_align_path_init(&clk->path, clk->anchor_move);
			clk->anchored = 1;
		}
	}
	const char *cause = NULL;
	if (clk->anchored && length && wire_frame_check(type, payload, length, &cause) == 0) {
		xgrow((void **)&lv->moved, &lv->moved_cap, length, 1);
		memcpy(lv->moved, payload, length);
		capture_frame_move(type, lv->moved, length, attach_ssh_move, clk);
		payload = lv->moved;
	}
	attach_ssh_latency_note(lv, type, payload, length);
	live_keep_frame(&lv->keep, id, type, payload, length);
	cause = NULL;
	if (store_feed(lv->store, id, type, payload, length, &cause) != 0 && lv->ui) {
		char line[300];
		snprintf(line, sizeof line, "%s: %s", ssh_host_name(lv->relays, host), cause);
		ui_message(lv->ui, line);
	}
	free(hello);
}

static void attach_ssh_live_closed(void *ctx, int host, uint32_t source)
{
	struct attach_ssh_live *lv = ctx;
	store_source_closed(lv->store, attach_ssh_live_id(lv, host, source));
}

static void attach_ssh_live_loss(void *ctx, int host, uint32_t source, uint64_t frames, uint64_t bytes)
{
	struct attach_ssh_live *lv = ctx;
	(void)source;
	(void)bytes;
	/* One total per host is enough for the status line; the newest total of a source wins. */
	if (frames > lv->lost[host])
		lv->lost[host] = frames;
}

static void attach_ssh_live_note(void *ctx, int host, const char *line)
{
	struct attach_ssh_live *lv = ctx;
	(void)host;
	(void)line;
	(void)lv; /* the status line is rebuilt from ssh_host_line each frame */
}

/* ---- live refinement of the hosts' clocks by their collectives ---- */

/* The NCCL kernel ends (store times, from from_ns on) of host's first process that has enough. */
static size_t attach_ssh_host_ends(struct attach_ssh_live *lv, int host, uint64_t from_ns, uint64_t **out)
{
	const char *name = ssh_host_name(lv->relays, host);
	*out = NULL;
	for (size_t p = 0; p < store_process_count(lv->store); p++) {
		struct store_process_info pi;
		store_process_get(lv->store, p, &pi);
		/* The HELLO's host is the --ssh name (attach_ssh_live_frame), cut to its field. */
		if (strncmp(pi.host, name, sizeof((struct wire_hello *)0)->host - 1) != 0)
			continue;
		size_t n = clock_align_nccl_ends_since(lv->store, p, from_ns, out);
		if (n >= CLOCK_ALIGN_MIN_PAIRS)
			return n;
		free(*out);
		*out = NULL;
	}
	return 0;
}

/* Matches host's collectives with the reference host's and, for a good fit, steers its path there. */
static void attach_ssh_refit_host(struct attach_ssh_live *lv, int host, const uint64_t *ref, size_t n_ref,
                                  uint64_t from_ns)
{
	struct attach_ssh_clock *clk = &lv->clocks[host];
	struct store_capture_clock *s = &clk->shown;
	uint64_t *ends;
	size_t n = attach_ssh_host_ends(lv, host, clk->fitted ? from_ns : 0, &ends);
	/* Back to the host's own times: what the path made of them is known exactly. */
	for (size_t i = 0; i < n; i++)
		ends[i] = clock_align_path_unmove(&clk->path, ends[i]);
	struct clock_align_fit fit;
	int rc = -EDOM;
	if (n && clk->fitted) {
		/* Tracking: each end pairs with the reference's nearest to where the last fit puts it, so
		 * windows that begin at different collectives still match. */
		uint64_t tol = 8 * clk->fit.residual_p50_ns;
		if (tol < CLOCK_ALIGN_LIVE_TRACK_NS)
			tol = CLOCK_ALIGN_LIVE_TRACK_NS;
		uint64_t *r = xmalloc(n * sizeof *r), *t = xmalloc(n * sizeof *t);
		size_t m = clock_align_pair_nearest(ref, n_ref, ends, n, &clk->fit, tol, r, t);
		rc = clock_align_fit(r, m, t, m, &fit);
		free(r);
		free(t);
	} else if (n) {
		/* First: the k-th collective of each host from the start of what each holds. */
		rc = clock_align_fit(ref, n_ref, ends, n, &fit);
	}
	int good = rc == 0 && fit.pairs >= CLOCK_ALIGN_LIVE_MIN_PAIRS &&
	           fit.residual_p50_ns <= CLOCK_ALIGN_LIVE_RESIDUAL_NS && fit.outliers * 4 <= fit.pairs;
	if (good) {
		clk->fit = fit;
		clk->fitted = 1;
		/* Only times after the newest seen move: what the store and the live file hold stays
		 * (moving it would rewrite every row of the host's lanes and the file's chunks), and
		 * the path keeps each host time's move, so its ends are unmoved exactly above. */
		clock_align_path_steer(&clk->path, clk->high_ns + 1, &fit, CLOCK_ALIGN_LIVE_SLEW);
		int64_t now_move = clock_align_move(&fit, clk->high_ns);
		*s = (struct store_capture_clock){
		    .method = "collectives",
		    .offset_ns = now_move,
		    .correction_ns = (int64_t)((uint64_t)now_move - (uint64_t)clk->anchor_move),
		    .drift_ppb = (int64_t)llround(fit.drift * 1e9),
		    .matched = fit.pairs,
		    .unmatched = fit.unmatched,
		    .outliers = fit.outliers,
		    .residual_p50_ns = (int64_t)fit.residual_p50_ns,
		    .residual_max_ns = (int64_t)fit.residual_max_ns,
		};
	} else if (!clk->fitted) {
		/* A poor fit: the anchor stays; what it leaves is said (with pairs to say it of). */
		*s = (struct store_capture_clock){.method = "anchor",
		                                  .offset_ns = clk->anchor_move,
		                                  .matched = n < n_ref ? n : n_ref,
		                                  .residual_p50_ns = -1,
		                                  .residual_max_ns = -1};
		if (n) {
			uint64_t p50, max;
			uint64_t *moved = xmalloc(n * sizeof *moved);
			for (size_t i = 0; i < n; i++)
				moved[i] = ends[i] + (uint64_t)clk->anchor_move;
			clock_align_residual(ref, n_ref, moved, n, &p50, &max);
			s->residual_p50_ns = (int64_t)p50;
			s->residual_max_ns = (int64_t)max;
			s->unmatched = n > n_ref ? n - n_ref : n_ref - n;
			free(moved);
		}
	} /* else a fitted host keeps following its last good fit */
	free(ends);
}

/* Writes host's alignment to the live file's manifest (dumps copy it; `stats` shows it) when it
 * changed, or again after ATTACH_SSH_SAY_NS. */
static void attach_ssh_say_clock(struct attach_ssh_live *lv, int host, uint64_t now, int force)
{
	struct attach_ssh_clock *clk = &lv->clocks[host];
	const struct store_capture_clock *s = &clk->shown;
	if (!s->method || !lv->keep.writer)
		return;
	int64_t moved = (int64_t)((uint64_t)s->offset_ns - (uint64_t)clk->said_offset_ns);
	if (!force && clk->said_method == s->method && (moved < 10000 && moved > -10000) &&
	    now - clk->said_ns < ATTACH_SSH_SAY_NS)
		return;
	char line[600];
	int n = clock_align_manifest_line(line, sizeof line - 1, ssh_host_name(lv->relays, host), s);
	if (n <= 0 || (size_t)n >= sizeof line - 1)
		return;
	line[n++] = '\n';
	capture_writer_manifest(lv->keep.writer, line, (size_t)n);
	clk->said_method = s->method;
	clk->said_offset_ns = s->offset_ns;
	clk->said_ns = now;
}

/* Sets the next try after one that found nothing: 1 s, doubling to ATTACH_SSH_RETRY_MAX_NS. */
static void attach_ssh_backoff(uint64_t *at_ns, uint64_t *step_ns, uint64_t now)
{
	*step_ns = !*step_ns                                ? ATTACH_SSH_REFIT_NS
	           : *step_ns * 2 > ATTACH_SSH_RETRY_MAX_NS ? ATTACH_SSH_RETRY_MAX_NS
	                                                    : *step_ns * 2;
	*at_ns = now + *step_ns;
}

/* Every ATTACH_SSH_REFIT_NS: the reference host (the first with collectives), then every other
 * host matched to it; its cost is counted (CUSCOPE_LATENCY=1 reports it). */
static void attach_ssh_refit(struct attach_ssh_live *lv, int count, uint64_t now)
{
	if (now < lv->refit_at_ns)
		return;
	lv->refit_at_ns = now + ATTACH_SSH_REFIT_NS;
	struct timespec c0, c1;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
	uint64_t last = store_last_ns(lv->store);
	uint64_t from = last > ATTACH_SSH_REFIT_WINDOW_NS ? last - ATTACH_SSH_REFIT_WINDOW_NS : 0;
	/* The reference's ends: all of them for a host matched from the start, the window's for the
	 * hosts tracked by their last fit (read once each, when some host needs them). */
	uint64_t *ref_all = NULL, *ref_win = NULL;
	size_t n_all = 0, n_win = 0;
	int have_all = 0, have_win = 0;
	/* The reference is the first host in the order given that has collectives, chosen once every
	 * host announced a process (or ATTACH_SSH_REF_WAIT_NS passed), not the first to answer. */
	int anchored = 0;
	for (int i = 0; i < count; i++)
		anchored += lv->clocks[i].anchored;
	int choose = (anchored == count || now - lv->began_ns >= ATTACH_SSH_REF_WAIT_NS) &&
	             lv->ref_host < 0 && now >= lv->ref_retry_at_ns;
	for (int i = 0; i < count && lv->ref_host < 0 && choose; i++) {
		if (!lv->clocks[i].anchored)
			continue;
		n_all = attach_ssh_host_ends(lv, i, 0, &ref_all);
		have_all = 1;
		if (n_all)
			lv->ref_host = i;
	}
	if (choose && lv->ref_host < 0) /* no collectives anywhere yet: look again later, less often */
		attach_ssh_backoff(&lv->ref_retry_at_ns, &lv->ref_retry_ns, now);
	for (int i = 0; i < count; i++) {
		struct attach_ssh_clock *clk = &lv->clocks[i];
		if (!clk->anchored) {
			clk->shown = (struct store_capture_clock){
			    .method = "none", .residual_p50_ns = -1, .residual_max_ns = -1};
			continue;
		}
		if (lv->ref_host < 0 || i == lv->ref_host) {
			clk->shown =
			    (struct store_capture_clock){.method = lv->ref_host < 0 ? "anchor" : "reference",
			                                 .offset_ns = clk->anchor_move,
			                                 .residual_p50_ns = lv->ref_host < 0 ? -1 : 0,
			                                 .residual_max_ns = lv->ref_host < 0 ? -1 : 0};
			continue;
		}
		if (!clk->fitted && now < clk->retry_at_ns)
			continue;
		if (clk->fitted && !have_win) {
			n_win = attach_ssh_host_ends(lv, lv->ref_host, from, &ref_win);
			have_win = 1;
		} else if (!clk->fitted && !have_all) {
			n_all = attach_ssh_host_ends(lv, lv->ref_host, 0, &ref_all);
			have_all = 1;
		}
		const uint64_t *ref = clk->fitted ? ref_win : ref_all;
		size_t n_ref = clk->fitted ? n_win : n_all;
		if (n_ref)
			attach_ssh_refit_host(lv, i, ref, n_ref, from);
		else if (!clk->fitted)
			clk->shown = (struct store_capture_clock){.method = "anchor",
			                                          .offset_ns = clk->anchor_move,
			                                          .residual_p50_ns = -1,
			                                          .residual_max_ns = -1};
		/* Not fitted: every end it has is read each time, so a host without (good) collectives
		 * is tried less and less often. */
		if (!clk->fitted)
			attach_ssh_backoff(&clk->retry_at_ns, &clk->retry_ns, now);
	}
	free(ref_all);
	free(ref_win);
	int rotated = lv->keep.rotations != lv->said_rotations;
	lv->said_rotations = lv->keep.rotations;
	for (int i = 0; i < count; i++)
		attach_ssh_say_clock(lv, i, now, rotated);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
	uint64_t cpu = (uint64_t)((c1.tv_sec - c0.tv_sec) * 1000000000ll + (c1.tv_nsec - c0.tv_nsec));
	lv->refits++;
	lv->refit_cpu_ns += cpu;
	if (cpu > lv->refit_cpu_max_ns)
		lv->refit_cpu_max_ns = cpu;
}

/* The status line's words on host's clock (empty while it has no collectives to go by). */
static void attach_ssh_clock_text(const struct attach_ssh_live *lv, int host, char *buf, size_t size)
{
	const struct store_capture_clock *s = &lv->clocks[host].shown;
	buf[0] = '\0';
	if (!s->method || !strcmp(s->method, "none"))
		return;
	if (!strcmp(s->method, "reference"))
		snprintf(buf, size, " clock ref");
	else if (!strcmp(s->method, "collectives"))
		snprintf(buf, size, " clock %+.3fms r%.0fus", (double)s->correction_ns / 1e6,
		         (double)s->residual_p50_ns / 1e3);
	else if (s->matched)
		snprintf(buf, size, " clock anchor (poor fit: %llu matched, r%.0fus)",
		         (unsigned long long)s->matched, (double)s->residual_p50_ns / 1e3);
}

/* The status line's note: each host's state and last line. */
static void attach_ssh_live_status(struct attach_ssh_live *lv, int count)
{
	size_t len = 0;
	lv->note[0] = '\0';
	for (int i = 0; i < count && len < sizeof lv->note - 1; i++) {
		char clock_text[96];
		attach_ssh_clock_text(lv, i, clock_text, sizeof clock_text);
		int n =
		    snprintf(lv->note + len, sizeof lv->note - len, "%s%s: %s%s%s", i ? " | " : "",
		             ssh_host_name(lv->relays, i), ssh_host_connected(lv->relays, i) ? "up" : "DOWN",
		             clock_text, lv->lost[i] ? " (relay lost frames)" : "");
		if (n < 0)
			break;
		len += (size_t)n;
		const char *line = ssh_host_line(lv->relays, i);
		if (!ssh_host_connected(lv->relays, i) && line[0] && len < sizeof lv->note - 1) {
			n = snprintf(lv->note + len, sizeof lv->note - len, " %s", line);
			if (n > 0)
				len += (size_t)n;
		}
		if (len >= sizeof lv->note)
			len = sizeof lv->note - 1;
	}
}

/* The live view over every host's relay until the user leaves (the processes run on). */
int attach_ssh_live(const struct cli_args *args, char **names, int count, const struct ssh_config *config)
{
	static struct attach_ssh_live lv;
	char cause_buf[512];
	lv.store = store_new();
	store_set_memory_limit(
	    lv.store, (size_t)(args->ui.memory_mb ? args->ui.memory_mb : UI_MEMORY_MB_DEFAULT) << 20);
	lv.ids = xcalloc((size_t)count, sizeof *lv.ids);
	lv.id_caps = xcalloc((size_t)count, sizeof *lv.id_caps);
	lv.lost = xcalloc((size_t)count, sizeof *lv.lost);
	lv.clocks = xcalloc((size_t)count, sizeof *lv.clocks);
	lv.ref_host = -1;
	lv.began_ns = clock_mono_ns();
	uint64_t here_mono, here_real;
	clock_anchor(&here_mono, &here_real);
	lv.ref_offset = (int64_t)(here_real - here_mono);
	live_keep_open(&lv.keep, NULL, args->ui.disk_mb);
	const char *latency_env = getenv("CUSCOPE_LATENCY");
	lv.latency = latency_env && *latency_env == '1';
	/* The armed processes' past arrives first, in a burst: latency is counted after it. */
	lv.start_ns = clock_mono_ns() + ATTACH_SSH_LATENCY_SKIP_NS;
	struct ssh_callbacks cb = {.ctx = &lv,
	                           .frame = attach_ssh_live_frame,
	                           .closed = attach_ssh_live_closed,
	                           .loss = attach_ssh_live_loss,
	                           .note = attach_ssh_live_note};
	int rc = 0;
	lv.relays = ssh_hosts_new(names, count, config, &cb, cause_buf, sizeof cause_buf);
	if (!lv.relays) {
		log_error("attach: %s", cause_buf);
		rc = CLI_EXIT_USAGE;
		goto out;
	}
	const char *cause = NULL;
	lv.ui = ui_new(lv.store, &args->ui, &cause);
	if (!lv.ui) {
		log_error("attach: %s", cause ? cause : "cannot start the terminal UI");
		ssh_hosts_free(lv.relays);
		rc = 1;
		goto out;
	}
	cli_restore_on_crash();
	/* The hosts as the title names them: the first few, then how many more. */
	char hosts_text[240] = "";
	for (int i = 0; i < count && i < 4; i++)
		snprintf(hosts_text + strlen(hosts_text), sizeof hosts_text - strlen(hosts_text), "%s%s",
		         i ? "," : "", names[i]);
	if (count > 4)
		snprintf(hosts_text + strlen(hosts_text), sizeof hosts_text - strlen(hosts_text), " +%d more",
		         count - 4);
	char command[300];
	snprintf(command, sizeof command, "ssh %s", hosts_text);
	struct ui_status status = {.command = command, .live = 1, .target_alive = 1};
	uint64_t last_draw = 0, rate_start = clock_mono_ns(), rate_events = 0, last_flush = rate_start;
	ui_draw(lv.ui, &status, 1);
	while (!attach_ssh_stop) {
		ssh_hosts_pump(lv.relays, 20, STDIN_FILENO);
		int actions = ui_handle_input(lv.ui, &status);
		/* The processes are not ours to stop: every way out leaves them running. */
		if (actions & (UI_ACTION_QUIT | UI_ACTION_DETACH | UI_ACTION_STOP | UI_ACTION_INTERRUPT))
			break;
		uint64_t now = clock_mono_ns();
		if (now - rate_start >= 1000000000ull) {
			uint64_t events = store_event_count(lv.store);
			status.events_per_s =
			    (double)(events - rate_events) * 1e9 / (double)(now - rate_start);
			rate_events = events;
			rate_start = now;
		}
		attach_ssh_refit(&lv, count, now);
		live_keep_dump(&lv.keep, lv.ui, now);
		if (now - last_flush >= ATTACH_SSH_KEEP_FLUSH_NS) {
			live_keep_flush(&lv.keep, lv.store, lv.ui);
			last_flush = now;
		}
		if (now - last_draw >= ATTACH_SSH_FRAME_NS) {
			attach_ssh_live_status(&lv, count);
			status.log_note = lv.note;
			status.now_ns = now;
			ui_draw(lv.ui, &status, 0);
			last_draw = now;
			attach_ssh_latency_drawn(&lv, clock_mono_ns());
		}
	}
	if (attach_ssh_stop != SIGHUP)
		ui_free(lv.ui);
	log_set_sink(NULL);
	/* A dump still running is finished first: nothing captured is lost. */
	live_keep_finish(&lv.keep);
	ssh_hosts_finish(lv.relays, ATTACH_SSH_FINISH_MS);
	ssh_hosts_free(lv.relays);
	if (attach_ssh_stop != SIGHUP)
		log_error("detached from %s; their processes run on", hosts_text);
	attach_ssh_latency_report(&lv);
out:
	for (int i = 0; i < count; i++)
		free(lv.ids[i]);
	free(lv.ids);
	free(lv.id_caps);
	free(lv.lost);
	for (int i = 0; i < count; i++)
		clock_align_path_fini(&lv.clocks[i].path);
	free(lv.clocks);
	free(lv.moved);
	live_keep_close(&lv.keep);
	free(lv.samples);
	store_free(lv.store);
	return rc;
}
