/*
 * Several captures (of several hosts, or several record runs) read into one store on one time
 * axis. Each host's events are in its own CLOCK_MONOTONIC; every process's HELLO carries a
 * (MONOTONIC, REALTIME) pair read together, so a capture's offset to wall time is real - mono of
 * its first process, and each file is moved by its offset's difference to the smallest one.
 * Precision: that of the hosts' REALTIME clocks (NTP, PTP) plus the anchor's read: a few
 * microseconds at best, seconds on a host whose wall clock is off.
 *
 * Refined by matching collectives (clock_align.h): where captures hold NCCL kernels, the k-th
 * collective kernel of a capture ends with the k-th of the reference capture (the first one
 * holding NCCL kernels), and the line fitted through those pairs (offset and drift) replaces the
 * anchor's constant move for that capture. Communicators are not told apart yet (NCCL's NVTX
 * payloads are not decoded): a process's NCCL kernels in end-time order are taken as one
 * communicator's, which holds for data-parallel jobs with one communicator; with several (tensor
 * and pipeline parallel groups, or a subgroup some ranks are not in) the k-th kernels are not the
 * same collective, and the fit shows it (large residuals, many outliers).
 * Every file is read twice: alone, for its anchor and NCCL kernel ends, then into the store with
 * its move. The moves are >= 0 at each file's start, so no time wraps.
 */
#include "cuscope/capture.h"
#include "cuscope/cli.h"
#include "cuscope/clock_align.h"
#include "cuscope/log.h"
#include "cuscope/store.h"
#include "cuscope/xalloc.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

/* One file's clock: its anchor, its collectives, and the move it gets. */
struct capture_clock {
	int anchored;      /* it has a (MONOTONIC, REALTIME) pair */
	int64_t offset_ns; /* REALTIME - MONOTONIC */
	uint64_t start_ns; /* its earliest process start, its own clock */
	uint64_t *ends;    /* NCCL kernel ends of its first process that has some, ascending */
	size_t n_ends;
	int64_t anchor_move; /* the anchor alignment's move */
	int fitted;          /* fit holds the refined move */
	struct clock_align_fit fit;
	struct store_capture_clock shown;
};

/* a - b, wrapping (a crafted anchor or kernel time wraps rather than overflows). */
static int64_t captures_sub(int64_t a, int64_t b)
{
	return (int64_t)((uint64_t)a - (uint64_t)b);
}

/* Reads path alone for its anchor, start and NCCL kernel ends; 0 or CLI_EXIT_USAGE after one line. */
static int captures_scan(const char *path, struct capture_clock *clk)
{
	struct store *tmp = store_new();
	struct capture_read_result res;
	struct capture_read_options opts = {0};
	char msg[1024];
	const char *cause = NULL;
	int rc = capture_read_with(path, tmp, &opts, &res, msg, sizeof msg, &cause);
	free(res.manifest);
	if (rc) {
		log_error("%s", cause);
		store_free(tmp);
		return CLI_EXIT_USAGE;
	}
	for (size_t p = 0; p < store_process_count(tmp); p++) {
		struct store_process_info pi;
		store_process_get(tmp, p, &pi);
		/* Both halves are read by the collector at start; either 0 means none was recorded. */
		if (p == 0 && pi.anchor_mono_ns && pi.anchor_real_ns) {
			clk->anchored = 1;
			clk->offset_ns = (int64_t)(pi.anchor_real_ns - pi.anchor_mono_ns);
		}
		if (pi.start_ns && (!clk->start_ns || pi.start_ns < clk->start_ns))
			clk->start_ns = pi.start_ns;
		/* One process is enough: all of a capture's processes share its host's clock. */
		if (!clk->n_ends) {
			free(clk->ends);
			clk->n_ends = clock_align_nccl_ends(tmp, p, &clk->ends);
		}
	}
	store_free(tmp);
	return 0;
}

/* Fits capture c's collectives onto the reference's (in the reference's anchor-aligned time) and
 * says what came of it: one warning line for a capture whose collectives could not be used. */
