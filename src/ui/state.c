/* View state: time (now, origin, the pause clip), following now, pause, zoom, pan, the time cursor, messages.
 */
#include "ui_impl.h"

#include <stdio.h>

#include "cuscope/clock.h"
#include "cuscope/xalloc.h"

int ui_gutter(void)
{
	return panes_gutter(COLS);
}

int ui_timeline_cols(void)
{
	return panes_timeline_cols(COLS);
}

/* "Now" for drawing: the pause instant, the CLI's clock when live, else the end of the data. */
uint64_t ui_now(const struct ui *ui)
{
	if (ui->view.paused)
		return ui->view.pause_ns;
	return ui->view.now_ns ? ui->view.now_ns : store_last_ns(ui->store);
}

/* Upper bound of the data drawn: the pause instant while paused. */
uint64_t ui_data_end(const struct ui *ui, uint64_t to)
{
	return ui->view.paused && ui->view.pause_ns < to ? ui->view.pause_ns : to;
}

/* Time labelled 0 on the axis: the first process's start. */
uint64_t ui_origin(const struct ui *ui)
{
	if (store_process_count(ui->store) > 0) {
		struct store_process_info pi;
		store_process_get(ui->store, 0, &pi);
		if (pi.start_ns)
			return pi.start_ns;
	}
	uint64_t first = store_first_ns(ui->store);
	return first ? first : ui_now(ui);
}

uint64_t ui_window_ns(const struct ui *ui)
{
	double w = ui->options.window_s;
	return w > 0 ? (uint64_t)(w * 1e9) : UI_DEFAULT_SPAN;
}

/* Zoom-out limit: the whole retained window, but never less than the configured window. */
static uint64_t ui_max_span(const struct ui *ui)
{
	uint64_t first = store_first_ns(ui->store), end = ui_now(ui);
	uint64_t retained = end > first ? end - first : 0;
	retained += retained / 50;
	uint64_t w = ui_window_ns(ui);
	return retained > w ? retained : w;
}

int ui_cursor_col(const struct ui *ui)
{
	int c = ui->view.cursor_col < 0 ? ui->view.vp.cols / 2 : ui->view.cursor_col;
	return c >= ui->view.vp.cols ? ui->view.vp.cols - 1 : c;
}

/* Time at the middle of the cursor's cell. */
uint64_t ui_cursor_ns(const struct ui *ui)
{
	int c = ui_cursor_col(ui);
	uint64_t a = viewport_ns_of(&ui->view.vp, c), b = viewport_ns_of(&ui->view.vp, c + 1);
	return a + (b - a) / 2;
}

/* Places the right edge on now, aligned to whole cells so columns don't shimmer as time moves. */
void ui_follow_now(struct ui *ui)
{
	uint64_t npc = viewport_ns_per_col(&ui->view.vp);
	uint64_t now = ui_now(ui);
	uint64_t right = (now / npc + 1) * npc;
	ui->view.vp.start_ns = right > ui->view.vp.span_ns ? right - ui->view.vp.span_ns : 0;
	/* Until the data fills the window it grows from the left edge: no empty time before it. */
	uint64_t first = store_first_ns(ui->store), origin = ui_origin(ui);
	uint64_t floor_ns = first && first < origin ? first : origin;
	if (ui->view.vp.start_ns < floor_ns)
		ui->view.vp.start_ns = floor_ns;
}

static int ui_any_connected(const struct ui *ui)
{
	size_t n = store_process_count(ui->store);
	for (size_t i = 0; i < n; i++) {
		struct store_process_info pi;
		store_process_get(ui->store, i, &pi);
		if (pi.connected)
			return 1;
	}
	return 0;
}

void ui_update_view(struct ui *ui, const struct ui_status *status)
{
	ui->view.now_ns = status && status->live ? status->now_ns : 0;
	/* Once nothing can send any more, "now" is the end of the data: following an empty future
	 * would only scroll the capture off the screen. */
	if (ui->view.now_ns && !status->target_alive && !ui_any_connected(ui) && store_last_ns(ui->store))
		ui->view.now_ns = store_last_ns(ui->store);
	ui->view.vp.cols = ui_timeline_cols();
	if (!ui->view.ready) {
		if (status && status->live) {
			viewport_set(&ui->view.vp, 0, ui_window_ns(ui), ui_timeline_cols());
			ui->view.follow = 1;
			ui->view.ready = 1;
		} else if (store_event_count(ui->store) > 0) {
			/* A capture opens showing all of it. */
			uint64_t first = store_first_ns(ui->store), last = store_last_ns(ui->store);
			uint64_t span = last > first ? last - first : 0;
			if (span < VIEWPORT_MIN_SPAN_NS)
				span = VIEWPORT_MIN_SPAN_NS;
			viewport_set(&ui->view.vp, first, span + span / 50, ui_timeline_cols());
			ui->view.follow = 0;
			ui->view.ready = 1;
		} else {
			viewport_set(&ui->view.vp, 0, ui_window_ns(ui), ui_timeline_cols());
		}
	}
	if (status && !status->live)
		ui->view.follow = 0;
	if (ui->view.follow && !ui->view.paused)
		ui_follow_now(ui);
}

