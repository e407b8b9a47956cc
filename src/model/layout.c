#include "cuscope/layout.h"

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

/* Identity that survives rebuilds: what the row shows, not where it sits. */
static int layout_row_same(const struct layout_row *a, const struct layout_row *b)
{
	if (a->kind != b->kind || a->pid != b->pid || a->process != b->process)
		return 0;
	if (a->kind == LAYOUT_ROW_PROCESS)
		return 1;
	return a->lane == b->lane && a->row == b->row;
}

size_t layout_find(const struct layout *layout, const struct layout_row *key)
{
	for (size_t i = 0; i < layout->count; i++)
		if (layout_row_same(&layout->rows[i], key))
			return i;
	return layout->count;
}

void layout_build(struct layout *layout, const struct store *store)
{
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
		size_t async_lane = 0, async_rows = 0;
		for (size_t l = 0; l < pi.lane_count; l++) {
			struct store_lane_info li;
			store_lane_get(store, p, l, &li);
			if (li.kind == STORE_LANE_NVTX_ASYNC) {
				async_lane = l;
				async_rows = li.row_count;
				continue;
			}
			layout_add_thread(layout, p, l, li.pid, li.tid, li.row_count);
		}
		layout_add_async(layout, p, async_lane, pi.pid, async_rows);
	}

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
