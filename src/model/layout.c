#include "cuscope/layout.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuscope/rankgroup.h"
#include "cuscope/store.h"
#include "cuscope/xalloc.h"

void layout_init(struct layout *layout)
{
	memset(layout, 0, sizeof *layout);
}

void layout_fini(struct layout *layout)
{
	for (size_t p = 0; p < layout->proc_count; p++)
		free(layout->procs[p].lanes);
	free(layout->procs);
	free(layout->rows);
	free(layout->folds);
	free(layout->steps);
	free(layout->metrics);
	memset(layout, 0, sizeof *layout);
}

void layout_clear(struct layout *layout)
{
	layout->count = 0;
}

static void layout_push(struct layout *layout, const struct layout_row *row)
{
	xgrow((void **)&layout->rows, &layout->cap, layout->count + 1, sizeof *layout->rows);
	layout->rows[layout->count++] = *row;
}

void layout_add_process(struct layout *layout, size_t process, pid_t pid)
{
	layout_push(layout, &(struct layout_row){.kind = LAYOUT_ROW_PROCESS, .process = process, .pid = pid});
}

void layout_add_thread(struct layout *layout, size_t process, size_t lane, pid_t pid, pid_t tid,
                       size_t nvtx_rows)
{
	struct layout_row r = {
	    .kind = LAYOUT_ROW_THREAD, .process = process, .lane = lane, .pid = pid, .tid = tid};
	layout_push(layout, &r);
	r.kind = LAYOUT_ROW_NVTX;
	for (size_t i = 0; i < nvtx_rows; i++) {
		r.row = i;
		layout_push(layout, &r);
	}
}

void layout_add_async(struct layout *layout, size_t process, size_t lane, pid_t pid, size_t rows)
{
	struct layout_row r = {.kind = LAYOUT_ROW_ASYNC, .process = process, .lane = lane, .pid = pid};
	for (size_t i = 0; i < rows; i++) {
		r.row = i;
		layout_push(layout, &r);
	}
}

void layout_add_cuda_api(struct layout *layout, size_t process, size_t lane, pid_t pid, pid_t tid,
                         size_t rows)
{
	struct layout_row r = {
	    .kind = LAYOUT_ROW_CUDA_API, .process = process, .lane = lane, .pid = pid, .tid = tid};
	for (size_t i = 0; i < rows; i++) {
		r.row = i;
		layout_push(layout, &r);
	}
}

void layout_add_cost(struct layout *layout, size_t process, pid_t pid)
{
	struct layout_row r = {.kind = LAYOUT_ROW_COST, .process = process, .pid = pid};
	for (size_t i = 0; i < 2; i++) {
		r.row = i;
		layout_push(layout, &r);
	}
}

void layout_set_steps(struct layout *layout, size_t process, int on)
{
	if (process >= layout->steps_cap) {
		if (!on)
			return;
		size_t old = layout->steps_cap;
		xgrow((void **)&layout->steps, &layout->steps_cap, process + 1, sizeof *layout->steps);
		memset(layout->steps + old, 0, layout->steps_cap - old);
	}
	layout->steps[process] = (unsigned char)(on != 0);
}

/* Appends rows 0..rows-1 of one kind of a thread lane. */
static void layout_add_thread_rows(struct layout *layout, enum layout_row_kind kind, size_t process,
                                   size_t lane, pid_t pid, pid_t tid, size_t rows)
{
	struct layout_row r = {.kind = kind, .process = process, .lane = lane, .pid = pid, .tid = tid};
	for (size_t i = 0; i < rows; i++) {
		r.row = i;
		layout_push(layout, &r);
	}
}

void layout_add_osrt(struct layout *layout, size_t process, size_t lane, pid_t pid, pid_t tid, size_t rows)
{
	layout_add_thread_rows(layout, LAYOUT_ROW_OSRT, process, lane, pid, tid, rows);
}

void layout_add_gc(struct layout *layout, size_t process, size_t lane, pid_t pid, pid_t tid, size_t rows)
{
	layout_add_thread_rows(layout, LAYOUT_ROW_GC, process, lane, pid, tid, rows);
}

