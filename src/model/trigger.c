/* Triggers: the incremental evaluator over a store (trigger.h); the grammar and the notices are
 * in trigger_text.c. */
#include "cuscope/trigger.h"
#include "cuscope/cpuview.h"
#include "cuscope/store.h"
#include "cuscope/u64.h"
#include "cuscope/wire.h"
#include "cuscope/xalloc.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- gap causes ---- */

/* A blocking call's family, by the libc function the collector names it after. */
static const char *trigger_call_family(const char *name)
{
	static const struct {
		const char *name, *family;
	} calls[] = {
	    {"nanosleep", "sleep"},
	    {"clock_nanosleep", "sleep"},
	    {"usleep", "sleep"},
	    {"sleep", "sleep"},
	    {"read", "read"},
	    {"readv", "read"},
	    {"pread64", "read"},
	    {"recv", "read"},
	    {"recvfrom", "read"},
	    {"recvmsg", "read"},
	    {"accept", "read"},
	    {"accept4", "read"},
	    {"write", "write"},
	    {"writev", "write"},
	    {"pwrite64", "write"},
	    {"send", "write"},
	    {"sendto", "write"},
	    {"sendmsg", "write"},
	    {"connect", "write"},
	    {"pthread_mutex_lock", "lock"},
	    {"pthread_cond_wait", "lock"},
	    {"pthread_cond_timedwait", "lock"},
	    {"sem_wait", "lock"},
	    {"sem_timedwait", "lock"},
	    {"poll", "poll"},
	    {"ppoll", "poll"},
	    {"select", "poll"},
	    {"pselect", "poll"},
	    {"epoll_wait", "poll"},
	    {"epoll_pwait", "poll"},
	    {"waitpid", "wait"},
	    {"wait4", "wait"},
	    {"fsync", "sync"},
	    {"fdatasync", "sync"},
	};
	for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++)
		if (strcmp(name, calls[i].name) == 0)
			return calls[i].family;
	return "blocked";
}

const char *trigger_gap_cause(const struct store *store, size_t process, pid_t tid, uint64_t from_ns,
                              uint64_t to_ns)
{
	if (!tid || to_ns <= from_ns)
		return "unknown";
	struct store_thread_activity act;
	store_thread_activity(store, process, tid, from_ns, to_ns, &act);
	if (act.lane == SIZE_MAX)
		return "unknown";
	uint64_t len = to_ns - from_ns;
	/* What covered at least half of the gap explains it; GC first (it shows as CPU time too). */
	if (act.has_gc && act.gc_overlap_ns * 2 >= len)
		return "gc";
	if (act.has_blocking && act.blocking_overlap_ns * 2 >= len)
		return trigger_call_family(store_string(store, act.blocking.name_id));
	if (act.samples)
		return "cpu";
	return "unknown";
}

/* ---- the engine ---- */

/* Where the range scan stands on one row: the absolute number of the next range to look at. */
struct trigger_lane_cursor {
	uint64_t *next; /* by row */
	size_t rows;
};

struct trigger_proc_cursor {
	struct trigger_lane_cursor *lanes;
	size_t lanes_n;
};

/* One GPU (by UUID, else by process and ordinal): how far its idle scan got. */
struct trigger_gpu {
	char key[64];
	int started;         /* its first kernel was seen */
	uint64_t cursor_ns;  /* busy up to here: everything before is judged */
	size_t last_process; /* of the op that ended last: whose GPU went idle */
};

/* A GPU op and the process it belongs to (a GPU may serve several). */
struct trigger_op {
	struct store_gpu_op op;
	size_t process;
};

/* Per spec: name matching (by string id), re-arming, percentile window. */
struct trigger_state {
	uint8_t *match; /* by name id: 0 not looked at, 1 match, 2 not */
	size_t match_n;
	uint8_t *dmatch; /* by domain id, same */
	size_t dmatch_n;
	uint64_t quiet_until_ns;             /* fires again only from here on */
	uint64_t window[TRIGGER_PCT_WINDOW]; /* durations in order of completion (a ring) */
	uint64_t sorted[TRIGGER_PCT_WINDOW]; /* the same, sorted: the percentile is a lookup */
	size_t window_n, window_pos;
	uint64_t completed; /* instances seen complete */
};

