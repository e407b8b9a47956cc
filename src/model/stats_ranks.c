/*
 * The "ranks" stats section: per rank, its step times and where they went (NCCL kernels, the rest,
 * an idle GPU), sorted so the straggler comes first. In synchronous data-parallel training every
 * rank's step ends together, so the rank the others wait for has the most compute time and the
 * least NCCL time.
 */
#include "cuscope/stats_ranks.h"

#include "cuscope/rankgroup.h"
#include "cuscope/steps.h"
#include "cuscope/store.h"
#include "cuscope/u64.h"
#include "cuscope/wire.h"
#include "cuscope/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct interval {
	uint64_t start, end;
};

struct intervals {
	struct interval *v;
	size_t n, cap;
};

static void stats_ranks_push(struct intervals *s, uint64_t start, uint64_t end)
{
	if (end <= start)
		return;
	xgrow((void **)&s->v, &s->cap, s->n + 1, sizeof *s->v);
	s->v[s->n++] = (struct interval){start, end};
}

static int stats_ranks_cmp_interval(const void *a, const void *b)
{
	const struct interval *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* Sorts and merges overlapping intervals (kernels of several streams overlap). */
static void stats_ranks_merge(struct intervals *s)
{
	if (s->n < 2)
		return;
	/* Often sorted already (one stream, one row of steps): then no sort. */
	size_t i0 = 1;
	while (i0 < s->n && s->v[i0 - 1].start <= s->v[i0].start)
		i0++;
	if (i0 < s->n)
		qsort(s->v, s->n, sizeof *s->v, stats_ranks_cmp_interval);
	size_t w = 0;
	for (size_t i = 1; i < s->n; i++) {
		if (s->v[i].start <= s->v[w].end) {
			if (s->v[i].end > s->v[w].end)
				s->v[w].end = s->v[i].end;
		} else {
			s->v[++w] = s->v[i];
		}
	}
	s->n = w + 1;
}

/* Time covered by both merged, sorted interval sets. */
static uint64_t stats_ranks_overlap(const struct intervals *a, const struct intervals *b)
{
	uint64_t sum = 0;
	size_t i = 0, j = 0;
	while (i < a->n && j < b->n) {
		uint64_t lo = a->v[i].start > b->v[j].start ? a->v[i].start : b->v[j].start;
		uint64_t hi = a->v[i].end < b->v[j].end ? a->v[i].end : b->v[j].end;
		if (hi > lo)
			sum += hi - lo;
		if (a->v[i].end < b->v[j].end)
			i++;
		else
			j++;
	}
	return sum;
}

/*
 * Whether string ids have a property (a launch API, an NCCL kernel), each name looked at once per
 * computation rather than once per event: an open-addressed table of ids; when it is full, names are
 * looked at directly.
 */
#define NAME_FLAGS_SLOTS 1024

struct name_flags {
	uint32_t id[NAME_FLAGS_SLOTS]; /* 0: empty */
	uint8_t flag[NAME_FLAGS_SLOTS];
	size_t used;
	int (*test)(const struct store *st, uint32_t name_id);
};

static int stats_ranks_flag(struct name_flags *c, const struct store *st, uint32_t id)
{
	if (!id)
		return c->test(st, id);
	size_t h = (id * 2654435761u) % NAME_FLAGS_SLOTS;
	for (size_t k = 0; k < NAME_FLAGS_SLOTS; k++) {
		size_t i = (h + k) % NAME_FLAGS_SLOTS;
		if (c->id[i] == id)
			return c->flag[i];
		if (c->id[i])
			continue;
		int f = c->test(st, id);
		if (c->used + 1 < NAME_FLAGS_SLOTS) { /* keep a free slot: a miss always ends */
			c->id[i] = id;
			c->flag[i] = (uint8_t)f;
			c->used++;
		}
		return f;
	}
	return c->test(st, id);
}

/* A CUDA API call that launches kernels: cudaLaunchKernel, cuLaunchKernel, cudaGraphLaunch, ... */
static int stats_ranks_is_launch(const struct store *st, uint32_t name_id)
{
	return strstr(store_string(st, name_id), "Launch") != NULL;
}

static int stats_ranks_is_nccl(const struct store *st, uint32_t name_id)
{
	return rankgroup_is_nccl_kernel(store_short_name(st, name_id));
}

static uint32_t stats_ranks_pick_step(const struct store *st, size_t p, size_t lane);

/*
 * A process's candidate main thread: of the thread lanes with a candidate step range, the one that
 * made the most kernel launch calls; else the thread that made the most launch calls; else the first
 * thread lane with ranges (*kernels = 0); SIZE_MAX when it has neither. Launches are counted on the
 * thread's own CUDA API rows, not by joining every kernel to its launch, which cost most of a
 * recomputation. The step ranges come first because the thread launching most kernels is not always
 * the loop's: PyTorch runs the backward pass on its autograd thread, which on a small model launches
 * more kernels than the training loop's thread and has no step range.
 */
static size_t stats_ranks_main_lane(const struct store *st, size_t p, struct name_flags *launch,
                                    uint64_t *kernels)
{
	struct store_process_info pi;
	store_process_get(st, p, &pi);
	size_t first = SIZE_MAX, best = SIZE_MAX, best_stepped = SIZE_MAX;
	uint64_t best_count = 0, best_stepped_count = 0;
	for (size_t l = 0; l < pi.lane_count; l++) {
		struct store_lane_info li;
		store_lane_get(st, p, l, &li);
		if (li.kind != STORE_LANE_THREAD)
			continue;
		if (li.row_count && first == SIZE_MAX)
			first = l;
		uint64_t count = 0;
		for (size_t row = 0; row < li.gpu_row_count; row++) {
			const struct store_gpu_op *ops;
			size_t n = store_lane_gpu_all(st, p, l, row, &ops);
			for (size_t i = 0; i < n; i++)
				if ((ops[i].kind == WIRE_GPU_API_RUNTIME ||
				     ops[i].kind == WIRE_GPU_API_DRIVER) &&
				    stats_ranks_flag(launch, st, ops[i].name_id))
					count++;
		}
		if (count > best_count) {
			best = l;
			best_count = count;
		}
		if (count && (best_stepped == SIZE_MAX || count > best_stepped_count) && li.row_count &&
		    stats_ranks_pick_step(st, p, l)) {
			best_stepped = l;
			best_stepped_count = count;
		}
	}
	if (best_stepped != SIZE_MAX) {
		*kernels = best_stepped_count;
		return best_stepped;
	}
	*kernels = best_count;
	return best != SIZE_MAX ? best : first;
}

/*
 * The rank's main thread over its processes (owner[q] == root): the thread that launched the most
 * kernels, else the first thread with ranges of the rank's own process, else of the first of its
 * other processes that has one (a launcher shell with the rank, `srun sh -c 'python ...'`, runs no
 * steps itself). Sets *process; SIZE_MAX when none has one.
 */
static size_t stats_ranks_main_thread(const struct store *st, const size_t *owner, size_t np, size_t root,
                                      struct name_flags *launch, size_t *process)
{
	size_t best = SIZE_MAX, fallback = SIZE_MAX, fallback_p = root;
	uint64_t best_kernels = 0;
	for (size_t k = 0; k <= np; k++) {
		size_t q = k == 0 ? root : k - 1; /* the root first */
		if (owner[q] != root || (k > 0 && q == root))
			continue;
		uint64_t kernels;
		size_t lane = stats_ranks_main_lane(st, q, launch, &kernels);
		if (lane == SIZE_MAX)
			continue;
		if (kernels > best_kernels) {
			best = lane;
			best_kernels = kernels;
			*process = q;
		} else if (fallback == SIZE_MAX) {
			fallback = lane;
			fallback_p = q;
		}
	}
	if (best != SIZE_MAX)
		return best;
	*process = fallback_p;
	return fallback;
}

struct name_time {
	uint32_t name_id;
	uint64_t ns;
};

static int stats_ranks_cmp_name(const void *a, const void *b)
{
	const struct name_time *x = a, *y = b;
	return x->name_id < y->name_id ? -1 : x->name_id > y->name_id;
}

/*
 * The default step range of a main thread: see stats_ranks_compute. 0 when it has no candidate.
 * Sorted by name rather than counted in a list, so a row of many distinct names stays n log n.
 */
static uint32_t stats_ranks_pick_step(const struct store *st, size_t p, size_t lane)
{
	const struct store_range *r;
	size_t n = store_lane_row_all(st, p, lane, 0, &r);
	struct name_time *v = n ? xcalloc(n, sizeof *v) : NULL;
	size_t m = 0;
	for (size_t i = 0; i < n; i++)
		if (!steps_range_is_op(st, &r[i]))
			v[m++] = (struct name_time){r[i].name_id, r[i].end_ns - r[i].start_ns};
	if (m)
		qsort(v, m, sizeof *v, stats_ranks_cmp_name);
	uint32_t best = 0;
	uint64_t best_count = 0, best_total = 0;
	for (size_t i = 0; i < m;) {
		size_t j = i;
		uint64_t total = 0;
		while (j < m && v[j].name_id == v[i].name_id)
			total += v[j++].ns;
		uint64_t count = j - i;
		if (count > best_count || (count == best_count && total > best_total) ||
		    (count == best_count && total == best_total &&
		     strcmp(store_string(st, v[i].name_id), store_string(st, best)) < 0)) {
			best = v[i].name_id;
			best_count = count;
			best_total = total;
		}
		i = j;
	}
	free(v);
	return best;
}

/*
 * The step ranges of a main thread into steps (sorted, not overlapping): the chosen name on the
 * shallowest row that has it (an explicit --step-range may name a nested range).
 */
static uint32_t stats_ranks_steps(const struct store *st, size_t p, size_t lane, const char *step_range,
                                  struct intervals *steps)
{
	struct store_lane_info li;
	store_lane_get(st, p, lane, &li);
	uint32_t name = step_range ? 0 : stats_ranks_pick_step(st, p, lane);
	if (!step_range && !name)
		return 0;
	for (size_t row = 0; row < li.row_count && !steps->n; row++) {
		const struct store_range *r;
		size_t n = store_lane_row_all(st, p, lane, row, &r);
		for (size_t i = 0; i < n; i++) {
			if (step_range ? strcmp(store_string(st, r[i].name_id), step_range) != 0
			               : r[i].name_id != name)
				continue;
			stats_ranks_push(steps, r[i].start_ns, r[i].end_ns);
			name = r[i].name_id;
		}
	}
	return steps->n ? name : 0;
}

/* A GPU's name for the table: its UUID, or "GPU<ordinal>" when the process did not describe it. */
static void stats_ranks_gpu_text(const struct store *st, size_t p, uint32_t device, char *buf, size_t size)
{
	struct store_gpu_device_info di;
	if (store_gpu_device_find(st, p, device, &di) == 0 && di.uuid[0])
		snprintf(buf, size, "%s", di.uuid);
	else
		snprintf(buf, size, "GPU%u", device);
}

/* Kernels of process p into all (those on the GPU named gpu) and nccl (its NCCL kernels, when not NULL). */
static void stats_ranks_kernels(const struct store *st, size_t p, const char *gpu, struct intervals *all,
                                struct intervals *nccl, struct name_flags *is_nccl)
{
	struct store_process_info pi;
	store_process_get(st, p, &pi);
	for (size_t l = 0; l < pi.lane_count; l++) {
		struct store_lane_info li;
		store_lane_get(st, p, l, &li);
		if (li.kind != STORE_LANE_GPU_STREAM || !li.kernels)
			continue;
		char text[48];
		stats_ranks_gpu_text(st, p, li.device, text, sizeof text);
		int on_gpu = gpu && gpu[0] && strcmp(text, gpu) == 0;
		if (!on_gpu && !nccl)
			continue;
		for (size_t row = 0; row < li.gpu_row_count; row++) {
			const struct store_gpu_op *ops;
			size_t n = store_lane_gpu_all(st, p, l, row, &ops);
			for (size_t i = 0; i < n; i++) {
				if (ops[i].kind != WIRE_GPU_KERNEL)
					continue;
				if (on_gpu)
					stats_ranks_push(all, ops[i].start_ns, ops[i].end_ns);
				if (nccl && stats_ranks_flag(is_nccl, st, ops[i].name_id))
					stats_ranks_push(nccl, ops[i].start_ns, ops[i].end_ns);
			}
		}
	}
}

/* The GPU the processes of one rank (owner[q] == root) ran the most kernels on, "" when none. */
static void stats_ranks_pick_gpu(const struct store *st, const size_t *owner, size_t np, size_t root,
                                 char *gpu, size_t size)
{
	uint64_t best = 0;
	gpu[0] = '\0';
	for (size_t q = 0; q < np; q++) {
		if (owner[q] != root)
			continue;
		struct store_process_info pi;
		store_process_get(st, q, &pi);
		for (size_t l = 0; l < pi.lane_count; l++) {
			struct store_lane_info li;
			store_lane_get(st, q, l, &li);
			if (li.kind != STORE_LANE_GPU_STREAM || li.kernels <= best)
				continue;
			best = li.kernels;
			stats_ranks_gpu_text(st, q, li.device, gpu, size);
		}
	}
}

static int stats_ranks_cmp_row(const void *a, const void *b)
{
	const struct stats_rank_row *x = a, *y = b;
	if (x->compute_ns != y->compute_ns)
		return x->compute_ns > y->compute_ns ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	if (x->restart != y->restart)
		return x->restart < y->restart ? -1 : 1;
	if (x->capture != y->capture)
		return x->capture < y->capture ? -1 : 1;
	int h = strcmp(x->host ? x->host : "", y->host ? y->host : "");
	if (h)
		return h < 0 ? -1 : 1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/*
 * A rank without a step-like NVTX range (none that repeats on its main process): the steps inferred from
 * the kernels of its main process, else of the first of its other processes that has some.
 */
static int stats_ranks_inferred(const struct store *st, const size_t *owner, size_t np, size_t root,
                                size_t mp, size_t max_events, struct intervals *steps)
{
	if (steps_process_annotated(st, mp))
		return 0;
	struct steps_result r = {0};
	for (size_t k = 0; k <= np && !r.n; k++) {
		size_t q = k == 0 ? mp : k - 1;
		if (owner[q] != root || (k > 0 && q == mp))
			continue;
		steps_infer(st, q, max_events, &r);
	}
	int found = r.n > 0;
	if (found)
		steps->n = 0;
	for (size_t i = 0; i < r.n; i++)
		stats_ranks_push(steps, r.v[i].start_ns, r.v[i].end_ns);
	steps_result_fini(&r);
	return found;
}

size_t stats_ranks_compute(const struct store *st, const char *step_range, struct stats_rank_row **out)
{
	return stats_ranks_compute_bounded(st, step_range, 0, out);
}

size_t stats_ranks_compute_bounded(const struct store *st, const char *step_range, size_t max_events,
                                   struct stats_rank_row **out)
{
	size_t np = store_process_count(st);
	*out = NULL;
	if (!np)
		return 0;
	struct store_process_info *info = xcalloc(np, sizeof *info);
	struct rankgroup_key *keys = xcalloc(np, sizeof *keys);
	size_t *owner = xcalloc(np, sizeof *owner);
	for (size_t p = 0; p < np; p++) {
		store_process_get(st, p, &info[p]);
		keys[p] = (struct rankgroup_key){info[p].capture, info[p].pid, p, info[p].host};
	}
	rankgroup_keys_sort(keys, np);
	/*
	 * A process whose parent has the same rank (a DataLoader or compile worker, an exec'd child)
	 * belongs to the parent's rank: walk up to the first process whose parent has another rank or
	 * another restart (a restarted worker is a group of its own, whoever started it). The walk is
	 * bounded by the process count, so a cycle of reused pids cannot loop.
	 */
	size_t rows = 0;
	for (size_t p = 0; p < np; p++) {
		owner[p] = SIZE_MAX;
		if (info[p].rank < 0)
			continue;
		size_t q = p;
		for (size_t hops = 0; hops < np; hops++) {
			size_t parent =
			    rankgroup_keys_find(keys, np, info[q].capture, info[q].host, info[q].ppid);
			if (parent == SIZE_MAX || parent == q || info[parent].rank != info[p].rank ||
			    rankgroup_restart(info[parent].restart_count) !=
			        rankgroup_restart(info[p].restart_count))
				break;
			q = parent;
		}
		owner[p] = q;
		rows += q == p;
	}
	struct stats_rank_row *v = rows ? xcalloc(rows, sizeof *v) : NULL;
	size_t n = 0;
	struct name_flags *launch = xcalloc(1, sizeof *launch), *is_nccl = xcalloc(1, sizeof *is_nccl);
	launch->test = stats_ranks_is_launch;
	is_nccl->test = stats_ranks_is_nccl;
	for (size_t p = 0; p < np && rows; p++) {
		if (owner[p] != p)
			continue;
		struct stats_rank_row *row = &v[n++];
		row->host = info[p].host;
		row->rank = info[p].rank;
		row->restart = rankgroup_restart(info[p].restart_count);
		row->pid = info[p].pid;
		row->capture = info[p].capture;
		row->process = p;
		row->main_process = p;
		row->main_lane = SIZE_MAX;
		stats_ranks_pick_gpu(st, owner, np, p, row->gpu, sizeof row->gpu);

		struct intervals steps = {0}, all = {0}, nccl = {0};
		size_t mp = p;
		size_t lane = stats_ranks_main_thread(st, owner, np, p, launch, &mp);
		if (lane != SIZE_MAX) {
			row->step_name = stats_ranks_steps(st, mp, lane, step_range, &steps);
			row->main_process = mp;
			row->main_lane = lane;
		}
		if (!step_range && stats_ranks_inferred(st, owner, np, p, mp, max_events, &steps)) {
			row->step_name = 0;
			row->inferred = 1;
		}
		row->steps = steps.n;
		if (steps.n) {
			uint64_t *d = xcalloc(steps.n, sizeof *d);
			for (size_t i = 0; i < steps.n; i++) {
				d[i] = steps.v[i].end - steps.v[i].start;
				row->step_total_ns += d[i];
				if (d[i] > row->slow_end_ns - row->slow_start_ns) {
					row->slow_start_ns = steps.v[i].start;
					row->slow_end_ns = steps.v[i].end;
				}
			}
			u64_sort(d, steps.n);
			row->step_p50_ns = u64_percentile(d, steps.n, 0.50);
			row->step_p99_ns = u64_percentile(d, steps.n, 0.99);
			free(d);
			stats_ranks_merge(&steps);
			/* The rank's own kernels (its NCCL time), and every kernel on its GPU (idle time). */
			for (size_t q = 0; q < np; q++) {
				int mine = owner[q] == p;
				int same_gpu = info[q].capture == info[p].capture && row->gpu[0] &&
				               strncmp(row->gpu, "GPU-", 4) == 0;
				if (mine || same_gpu)
					stats_ranks_kernels(st, q, row->gpu, &all, mine ? &nccl : NULL,
					                    is_nccl);
			}
			stats_ranks_merge(&all);
			stats_ranks_merge(&nccl);
			row->nccl_ns = stats_ranks_overlap(&nccl, &steps);
			row->compute_ns = row->step_total_ns - row->nccl_ns;
			if (row->gpu[0])
				row->gpu_idle_ns = row->step_total_ns - stats_ranks_overlap(&all, &steps);
		}
		free(steps.v);
		free(all.v);
		free(nccl.v);
	}
	if (n)
		qsort(v, n, sizeof *v, stats_ranks_cmp_row);
	free(launch);
	free(is_nccl);
	free(info);
	free(keys);
	free(owner);
	*out = v;
	return n;
}