int layout_is_thread_row(const struct layout_row *row)
{
	static const unsigned char thread_kinds[] = {
	    [LAYOUT_ROW_THREAD] = 1, [LAYOUT_ROW_NVTX] = 1, [LAYOUT_ROW_CUDA_API] = 1,
	    [LAYOUT_ROW_OSRT] = 1,   [LAYOUT_ROW_GC] = 1,
	};
	return (size_t)row->kind < sizeof thread_kinds && thread_kinds[row->kind];
}

void layout_add_gpu_device(struct layout *layout, size_t process, pid_t pid, uint32_t device)
{
	layout_push(layout,
	            &(struct layout_row){
	                .kind = LAYOUT_ROW_GPU_DEVICE, .process = process, .pid = pid, .device = device});
}

void layout_add_gpu_metric(struct layout *layout, size_t process, pid_t pid, uint32_t device, size_t series)
{
	layout_push(layout, &(struct layout_row){.kind = LAYOUT_ROW_GPU_METRIC,
	                                         .process = process,
	                                         .pid = pid,
	                                         .device = device,
	                                         .row = series});
}

void layout_add_gpu_stream(struct layout *layout, size_t process, size_t lane, pid_t pid, uint32_t device,
                           size_t rows)
{
	struct layout_row r = {
	    .kind = LAYOUT_ROW_GPU_STREAM, .process = process, .lane = lane, .pid = pid, .device = device};
	for (size_t i = 0; i < rows; i++) {
		r.row = i;
		layout_push(layout, &r);
	}
}

/* Identity that survives rebuilds: what the row shows, not where it sits. */
static int layout_row_same(const struct layout_row *a, const struct layout_row *b)
{
	if (a->kind != b->kind || a->pid != b->pid || a->process != b->process)
		return 0;
	if (a->kind == LAYOUT_ROW_PROCESS || a->kind == LAYOUT_ROW_IDLE)
		return 1;
	if (a->kind == LAYOUT_ROW_GPU_DEVICE)
		return a->device == b->device;
	if (a->kind == LAYOUT_ROW_GPU_METRIC)
		return a->device == b->device && a->row == b->row;
	return a->lane == b->lane && a->row == b->row;
}

size_t layout_find(const struct layout *layout, const struct layout_row *key)
{
	for (size_t i = 0; i < layout->count; i++)
		if (layout_row_same(&layout->rows[i], key))
			return i;
	return layout->count;
}

struct gpu_lane_ref {
	size_t lane;
	uint32_t device, stream;
	int is_default;
	size_t rows;
};

static int gpu_lane_cmp(const void *a, const void *b)
{
	const struct gpu_lane_ref *x = a, *y = b;
	if (x->device != y->device)
		return x->device < y->device ? -1 : 1;
	if (x->is_default != y->is_default)
		return x->is_default ? -1 : 1;
	return x->stream < y->stream ? -1 : x->stream > y->stream;
}

/* Index of the fold entry, or fold_count. */
static size_t layout_fold_index(const struct layout *layout, enum layout_fold_kind kind, pid_t pid, pid_t tid,
                                uint32_t device)
{
	for (size_t i = 0; i < layout->fold_count; i++) {
		const struct layout_fold *f = &layout->folds[i];
		if (f->kind == kind && f->pid == pid &&
		    (kind == LAYOUT_FOLD_DEVICE ? f->device == device : f->tid == tid))
			return i;
	}
	return layout->fold_count;
}

static int layout_fold_has(const struct layout *layout, enum layout_fold_kind kind, pid_t pid, pid_t tid,
                           uint32_t device)
{
	return layout_fold_index(layout, kind, pid, tid, device) < layout->fold_count;
}

/* Adds or removes a fold entry. */
static void layout_fold_set(struct layout *layout, enum layout_fold_kind kind, pid_t pid, pid_t tid,
                            uint32_t device, int on)
{
	size_t i = layout_fold_index(layout, kind, pid, tid, device);
	if (!on && i < layout->fold_count)
		layout->folds[i] = layout->folds[--layout->fold_count];
	if (!on || i < layout->fold_count)
		return;
	xgrow((void **)&layout->folds, &layout->fold_cap, layout->fold_count + 1, sizeof *layout->folds);
	layout->folds[layout->fold_count++] = (struct layout_fold){pid, tid, device, kind};
}