struct trigger_engine {
	struct trigger_spec *specs;
	struct trigger_state *state;
	size_t count;
	struct trigger_config cfg;
	struct trigger_proc_cursor *procs;
	size_t procs_n;
	struct trigger_gpu *gpus;
	size_t gpus_n, gpus_cap;
	struct trigger_firing *firings;
	size_t firings_n, firings_cap;
	uint64_t firings_dropped;
	struct trigger_firing *cand; /* this pass's candidates */
	size_t cand_n, cand_cap;
	struct trigger_op *ops; /* scratch for a GPU's ops */
	size_t ops_cap;
	int need_ranges, need_gpu;
};

struct trigger_engine *trigger_engine_new(const struct trigger_spec *specs, size_t count,
                                          const struct trigger_config *config)
{
	struct trigger_engine *e = xcalloc(1, sizeof *e);
	e->specs = xcalloc(count ? count : 1, sizeof *e->specs);
	e->state = xcalloc(count ? count : 1, sizeof *e->state);
	if (count)
		memcpy(e->specs, specs, count * sizeof *specs);
	e->count = count;
	e->cfg = *config;
	for (size_t i = 0; i < count; i++) {
		if (specs[i].kind == TRIGGER_RANGE || specs[i].kind == TRIGGER_RANGE_PCT)
			e->need_ranges = 1;
		else
			e->need_gpu = 1;
	}
	return e;
}

void trigger_engine_free(struct trigger_engine *e)
{
	if (!e)
		return;
	for (size_t i = 0; i < e->count; i++) {
		free(e->state[i].match);
		free(e->state[i].dmatch);
	}
	for (size_t p = 0; p < e->procs_n; p++) {
		for (size_t l = 0; l < e->procs[p].lanes_n; l++)
			free(e->procs[p].lanes[l].next);
		free(e->procs[p].lanes);
	}
	free(e->procs);
	free(e->gpus);
	free(e->firings);
	free(e->cand);
	free(e->ops);
	free(e->specs);
	free(e->state);
	free(e);
}

const struct trigger_spec *trigger_engine_spec(const struct trigger_engine *e, size_t index)
{
	return &e->specs[index];
}

size_t trigger_engine_firing_count(const struct trigger_engine *e)
{
	return e->firings_n;
}

const struct trigger_firing *trigger_engine_firing(const struct trigger_engine *e, size_t index)
{
	return &e->firings[index];
}

/* A cached yes/no per string id: 1 when text(id) equals want. */
static int trigger_id_is(uint8_t **cache, size_t *n, const struct store *st, uint32_t id, const char *want)
{
	if (id >= *n) {
		size_t cap = *n;
		xgrow((void **)cache, &cap, (size_t)id + 1, 1);
		memset(*cache + *n, 0, cap - *n);
		*n = cap;
	}
	if (!(*cache)[id])
		(*cache)[id] = strcmp(store_string(st, id), want) == 0 ? 1 : 2;
	return (*cache)[id] == 1;
}

static int trigger_range_matches(struct trigger_engine *e, size_t t, const struct store *st,
                                 const struct store_range *r)
{
	struct trigger_state *s = &e->state[t];
	const struct trigger_spec *sp = &e->specs[t];
	if (!trigger_id_is(&s->match, &s->match_n, st, r->name_id, sp->name))
		return 0;
	return !sp->has_domain || trigger_id_is(&s->dmatch, &s->dmatch_n, st, r->domain_id, sp->domain);
}

static void trigger_candidate(struct trigger_engine *e, size_t t, uint64_t time_ns, uint64_t value_ns,
                              pid_t pid, const char *cause)
{
	xgrow((void **)&e->cand, &e->cand_cap, e->cand_n + 1, sizeof *e->cand);
	e->cand[e->cand_n++] = (struct trigger_firing){
	    .time_ns = time_ns, .value_ns = value_ns, .trigger = t, .pid = pid, .cause = cause};
}

