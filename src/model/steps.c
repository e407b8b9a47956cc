/*
 * Steps without annotations (steps.h). The method, and why:
 *
 * A training loop launches the same work every iteration, but not always the same number of kernels
 * (data-dependent shapes, an eval every few steps, a logging kernel, warm-up iterations that tune or
 * allocate), so a fixed lag (autocorrelation of name ids) misses it. What survives those is an
 * *anchor*: a token that occurs exactly once per iteration. A token is a kernel name or a pair of
 * consecutive names (when every name repeats within a step, e.g. a foreach optimizer launching one
 * kernel per parameter chunk, the pair "last kernel of the step, first of the next" still occurs once).
 * For each token occurring 3 times or more:
 *  - regularity: the intervals between its occurrences, counted in events (not in time: a data loader
 *    or a sync stretches time, not the launch sequence), must mostly (STEPS_REGULAR of them) lie within
 *    half the median of it; a random or nested-twice token fails here;
 *  - consistency (for the STEPS_CANDIDATES_MAX most frequent regular tokens): the segments it cuts the
 *    stream into must hold the same names: a name is in nearly every segment (the step's work) or in
 *    few (noise: an eval, warm-up); names in about half of them say the token cuts a step in parts
 *    (it occurs twice a step), so it is refused when they weigh more than STEPS_MID_MASS of the events.
 * Of the tokens left, the most frequent one (shortest period) wins, within 10% (an extra occurrence
 * in an eval must not beat a clean anchor), the most regular first and then the lowest coefficient of
 * variation. Several tokens are often equally good (every kernel of the optimizer occurs once a step):
 * the phase is then the one with the longest median idle time before it, which is where a loop waits
 * for its data or a sync, i.e. where an iteration starts; and when that wait sits elsewhere in the iteration,
 * at the same kernel nearly every time, the steps begin after it instead (steps_bounds).
 *
 * A step starts at the CPU start of its anchor's launch call (on the launching thread), and ends where
 * the next one starts: an iteration is a CPU-side loop body, as an NVTX step range on the training
 * thread would be, so the ranges line up with that thread's lanes and a rank's GPU idle time inside a
 * step counts the time the CPU took to launch. When launch calls are unknown (API tracing off, graph
 * kernels, older than the launch index) the anchor's GPU start is used instead, for every step of the
 * process (gpu_time says which). The last iteration counts once it holds half the usual events; with no
 * next start it ends where its last work (launch call or kernel) ends, so it may read shorter. The events
 * before the first anchor count as a step on the same rule (the anchor may sit mid-iteration).
 */
#include "cuscope/steps.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cuscope/store.h"
#include "cuscope/timerow.h"
#include "cuscope/u64.h"
#include "cuscope/wire.h"
#include "cuscope/xalloc.h"

#define STEPS_REGULAR      0.8 /* fraction of intervals within half the median of it */
#define STEPS_REGULAR_SPAN 0.6 /* fraction of the span those intervals cover */
#define STEPS_MID_MASS     0.2 /* most events whose names are in 25%..75% of the segments */
#define STEPS_COVER        0.5 /* an anchor spans at least this fraction of the stream */
/*
 * Fewest events a step: forward, backward and an optimizer take more; a shorter repeat is a kernel loop (an
 * autotuner trying candidates a, b, a, b, a benchmark), which would otherwise win when the real loop has
 * run too few iterations to anchor (t280's 2-iteration run).
 */
#define STEPS_MIN_PERIOD   4
#define STEPS_ALIGN        0.75 /* the events after each occurrence are the same (mean mode share) */
#define STEPS_ALIGN_EVENTS 4    /* how many events after an occurrence are compared */

struct steps_cand {
	uint32_t token;
	int bigram;
	size_t *pos; /* occurrences (event indexes), ascending */
	size_t count;
	double regular, cv;
	uint32_t period;
	size_t effective; /* count less the intervals shorter than half the period (extra occurrences) */
	int checked;      /* consistency computed */
	int consistent;   /* checked, and it passed */
	double mid, align;
	uint64_t gap; /* median idle time before an occurrence */
};

struct steps_work {
	const struct steps_event *ev;
	size_t n;
	uint32_t *dense; /* name of each event as 0..names-1 */
	uint32_t names;
	uint64_t *keys; /* token << 32 | index, sorted */
	uint64_t *tmp;  /* n intervals */
	struct steps_cand *cand;
	size_t cand_count, cand_cap;
};

