/* The timeline: time axis, lane gutter and rows (ranges, marks, samples, calls, GPU ops and idle gaps), the
 * evicted band. */
#include "ui_impl.h"

#include <stdio.h>
#include <string.h>

#include "cuscope/cpuview.h"
#include "cuscope/rankgroup.h"
#include "cuscope/timerow.h"
#include "cuscope/wire.h"
#include "cuscope/xalloc.h"

/* Shows the time cursor on row y: its cell in reverse video, or the cursor glyph on a blank. */
static void ui_cursor_cell(const struct ui *ui, int y)
{
	int cx = ui_gutter() + ui_cursor_col(ui);
	cchar_t cc;
	wchar_t wch[CCHARW_MAX + 1];
	attr_t at;
	short pair;
	if (cx >= COLS || mvin_wch(y, cx, &cc) != OK || getcchar(&cc, wch, &at, &pair, NULL) != OK)
		return;
	if (wch[0] == L' ')
		ui_put(ui, y, cx, 1, ui_attr(ui, THEME_CURSOR), ui->cells.g->cursor);
	else
		mvchgat(y, cx, 1, at ^ A_REVERSE, pair, NULL);
}

void ui_draw_axis(struct ui *ui, int y)
{
	int gx = ui_gutter();
	attr_t a = ui_attr(ui, THEME_AXIS);
	struct viewport_tick ticks[128];
	struct viewport_axis ax;
	size_t n = viewport_axis_ticks(&ui->view.vp, ui_origin(ui), ticks, 128, &ax);
	int next_free = 0;
	const char *unit = strcmp(ax.unit, "us") == 0 ? ui->cells.g->micro : ax.unit;
	int uw = strcmp(ax.unit, "us") == 0 ? 2 : (int)strlen(ax.unit);
	for (size_t i = 0; i < n; i++) {
		int x = gx + ticks[i].col;
		int w = (int)strlen(ticks[i].label);
		if (ticks[i].col < next_free || x + w > COLS - uw - 2) /* room for " unit" */
			continue;
		ui_put(ui, y, x, w, a, ticks[i].label);
		next_free = ticks[i].col + w + 1;
	}
	char u[16];
	snprintf(u, sizeof u, " %s", unit);
	if (gx + next_free + uw + 1 <= COLS)
		ui_put(ui, y, COLS - uw - 1, uw + 1, a, u);
	char g[48];
	if (ax.base[0])
		snprintf(g, sizeof g, " time %s +", ax.base);
	else
		snprintf(g, sizeof g, " time");
	ui_put(ui, y, 0, gx - 1, a | A_DIM, g);
	ui_put(ui, y, gx - 1, 1, a, ui->cells.g->vline);
	/* Trigger firings in view: a mark on the axis at each. */
	for (size_t i = 0; i < ui->triggers.count; i++) {
		int64_t c = viewport_col_of(&ui->view.vp, ui->triggers.time_ns[i]);
		if (c >= 0 && c < ui->view.vp.cols)
			ui_put(ui, y, gx + (int)c, 1, ui_attr(ui, THEME_MARK) | A_BOLD, ui->cells.g->mark);
	}
	ui_cursor_cell(ui, y);
}

/* Draws one range box over cells [col0, col1) of row y. */
static void ui_draw_box(struct ui *ui, int y, int col0, int col1, int clip_left, int clip_right, int open,
                        uint32_t name_id)
{
	int gx = ui_gutter();
	int w = col1 - col0;
	attr_t a = ui_attr(ui, ui_range_slot(name_id)) | (open ? A_BOLD : 0);
	if (w <= 0)
		return;
	if (w == 1 && !clip_left) {
		ui_put(ui, y, gx + col0, 1, a,
		       open ? ui->cells.g->open_end : (ui->cells.color ? " " : ui->cells.g->single));
		return;
	}
	char text[1024];
	size_t o = 0;
	int used = 0;
	const char *filler = ui->cells.color ? " " : ".";
	if (!clip_left) {
		text[o++] = '[';
		used++;
	}
	int tail = clip_right ? 0 : 1;
	char name[512];
	int nw = ui_clip(ui, store_string(ui->store, name_id), w - used - tail, name, sizeof name);
	size_t nl = strlen(name);
	memcpy(text + o, name, nl);
	o += nl;
	used += nw;
	while (used < w - tail && o + 2 < sizeof text) {
		text[o++] = filler[0];
		used++;
	}
	text[o] = 0;
	ui_put(ui, y, gx + col0, w, a, text);
	if (tail)
		ui_put(ui, y, gx + col1 - 1, 1, a, open ? ui->cells.g->open_end : "]");
}