/* The percentile threshold of a range trigger now: 1 and *out once armed, else 0. */
static int trigger_pct_threshold(struct trigger_engine *e, size_t t, uint64_t *out)
{
	const struct trigger_state *s = &e->state[t];
	if (s->completed < TRIGGER_PCT_ARM)
		return 0;
	double p = (double)u64_percentile(s->sorted, s->window_n, e->specs[t].q / 100.0);
	*out = (uint64_t)(p * e->specs[t].factor);
	return 1;
}

/* First index of sorted[0..n) holding a value >= v. */
static size_t trigger_lower_bound(const uint64_t *sorted, size_t n, uint64_t v)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (sorted[mid] < v)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* One more completed duration: the oldest leaves a full window, both arrays stay in step (each
 * instance costs a binary search and a short move, never a sort). */
static void trigger_window_add(struct trigger_state *s, uint64_t dur)
{
	if (s->window_n == TRIGGER_PCT_WINDOW) {
		uint64_t old = s->window[s->window_pos];
		size_t i = trigger_lower_bound(s->sorted, s->window_n, old);
		memmove(&s->sorted[i], &s->sorted[i + 1], (s->window_n - i - 1) * sizeof *s->sorted);
		s->window_n--;
	}
	size_t i = trigger_lower_bound(s->sorted, s->window_n, dur);
	memmove(&s->sorted[i + 1], &s->sorted[i], (s->window_n - i) * sizeof *s->sorted);
	s->sorted[i] = dur;
	s->window_n++;
	s->window[s->window_pos] = dur;
	s->window_pos = (s->window_pos + 1) % TRIGGER_PCT_WINDOW;
	s->completed++;
}

/* A range instance that completed: a candidate when it ran past the threshold, then (percentile
 * triggers) one more sample of the window. */
static void trigger_range_completed(struct trigger_engine *e, size_t t, const struct store_range *r,
                                    pid_t pid)
{
	uint64_t dur = r->end_ns - r->start_ns, thr;
	if (e->specs[t].kind == TRIGGER_RANGE) {
		if (dur > e->specs[t].dur_ns)
			trigger_candidate(e, t, r->start_ns + e->specs[t].dur_ns, dur, pid, "");
		return;
	}
	if (trigger_pct_threshold(e, t, &thr) && dur > thr)
		trigger_candidate(e, t, r->start_ns + thr, dur, pid, "");
	trigger_window_add(&e->state[t], dur);
}

/* A range still open at now: a candidate once now passed start + threshold. */
static void trigger_range_open(struct trigger_engine *e, size_t t, const struct store_range *r, pid_t pid,
                               uint64_t now)
{
	uint64_t thr;
	if (e->specs[t].kind == TRIGGER_RANGE)
		thr = e->specs[t].dur_ns;
	else if (!trigger_pct_threshold(e, t, &thr))
		return;
	if (now > r->start_ns && now - r->start_ns >= thr && thr)
		trigger_candidate(e, t, r->start_ns + thr, now - r->start_ns, pid, "");
}

/* The cursor of (process, lane), grown as the store grows. */
static struct trigger_lane_cursor *trigger_cursor(struct trigger_engine *e, size_t p, size_t l)
{
	if (p >= e->procs_n) {
		size_t cap = e->procs_n;
		xgrow((void **)&e->procs, &cap, p + 1, sizeof *e->procs);
		memset(&e->procs[e->procs_n], 0, (cap - e->procs_n) * sizeof *e->procs);
		e->procs_n = cap;
	}
	struct trigger_proc_cursor *pc = &e->procs[p];
	if (l >= pc->lanes_n) {
		size_t cap = pc->lanes_n;
		xgrow((void **)&pc->lanes, &cap, l + 1, sizeof *pc->lanes);
		memset(&pc->lanes[pc->lanes_n], 0, (cap - pc->lanes_n) * sizeof *pc->lanes);
		pc->lanes_n = cap;
	}
	return &pc->lanes[l];
}