void steps_result_fini(struct steps_result *r)
{
	free(r->v);
	memset(r, 0, sizeof *r);
}

/*
 * Sorts keys hi << 32 | index, made in index order, by hi (all below hi_max): one counting pass over a
 * table of hi_max counts when that is not much larger than the keys (token ids are dense), else a radix
 * sort of the whole keys. Indexes stay ascending within a hi.
 */
static void steps_sort_keys(uint64_t *keys, size_t n, uint64_t hi_max)
{
	if (hi_max > 4 * (uint64_t)n + 4096) {
		u64_sort(keys, n);
		return;
	}
	size_t *start = xcalloc((size_t)hi_max + 1, sizeof *start);
	uint64_t *out = xcalloc(n ? n : 1, sizeof *out);
	for (size_t i = 0; i < n; i++)
		start[(keys[i] >> 32) + 1]++;
	for (size_t h = 1; h <= hi_max; h++)
		start[h] += start[h - 1];
	for (size_t i = 0; i < n; i++)
		out[start[keys[i] >> 32]++] = keys[i];
	memcpy(keys, out, n * sizeof *keys);
	free(out);
	free(start);
}

/* Dense name ids (one sort of name << 32 | index). */
static void steps_dense(struct steps_work *w)
{
	uint32_t top = 0;
	for (size_t i = 0; i < w->n; i++) {
		w->keys[i] = (uint64_t)w->ev[i].name << 32 | i;
		top = w->ev[i].name > top ? w->ev[i].name : top;
	}
	steps_sort_keys(w->keys, w->n, (uint64_t)top + 1);
	uint32_t d = 0;
	for (size_t i = 0; i < w->n; i++) {
		if (i && w->keys[i] >> 32 != w->keys[i - 1] >> 32)
			d++;
		w->dense[(uint32_t)w->keys[i]] = d;
	}
	w->names = w->n ? d + 1 : 0;
}

/*
 * Regularity of one token's occurrences: fills c's period, regular and cv; 0 when it cannot anchor (too
 * few, too short a period, not spanning the stream, or its regular intervals do not cover most of its
 * span: a token of every layer's forward pass is regular there, and then skips the whole backward pass).
 */
static int steps_regularity(struct steps_cand *c, uint64_t *tmp, size_t n)
{
	size_t m = c->count - 1;
	uint64_t span = c->pos[m] - c->pos[0];
	double sum = 0, sq = 0;
	if ((double)span < STEPS_COVER * (double)n)
		return 0;
	for (size_t j = 0; j < m; j++) {
		tmp[j] = c->pos[j + 1] - c->pos[j];
		sum += (double)tmp[j];
		sq += (double)tmp[j] * (double)tmp[j];
	}
	u64_sort(tmp, m);
	uint64_t med = u64_percentile(tmp, m, 0.5);
	if (med < STEPS_MIN_PERIOD)
		return 0;
	size_t near = 0, shorter = 0;
	uint64_t near_span = 0;
	for (size_t j = 0; j < m; j++) {
		shorter += tmp[j] * 2 < med;
		if (tmp[j] * 2 >= med && tmp[j] <= med + med / 2) {
			near++;
			near_span += tmp[j];
		}
	}
	double mean = sum / (double)m, var = sq / (double)m - mean * mean;
	c->period = med > UINT32_MAX ? UINT32_MAX : (uint32_t)med;
	c->regular = (double)near / (double)m;
	c->effective = c->count - shorter;
	c->cv = var > 0 && mean > 0 ? sqrt(var) / mean : 0;
	return c->regular >= STEPS_REGULAR && (double)near_span >= STEPS_REGULAR_SPAN * (double)span;
}