/* Ranges of one store row: completed ones folded into cells, then the open ones up to now. */
static void ui_draw_ranges(struct ui *ui, int y, size_t process, size_t lane, size_t row,
                           const struct store_lane_info *li)
{
	const struct store_range *r = NULL;
	uint64_t from = ui->view.vp.start_ns, to = ui_data_end(ui, viewport_end_ns(&ui->view.vp));
	size_t n = from < to ? store_lane_row_query(ui->store, process, lane, row, from, to, &r) : 0;
	size_t ns = viewport_fold(&ui->view.vp, r, n, ui->lanes.segs, ui->lanes.seg_cap);
	for (size_t i = 0; i < ns; i++) {
		const struct viewport_seg *s = &ui->lanes.segs[i];
		if (s->kind == VIEWPORT_SEG_FOLD) {
			attr_t a = ui_attr(ui, THEME_FOLD) | (s->count >= 8 ? A_BOLD : 0);
			ui_put(ui, y, ui_gutter() + s->col0, 1, a, ui->cells.g->fold);
		} else {
			ui_draw_box(ui, y, s->col0, s->col1, s->clip_left, s->clip_right, 0,
			            r[s->first].name_id);
		}
	}
	/* Open ranges: a handful (one per nesting depth), each reaching to now. */
	uint64_t now = ui_now(ui);
	for (size_t i = 0; i < li->open_count; i++) {
		struct store_range o;
		size_t orow;
		store_lane_open_get(ui->store, process, lane, i, &o, &orow);
		if (orow != row || o.start_ns >= to || now < from || o.start_ns > now)
			continue;
		int64_t c0 = viewport_col_of(&ui->view.vp, o.start_ns);
		int64_t c1 = viewport_col_of(&ui->view.vp, now > o.start_ns ? now : o.start_ns);
		int clip_left = c0 < 0;
		int clip_right = c1 >= ui->view.vp.cols;
		if (c0 < 0)
			c0 = 0;
		if (c1 >= ui->view.vp.cols)
			c1 = ui->view.vp.cols - 1;
		ui_draw_box(ui, y, (int)c0, (int)c1 + 1, clip_left, clip_right, 1, o.name_id);
	}
}

/* Samples per cell of a thread lane over the view into ui->lanes.density; 0 when it has none there. */
static uint64_t ui_lane_density(struct ui *ui, size_t process, size_t lane)
{
	struct store_lane_cpu_info ci;
	store_lane_cpu_get(ui->store, process, lane, &ci);
	uint64_t to = ui_data_end(ui, viewport_end_ns(&ui->view.vp));
	if (!ci.samples || to <= ui->view.vp.start_ns)
		return 0;
	xgrow((void **)&ui->lanes.density, &ui->lanes.density_cap, (size_t)ui->view.vp.cols,
	      sizeof *ui->lanes.density);
	/* Whole cells only: a paused view clips the data, not the cell width. */
	uint64_t end = viewport_end_ns(&ui->view.vp);
	uint64_t total = store_lane_sample_density(ui->store, process, lane, ui->view.vp.start_ns, end,
	                                           (size_t)ui->view.vp.cols, ui->lanes.density);
	if (ui->view.paused) {
		int64_t last = viewport_col_of(&ui->view.vp, to);
		for (int64_t c = last + 1; c < ui->view.vp.cols; c++)
			ui->lanes.density[c] = 0;
	}
	return total;
}

/* The strips' full scale: the fullest cell over the thread rows on screen. */
void ui_density_scale(struct ui *ui, size_t first, size_t rows)
{
	ui->lanes.density_max = 0;
	for (size_t i = first; i < first + rows && i < ui->lanes.layout.count; i++) {
		const struct layout_row *r = &ui->lanes.layout.rows[i];
		if (r->kind != LAYOUT_ROW_THREAD || !ui_lane_density(ui, r->process, r->lane))
			continue;
		for (int c = 0; c < ui->view.vp.cols; c++)
			if (ui->lanes.density[c] > ui->lanes.density_max)
				ui->lanes.density_max = ui->lanes.density[c];
	}
}