int layout_is_group(const struct layout_row *row)
{
	return row->kind == LAYOUT_ROW_PROCESS || row->kind == LAYOUT_ROW_THREAD ||
	       row->kind == LAYOUT_ROW_GPU_DEVICE || row->kind == LAYOUT_ROW_IDLE;
}

size_t layout_group_index(const struct layout *layout, size_t index)
{
	if (index >= layout->count)
		return layout->count;
	size_t i = index;
	while (i > 0 && !layout_is_group(&layout->rows[i]))
		i--;
	if (!layout_is_group(&layout->rows[i]))
		return layout->count;
	if (layout->rows[i].kind == LAYOUT_ROW_THREAD && layout->rows[i].idle_member)
		while (i > 0 && layout->rows[i].kind != LAYOUT_ROW_IDLE)
			i--;
	return i;
}

int layout_toggle_fold(struct layout *layout, size_t index)
{
	if (index >= layout->count || !layout_is_group(&layout->rows[index]))
		return -EINVAL;
	const struct layout_row *r = &layout->rows[index];
	static const enum layout_fold_kind kinds[] = {
	    [LAYOUT_ROW_PROCESS] = LAYOUT_FOLD_PROCESS,
	    [LAYOUT_ROW_THREAD] = LAYOUT_FOLD_THREAD,
	    [LAYOUT_ROW_GPU_DEVICE] = LAYOUT_FOLD_DEVICE,
	    [LAYOUT_ROW_IDLE] = LAYOUT_FOLD_IDLE_OPEN,
	};
	enum layout_fold_kind kind = kinds[r->kind];
	pid_t tid = r->kind == LAYOUT_ROW_THREAD ? r->tid : 0;
	int on = !layout_fold_has(layout, kind, r->pid, tid, r->device);
	layout_fold_set(layout, kind, r->pid, tid, r->device, on);
	if (r->kind == LAYOUT_ROW_PROCESS && r->process < layout->proc_count)
		layout->procs[r->process].fold_decided = 1; /* the user chose: the launcher rule keeps off */
	return 0;
}

/* The idle threads of process pid fold (LAYOUT_IDLE_FOLD_MIN of them) and tid is one of them. */
static int layout_in_idle_fold(const struct layout *layout, pid_t pid, pid_t tid)
{
	for (size_t p = 0; p < layout->proc_count; p++) {
		const struct layout_process *lp = &layout->procs[p];
		if (lp->pid != pid)
			continue;
		size_t idle = 0;
		int found = 0;
		for (size_t l = 0; l < lp->lane_count; l++) {
			const struct layout_lane *ln = &lp->lanes[l];
			if (ln->kind != STORE_LANE_THREAD || ln->active)
				continue;
			idle++;
			found |= ln->tid == tid;
		}
		if (found && idle >= LAYOUT_IDLE_FOLD_MIN)
			return 1;
	}
	return 0;
}

void layout_reveal(struct layout *layout, pid_t pid, pid_t tid, int device_row, uint32_t device)
{
	layout_fold_set(layout, LAYOUT_FOLD_PROCESS, pid, 0, 0, 0);
	for (size_t p = 0; p < layout->proc_count; p++)
		if (layout->procs[p].pid == pid) /* shown on purpose: the launcher rule keeps off */
			layout->procs[p].fold_decided = 1;
	if (tid)
		layout_fold_set(layout, LAYOUT_FOLD_THREAD, pid, tid, 0, 0);
	if (device_row)
		layout_fold_set(layout, LAYOUT_FOLD_DEVICE, pid, 0, device, 0);
	if (tid && layout_in_idle_fold(layout, pid, tid))
		layout_fold_set(layout, LAYOUT_FOLD_IDLE_OPEN, pid, 0, 0, 1);
}