static void captures_match(char **paths, struct capture_clock *clk, int c, int ref)
{
	struct capture_clock *k = &clk[c], *r = &clk[ref];
	struct store_capture_clock *s = &k->shown;
	uint64_t *rt = xmalloc((r->n_ends + 1) * sizeof *rt);
	for (size_t i = 0; i < r->n_ends; i++)
		rt[i] = r->ends[i] + (uint64_t)r->anchor_move;
	/* Against this capture's own times: the fitted move is its whole move, anchor included. */
	if (clock_align_fit(rt, r->n_ends, k->ends, k->n_ends, &k->fit) == 0) {
		k->fitted = 1;
		s->method = "collectives";
		s->matched = k->fit.pairs;
		s->unmatched = k->fit.unmatched;
		s->outliers = k->fit.outliers;
		s->drift_ppb = (int64_t)llround(k->fit.drift * 1e9);
		s->residual_p50_ns = (int64_t)k->fit.residual_p50_ns;
		s->residual_max_ns = (int64_t)k->fit.residual_max_ns;
		if (k->fit.unmatched)
			log_warn("%s: %zu NCCL kernels, %s: %zu; the first %zu matched", paths[c], k->n_ends,
			         paths[ref], r->n_ends, k->fit.pairs);
	} else {
		size_t m = k->n_ends < r->n_ends ? k->n_ends : r->n_ends;
		s->matched = m;
		s->unmatched = k->fit.unmatched;
		if (m) { /* what the anchor left, for the record */
			uint64_t *kt = xmalloc(m * sizeof *kt), p50, max;
			for (size_t i = 0; i < m; i++)
				kt[i] = k->ends[i] + (uint64_t)k->anchor_move;
			clock_align_residual(rt, m, kt, m, &p50, &max);
			s->residual_p50_ns = (int64_t)p50;
			s->residual_max_ns = (int64_t)max;
			free(kt);
		}
		log_warn("%s: %zu NCCL kernels to match with %s's %zu: aligned by its clock anchor only",
		         paths[c], k->n_ends, paths[ref], r->n_ends);
	}
	free(rt);
}

int cli_load_captures(int count, char **paths, struct store *store)
{
	if (count == 1) {
		/* A live view's capture of several hosts says in its manifest how each was aligned. */
		struct capture_read_result res = {0};
		int one = cli_load_capture(paths[0], store, &res);
		if (!one && res.manifest)
			clock_align_manifest_apply(res.manifest, store);
		free(res.manifest);
		return one;
	}
	struct capture_clock *clk = xcalloc((size_t)count, sizeof *clk);
	int rc = 0, have_ref = 0, nccl_ref = -1;
	int64_t ref = 0;
	for (int i = 0; i < count && !rc; i++) {
		rc = captures_scan(paths[i], &clk[i]);
		if (!rc && clk[i].anchored && (!have_ref || clk[i].offset_ns < ref)) {
			ref = clk[i].offset_ns;
			have_ref = 1;
		}
	}
	for (int i = 0; i < count && !rc; i++) {
		struct store_capture_clock *s = &clk[i].shown;
		s->residual_p50_ns = s->residual_max_ns = -1;
		if (clk[i].anchored) { /* unsigned: a crafted anchor wraps rather than overflows */
			clk[i].anchor_move = (int64_t)((uint64_t)clk[i].offset_ns - (uint64_t)ref);
			s->method = "anchor";
			if (nccl_ref < 0 && clk[i].n_ends >= CLOCK_ALIGN_MIN_PAIRS)
				nccl_ref = i;
		} else {
			s->method = "none";
			log_warn("%s has no clock anchor: its times are taken as they are, not aligned with "
			         "the other captures",
			         paths[i]);
		}
	}
	for (int i = 0; i < count && !rc && nccl_ref >= 0; i++) {
		if (i == nccl_ref) {
			clk[i].shown.method = "reference";
			clk[i].shown.matched = clk[i].n_ends;
			clk[i].shown.residual_p50_ns = clk[i].shown.residual_max_ns = 0;
		} else if (clk[i].anchored) {
			captures_match(paths, clk, i, nccl_ref);
		}
	}
	/* The smallest move at a file's start becomes 0: no time wraps (t + move(t) grows with t, the
	 * drift being far below 1). */
	int64_t low = 0;
	for (int i = 0; i < count && !rc; i++) {
		int64_t at_start =
		    clk[i].fitted ? clock_align_move(&clk[i].fit, clk[i].start_ns) : clk[i].anchor_move;
		if (clk[i].anchored && at_start < low)
			low = at_start;
	}
	int base = 0;
	for (int i = 0; i < count && !rc; i++) {
		struct capture_read_options opts = {.source_base = base};
		struct store_capture_clock *s = &clk[i].shown;
		if (clk[i].fitted) {
			opts.shift_ns = captures_sub(clk[i].fit.offset_ns, low);
			opts.drift = clk[i].fit.drift;
			opts.drift_origin_ns = clk[i].fit.origin_ns;
			s->offset_ns = opts.shift_ns;
			s->correction_ns = captures_sub(opts.shift_ns, captures_sub(clk[i].anchor_move, low));
		} else if (clk[i].anchored) {
			opts.shift_ns = captures_sub(clk[i].anchor_move, low);
			s->offset_ns = opts.shift_ns;
		}
		uint32_t c = store_capture_begin(store);
		store_capture_set_clock(store, c, s);
		unsigned sources = 0;
		rc = cli_load_capture_with(paths[i], store, &opts, &sources);
		base += (int)sources;
	}
	for (int i = 0; i < count; i++)
		free(clk[i].ends);
	free(clk);
	return rc;
}