/* One osrt or gc row: calls folded into cells, wide ones as "[read 30.1ms]" boxes. */
static void ui_draw_calls(struct ui *ui, int y, const struct layout_row *row)
{
	const struct store_call *c = NULL;
	uint64_t from = ui->view.vp.start_ns, to = ui_data_end(ui, viewport_end_ns(&ui->view.vp));
	int osrt = row->kind == LAYOUT_ROW_OSRT;
	size_t n = 0;
	if (from < to)
		n = osrt ? store_lane_osrt_query(ui->store, row->process, row->lane, row->row, from, to, &c)
		         : store_lane_gc_query(ui->store, row->process, row->lane, row->row, from, to, &c);
	size_t ns = viewport_fold_calls(&ui->view.vp, c, n, ui->lanes.segs, ui->lanes.seg_cap);
	attr_t a = ui_attr(ui, osrt ? THEME_OSRT : THEME_GC);
	int gx = ui_gutter();
	for (size_t i = 0; i < ns; i++) {
		const struct viewport_seg *sg = &ui->lanes.segs[i];
		int w = sg->col1 - sg->col0;
		if (sg->kind == VIEWPORT_SEG_FOLD || w <= 1) {
			ui_put(ui, y, gx + sg->col0, 1, a | (sg->count >= 8 ? A_BOLD : 0), ui->cells.g->fold);
			continue;
		}
		const struct store_call *k = &c[sg->first];
		char label[256], text[300];
		/* Room inside the brackets: the box's cells less '[' and ']' where they show. */
		int room = w - (sg->clip_left ? 0 : 1) - (sg->clip_right ? 0 : 1);
		cpuview_call_label(store_string(ui->store, k->name_id), k->end_ns - k->start_ns,
		                   room > 0 ? (size_t)room : 0, label, sizeof label);
		snprintf(text, sizeof text, "%s%s", sg->clip_left ? "" : "[", label);
		ui_fill(y, gx + sg->col0, w, a, ui->cells.g->bar);
		ui_put(ui, y, gx + sg->col0, w - (sg->clip_right ? 0 : 1), a | A_BOLD, text);
		if (!sg->clip_right)
			ui_put(ui, y, gx + sg->col1 - 1, 1, a | A_BOLD, "]");
	}
}

/* Thread row: its lifetime as a faint line and its marks. */
static void ui_draw_thread_line(struct ui *ui, int y, size_t process, size_t lane,
                                const struct store_lane_info *li)
{
	int gx = ui_gutter();
	uint64_t end = li->end_ns ? li->end_ns : ui_now(ui);
	int64_t c0 = viewport_col_of(&ui->view.vp, li->first_ns);
	int64_t c1 = viewport_col_of(&ui->view.vp, end);
	if (c0 < 0)
		c0 = 0;
	if (c1 >= ui->view.vp.cols)
		c1 = ui->view.vp.cols - 1;
	if (li->first_ns && c1 >= c0)
		ui_fill(y, gx + (int)c0, (int)(c1 - c0 + 1), ui_attr(ui, THEME_BASELINE),
		        ui->cells.g->baseline);
	/* Where the overhead budget reduced sampling (or blocking calls, counters) for this process: the
	 * baseline is marked, and samples there are underlined (they are sparser than asked). */
	int any_reduced = 0;
	if (li->first_ns && c1 >= c0 && store_cost_any(ui->store, process)) {
		uint64_t until = ui_cost_until(ui, process);
		for (int64_t c = c0; c <= c1; c++) {
			if (ui_cost_reduced_cell(ui, process, (int)c, until)) {
				ui_put(ui, y, gx + (int)c, 1, ui_attr(ui, THEME_MESSAGE),
				       ui->cells.g->reduced);
				any_reduced = 1;
			}
		}
	}
	/* CPU samples per cell over the baseline: ▁..█ against the fullest cell on screen. */
	if (ui_lane_density(ui, process, lane)) {
		attr_t sa = ui_attr(ui, THEME_SAMPLE);
		uint64_t until = any_reduced ? ui_cost_until(ui, process) : 0;
		for (int c = 0; c < ui->view.vp.cols; c++) {
			int lvl = cpuview_density_level(ui->lanes.density[c], ui->lanes.density_max);
			int under = any_reduced && ui_cost_reduced_cell(ui, process, c, until);
			if (lvl)
				ui_put(ui, y, gx + c, 1, sa | (under ? A_UNDERLINE : 0),
				       ui->cells.g->spark[lvl]);
		}
	}

	const struct store_range *m = NULL;
	uint64_t to = ui_data_end(ui, viewport_end_ns(&ui->view.vp));
	size_t n = ui->view.vp.start_ns < to
	               ? store_lane_mark_query(ui->store, process, lane, ui->view.vp.start_ns, to, &m)
	               : 0;
	size_t ns = viewport_fold(&ui->view.vp, m, n, ui->lanes.segs, ui->lanes.seg_cap);
	for (size_t i = 0; i < ns; i++)
		ui_put(ui, y, gx + ui->lanes.segs[i].col0, 1, ui_attr(ui, THEME_MARK), ui->cells.g->mark);
}