/* The regular tokens of one level (names, or pairs of consecutive names) appended to w->cand. */
static void steps_level(struct steps_work *w, int bigram)
{
	size_t n = w->n, k = 0;
	if (bigram && (uint64_t)w->names * w->names > UINT32_MAX)
		return; /* too many names to pair in 32 bits: names alone must do */
	for (size_t i = bigram ? 1 : 0; i < n; i++) {
		uint64_t tok = bigram ? (uint64_t)w->dense[i - 1] * w->names + w->dense[i] : w->dense[i];
		w->keys[k++] = tok << 32 | i;
	}
	steps_sort_keys(w->keys, k, bigram ? (uint64_t)w->names * w->names : w->names);
	for (size_t i = 0; i < k;) {
		size_t j = i;
		while (j < k && w->keys[j] >> 32 == w->keys[i] >> 32)
			j++;
		uint32_t tok = (uint32_t)(w->keys[i] >> 32);
		/* A pair whose second name opens the stream: the stream's start stands for its first name. */
		int lead = bigram && tok % w->names == w->dense[0];
		struct steps_cand c = {.token = tok, .bigram = bigram, .count = j - i + (size_t)lead};
		if (c.count >= STEPS_MIN_STEPS + 1) {
			c.pos = xcalloc(c.count, sizeof *c.pos);
			for (size_t q = 0; q < j - i; q++)
				c.pos[q + (size_t)lead] = (uint32_t)w->keys[i + q];
			if (steps_regularity(&c, w->tmp, n)) {
				xgrow((void **)&w->cand, &w->cand_cap, w->cand_count + 1, sizeof *w->cand);
				w->cand[w->cand_count++] = c;
			} else {
				free(c.pos);
			}
		}
		i = j;
	}
}

/* Idle time before event i: from the end of the previous one's launch call (or GPU work) to its start. */
static uint64_t steps_gap_before(const struct steps_event *ev, size_t i)
{
	if (i == 0)
		return UINT64_MAX; /* the stream's start: nothing ran before it */
	const struct steps_event *a = &ev[i - 1], *b = &ev[i];
	if (a->cpu_end_ns && b->cpu_ns)
		return b->cpu_ns > a->cpu_end_ns ? b->cpu_ns - a->cpu_end_ns : 0;
	return b->gpu_start_ns > a->gpu_end_ns ? b->gpu_start_ns - a->gpu_end_ns : 0;
}

/*
 * Consistency of a candidate: the weight of names found in some but not most of its segments (c->mid),
 * and the median idle time before its occurrences (c->gap). presence and last are names-long scratch.
 */
static void steps_consistency(const struct steps_work *w, struct steps_cand *c, uint32_t *presence,
                              uint32_t *last)
{
	memset(presence, 0, w->names * sizeof *presence);
	memset(last, 0xff, w->names * sizeof *last);
	size_t segs = c->count - 1, s = 0;
	for (size_t i = c->pos[0]; i < c->pos[segs]; i++) {
		if (i == c->pos[s + 1])
			s++;
		uint32_t d = w->dense[i];
		if (last[d] != s) {
			last[d] = (uint32_t)s;
			presence[d]++;
		}
	}
	/* Per name whether it is in some but not most segments (last[] reused), then per event. */
	for (uint32_t d = 0; d < w->names; d++) {
		double f = (double)presence[d] / (double)segs;
		last[d] = f > 0.25 && f < 0.75;
	}
	size_t mid = 0, total = c->pos[segs] - c->pos[0];
	for (size_t i = c->pos[0]; i < c->pos[segs]; i++)
		mid += last[w->dense[i]];
	c->mid = total ? (double)mid / (double)total : 1;
	/*
	 * The events right after each occurrence: a loop starts its iteration the same way every time, while
	 * a token that merely recurs (three times by chance in a long random stream) is followed by anything.
	 */
	memset(presence, 0, w->names * sizeof *presence);
	size_t offsets = c->period - 1 < STEPS_ALIGN_EVENTS ? c->period - 1 : STEPS_ALIGN_EVENTS;
	double share = 0;
	for (size_t d = 1; d <= offsets; d++) {
		uint32_t mode = 0, samples = 0;
		for (size_t j = 0; j < c->count && c->pos[j] + d < w->n; j++) {
			uint32_t k = ++presence[w->dense[c->pos[j] + d]];
			mode = k > mode ? k : mode;
			samples++;
		}
		for (size_t j = 0; j < c->count && c->pos[j] + d < w->n; j++)
			presence[w->dense[c->pos[j] + d]] = 0;
		share += samples ? (double)mode / samples : 0;
	}
	c->align = offsets ? share / (double)offsets : 0;
	c->consistent = c->mid <= STEPS_MID_MASS && c->align >= STEPS_ALIGN;
	for (size_t j = 0; j < c->count; j++)
		w->tmp[j] = steps_gap_before(w->ev, c->pos[j]);
	u64_sort(w->tmp, c->count);
	c->gap = u64_percentile(w->tmp, c->count, 0.5);
	c->checked = 1;
}