/* Rebuilds the lane rows from the store (not while paused: the picture stays still). */
void ui_rebuild_layout(struct ui *ui, int force)
{
	uint64_t gen = store_generation(ui->store);
	int steps = ui_steps_update(ui); /* a "step (inferred)" row came or went */
	if (force || ((steps || gen != ui->lanes.gen_built || !ui->frame.drawn_once) && !ui->view.paused)) {
		layout_build(&ui->lanes.layout, ui->store);
		ui->lanes.gen_built = gen;
	}
}

/* Shows a message now (the answer to a key), replacing what the line shows. */
void ui_say(struct ui *ui, const char *text)
{
	snprintf(ui->msg.text, sizeof ui->msg.text, " %.250s", text);
	ui->msg.until = clock_mono_ns() + UI_MESSAGE_NS;
}

void ui_set_message(struct ui *ui, const char *fmt, const char *arg)
{
	char text[768];
	snprintf(text, sizeof text, fmt, arg ? arg : "");
	ui_say(ui, text);
}

/* Moves the view onto an event, selects its row and puts the cursor on it. */
void ui_show_event(struct ui *ui, const struct inspect_hit *hit)
{
	uint64_t a = hit->gpu ? hit->op.start_ns : hit->range.start_ns;
	uint64_t b = hit->gpu ? hit->op.end_ns : hit->range.end_ns;
	if (b < a)
		b = a;
	uint64_t w = b - a;
	/* Keep the zoom unless the event is narrower than a cell or wider than the view. */
	if (w * (uint64_t)ui->view.vp.cols < ui->view.vp.span_ns || w > ui->view.vp.span_ns) {
		uint64_t span = w * (uint64_t)ui->view.vp.cols / 20;
		if (w > ui->view.vp.span_ns)
			span = w + w / 4;
		if (span < VIEWPORT_MIN_SPAN_NS)
			span = VIEWPORT_MIN_SPAN_NS;
		if (span > ui_max_span(ui))
			span = ui_max_span(ui);
		ui->view.vp.span_ns = span;
	}
	uint64_t mid = a + w / 2;
	ui->view.vp.start_ns = mid > ui->view.vp.span_ns / 2 ? mid - ui->view.vp.span_ns / 2 : 0;
	ui->view.follow = 0;
	int64_t c = viewport_col_of(&ui->view.vp, mid);
	ui->view.cursor_col = c >= 0 && c < ui->view.vp.cols ? (int)c : -1;
	struct layout_row key = inspect_hit_row(ui->store, hit);
	layout_reveal(&ui->lanes.layout, key.pid, key.tid, key.kind == LAYOUT_ROW_GPU_STREAM, key.device);
	ui_rebuild_layout(ui, 1);
	size_t i = layout_find(&ui->lanes.layout, &key);
	if (i < ui->lanes.layout.count) {
		ui->lanes.layout.selected = i;
		layout_clamp(&ui->lanes.layout, ui->lanes.height);
	}
}

int ui_live(const struct ui_status *status)
{
	return status && status->live;
}

void ui_set_paused(struct ui *ui, int on)
{
	if (on && !ui->view.paused) {
		ui->view.pause_ns = ui->view.now_ns ? ui->view.now_ns : store_last_ns(ui->store);
		ui->view.pause_events = store_event_count(ui->store);
		ui->view.paused = 1;
		ui->view.follow = 0;
		/* Lanes stay where they are: a thread's first event while paused waits for the resume. */
		layout_freeze(&ui->lanes.layout, 1);
	} else if (!on && ui->view.paused) {
		ui->view.paused = 0;
		ui->view.follow = 1;
		layout_freeze(&ui->lanes.layout, 0);
		ui_rebuild_layout(ui, 1);
		ui_follow_now(ui);
	}
}

/* Zooms keeping the cursor's time on the cursor's column. */
void ui_zoom(struct ui *ui, double factor)
{
	uint64_t around = ui_cursor_ns(ui);
	if (ui->view.follow)
		around = ui_now(ui);
	viewport_zoom(&ui->view.vp, factor, around, VIEWPORT_MIN_SPAN_NS, ui_max_span(ui));
	if (ui->view.follow)
		ui_follow_now(ui);
}