void layout_add_idle(struct layout *layout, size_t process, pid_t pid, size_t count, int open)
{
	layout_push(
	    layout,
	    &(struct layout_row){
	        .kind = LAYOUT_ROW_IDLE, .process = process, .pid = pid, .folded = !open, .count = count});
}

int layout_lane_idle(const struct store_lane_info *li, const struct store_lane_cpu_info *ci)
{
	return li->kind == STORE_LANE_THREAD && !li->row_count && !li->open_count && !li->mark_count &&
	       !li->gpu_row_count && !li->gpu_ops && !ci->samples && !ci->osrt_row_count && !ci->osrt_calls &&
	       !ci->gc_row_count && !ci->gc_count;
}

/* Takes what the rows need from the store (lanes only ever get added; a thread once active stays so). */
/* Which metric series go under which (process, device) header: the device's GPU by UUID. */
static void layout_snapshot_metrics(struct layout *layout, const struct store *store)
{
	layout->metric_count = 0;
	if (!store_gpu_metric_count(store))
		return;
	for (size_t p = 0; p < store_process_count(store); p++) {
		for (size_t d = 0; d < store_gpu_device_count(store, p); d++) {
			struct store_gpu_device_info di;
			store_gpu_device_get(store, p, d, &di);
			for (size_t i = 0; i < store_gpu_metric_count(store); i++) {
				struct store_gpu_metric_info mi;
				store_gpu_metric_get(store, i, &mi);
				if (strcmp(mi.uuid, di.uuid) != 0)
					continue;
				xgrow((void **)&layout->metrics, &layout->metric_cap,
				      layout->metric_count + 1, sizeof *layout->metrics);
				layout->metrics[layout->metric_count++] =
				    (struct layout_metric){.process = p, .device = di.device, .series = i};
			}
		}
	}
}

static void layout_snapshot(struct layout *layout, const struct store *store)
{
	layout_snapshot_metrics(layout, store);
	size_t np = store_process_count(store);
	for (size_t p = np; p < layout->proc_count; p++) /* another store, with fewer processes */
		free(layout->procs[p].lanes);
	xgrow((void **)&layout->procs, &layout->proc_cap, np, sizeof *layout->procs);
	for (size_t p = layout->proc_count; p < np; p++)
		memset(&layout->procs[p], 0, sizeof layout->procs[p]);
	if (np != layout->proc_count)
		layout->launchers_stale = 1;
	layout->proc_count = np;
	for (size_t p = 0; p < np; p++) {
		struct layout_process *lp = &layout->procs[p];
		struct store_process_info pi;
		store_process_get(store, p, &pi);
		if (lp->pid != pi.pid) { /* another store: nothing of the old one carries over */
			lp->lane_count = 0;
			lp->fold_decided = 0;
		}
		if (lp->pid != pi.pid || lp->ppid != pi.ppid || lp->capture != pi.capture ||
		    lp->rank != pi.rank || strncmp(lp->host, pi.host, sizeof lp->host - 1) != 0)
			layout->launchers_stale = 1;
		snprintf(lp->host, sizeof lp->host, "%s", pi.host);
		lp->pid = pi.pid;
		lp->ppid = pi.ppid;
		lp->capture = pi.capture;
		lp->rank = pi.rank;
		lp->cost = store_cost_any(store, p);
		xgrow((void **)&lp->lanes, &lp->lane_cap, pi.lane_count, sizeof *lp->lanes);
		for (size_t l = lp->lane_count; l < pi.lane_count; l++)
			memset(&lp->lanes[l], 0, sizeof lp->lanes[l]);
		lp->lane_count = pi.lane_count;
		for (size_t l = 0; l < pi.lane_count; l++) {
			struct layout_lane *ln = &lp->lanes[l];
			struct store_lane_info li;
			struct store_lane_cpu_info ci;
			store_lane_get(store, p, l, &li);
			store_lane_cpu_get(store, p, l, &ci);
			int active =
			    ln->active || (li.kind == STORE_LANE_THREAD && !layout_lane_idle(&li, &ci));
			*ln = (struct layout_lane){.kind = (int)li.kind,
			                           .pid = li.pid,
			                           .tid = li.tid,
			                           .device = li.device,
			                           .stream = li.stream,
			                           .is_default = li.is_default,
			                           .active = active,
			                           .rows = li.row_count,
			                           .gpu_rows = li.gpu_row_count,
			                           .osrt_rows = ci.osrt_row_count,
			                           .gc_rows = ci.gc_row_count};
		}
	}
}