/* Ranges completed since the last pass, and open ones, on every thread and async lane. */
static void trigger_scan_ranges(struct trigger_engine *e, const struct store *st, uint64_t now)
{
	for (size_t p = 0; p < store_process_count(st); p++) {
		struct store_process_info pi;
		store_process_get(st, p, &pi);
		for (size_t l = 0; l < pi.lane_count; l++) {
			struct store_lane_info li;
			store_lane_get(st, p, l, &li);
			if (li.kind != STORE_LANE_THREAD && li.kind != STORE_LANE_NVTX_ASYNC)
				continue;
			struct trigger_lane_cursor *c = trigger_cursor(e, p, l);
			if (li.row_count > c->rows) {
				size_t cap = c->rows;
				xgrow((void **)&c->next, &cap, li.row_count, sizeof *c->next);
				memset(&c->next[c->rows], 0, (cap - c->rows) * sizeof *c->next);
				c->rows = cap;
			}
			for (size_t row = 0; row < li.row_count; row++) {
				const struct store_range *r;
				size_t n = store_lane_row_all(st, p, l, row, &r);
				uint64_t dropped = store_lane_row_dropped(st, p, l, row);
				/* Rows only grow at their end; evicted ranges leave from their front. */
				uint64_t from = c->next[row] > dropped ? c->next[row] - dropped : 0;
				for (uint64_t i = from; i < n; i++)
					for (size_t t = 0; t < e->count; t++)
						if ((e->specs[t].kind == TRIGGER_RANGE ||
						     e->specs[t].kind == TRIGGER_RANGE_PCT) &&
						    r[i].end_ns > r[i].start_ns &&
						    trigger_range_matches(e, t, st, &r[i]))
							trigger_range_completed(e, t, &r[i], pi.pid);
				c->next[row] = dropped + n;
			}
			for (size_t i = 0; i < li.open_count; i++) {
				struct store_range r;
				size_t row;
				store_lane_open_get(st, p, l, i, &r, &row);
				for (size_t t = 0; t < e->count; t++)
					if ((e->specs[t].kind == TRIGGER_RANGE ||
					     e->specs[t].kind == TRIGGER_RANGE_PCT) &&
					    trigger_range_matches(e, t, st, &r))
						trigger_range_open(e, t, &r, pi.pid, now);
			}
		}
	}
}

/* The GPU a stream lane belongs to: its UUID when the process described the device. */
static void trigger_gpu_key(const struct store *st, size_t p, const struct store_lane_info *li, char *key,
                            size_t size)
{
	struct store_gpu_device_info d;
	if (store_gpu_device_find(st, p, li->device, &d) == 0 && d.uuid[0])
		snprintf(key, size, "%s", d.uuid);
	else
		snprintf(key, size, "pid %d gpu %u", (int)li->pid, li->device);
}

static struct trigger_gpu *trigger_gpu_get(struct trigger_engine *e, const char *key)
{
	for (size_t i = 0; i < e->gpus_n; i++)
		if (strcmp(e->gpus[i].key, key) == 0)
			return &e->gpus[i];
	xgrow((void **)&e->gpus, &e->gpus_cap, e->gpus_n + 1, sizeof *e->gpus);
	struct trigger_gpu *g = &e->gpus[e->gpus_n++];
	memset(g, 0, sizeof *g);
	snprintf(g->key, sizeof g->key, "%s", key);
	return g;
}

static int trigger_op_counts(const struct store_gpu_op *op)
{
	return op->kind == WIRE_GPU_KERNEL || op->kind == WIRE_GPU_MEMCPY || op->kind == WIRE_GPU_MEMSET;
}

/* By start time. */
static int trigger_cmp_op(const void *a, const void *b)
{
	const struct trigger_op *x = a, *y = b;
	return x->op.start_ns < y->op.start_ns ? -1 : x->op.start_ns > y->op.start_ns;
}

