#include "cuscope/layout.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cuscope/store.h"
#include "cuscope/xalloc.h"

void layout_init(struct layout *layout)
{
	memset(layout, 0, sizeof *layout);
}

void layout_fini(struct layout *layout)
{
	free(layout->rows);
	free(layout->folds);
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
	if (a->kind == LAYOUT_ROW_PROCESS)
		return 1;
	if (a->kind == LAYOUT_ROW_GPU_DEVICE)
		return a->device == b->device;
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
static size_t layout_fold_index(const struct layout *layout, pid_t pid, pid_t tid, int is_device,
                                uint32_t device)
{
	for (size_t i = 0; i < layout->fold_count; i++) {
		const struct layout_fold *f = &layout->folds[i];
		if (f->pid == pid && f->is_device == is_device &&
		    (is_device ? f->device == device : f->tid == tid))
			return i;
	}
	return layout->fold_count;
}

static int layout_folded(const struct layout *layout, pid_t pid, pid_t tid, int is_device, uint32_t device)
{
	return layout_fold_index(layout, pid, tid, is_device, device) < layout->fold_count;
}

int layout_is_group(const struct layout_row *row)
{
	return row->kind == LAYOUT_ROW_PROCESS || row->kind == LAYOUT_ROW_THREAD ||
	       row->kind == LAYOUT_ROW_GPU_DEVICE;
}

int layout_toggle_fold(struct layout *layout, size_t index)
{
	if (index >= layout->count || !layout_is_group(&layout->rows[index]))
		return -EINVAL;
	const struct layout_row *r = &layout->rows[index];
	int dev = r->kind == LAYOUT_ROW_GPU_DEVICE;
	pid_t tid = r->kind == LAYOUT_ROW_THREAD ? r->tid : 0;
	size_t i = layout_fold_index(layout, r->pid, tid, dev, r->device);
	if (i < layout->fold_count) {
		layout->folds[i] = layout->folds[--layout->fold_count];
		return 0;
	}
	xgrow((void **)&layout->folds, &layout->fold_cap, layout->fold_count + 1, sizeof *layout->folds);
	layout->folds[layout->fold_count++] = (struct layout_fold){r->pid, tid, r->device, dev};
	return 0;
}

void layout_reveal(struct layout *layout, pid_t pid, pid_t tid, int device_row, uint32_t device)
{
	for (size_t i = 0; i < layout->fold_count;) {
		const struct layout_fold *f = &layout->folds[i];
		int hides = f->pid == pid &&
		            ((!f->is_device && f->tid == 0) || (!f->is_device && tid && f->tid == tid) ||
		             (f->is_device && device_row && f->device == device));
		if (hides)
			layout->folds[i] = layout->folds[--layout->fold_count];
		else
			i++;
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

	layout_clear(layout);
	size_t np = store_process_count(store);
	for (size_t p = 0; p < np; p++) {
		struct store_process_info pi;
		store_process_get(store, p, &pi);
		layout_add_process(layout, p, pi.pid);
		if (layout_folded(layout, pi.pid, 0, 0, 0)) {
			layout->rows[layout->count - 1].folded = 1;
			continue;
		}
		if (store_cost_any(store, p))
			layout_add_cost(layout, p, pi.pid);
		size_t async_lane = 0, async_rows = 0, gpu_count = 0;
		for (size_t l = 0; l < pi.lane_count; l++) {
			struct store_lane_info li;
			store_lane_get(store, p, l, &li);
			if (li.kind == STORE_LANE_NVTX_ASYNC) {
				async_lane = l;
				async_rows = li.row_count;
				continue;
			}
			if (li.kind == STORE_LANE_GPU_STREAM) {
				xgrow((void **)&gpu, &gpu_cap, gpu_count + 1, sizeof *gpu);
				gpu[gpu_count++] = (struct gpu_lane_ref){l, li.device, li.stream,
				                                         li.is_default, li.gpu_row_count};
				continue;
			}
			if (layout_folded(layout, li.pid, li.tid, 0, 0)) {
				layout_add_thread(layout, p, l, li.pid, li.tid, 0);
				layout->rows[layout->count - 1].folded = 1;
				continue;
			}
			layout_add_thread(layout, p, l, li.pid, li.tid, li.row_count);
			layout_add_cuda_api(layout, p, l, li.pid, li.tid, li.gpu_row_count);
			struct store_lane_cpu_info ci;
			store_lane_cpu_get(store, p, l, &ci);
			layout_add_osrt(layout, p, l, li.pid, li.tid, ci.osrt_row_count);
			layout_add_gc(layout, p, l, li.pid, li.tid, ci.gc_row_count);
		}
		layout_add_async(layout, p, async_lane, pi.pid, async_rows);
		if (gpu_count)
			qsort(gpu, gpu_count, sizeof *gpu, gpu_lane_cmp);
		for (size_t i = 0; i < gpu_count; i++) {
			int dev_folded = layout_folded(layout, pi.pid, 0, 1, gpu[i].device);
			if (i == 0 || gpu[i].device != gpu[i - 1].device) {
				layout_add_gpu_device(layout, p, pi.pid, gpu[i].device);
				layout->rows[layout->count - 1].folded = dev_folded;
			}
			if (dev_folded)
				continue;
			layout_add_gpu_stream(layout, p, gpu[i].lane, pi.pid, gpu[i].device, gpu[i].rows);
		}
	}
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