/*
 * Marks the launchers and folds each one the first time it is seen as one (torchrun's agent appears
 * before its ranks do): its ranks' lanes are what matters. A user's choice is never overridden.
 */
static void layout_fold_launchers(struct layout *layout)
{
	/* Only a new process or a changed rank changes the answer: not redone per frame. */
	if (!layout->launchers_stale)
		return;
	layout->launchers_stale = 0;
	size_t n = layout->proc_count;
	struct rankgroup_proc *rp = xcalloc(n ? n : 1, sizeof *rp);
	size_t *ranks = xcalloc(n ? n : 1, sizeof *ranks);
	for (size_t p = 0; p < n; p++)
		rp[p] = (struct rankgroup_proc){layout->procs[p].capture, layout->procs[p].pid,
		                                layout->procs[p].ppid, layout->procs[p].rank,
		                                layout->procs[p].host};
	rankgroup_launchers(rp, n, ranks);
	for (size_t p = 0; p < n; p++) {
		struct layout_process *lp = &layout->procs[p];
		lp->launcher_ranks = ranks[p];
		if (ranks[p] && !lp->fold_decided) {
			lp->fold_decided = 1;
			layout_fold_set(layout, LAYOUT_FOLD_PROCESS, lp->pid, 0, 0, 1);
		}
	}
	free(ranks);
	free(rp);
}

void layout_freeze(struct layout *layout, int on)
{
	layout->frozen = on;
}

/* A thread lane's rows: its header, and unless it is folded its NVTX, CUDA API, blocking-call, GC rows. */
static void layout_add_thread_lane(struct layout *layout, size_t p, size_t l, const struct layout_lane *ln,
                                   int idle_member)
{
	size_t header = layout->count;
	if (layout_fold_has(layout, LAYOUT_FOLD_THREAD, ln->pid, ln->tid, 0)) {
		layout_add_thread(layout, p, l, ln->pid, ln->tid, 0);
		layout->rows[header].folded = 1;
		layout->rows[header].idle_member = idle_member;
		return;
	}
	layout_add_thread(layout, p, l, ln->pid, ln->tid, ln->rows);
	layout->rows[header].idle_member = idle_member;
	layout_add_cuda_api(layout, p, l, ln->pid, ln->tid, ln->gpu_rows);
	layout_add_osrt(layout, p, l, ln->pid, ln->tid, ln->osrt_rows);
	layout_add_gc(layout, p, l, ln->pid, ln->tid, ln->gc_rows);
}