static int steps_cand_cmp(const void *a, const void *b)
{
	const struct steps_cand *x = a, *y = b;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	if (x->bigram != y->bigram)
		return x->bigram < y->bigram ? -1 : 1;
	return x->token < y->token ? -1 : x->token > y->token;
}

/* Occurrence counts an anchor may differ by and still cut the same steps (an extra one in an eval). */
static size_t steps_slack(size_t count)
{
	return count / 50 > 1 ? count / 50 : 1;
}

/*
 * Checks consistency from the most frequent regular token down, at most STEPS_CANDIDATES_MAX scans,
 * until the counts fall below what could still compete with the first consistent one.
 */
static void steps_check(struct steps_work *w)
{
	if (w->cand_count)
		qsort(w->cand, w->cand_count, sizeof *w->cand, steps_cand_cmp);
	uint32_t *presence = xcalloc(w->names, sizeof *presence), *last = xcalloc(w->names, sizeof *last);
	size_t first = 0, scans = 0;
	for (size_t i = 0; i < w->cand_count && scans < STEPS_CANDIDATES_MAX; i++) {
		struct steps_cand *c = &w->cand[i];
		/* Compared by occurrences that are not extra ones (steps_choose): a token that also
		 * occurs in an eval every few steps counts more, yet cuts no more steps. */
		if (first && (double)(c->count + steps_slack(first)) < 0.9 * (double)first)
			break;
		steps_consistency(w, c, presence, last);
		scans++;
		if (!first && c->consistent)
			first = c->effective;
	}
	free(presence);
	free(last);
}

/* Whether candidate c beats best (steps_choose). */
static int steps_better(const struct steps_cand *c, const struct steps_cand *best)
{
	size_t slack = steps_slack(best->count);
	if (c->effective > best->effective + slack || c->effective + slack < best->effective)
		return c->effective > best->effective;
	/* Within the slack (the last extra occurrence has no interval to show it is one): the regular
	 * one, whose segments are the loop's iterations and not an iteration cut before an eval. */
	if (c->regular > best->regular + 0.02 || c->regular < best->regular - 0.02)
		return c->regular > best->regular;
	if (c->cv < best->cv - 1e-9 || c->cv > best->cv + 1e-9)
		return c->cv < best->cv;
	return c->effective > best->effective;
}

/*
 * The anchor among the consistent candidates (see the comment at the top), or NULL: the most occurrences
 * that are not extra ones (an extra occurrence cuts an interval short) beyond steps_slack, then the most
 * regular, then the lowest coefficient of variation; then its phase.
 */
static const struct steps_cand *steps_choose(const struct steps_work *w)
{
	const struct steps_cand *best = NULL;
	for (size_t i = 0; i < w->cand_count; i++) {
		const struct steps_cand *c = &w->cand[i];
		if (c->consistent && (!best || steps_better(c, best)))
			best = c;
	}
	if (!best)
		return NULL;
	/* Equally good anchors cut the same steps at another phase: the one after the longest wait. */
	const struct steps_cand *phase = best;
	for (size_t i = 0; i < w->cand_count; i++) {
		const struct steps_cand *c = &w->cand[i];
		size_t diff = c->effective > best->effective ? c->effective - best->effective
		                                             : best->effective - c->effective;
		if (!c->consistent || diff > steps_slack(best->count) || c->regular < best->regular - 0.02)
			continue;
		if (c->gap > phase->gap)
			phase = c;
	}
	return phase;
}

/*
 * The events before the anchor's first occurrence: the head of the first iteration when the anchor is not
 * its first kernel (then the tail of the last one is short, so one of the two counts), put first when they
 * look like one: half to one and a half the usual events, lasting at most one and a half the median step
 * (not an initialisation phase, nor CUDA's first call creating its context).
 */