/* "HtoD" -> "H2D": the short copy label of the timeline. */
static void ui_copy_label(uint32_t kind, char *buf, size_t size)
{
	const char *name = wire_memcpy_kind_name(kind);
	const char *to = strstr(name, "to");
	if (to && kind != WIRE_MEMCPY_UNKNOWN)
		snprintf(buf, size, "%.*s2%s", (int)(to - name), name, to + 2);
	else
		snprintf(buf, size, "copy");
}

/* One GPU op (or API call, or sync) as a box over cells [col0, col1) of row y. */
static void ui_draw_op(struct ui *ui, int y, const struct viewport_seg *seg, const struct store_gpu_op *op)
{
	int gx = ui_gutter();
	int w = seg->col1 - seg->col0;
	if (w <= 0)
		return;
	char label[256];
	const char *fill;
	attr_t a;
	switch (op->kind) {
	case WIRE_GPU_KERNEL: {
		const char *name = store_short_name(ui->store, op->name_id);
		/* Communication (NCCL) apart from compute: the time one rank waits for the others. */
		a = ui_attr(ui, rankgroup_is_nccl_kernel(name) ? THEME_COMM : ui_range_slot(op->name_id));
		snprintf(label, sizeof label, "%s", name);
		fill = ui->cells.color ? " " : ui->cells.g->block;
		if (w == 1) {
			ui_put(ui, y, gx + seg->col0, 1, a, ui->cells.color ? " " : ui->cells.g->block);
			return;
		}
		break;
	}
	case WIRE_GPU_MEMCPY:
		a = ui_attr(ui, THEME_COPY);
		ui_copy_label(op->subkind, label, sizeof label);
		fill = ui->cells.g->bar;
		break;
	case WIRE_GPU_MEMSET:
		a = ui_attr(ui, THEME_MEMSET);
		snprintf(label, sizeof label, "memset");
		fill = ui->cells.g->bar;
		break;
	case WIRE_GPU_SYNC:
		a = ui_attr(ui, THEME_SYNC);
		snprintf(label, sizeof label, "sync");
		fill = ui->cells.g->bar;
		break;
	default: /* API calls: a launch is a ▮, a long call shows its name */
		a = ui_attr(ui, THEME_API);
		if (w == 1) {
			ui_put(ui, y, gx + seg->col0, 1, a, ui->cells.g->fold);
			return;
		}
		snprintf(label, sizeof label, "%s", store_string(ui->store, op->name_id));
		fill = ui->cells.g->bar;
		break;
	}
	if (w == 1) {
		ui_put(ui, y, gx + seg->col0, 1, a, fill);
		return;
	}
	/* The label takes what fits, leaving at least one fill cell so the extent stays visible. */
	int used = seg->clip_left ? 0 : ui_put(ui, y, gx + seg->col0, w - 1, a | A_BOLD, label);
	if (used < w)
		ui_fill(y, gx + seg->col0 + used, w - used, a, fill);
}

/* Shades an idle gap [a, b) of a stream row when it is over the threshold, with its length inside. */
static void ui_draw_gap(struct ui *ui, int y, uint64_t a, uint64_t b)
{
	if (!cpuview_is_gap(a, b, ui->view.gap_ns))
		return;
	int64_t c0 = viewport_col_of(&ui->view.vp, a), c1 = viewport_col_of(&ui->view.vp, b);
	if (c1 < 0 || c0 >= ui->view.vp.cols)
		return;
	if (c0 < 0)
		c0 = 0;
	if (c1 > ui->view.vp.cols)
		c1 = ui->view.vp.cols;
	int w = (int)(c1 - c0);
	if (w <= 0)
		return;
	int gx = ui_gutter();
	attr_t at = ui_attr(ui, THEME_GAP);
	ui_fill(y, gx + (int)c0, w, at, ui->cells.color ? " " : ui->cells.g->gap);
	char len[32], text[40];
	ui_format_dur(len, sizeof len, b - a);
	snprintf(text, sizeof text, "idle %s", len);
	int tw = (int)strlen(text);
	if (tw + 2 > w) {
		snprintf(text, sizeof text, "%s", len);
		tw = (int)strlen(text);
	}
	if (tw + 2 <= w)
		ui_put(ui, y, gx + (int)c0 + (w - tw) / 2, tw, at | A_BOLD, text);
}