/* A closed gap [a, b) of a GPU before op (of process p): candidates of the GPU triggers. */
static void trigger_gap_closed(struct trigger_engine *e, const struct store *st, size_t p, uint64_t a,
                               uint64_t b, const struct store_gpu_op *after)
{
	struct store_process_info pi;
	store_process_get(st, p, &pi);
	const char *cause = NULL;
	for (size_t t = 0; t < e->count; t++) {
		const struct trigger_spec *sp = &e->specs[t];
		if (sp->kind == TRIGGER_GPU_IDLE && b - a > sp->dur_ns)
			trigger_candidate(e, t, a + sp->dur_ns, b - a, pi.pid, "");
		if (sp->kind != TRIGGER_GAP_CAUSE || !cpuview_is_gap(a, b, e->cfg.gap_min_ns))
			continue;
		if (!cause) {
			pid_t tid = cpuview_gap_thread(st, p, after, NULL);
			cause = trigger_gap_cause(st, p, tid, a, b);
		}
		if (strcmp(cause, sp->cause) == 0)
			trigger_candidate(e, t, a + e->cfg.gap_min_ns, b - a, pi.pid, cause);
	}
}

/* The kernels, copies and memsets of every stream lane of GPU key overlapping [from, to) into e->ops. */
static size_t trigger_gpu_ops(struct trigger_engine *e, const struct store *st, const char *key,
                              uint64_t from, uint64_t to)
{
	size_t n = 0;
	for (size_t p = 0; p < store_process_count(st); p++) {
		struct store_process_info pi;
		store_process_get(st, p, &pi);
		for (size_t l = 0; l < pi.lane_count; l++) {
			struct store_lane_info li;
			store_lane_get(st, p, l, &li);
			if (li.kind != STORE_LANE_GPU_STREAM)
				continue;
			char k[64];
			trigger_gpu_key(st, p, &li, k, sizeof k);
			if (strcmp(k, key) != 0)
				continue;
			for (size_t row = 0; row < li.gpu_row_count; row++) {
				const struct store_gpu_op *ops;
				size_t m = store_lane_gpu_query(st, p, l, row, from, to, &ops);
				xgrow((void **)&e->ops, &e->ops_cap, n + m, sizeof *e->ops);
				for (size_t i = 0; i < m; i++)
					if (trigger_op_counts(&ops[i]))
						e->ops[n++] = (struct trigger_op){ops[i], p};
			}
		}
	}
	return n;
}

/* The first kernel of GPU key: 1 with its start and process, or 0 while it has none. */
static int trigger_gpu_first_kernel(const struct store *st, const char *key, uint64_t *start, size_t *process)
{
	int found = 0;
	for (size_t p = 0; p < store_process_count(st); p++) {
		struct store_process_info pi;
		store_process_get(st, p, &pi);
		for (size_t l = 0; l < pi.lane_count; l++) {
			struct store_lane_info li;
			store_lane_get(st, p, l, &li);
			if (li.kind != STORE_LANE_GPU_STREAM || !li.kernels)
				continue;
			char k[64];
			trigger_gpu_key(st, p, &li, k, sizeof k);
			if (strcmp(k, key) != 0)
				continue;
			for (size_t row = 0; row < li.gpu_row_count; row++) {
				const struct store_gpu_op *ops;
				size_t m = store_lane_gpu_all(st, p, l, row, &ops);
				for (size_t i = 0; i < m; i++)
					if (ops[i].kind == WIRE_GPU_KERNEL) {
						if (!found || ops[i].start_ns < *start) {
							*start = ops[i].start_ns;
							*process = p;
						}
						found = 1;
						break;
					}
			}
		}
	}
	return found;
}