/* Pans by cols columns; looking back in time means not following now. */
void ui_pan_cols(struct ui *ui, int64_t cols)
{
	ui->view.follow = 0;
	viewport_pan(&ui->view.vp, cols);
	uint64_t end = ui_now(ui);
	if (ui->view.vp.start_ns > end)
		ui->view.vp.start_ns = end;
}

/* Minimum length of a GPU idle gap worth explaining or jumping to. */
uint64_t ui_gap_min(const struct ui *ui)
{
	return ui->view.gap_ns ? ui->view.gap_ns : (uint64_t)(UI_DEFAULT_GAP_MS * 1e6);
}

void ui_view_set(struct ui *ui, uint64_t start_ns, uint64_t span_ns)
{
	if (!ui)
		return;
	viewport_set(&ui->view.vp, start_ns, span_ns, ui_timeline_cols());
	ui->view.ready = 1;
	ui->view.follow = 0;
	ui->view.paused = 0;
	layout_freeze(&ui->lanes.layout, 0);
}

void ui_message(struct ui *ui, const char *text)
{
	if (!ui)
		return;
	uint64_t now = clock_mono_ns();
	/* A message shown for less than a second is not replaced: the new one waits its turn. */
	if (ui->msg.text[0] && now < ui->msg.until && ui->msg.until - now > UI_MESSAGE_NS - 1000000000ull) {
		if (ui->msg.queued_count < 4)
			snprintf(ui->msg.queued[ui->msg.queued_count++], sizeof ui->msg.queued[0], " %.250s",
			         text ? text : "");
		return;
	}
	snprintf(ui->msg.text, sizeof ui->msg.text, " %.250s", text ? text : "");
	ui->msg.until = now + UI_MESSAGE_NS;
}

void ui_inspect_view(const struct ui *ui, struct inspect_view *v)
{
	*v = (struct inspect_view){.store = ui->store,
	                           .vp = ui->view.vp,
	                           .cursor_col = ui_cursor_col(ui),
	                           .now_ns = ui_now(ui),
	                           .clip_ns = ui->view.paused ? ui->view.pause_ns : UINT64_MAX,
	                           .origin_ns = ui_origin(ui),
	                           .gap_min_ns = ui_gap_min(ui)};
}

uint64_t ui_cost_until(const struct ui *ui, size_t process)
{
	struct inspect_view v;
	ui_inspect_view(ui, &v);
	return inspect_cost_until(&v, process);
}

void ui_trigger_show(struct ui *ui, size_t i)
{
	uint64_t t = ui->triggers.time_ns[i];
	ui->view.follow = 0;
	ui->view.vp.start_ns = t > ui->view.vp.span_ns / 2 ? t - ui->view.vp.span_ns / 2 : 0;
	int64_t c = viewport_col_of(&ui->view.vp, t);
	ui->view.cursor_col = c >= 0 && c < ui->view.vp.cols ? (int)c : -1;
	char msg[256];
	uint64_t o = ui_origin(ui);
	snprintf(msg, sizeof msg, "trigger %s fired at %s%.3fs (%zu of %zu; } { walk, space resumes)",
	         ui->triggers.expr[i], t >= o ? "" : "-", (double)(t >= o ? t - o : o - t) / 1e9, i + 1,
	         ui->triggers.count);
	ui_say(ui, msg);
}

void ui_trigger_mark(struct ui *ui, uint64_t time_ns, const char *expr)
{
	struct ui_trigger_marks *m = &ui->triggers;
	if (m->count >= UI_TRIGGERS_MAX)
		return;
	if (m->count == m->cap) {
		size_t cap = m->cap;
		xgrow((void **)&m->time_ns, &cap, m->count + 1, sizeof *m->time_ns);
		cap = m->cap;
		xgrow((void **)&m->expr, &cap, m->count + 1, sizeof *m->expr);
		m->cap = cap;
	}
	m->time_ns[m->count] = time_ns;
	snprintf(m->expr[m->count], sizeof m->expr[0], "%s", expr);
	m->count++;
}

void ui_trigger_fired(struct ui *ui, uint64_t time_ns, const char *expr)
{
	size_t before = ui->triggers.count;
	ui_trigger_mark(ui, time_ns, expr);
	if (ui->triggers.count == before)
		return;
	if (before) {
		char msg[160];
		snprintf(msg, sizeof msg, "trigger %.60s fired again (%zu firings; } { walk them)", expr,
		         ui->triggers.count);
		ui_message(ui, msg);
		return;
	}
	/* The first firing: the picture stops there, so the stall is on screen when someone looks. */
	ui_set_paused(ui, 1);
	ui_trigger_show(ui, 0);
}