/* One gpu row of a stream or thread lane: ops folded into cells, O(cells · log n). */
static void ui_draw_gpu_row(struct ui *ui, int y, size_t process, size_t lane, size_t row, int stream)
{
	const struct store_gpu_op *ops;
	size_t n = store_lane_gpu_all(ui->store, process, lane, row, &ops);
	uint64_t to = ui_data_end(ui, viewport_end_ns(&ui->view.vp));
	if (ui->view.paused) /* ops that began after the pause stay hidden */
		n = timerow_bound(ops, n, sizeof *ops, TIMEROW_START, to, 0);
	size_t ns = viewport_fold_gpu(&ui->view.vp, ops, n, ui->lanes.segs, ui->lanes.seg_cap);
	if (stream && ui->view.gap_ns) {
		/* Idle gaps sit between segments: inside a fold every gap is under a cell. */
		size_t first = ns ? ui->lanes.segs[0].first : 0;
		if (!ns) {
			/* Nothing visible: maybe the whole view is one gap. */
			size_t i = timerow_bound(ops, n, sizeof *ops, TIMEROW_START, ui->view.vp.start_ns, 0);
			if (i > 0 && i < n)
				ui_draw_gap(ui, y, ops[i - 1].end_ns, ops[i].start_ns);
		} else {
			if (first > 0)
				ui_draw_gap(ui, y, ops[first - 1].end_ns, ops[first].start_ns);
			for (size_t i = 1; i < ns; i++) {
				size_t f = ui->lanes.segs[i].first;
				if (f > 0)
					ui_draw_gap(ui, y, ops[f - 1].end_ns, ops[f].start_ns);
			}
			size_t last = ui->lanes.segs[ns - 1].first + ui->lanes.segs[ns - 1].count;
			if (last > 0 && last < n)
				ui_draw_gap(ui, y, ops[last - 1].end_ns, ops[last].start_ns);
		}
	}
	for (size_t i = 0; i < ns; i++) {
		const struct viewport_seg *seg = &ui->lanes.segs[i];
		if (seg->kind == VIEWPORT_SEG_FOLD) {
			/* Dense API calls read as launches; dense GPU work as a busy cell. */
			const struct store_gpu_op *op = &ops[seg->first];
			int api = op->kind == WIRE_GPU_API_RUNTIME || op->kind == WIRE_GPU_API_DRIVER;
			attr_t a = api ? ui_attr(ui, THEME_API)
			               : ui_attr(ui, THEME_FOLD) | (seg->count >= 8 ? A_BOLD : 0);
			if (op->kind == WIRE_GPU_MEMCPY)
				a = ui_attr(ui, THEME_COPY);
			/* NCCL kernels read as waiting for the other ranks, even zoomed out. */
			else if (op->kind == WIRE_GPU_KERNEL &&
			         rankgroup_is_nccl_kernel(store_short_name(ui->store, op->name_id)))
				a = ui_attr(ui, THEME_COMM);
			ui_put(ui, y, ui_gutter() + seg->col0, 1, a, ui->cells.g->fold);
		} else {
			ui_draw_op(ui, y, seg, &ops[seg->first]);
		}
	}
}

/* Latest warning of a process that never sent GPU records ("GPU: unavailable (why)"), or NULL. */
static const char *ui_gpu_unavailable(const struct ui *ui, size_t process)
{
	if (store_process_gpu_events(ui->store, process))
		return NULL;
	const char *why = NULL;
	for (size_t i = 0; i < store_notice_count(ui->store, process); i++) {
		struct store_notice_info n;
		store_notice_get(ui->store, process, i, &n);
		/* Only GPU-tracing notices explain missing GPU lanes (counters, sampling say other things).
		 */
		if (n.topic == WIRE_NOTICE_TOPIC_GPU_UNAVAILABLE)
			why = n.text;
	}
	return why;
}