/* The rows of one process (its header first). */
static void layout_build_process(struct layout *layout, size_t p, struct gpu_lane_ref **gpu, size_t *gpu_cap)
{
	const struct layout_process *lp = &layout->procs[p];
	layout_add_process(layout, p, lp->pid);
	layout->rows[layout->count - 1].count = lp->launcher_ranks;
	if (layout_fold_has(layout, LAYOUT_FOLD_PROCESS, lp->pid, 0, 0)) {
		layout->rows[layout->count - 1].folded = 1;
		return;
	}
	if (lp->cost)
		layout_add_cost(layout, p, lp->pid);
	if (p < layout->steps_cap && layout->steps[p])
		layout_push(layout,
		            &(struct layout_row){.kind = LAYOUT_ROW_STEPS, .process = p, .pid = lp->pid});
	size_t idle = 0;
	for (size_t l = 0; l < lp->lane_count; l++)
		idle += lp->lanes[l].kind == STORE_LANE_THREAD && !lp->lanes[l].active;
	int fold_idle = idle >= LAYOUT_IDLE_FOLD_MIN;
	size_t async_lane = 0, async_rows = 0, gpu_count = 0;
	for (size_t l = 0; l < lp->lane_count; l++) {
		const struct layout_lane *ln = &lp->lanes[l];
		if (ln->kind == STORE_LANE_NVTX_ASYNC) {
			async_lane = l;
			async_rows = ln->rows;
		} else if (ln->kind == STORE_LANE_GPU_STREAM) {
			xgrow((void **)gpu, gpu_cap, gpu_count + 1, sizeof **gpu);
			(*gpu)[gpu_count++] =
			    (struct gpu_lane_ref){l, ln->device, ln->stream, ln->is_default, ln->gpu_rows};
		} else if (!fold_idle || ln->active) {
			layout_add_thread_lane(layout, p, l, ln, 0);
		}
	}
	layout_add_async(layout, p, async_lane, lp->pid, async_rows);
	if (fold_idle) {
		int open = layout_fold_has(layout, LAYOUT_FOLD_IDLE_OPEN, lp->pid, 0, 0);
		layout_add_idle(layout, p, lp->pid, idle, open);
		for (size_t l = 0; open && l < lp->lane_count; l++)
			if (lp->lanes[l].kind == STORE_LANE_THREAD && !lp->lanes[l].active)
				layout_add_thread_lane(layout, p, l, &lp->lanes[l], 1);
	}
	if (gpu_count)
		qsort(*gpu, gpu_count, sizeof **gpu, gpu_lane_cmp);
	for (size_t i = 0; i < gpu_count; i++) {
		const struct gpu_lane_ref *g = &(*gpu)[i];
		int dev_folded = layout_fold_has(layout, LAYOUT_FOLD_DEVICE, lp->pid, 0, g->device);
		if (i == 0 || g->device != (*gpu)[i - 1].device) {
			layout_add_gpu_device(layout, p, lp->pid, g->device);
			layout->rows[layout->count - 1].folded = dev_folded;
			for (size_t m = 0; !dev_folded && m < layout->metric_count; m++)
				if (layout->metrics[m].process == p && layout->metrics[m].device == g->device)
					layout_add_gpu_metric(layout, p, lp->pid, g->device,
					                      layout->metrics[m].series);
		}
		if (!dev_folded)
			layout_add_gpu_stream(layout, p, g->lane, lp->pid, g->device, g->rows);
	}
}

void layout_build(struct layout *layout, const struct store *store)
{
	struct gpu_lane_ref *gpu = NULL;
	size_t gpu_cap = 0;
	struct layout_row key = {0};
	int have_key = layout->selected < layout->count;
	if (have_key)
		key = layout->rows[layout->selected];
	size_t old_selected = layout->selected;

	if (!layout->frozen) {
		layout_snapshot(layout, store);
		layout_fold_launchers(layout);
	}
	layout_clear(layout);
	for (size_t p = 0; p < layout->proc_count; p++)
		layout_build_process(layout, p, &gpu, &gpu_cap);
	free(gpu);

	if (have_key) {
		size_t i = layout_find(layout, &key);
		/* A vanished row leaves the selection where it was rather than jumping to the top. */
		layout->selected = i < layout->count ? i : old_selected;
	}
}

void layout_clamp(struct layout *layout, size_t height)
{
	if (layout->count == 0) {
		layout->top = layout->selected = 0;
		return;
	}
	if (layout->selected >= layout->count)
		layout->selected = layout->count - 1;
	if (height == 0)
		height = 1;
	if (layout->selected < layout->top)
		layout->top = layout->selected;
	if (layout->selected >= layout->top + height)
		layout->top = layout->selected - height + 1;
	/* Don't leave empty screen below the last row when rows could fill it. */
	if (layout->count >= height && layout->top > layout->count - height)
		layout->top = layout->count - height;
	if (layout->count < height)
		layout->top = 0;
}

void layout_select(struct layout *layout, long delta, size_t height)
{
	if (layout->count == 0)
		return;
	long s = (long)layout->selected + delta;
	if (s < 0)
		s = 0;
	if ((size_t)s >= layout->count)
		s = (long)layout->count - 1;
	layout->selected = (size_t)s;
	layout_clamp(layout, height);
}