static void steps_head(const struct steps_work *w, const struct steps_cand *c, size_t head,
                       struct steps_result *out)
{
	const struct steps_event *ev = w->ev;
	int gpu = out->gpu_time;
	if (!out->n || head * 2 < c->period || head > c->period + c->period / 2)
		return;
	uint64_t start = gpu ? ev[0].gpu_start_ns : ev[0].cpu_ns, end = out->v[0].start_ns;
	uint64_t *d = xcalloc(out->n, sizeof *d);
	for (size_t i = 0; i < out->n; i++)
		d[i] = out->v[i].end_ns - out->v[i].start_ns;
	u64_sort(d, out->n);
	uint64_t med = u64_percentile(d, out->n, 0.5);
	free(d);
	if (!start || start >= end || end - start > med + med / 2)
		return;
	xgrow((void **)&out->v, &out->cap, out->n + 1, sizeof *out->v);
	memmove(out->v + 1, out->v, out->n * sizeof *out->v);
	out->v[0] = (struct steps_range){start, end, ev[0].tid, (uint32_t)head};
	out->n++;
}

/*
 * Where the steps begin: at the anchor's occurrences, or, when the loop's longest wait lies elsewhere in
 * its iteration (the anchor is the loss, the wait is for the data before the forward pass), after that
 * wait: in each stretch since the previous occurrence, the event after the longest idle time, when that
 * is the same kernel in most stretches (STEPS_ALIGN of them) and its wait is clearly longer (twice) than
 * the anchor's own. The count stays the anchor's; only the phase moves. Returns count indexes (free them).
 */
static size_t *steps_bounds(const struct steps_work *w, const struct steps_cand *c)
{
	size_t *b = xcalloc(c->count, sizeof *b);
	uint32_t *votes = xcalloc(w->names ? w->names : 1, sizeof *votes);
	uint64_t *wait = xcalloc(c->count, sizeof *wait), *own = xcalloc(c->count, sizeof *own);
	uint32_t mode = 0;
	for (size_t j = 0; j < c->count; j++) {
		size_t hi = c->pos[j], lo = j ? c->pos[j - 1] + 1 : hi > c->period ? hi - c->period + 1 : 0;
		size_t best = hi;
		uint64_t bg = hi ? steps_gap_before(w->ev, hi) : 0;
		own[j] = bg;
		for (size_t k = lo ? lo : 1; k < hi; k++) {
			uint64_t g = steps_gap_before(w->ev, k);
			if (g > bg) {
				bg = g;
				best = k;
			}
		}
		b[j] = best;
		wait[j] = bg;
		uint32_t v = ++votes[w->dense[best]];
		mode = v > mode ? v : mode;
	}
	u64_sort(wait, c->count);
	u64_sort(own, c->count);
	uint64_t wait_med = u64_percentile(wait, c->count, 0.5), own_med = u64_percentile(own, c->count, 0.5);
	if ((double)mode < STEPS_ALIGN * (double)c->count || wait_med < 2 * own_med + 1)
		memcpy(b, c->pos, c->count * sizeof *b);
	free(votes);
	free(wait);
	free(own);
	return b;
}

/* The ranges of the chosen anchor, starting at pos (steps_bounds), into out. */
static void steps_ranges(const struct steps_work *w, const struct steps_cand *c, const size_t *pos,
                         struct steps_result *out)
{
	const struct steps_event *ev = w->ev;
	int gpu = 0;
	for (size_t j = 0; j < c->count; j++)
		gpu |= !ev[pos[j]].cpu_ns;
	out->gpu_time = gpu;
	out->bigram = c->bigram;
	out->anchor = ev[pos[c->count - 1]].name;
	out->period = c->period;
	uint64_t prev_end = 0;
	for (size_t j = 0; j < c->count; j++) {
		size_t a = pos[j], b;
		uint64_t start = gpu ? ev[a].gpu_start_ns : ev[a].cpu_ns, end;
		if (j + 1 < c->count) {
			b = pos[j + 1];
			end = gpu ? ev[b].gpu_start_ns : ev[b].cpu_ns;
		} else {
			/* The last iteration: complete enough when it holds half the usual events. */
			if ((w->n - a) * 2 < c->period)
				break;
			b = a + c->period < w->n ? a + c->period : w->n;
			end = 0;
			for (size_t i = a; i < b; i++) {
				uint64_t e =
				    ev[i].cpu_end_ns > ev[i].gpu_end_ns ? ev[i].cpu_end_ns : ev[i].gpu_end_ns;
				if (e > end)
					end = e;
			}
		}
		if (end <= start || start < prev_end)
			continue; /* out of order across streams or threads: never overlapping ranges */
		xgrow((void **)&out->v, &out->cap, out->n + 1, sizeof *out->v);
		out->v[out->n++] = (struct steps_range){start, end, ev[a].tid, (uint32_t)(b - a)};
		prev_end = end;
	}
	steps_head(w, c, pos[0], out);
	if (out->n < STEPS_MIN_STEPS)
		out->n = 0;
}