static const char *ui_basename(const char *cmdline, char *buf, size_t size)
{
	size_t len = strcspn(cmdline, " ");
	snprintf(buf, size, "%.*s", (int)len, cmdline);
	char *slash = strrchr(buf, '/');
	return slash && slash[1] ? slash + 1 : buf;
}

void ui_draw_lane_row(struct ui *ui, int y, const struct layout_row *row, int selected)
{
	int gx = ui_gutter();
	char label[512], tmp[256];
	attr_t la;
	struct store_process_info pi;
	struct store_lane_info li;
	store_process_get(ui->store, row->process, &pi);
	if (row->kind != LAYOUT_ROW_PROCESS && row->kind != LAYOUT_ROW_STEPS)
		store_lane_get(ui->store, row->process, row->lane, &li);
	const char *fold_mark = row->folded ? ui->cells.g->folded : ui->cells.g->unfolded;

	switch (row->kind) {
	case LAYOUT_ROW_PROCESS: {
		/* A header carries no ranges: it spans the full width, so "name pid" is never cut. */
		const char *base = ui_basename(pi.cmdline ? pi.cmdline : "?", tmp, sizeof tmp);
		char info[512];
		/* A stream that ended without its final counts: say so, its losses are unknown. */
		if (*store_process_end_text(&pi, info, sizeof info))
			;
		else if (pi.exited && pi.exit_code >= 0)
			snprintf(info, sizeof info, "exited (code %d)", pi.exit_code);
		else if (pi.exited)
			snprintf(info, sizeof info, "exited");
		else
			snprintf(info, sizeof info, "%s", pi.connected ? "" : "disconnected");
		/*
		 * A launcher's rank names the group (a restarted worker's says so: another group); the pid
		 * still tells its processes apart. A launcher says how many ranks it started.
		 */
		char rank[64];
		rankgroup_label(pi.rank, pi.restart_count, row->count, rank, sizeof rank);
		if (*rank)
			strcat(rank, "  ");
		snprintf(label, sizeof label, "%s%s%s %d ", row->folded ? ui->cells.g->folded : "", rank,
		         base, (int)pi.pid);
		la = ui_attr(ui, THEME_PROCESS) | (selected ? A_REVERSE : 0);
		ui_fill(y, 0, COLS, ui_attr(ui, THEME_BASELINE), ui->cells.g->hline);
		int x = ui_put(ui, y, 0, COLS, la, label);
		const char *why = ui_gpu_unavailable(ui, row->process);
		if (why)
			snprintf(info + strlen(info), sizeof info - strlen(info), "%sGPU: unavailable (%s)",
			         *info ? "  " : "", why);
		snprintf(info + strlen(info), sizeof info - strlen(info), "%s%s ", *info ? "  " : "",
		         pi.cmdline ? pi.cmdline : "");
		snprintf(tmp, sizeof tmp, " %s", info);
		ui_put(ui, y, x + 1, COLS - x - 2, ui_attr(ui, THEME_PROCESS) | A_DIM, tmp);
		return;
	}
	case LAYOUT_ROW_THREAD: {
		char tid[16], name[128];
		int tl = snprintf(tid, sizeof tid, " %d", (int)li.tid);
		ui_clip(ui, li.name && *li.name ? li.name : "thread", gx - 3 - tl > 1 ? gx - 3 - tl : 1, name,
		        sizeof name);
		snprintf(label, sizeof label, "%s%s%s", fold_mark, name, tid);
		la = ui_attr(ui, THEME_THREAD) | (li.end_ns ? A_DIM : 0);
		ui_draw_thread_line(ui, y, row->process, row->lane, &li);
		break;
	}
	case LAYOUT_ROW_NVTX:
		snprintf(label, sizeof label, "   %s%zu", row->row == 0 ? "nvtx " : "  ", row->row);
		la = ui_attr(ui, THEME_THREAD) | A_DIM;
		ui_draw_ranges(ui, y, row->process, row->lane, row->row, &li);
		break;
	case LAYOUT_ROW_OSRT:
	case LAYOUT_ROW_GC:
		snprintf(label, sizeof label,
		         row->row                       ? ""
		         : row->kind == LAYOUT_ROW_OSRT ? "   blocking"
		                                        : "   python gc");
		la = ui_attr(ui, THEME_THREAD) | A_DIM;
		ui_draw_calls(ui, y, row);
		break;
	case LAYOUT_ROW_CUDA_API:
		snprintf(label, sizeof label, row->row == 0 ? "   cuda api" : "");
		la = ui_attr(ui, THEME_THREAD) | A_DIM;
		ui_draw_gpu_row(ui, y, row->process, row->lane, row->row, 0);
		break;
	case LAYOUT_ROW_GPU_DEVICE: {
		struct store_gpu_device_info di;
		const char *name = "";
		if (store_gpu_device_find(ui->store, row->process, row->device, &di) == 0)
			name = di.short_name;
		snprintf(label, sizeof label, "%sGPU%u %s", fold_mark, row->device, name);
		la = ui_attr(ui, THEME_GPU_HEADER);
		ui_fill(y, gx, COLS - gx, ui_attr(ui, THEME_BASELINE), ui->cells.g->hline);
		break;
	}
	case LAYOUT_ROW_GPU_STREAM:
		snprintf(label, sizeof label, row->row == 0 ? "  %s" : "",
		         store_lane_gpu_label(ui->store, row->process, row->lane));
		la = ui_attr(ui, THEME_THREAD);
		ui_draw_gpu_row(ui, y, row->process, row->lane, row->row, 1);
		break;
	case LAYOUT_ROW_IDLE:
		/* Threads that never produced an event: one row, Enter or f lists them. */
		snprintf(label, sizeof label, "%s%zu idle thread%s", fold_mark, row->count,
		         row->count == 1 ? "" : "s");
		la = ui_attr(ui, THEME_THREAD) | A_DIM;
		break;
	case LAYOUT_ROW_STEPS:
		snprintf(label, sizeof label, " step (inferred)");
		la = ui_attr(ui, THEME_THREAD);
		ui_draw_steps_row(ui, y, row);
		break;
	case LAYOUT_ROW_COST:
		ui_draw_cost_row(ui, y, row, label, sizeof label);
		la = ui_attr(ui, THEME_THREAD) | (row->row ? A_DIM : 0);
		break;
	case LAYOUT_ROW_GPU_METRIC:
		ui_draw_metric_row(ui, y, row, label, sizeof label);
		la = ui_attr(ui, THEME_THREAD) | A_DIM;
		break;
	case LAYOUT_ROW_ASYNC:
	default:
		snprintf(label, sizeof label, row->row == 0 ? " nvtx async" : "");
		la = ui_attr(ui, THEME_THREAD);
		ui_draw_ranges(ui, y, row->process, row->lane, row->row, &li);
		break;
	}
	if (selected) {
		la |= A_REVERSE;
		ui_fill(y, 0, gx - 1, la, " ");
	}
	ui_put(ui, y, 0, gx - 1, la, label);
	ui_put(ui, y, gx - 1, 1, ui_attr(ui, THEME_AXIS), ui->cells.g->vline);
	if (selected && !ui->nvtx.focus && !ui->ranks.focus) {
		/* The time cursor on the selected lane: its cell in reverse video. */
		ui_cursor_cell(ui, y);
	}
}