/* Idle gaps of every GPU from where the last pass stopped up to gpu_now. */
static void trigger_scan_gpus(struct trigger_engine *e, const struct store *st, uint64_t gpu_now)
{
	/* The GPUs seen so far (new ones join as their lanes appear). */
	for (size_t p = 0; p < store_process_count(st); p++) {
		struct store_process_info pi;
		store_process_get(st, p, &pi);
		for (size_t l = 0; l < pi.lane_count; l++) {
			struct store_lane_info li;
			store_lane_get(st, p, l, &li);
			if (li.kind != STORE_LANE_GPU_STREAM)
				continue;
			char k[64];
			trigger_gpu_key(st, p, &li, k, sizeof k);
			trigger_gpu_get(e, k);
		}
	}
	for (size_t gi = 0; gi < e->gpus_n; gi++) {
		struct trigger_gpu *g = &e->gpus[gi];
		if (!g->started) {
			uint64_t first = 0;
			if (!trigger_gpu_first_kernel(st, g->key, &first, &g->last_process) ||
			    first >= gpu_now)
				continue;
			g->started = 1;
			g->cursor_ns = first;
		}
		if (g->cursor_ns >= gpu_now)
			continue;
		size_t n = trigger_gpu_ops(e, st, g->key, g->cursor_ns, gpu_now);
		if (n > 1)
			qsort(e->ops, n, sizeof *e->ops, trigger_cmp_op);
		for (size_t i = 0; i < n; i++) {
			const struct store_gpu_op *op = &e->ops[i].op;
			if (op->start_ns >= gpu_now)
				break;
			if (op->start_ns > g->cursor_ns)
				trigger_gap_closed(e, st, e->ops[i].process, g->cursor_ns, op->start_ns, op);
			if (op->end_ns > g->cursor_ns) {
				g->cursor_ns = op->end_ns;
				g->last_process = e->ops[i].process;
			}
		}
		/* Still idle at gpu_now: gpu-idle fires while the gap is open. */
		if (g->cursor_ns < gpu_now) {
			struct store_process_info pi;
			store_process_get(st, g->last_process, &pi);
			pid_t pid = pi.pid;
			for (size_t t = 0; t < e->count; t++)
				if (e->specs[t].kind == TRIGGER_GPU_IDLE &&
				    gpu_now - g->cursor_ns >= e->specs[t].dur_ns)
					trigger_candidate(e, t, g->cursor_ns + e->specs[t].dur_ns,
					                  gpu_now - g->cursor_ns, pid, "");
		}
	}
}

static int trigger_cmp_firing(const void *a, const void *b)
{
	const struct trigger_firing *x = a, *y = b;
	if (x->time_ns != y->time_ns)
		return x->time_ns < y->time_ns ? -1 : 1;
	return x->trigger < y->trigger ? -1 : x->trigger > y->trigger;
}

size_t trigger_engine_eval(struct trigger_engine *e, const struct store *st, uint64_t now)
{
	e->cand_n = 0;
	if (e->need_ranges)
		trigger_scan_ranges(e, st, now);
	uint64_t lag = e->cfg.gpu_lag_ns;
	if (e->need_gpu && now > lag)
		trigger_scan_gpus(e, st, now - lag);
	/* In time order, so a trigger's quiet time after one firing holds back the later ones. */
	if (e->cand_n > 1)
		qsort(e->cand, e->cand_n, sizeof *e->cand, trigger_cmp_firing);
	size_t added = 0;
	for (size_t i = 0; i < e->cand_n; i++) {
		struct trigger_firing *f = &e->cand[i];
		struct trigger_state *s = &e->state[f->trigger];
		/* An instance seen again (open, then complete) crosses at the same time: quiet then. */
		if (f->time_ns < s->quiet_until_ns)
			continue;
		s->quiet_until_ns = f->time_ns + (e->cfg.rearm_ns ? e->cfg.rearm_ns : 1);
		if (e->firings_n >= TRIGGER_FIRINGS_MAX) {
			e->firings_dropped++;
			continue;
		}
		xgrow((void **)&e->firings, &e->firings_cap, e->firings_n + 1, sizeof *e->firings);
		e->firings[e->firings_n++] = *f;
		added++;
	}
	return added;
}