void steps_detect(const struct steps_event *ev, size_t n, struct steps_result *out)
{
	free(out->v);
	memset(out, 0, sizeof *out);
	if (n < 2 * (STEPS_MIN_STEPS + 1) || n >= UINT32_MAX)
		return;
	struct steps_work w = {.ev = ev, .n = n};
	w.dense = xcalloc(n, sizeof *w.dense);
	w.keys = xcalloc(n, sizeof *w.keys);
	w.tmp = xcalloc(n, sizeof *w.tmp);
	steps_dense(&w);
	steps_level(&w, 0);
	steps_level(&w, 1);
	free(w.keys);
	steps_check(&w);
	const struct steps_cand *c = steps_choose(&w);
	if (c) {
		size_t *pos = steps_bounds(&w, c);
		steps_ranges(&w, c, pos, out);
		free(pos);
	}
	for (size_t i = 0; i < w.cand_count; i++)
		free(w.cand[i].pos);
	free(w.cand);
	free(w.tmp);
	free(w.dense);
}

/* ---- from the store ---- */

int steps_range_is_op(const struct store *st, const struct store_range *r)
{
	const char *name = store_string(st, r->name_id);
	return strcmp(store_string(st, r->domain_id), "NCCL") == 0 || strncmp(name, "aten::", 6) == 0 ||
	       strncmp(name, "autograd::", 10) == 0 || !name[0];
}

/* Ranges of one row looked at for repetition: the newest ones (a bounded look per row). */
#define STEPS_ANNOTATION_LOOK 65536u

int steps_process_annotated(const struct store *st, size_t p)
{
	struct store_process_info pi;
	store_process_get(st, p, &pi);
	int found = 0;
	uint64_t *names = NULL;
	size_t cap = 0;
	for (size_t l = 0; l < pi.lane_count && !found; l++) {
		struct store_lane_info li;
		store_lane_get(st, p, l, &li);
		/* A thread's top level (a step is not nested in anything), every row of the async lane. */
		size_t rows = li.kind == STORE_LANE_NVTX_ASYNC ? li.row_count : li.row_count ? 1 : 0;
		if (li.kind == STORE_LANE_GPU_STREAM)
			rows = 0;
		for (size_t row = 0; row < rows && !found; row++) {
			const struct store_range *r;
			size_t n = store_lane_row_all(st, p, l, row, &r);
			if (n > STEPS_ANNOTATION_LOOK) {
				r += n - STEPS_ANNOTATION_LOOK;
				n = STEPS_ANNOTATION_LOOK;
			}
			xgrow((void **)&names, &cap, n ? n : 1, sizeof *names);
			size_t m = 0;
			for (size_t i = 0; i < n; i++)
				if (!steps_range_is_op(st, &r[i]))
					names[m++] = r[i].name_id;
			u64_sort(names, m);
			for (size_t i = 0; i + 2 < m && !found; i++)
				found = names[i] == names[i + 2];
		}
	}
	free(names);
	return found;
}

/* A row of GPU ops (or API calls) the stream is read from. */
struct steps_row {
	const struct store_gpu_op *ops;
	size_t n;
	pid_t tid; /* thread lanes: the caller */
};