/*
 * The "not in memory" band over the lanes: time older than a bounded live store still holds is
 * drawn as such (labelled), never as empty lanes or an idle GPU.
 */
void ui_draw_evicted_band(struct ui *ui, int y0, int h)
{
	int band = viewport_band_cols(&ui->view.vp, store_memory_from_ns(ui->store));
	if (band <= 0 || h <= 0)
		return;
	int gx = ui_gutter();
	attr_t a = ui_attr(ui, THEME_EVICTED) | A_DIM;
	static const char label[] = " not in memory ";
	int lw = (int)sizeof label - 1;
	for (int y = y0; y < y0 + h; y++) {
		size_t idx = ui->lanes.layout.top + (size_t)(y - y0);
		/* A process header keeps its text (it spans the whole width and holds no events). */
		if (idx < ui->lanes.layout.count && ui->lanes.layout.rows[idx].kind == LAYOUT_ROW_PROCESS)
			continue;
		ui_fill(y, gx, band, a, ui->cells.g->evicted);
		/* The label on the second row (below a first process header) and every eighth after. */
		if ((y - y0) % 8 == 1 && band >= lw + 2)
			ui_put(ui, y, gx + (band - lw) / 2, lw, ui_attr(ui, THEME_EVICTED) | A_BOLD, label);
	}
}