/* Start time from which rows hold at most max ops (0: all), by bisection over per-row binary searches. */
static uint64_t steps_cutoff(const struct steps_row *rows, size_t nrows, size_t max)
{
	size_t total = 0;
	uint64_t lo = UINT64_MAX, hi = 0;
	for (size_t i = 0; i < nrows; i++) {
		total += rows[i].n;
		if (rows[i].n) {
			lo = rows[i].ops[0].start_ns < lo ? rows[i].ops[0].start_ns : lo;
			hi = rows[i].ops[rows[i].n - 1].start_ns > hi ? rows[i].ops[rows[i].n - 1].start_ns
			                                              : hi;
		}
	}
	if (!max || total <= max)
		return 0;
	/* The smallest t with at most max ops starting at or after it. */
	hi++;
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		size_t after = 0;
		for (size_t i = 0; i < nrows; i++)
			after += rows[i].n - timerow_bound(rows[i].ops, rows[i].n, sizeof *rows[i].ops,
			                                   TIMEROW_START, mid, 0);
		if (after <= max)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

static int steps_is_api(const struct store_gpu_op *op)
{
	return op->kind == WIRE_GPU_API_RUNTIME || op->kind == WIRE_GPU_API_DRIVER;
}

/* The rows of process p holding kernels (api: thread lanes' rows holding API calls). */
static size_t steps_rows(const struct store *st, size_t p, int api, struct steps_row **out)
{
	struct store_process_info pi;
	store_process_get(st, p, &pi);
	size_t n = 0, cap = 0;
	for (size_t l = 0; l < pi.lane_count; l++) {
		struct store_lane_info li;
		store_lane_get(st, p, l, &li);
		if (api ? li.kind != STORE_LANE_THREAD : li.kind != STORE_LANE_GPU_STREAM || !li.kernels)
			continue;
		for (size_t row = 0; row < li.gpu_row_count; row++) {
			xgrow((void **)out, &cap, n + 1, sizeof **out);
			(*out)[n].n = store_lane_gpu_all(st, p, l, row, &(*out)[n].ops);
			(*out)[n].tid = li.tid;
			n++;
		}
	}
	return n;
}

struct steps_item {
	uint64_t key; /* start time */
	const struct store_gpu_op *op;
	pid_t tid;
};

static int steps_item_cmp(const void *a, const void *b)
{
	const struct steps_item *x = a, *y = b;
	return x->key < y->key ? -1 : x->key > y->key;
}

/*
 * Sorts keys correlation id << 32 | index by id: the ids of a window are a dense range (one a CUDA call), so
 * by their offset from the smallest, counted in one pass (steps_sort_keys).
 */
static void steps_sort_corr(uint64_t *keys, size_t n)
{
	uint64_t lo = UINT64_MAX, hi = 0;
	for (size_t i = 0; i < n; i++) {
		lo = keys[i] >> 32 < lo ? keys[i] >> 32 : lo;
		hi = keys[i] >> 32 > hi ? keys[i] >> 32 : hi;
	}
	if (!n)
		return;
	for (size_t i = 0; i < n; i++)
		keys[i] -= lo << 32;
	steps_sort_keys(keys, n, hi - lo + 1);
	for (size_t i = 0; i < n; i++)
		keys[i] += lo << 32;
}

/* Launch calls look back this far before the first kernel read (a launch precedes its kernel). */
#define STEPS_LAUNCH_LOOKBACK_NS 1000000000ull

/*
 * Fills the launch calls of ev[0..n) (kernels of items, in correlation order: keys sorted) by a merge
 * with the process's API calls sorted by correlation id: two radix sorts and a walk, where a lookup per
 * kernel (store_gpu_op_get_launch) cost most of the computation.
 */
static void steps_join_launches(const struct store *st, size_t p, uint64_t from, const uint64_t *keys,
                                size_t n, struct steps_event *ev)
{
	struct steps_row *rows = NULL;
	size_t nrows = steps_rows(st, p, 1, &rows);
	uint64_t look = from > STEPS_LAUNCH_LOOKBACK_NS ? from - STEPS_LAUNCH_LOOKBACK_NS : 0;
	const struct store_gpu_op **calls = NULL;
	pid_t *tids = NULL;
	uint64_t *ck = NULL;
	size_t m = 0, cap = 0, tcap = 0, kcap = 0;
	for (size_t r = 0; r < nrows; r++) {
		size_t i = timerow_bound(rows[r].ops, rows[r].n, sizeof *rows[r].ops, TIMEROW_START, look, 0);
		for (; i < rows[r].n; i++) {
			const struct store_gpu_op *op = &rows[r].ops[i];
			if (!steps_is_api(op) || !op->correlation_id || m >= UINT32_MAX)
				continue;
			xgrow((void **)&calls, &cap, m + 1, sizeof *calls);
			xgrow((void **)&tids, &tcap, m + 1, sizeof *tids);
			xgrow((void **)&ck, &kcap, m + 1, sizeof *ck);
			calls[m] = op;
			tids[m] = rows[r].tid;
			ck[m] = (uint64_t)op->correlation_id << 32 | m;
			m++;
		}
	}
	free(rows);
	steps_sort_corr(ck, m);
	for (size_t i = 0, j = 0; i < n; i++) {
		uint64_t corr = keys[i] >> 32;
		while (j < m && ck[j] >> 32 < corr)
			j++;
		if (j == m)
			break;
		if (ck[j] >> 32 == corr) {
			const struct store_gpu_op *c = calls[(uint32_t)ck[j]];
			ev[i].tid = tids[(uint32_t)ck[j]];
			ev[i].cpu_ns = c->start_ns;
			ev[i].cpu_end_ns = c->end_ns;
		}
	}
	free(calls);
	free(tids);
	free(ck);
}

/* Process p's kernels (or API calls) since the cutoff, in launch order, into *out; returns the count. */
static size_t steps_gather(const struct store *st, size_t p, int api, size_t max, struct steps_event **out)
{
	struct steps_row *rows = NULL;
	size_t nrows = steps_rows(st, p, api, &rows);
	uint64_t from = steps_cutoff(rows, nrows, max);
	struct steps_item *items = NULL;
	size_t n = 0, cap = 0;
	int all_corr = !api;
	for (size_t r = 0; r < nrows; r++) {
		size_t i =
		    from ? timerow_bound(rows[r].ops, rows[r].n, sizeof *rows[r].ops, TIMEROW_START, from, 0)
		         : 0;
		for (; i < rows[r].n && n < UINT32_MAX; i++) {
			const struct store_gpu_op *op = &rows[r].ops[i];
			if (api ? !steps_is_api(op) : op->kind != WIRE_GPU_KERNEL)
				continue;
			xgrow((void **)&items, &cap, n + 1, sizeof *items);
			items[n++] = (struct steps_item){op->start_ns, op, rows[r].tid};
			all_corr &= op->correlation_id != 0;
		}
	}
	free(rows);
	*out = n ? xcalloc(n, sizeof **out) : NULL;
	if (all_corr && n) {
		/*
		 * Correlation ids number a process's API calls in the order they were made: the launch order
		 * across streams and threads (a radix sort of id << 32 | index).
		 */
		uint64_t *keys = xcalloc(n, sizeof *keys);
		for (size_t i = 0; i < n; i++)
			keys[i] = (uint64_t)items[i].op->correlation_id << 32 | i;
		steps_sort_corr(keys, n);
		for (size_t i = 0; i < n; i++) {
			const struct store_gpu_op *op = items[(uint32_t)keys[i]].op;
			(*out)[i] = (struct steps_event){op->name_id, 0, 0, 0, op->start_ns, op->end_ns};
		}
		steps_join_launches(st, p, from, keys, n, *out);
		free(keys);
		free(items);
		return n;
	}
	/* API calls, or kernels without correlation ids (some were lost): in start order. */
	if (n)
		qsort(items, n, sizeof *items, steps_item_cmp);
	for (size_t i = 0; i < n; i++) {
		const struct store_gpu_op *op = items[i].op;
		struct steps_event *e = &(*out)[i];
		if (api) {
			*e = (struct steps_event){op->name_id, items[i].tid, op->start_ns, op->end_ns, 0, 0};
			continue;
		}
		*e = (struct steps_event){op->name_id, 0, 0, 0, op->start_ns, op->end_ns};
		struct store_gpu_launch launch;
		if (store_gpu_op_get_launch(st, p, op, &launch) == 0) {
			e->tid = launch.tid;
			e->cpu_ns = launch.start_ns;
			e->cpu_end_ns = launch.end_ns;
		}
	}
	free(items);
	return n;
}

void steps_infer(const struct store *st, size_t p, size_t max_events, struct steps_result *out)
{
	free(out->v);
	memset(out, 0, sizeof *out);
	if (steps_process_annotated(st, p))
		return;
	struct steps_event *ev = NULL;
	int api = 0;
	size_t n = steps_gather(st, p, 0, max_events, &ev);
	if (!n) {
		api = 1;
		free(ev);
		n = steps_gather(st, p, 1, max_events, &ev);
	}
	steps_detect(ev, n, out);
	out->api = api && out->n;
	free(ev);
}
