/* Keys: the key table and its handlers, the mouse, the prompts (quit, find, go to, dump) and the help
 * overlay. */
#include "ui_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuscope/cpuview.h"

typedef int (*ui_key_fn)(struct ui *ui, const struct ui_status *status, int key);

static int ui_key_quit(struct ui *ui, const struct ui_status *status, int key)
{
	(void)key;
	if (status && status->live && status->target_alive) {
		ui->prompt.kind = UI_PROMPT_QUIT;
		return UI_ACTION_NONE;
	}
	return UI_ACTION_QUIT;
}

static int ui_key_interrupt(struct ui *ui, const struct ui_status *status, int key)
{
	(void)ui;
	(void)status;
	(void)key;
	return UI_ACTION_INTERRUPT;
}

static int ui_key_pause(struct ui *ui, const struct ui_status *status, int key)
{
	(void)key;
	if (ui_live(status))
		ui_set_paused(ui, !ui->view.paused);
	else
		ui_say(ui, "a capture file is already still: space pauses live views");
	return UI_ACTION_NONE;
}

static int ui_key_zoom(struct ui *ui, const struct ui_status *status, int key)
{
	(void)status;
	ui_zoom(ui, key == '-' || key == '_' ? 2.0 : 0.5);
	return UI_ACTION_NONE;
}

static int ui_key_pan(struct ui *ui, const struct ui_status *status, int key)
{
	(void)status;
	int step = ui->view.vp.cols / 8 > 0 ? ui->view.vp.cols / 8 : 1;
	if (key == KEY_PPAGE || key == KEY_NPAGE)
		step = ui->view.vp.cols;
	ui_pan_cols(ui, (key == KEY_LEFT || key == KEY_PPAGE) ? -step : step);
	return UI_ACTION_NONE;
}

static int ui_key_home(struct ui *ui, const struct ui_status *status, int key)
{
	(void)status;
	(void)key;
	ui->view.follow = 0;
	uint64_t first = store_first_ns(ui->store);
	ui->view.vp.start_ns = first ? first : ui_origin(ui);
	return UI_ACTION_NONE;
}

static int ui_key_end(struct ui *ui, const struct ui_status *status, int key)
{
	(void)key;
	if (ui_live(status)) {
		ui_set_paused(ui, 0);
		ui->view.follow = 1;
		ui_follow_now(ui);
	} else {
		uint64_t last = store_last_ns(ui->store);
		ui->view.vp.start_ns = last > ui->view.vp.span_ns ? last - ui->view.vp.span_ns : 0;
	}
	return UI_ACTION_NONE;
}

static int ui_key_cursor(struct ui *ui, const struct ui_status *status, int key)
{
	(void)status;
	int c = ui_cursor_col(ui) + ((key == '<' || key == ',') ? -1 : 1);
	if (c < 0) {
		ui_pan_cols(ui, -1);
		c = 0;
	} else if (c >= ui->view.vp.cols) {
		ui_pan_cols(ui, 1);
		c = ui->view.vp.cols - 1;
	}
	ui->view.cursor_col = c;
	return UI_ACTION_NONE;
}

static int ui_key_updown(struct ui *ui, const struct ui_status *status, int key)
{
	(void)status;
	long d = key == KEY_UP ? -1 : 1;
	if (ui->ranks.focus && ui->panes.ranks_h > 1) {
		int h = ui->panes.ranks_h - 1;
		rankspane_select(&ui->ranks.model, d, h > 0 ? (size_t)h : 1);
		return UI_ACTION_NONE;
	}
	if (ui->nvtx.focus && ui_panel_shown(ui)) {
		long s = (long)ui->nvtx.sel + d;
		if (s >= 0 && (size_t)s < ui->nvtx.stats.count)
			ui->nvtx.sel = (size_t)s;
		return UI_ACTION_NONE;
	}
	layout_select(&ui->lanes.layout, d, ui->lanes.height);
	return UI_ACTION_NONE;
}

/* Jumps to the slowest instance of the selected panel row. */
static void ui_panel_jump(struct ui *ui)
{
	if (ui->nvtx.sel >= ui->nvtx.stats.count)
		return;
	ui_panel_order(ui);
	const struct nvtx_stat *e = ui->nvtx.stats.v[ui->nvtx.order[ui->nvtx.sel]];
	if (e->domain_id == NVTX_STATS_INFERRED) {
		ui_steps_jump(ui, e);
		return;
	}
	struct store_lane_info li;
	store_lane_get(ui->store, e->process, e->lane, &li);
	struct inspect_hit hit = {.found = 1,
	                          .process = e->process,
	                          .lane = e->lane,
	                          .row = e->row,
	                          .lane_kind = li.kind,
	                          .range = {e->slow_start_ns, e->slow_end_ns, e->name_id, e->domain_id}};
	ui_show_event(ui, &hit);
	char dur[32], msg[256];
	ui_format_dur(dur, sizeof dur, e->slow_end_ns - e->slow_start_ns);
	snprintf(msg, sizeof msg, "slowest %s: %s", store_string(ui->store, e->name_id), dur);
	ui_say(ui, msg);
}

static int ui_key_fold(struct ui *ui, const struct ui_status *status, int key)
{
	(void)status;
	(void)key;
	/* A row inside a group folds the group it belongs to. */
	size_t i = layout_group_index(&ui->lanes.layout, ui->lanes.layout.selected);
	if (i >= ui->lanes.layout.count)
		return UI_ACTION_NONE;
	struct layout_row key_row = ui->lanes.layout.rows[i];
	if (layout_toggle_fold(&ui->lanes.layout, i) == 0) {
		ui_rebuild_layout(ui, 1);
		size_t j = layout_find(&ui->lanes.layout, &key_row);
		if (j < ui->lanes.layout.count)
			ui->lanes.layout.selected = j;
		layout_clamp(&ui->lanes.layout, ui->lanes.height);
	}
	return UI_ACTION_NONE;
}

static int ui_key_enter(struct ui *ui, const struct ui_status *status, int key)
{
	if (ui->overlay == UI_OVERLAY_DETAILS) {
		ui->overlay = UI_OVERLAY_NONE;
		return UI_ACTION_NONE;
	}
	if (ui->ranks.focus && ui->panes.ranks_h > 1) {
		ui_ranks_jump(ui);
		return UI_ACTION_NONE;
	}
	if (ui->nvtx.focus && ui_panel_shown(ui)) {
		ui_panel_jump(ui);
		return UI_ACTION_NONE;
	}
	if (ui->lanes.layout.selected >= ui->lanes.layout.count)
		return UI_ACTION_NONE;
	const struct layout_row *row = &ui->lanes.layout.rows[ui->lanes.layout.selected];
	if (layout_is_group(row) && row->kind != LAYOUT_ROW_THREAD)
		return ui_key_fold(ui, status, key);
	struct inspect_view v;
	ui_inspect_view(ui, &v);
	struct inspect_hit hit =
	    inspect_row_hit(&v, row, ui_cursor_ns(ui), viewport_ns_per_col(&ui->view.vp));
	if (!hit.found && inspect_cell_details(&v, &ui->details, row)) {
		ui->overlay = UI_OVERLAY_DETAILS;
		return UI_ACTION_NONE;
	}
	if (!hit.found) {
		if (row->kind == LAYOUT_ROW_THREAD)
			return ui_key_fold(ui, status, key);
		ui_say(ui, "nothing under the cursor on this lane (move it with < >, or click)");
		return UI_ACTION_NONE;
	}
	inspect_details(&v, &ui->details, &hit);
	ui->overlay = UI_OVERLAY_DETAILS;
	return UI_ACTION_NONE;
}

/* ] and [: the next / previous GPU idle gap (over the shading threshold) on any stream row. */
static int ui_key_gap(struct ui *ui, const struct ui_status *status, int key)
{
	(void)status;
	int dir = key == '[' ? -1 : 1;
	uint64_t t = ui_cursor_ns(ui);
	struct inspect_hit best;
	struct cpuview_gap bg;
	inspect_gap_step(ui->store, t, dir, ui_gap_min(ui), &best, &bg);
	if (!best.found) {
		ui_say(ui,
		       dir > 0 ? "no GPU idle gap after the cursor" : "no GPU idle gap before the cursor");
		return UI_ACTION_NONE;
	}
	ui_show_event(ui, &best);
	char dur[32], msg[256];
	ui_format_dur(dur, sizeof dur, bg.end_ns - bg.start_ns);
	snprintf(msg, sizeof msg, "GPU idle %s on %s: Enter explains it", dur,
	         store_lane_gpu_label(ui->store, best.process, best.lane));
	ui_say(ui, msg);
	return UI_ACTION_NONE;
}

/* } and {: the next / previous trigger firing from the cursor. */
static int ui_key_trigger(struct ui *ui, const struct ui_status *status, int key)
{
	(void)status;
	const struct ui_trigger_marks *m = &ui->triggers;
	if (!m->count) {
		ui_say(ui, "no trigger has fired (--trigger EXPR sets them)");
		return UI_ACTION_NONE;
	}
	/* From the cursor's cell: a firing inside it is the one shown, not the next. */
	uint64_t t = ui_cursor_ns(ui), half = viewport_ns_per_col(&ui->view.vp) / 2 + 1;
	size_t best = SIZE_MAX;
	for (size_t i = 0; i < m->count; i++) {
		uint64_t f = m->time_ns[i];
		if (key == '}' ? f > t + half && (best == SIZE_MAX || f < m->time_ns[best])
		               : f + half < t && (best == SIZE_MAX || f > m->time_ns[best]))
			best = i;
	}
	if (best == SIZE_MAX) {
		ui_say(ui, key == '}' ? "no trigger firing after the cursor"
		                      : "no trigger firing before the cursor");
		return UI_ACTION_NONE;
	}
	ui_trigger_show(ui, best);
	return UI_ACTION_NONE;
}

/* d: dump to a file; the CLI (which owns the live capture) writes it. */
static int ui_key_dump(struct ui *ui, const struct ui_status *status, int key)
{
	(void)key;
	if (!status || !status->live) {
		ui_set_message(
		    ui, "%s",
		    "dump: this view is already a capture file (cuscope export or info work on it)");
		return UI_ACTION_NONE;
	}
	ui->prompt.kind = UI_PROMPT_DUMP_SCOPE;
	return UI_ACTION_NONE;
}

static int ui_key_prompt(struct ui *ui, const struct ui_status *status, int key)
{
	(void)status;
	ui->prompt.kind = key == '/' ? UI_PROMPT_FIND : UI_PROMPT_GOTO;
	ui->prompt.input[0] = 0;
	return UI_ACTION_NONE;
}

static void ui_find_step(struct ui *ui, int dir)
{
	if (!ui->find.query[0]) {
		ui_say(ui, "no search yet: / starts one");
		return;
	}
	uint64_t from;
	if (ui->last_hit.found)
		from = ui->last_hit.gpu ? ui->last_hit.op.start_ns : ui->last_hit.range.start_ns;
	else
		from = dir > 0 ? (ui->view.vp.start_ns ? ui->view.vp.start_ns - 1 : 0)
		               : viewport_end_ns(&ui->view.vp);
	struct inspect_hit hit = inspect_find(&ui->find, ui->store, dir, from);
	if (!hit.found) {
		/* Wrap around once. */
		hit = inspect_find(&ui->find, ui->store, dir, dir > 0 ? 0 : UINT64_MAX - 1);
		if (hit.found)
			ui_say(ui, dir > 0 ? "search wrapped to the start" : "search wrapped to the end");
	}
	if (!hit.found) {
		ui_set_message(ui, "no match for '%s'", ui->find.query);
		return;
	}
	ui->last_hit = hit;
	ui_show_event(ui, &hit);
}

static int ui_key_find_next(struct ui *ui, const struct ui_status *status, int key)
{
	(void)status;
	ui_find_step(ui, key == 'N' ? -1 : 1);
	return UI_ACTION_NONE;
}

static int ui_key_theme(struct ui *ui, const struct ui_status *status, int key)
{
	(void)status;
	(void)key;
	size_t n = 0;
	while (theme_builtin_names[n])
		n++;
	ui->cells.theme_index = (ui->cells.theme_index + 1) % n;
	ui_load_theme(ui, theme_builtin_names[ui->cells.theme_index], 0);
	return UI_ACTION_NONE;
}

static int ui_key_panel(struct ui *ui, const struct ui_status *status, int key)
{
	(void)status;
	(void)key;
	ui->nvtx.hidden = !ui->nvtx.hidden;
	if (ui->nvtx.hidden)
		ui->nvtx.focus = 0;
	else if (ui->nvtx.focus)
		ui->ranks.focus = 0;
	return UI_ACTION_NONE;
}

/* R: shows the ranks pane with the focus on it (Up/Down, Enter), or hides it. */
static int ui_key_ranks(struct ui *ui, const struct ui_status *status, int key)
{
	(void)status;
	(void)key;
	ui->ranks.shown = !ui->ranks.shown;
	ui->ranks.focus = ui->ranks.shown;
	if (ui->ranks.focus)
		ui->nvtx.focus = 0;
	ui_ranks_update(ui);
	return UI_ACTION_NONE;
}

static int ui_key_hot(struct ui *ui, const struct ui_status *status, int key)
{
	(void)status;
	(void)key;
	ui->hot.shown = !ui->hot.shown;
	return UI_ACTION_NONE;
}

static int ui_key_hot_order(struct ui *ui, const struct ui_status *status, int key)
{
	(void)status;
	(void)key;
	ui_hot_toggle_order(ui);
	return UI_ACTION_NONE;
}

static int ui_key_focus(struct ui *ui, const struct ui_status *status, int key)
{
	(void)status;
	(void)key;
	/* Tab moves the focus on: the NVTX panel, the ranks pane, the lanes (skipping hidden panes). */
	int nvtx = ui_panel_shown(ui), ranks = ui->ranks.shown;
	if (ui->nvtx.focus && nvtx) {
		ui->nvtx.focus = 0;
		ui->ranks.focus = ranks;
	} else if (ui->ranks.focus && ranks) {
		ui->ranks.focus = 0;
	} else {
		ui->nvtx.focus = nvtx;
		ui->ranks.focus = !nvtx && ranks;
	}
	return UI_ACTION_NONE;
}

static int ui_key_log(struct ui *ui, const struct ui_status *status, int key)
{
	(void)status;
	(void)key;
	ui->log.shown = !ui->log.shown;
	return UI_ACTION_NONE;
}

static int ui_key_help(struct ui *ui, const struct ui_status *status, int key)
{
	(void)status;
	(void)key;
	ui->overlay = ui->overlay == UI_OVERLAY_HELP ? UI_OVERLAY_NONE : UI_OVERLAY_HELP;
	return UI_ACTION_NONE;
}

static int ui_key_escape(struct ui *ui, const struct ui_status *status, int key)
{
	(void)status;
	(void)key;
	if (ui->overlay)
		ui->overlay = UI_OVERLAY_NONE;
	else if (ui->nvtx.focus || ui->ranks.focus)
		ui->nvtx.focus = ui->ranks.focus = 0;
	else
		ui->log.shown = 0;
	return UI_ACTION_NONE;
}

static int ui_key_resize(struct ui *ui, const struct ui_status *status, int key)
{
	(void)ui;
	(void)status;
	(void)key;
	return UI_ACTION_NONE; /* the next draw picks up LINES/COLS */
}

static int ui_key_mouse(struct ui *ui, const struct ui_status *status, int key);

/* One row per binding; label NULL hides an alias from the help overlay. */
struct ui_key {
	int key;
	const char *label;
	const char *help;
	ui_key_fn fn;
};

static const struct ui_key ui_keys[] = {
    {'q', "q", "quit (asks to detach or stop a running target)", ui_key_quit},
    {' ', "space", "pause / resume (capture goes on while paused)", ui_key_pause},
    {'+', "+ -", "zoom in / out around the cursor (mouse wheel too)", ui_key_zoom},
    {'=', NULL, NULL, ui_key_zoom},
    {'-', NULL, NULL, ui_key_zoom},
    {'_', NULL, NULL, ui_key_zoom},
    {KEY_LEFT, "LR", "pan back / forward in time (mouse drag too)", ui_key_pan},
    {KEY_RIGHT, NULL, NULL, ui_key_pan},
    {KEY_PPAGE, "PgUp PgDn", "pan by a whole window", ui_key_pan},
    {KEY_NPAGE, NULL, NULL, ui_key_pan},
    {KEY_HOME, "Home", "go to the start of the data", ui_key_home},
    {KEY_END, "End", "go to now and follow it", ui_key_end},
    {'<', "< >", "move the time cursor (, . too; click sets it)", ui_key_cursor},
    {'>', NULL, NULL, ui_key_cursor},
    {',', NULL, NULL, ui_key_cursor},
    {'.', NULL, NULL, ui_key_cursor},
    {KEY_UP, "UD", "select a lane (panel rows when it has focus)", ui_key_updown},
    {KEY_DOWN, NULL, NULL, ui_key_updown},
    {'\n', "Enter", "details (event, stack, GPU gap); on a header: fold", ui_key_enter},
    {'\r', NULL, NULL, ui_key_enter},
    {KEY_ENTER, NULL, NULL, ui_key_enter},
    {'f', "f", "fold / unfold a process, thread, GPU or idle-threads row", ui_key_fold},
    {'/', "/", "find by name (substring)", ui_key_prompt},
    {'n', "n N", "next / previous match", ui_key_find_next},
    {'N', NULL, NULL, ui_key_find_next},
    {'g', "g", "go to a time (seconds since the axis origin)", ui_key_prompt},
    {'d', "d", "dump the visible window or the whole capture to a file", ui_key_dump},
    {'t', "t", "next colour theme", ui_key_theme},
    {'h', "h", "show / hide the NVTX panel", ui_key_panel},
    {'R', "R", "show / hide the ranks pane: straggler first (Enter: its lanes, slowest step)", ui_key_ranks},
    {'H', "H", "show / hide hot functions of the selected thread in view", ui_key_hot},
    {'i', "i", "hot functions by self / inclusive samples (Python functions on Python threads)",
     ui_key_hot_order},
    {']', "] [", "next / previous GPU idle gap (Enter on it: what the CPU did)", ui_key_gap},
    {'[', NULL, NULL, ui_key_gap},
    {'}', "} {", "next / previous trigger firing (--trigger; the first one pauses the view)", ui_key_trigger},
    {'{', NULL, NULL, ui_key_trigger},
    {'\t', "Tab", "focus the NVTX panel, then the ranks pane (Enter: slowest instance)", ui_key_focus},
    {'l', "l", "show / hide the target's output log", ui_key_log},
    {'?', "?", "show / hide this help", ui_key_help},
    {27, "Esc", "close overlays, prompts and panes", ui_key_escape},
    {KEY_MOUSE, NULL, NULL, ui_key_mouse},
    {KEY_RESIZE, NULL, NULL, ui_key_resize},
    {3, NULL, NULL, ui_key_interrupt},
};

/* Mouse: wheel zooms around the pointer, a click selects lane and cursor, a drag pans. */
static int ui_key_mouse(struct ui *ui, const struct ui_status *status, int key)
{
	(void)status;
	(void)key;
	MEVENT ev;
	if (getmouse(&ev) != OK)
		return UI_ACTION_NONE;
	struct panes_cell cell = panes_hit(&ui->panes, ev.x, ev.y);
	int col = cell.col;
	int in_lanes = cell.area == PANES_LANES;
	if (ev.bstate & (BUTTON4_PRESSED | BUTTON5_PRESSED)) {
		if (col >= 0 && col < ui->view.vp.cols)
			ui->view.cursor_col = col;
		if (col >= 0)
			ui_zoom(ui, (ev.bstate & BUTTON4_PRESSED) ? 0.8 : 1.25);
		else if (in_lanes)
			layout_select(&ui->lanes.layout, (ev.bstate & BUTTON4_PRESSED) ? -3 : 3,
			              ui->lanes.height);
		return UI_ACTION_NONE;
	}
	if (ev.bstate & BUTTON1_PRESSED) {
		ui->mouse.dragging = 1;
		ui->mouse.drag_x = ev.x;
		if (in_lanes) {
			size_t i = ui->lanes.layout.top + (size_t)cell.line;
			if (i < ui->lanes.layout.count)
				ui->lanes.layout.selected = i;
		}
		/* A click on a rank's row selects it and gives the pane the focus (Enter jumps). */
		if (cell.area == PANES_RANKS && cell.line > 0 &&
		    ui->ranks.model.top + (size_t)(cell.line - 1) < ui->ranks.model.count) {
			ui->ranks.model.sel = ui->ranks.model.top + (size_t)(cell.line - 1);
			ui->ranks.focus = 1;
			ui->nvtx.focus = 0;
			return UI_ACTION_NONE;
		}
		if (col >= 0 && col < ui->view.vp.cols)
			ui->view.cursor_col = col;
		return UI_ACTION_NONE;
	}
	if (ui->mouse.dragging && (ev.bstate & (BUTTON1_RELEASED | REPORT_MOUSE_POSITION))) {
		int dx = ev.x - ui->mouse.drag_x;
		if (dx)
			ui_pan_cols(ui, -dx);
		ui->mouse.drag_x = ev.x;
		if (ev.bstate & BUTTON1_RELEASED)
			ui->mouse.dragging = 0;
	}
	return UI_ACTION_NONE;
}

/* Keys while the quit prompt is up: anything else cancels. */
static int ui_quit_prompt_key(struct ui *ui, int key)
{
	ui->prompt.kind = UI_PROMPT_NONE;
	switch (key) {
	case 'd':
	case 'D':
		return UI_ACTION_DETACH;
	case 's':
	case 'S':
		return UI_ACTION_STOP;
	case 3:
		return UI_ACTION_INTERRUPT;
	default:
		return UI_ACTION_NONE;
	}
}

/* Keys while the dump scope question is up. */
static void ui_dump_scope_key(struct ui *ui, const struct ui_status *status, int key)
{
	ui->prompt.kind = UI_PROMPT_NONE;
	if (key != 'v' && key != 'V' && key != 'w' && key != 'W')
		return;
	ui->prompt.dump_whole = key == 'w' || key == 'W';
	ui->prompt.dump_from_ns = ui->prompt.dump_whole ? 0 : ui->view.vp.start_ns;
	ui->prompt.dump_to_ns =
	    ui->prompt.dump_whole ? UINT64_MAX : ui->view.vp.start_ns + ui->view.vp.span_ns;
	time_t now = time(NULL);
	struct tm tm;
	localtime_r(&now, &tm);
	char stamp[32];
	strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
	snprintf(ui->prompt.input, sizeof ui->prompt.input, "cuscope-%d-%s.cuscope",
	         status ? (int)status->pid : 0, stamp);
	ui->prompt.kind = UI_PROMPT_DUMP_FILE;
}

int ui_dump_request(struct ui *ui, char *path, size_t size, uint64_t *from_ns, uint64_t *to_ns)
{
	if (!ui->prompt.dump_ready)
		return 0;
	ui->prompt.dump_ready = 0;
	snprintf(path, size, "%s", ui->prompt.dump_path);
	*from_ns = ui->prompt.dump_from_ns;
	*to_ns = ui->prompt.dump_to_ns;
	return 1;
}

/* Runs a submitted find or go-to prompt. */
static void ui_prompt_submit(struct ui *ui, enum ui_prompt kind)
{
	if (kind == UI_PROMPT_DUMP_FILE) {
		if (!ui->prompt.input[0])
			return;
		snprintf(ui->prompt.dump_path, sizeof ui->prompt.dump_path, "%s", ui->prompt.input);
		ui->prompt.dump_ready = 1;
		return;
	}
	if (kind == UI_PROMPT_FIND) {
		if (!ui->prompt.input[0])
			return;
		inspect_find_set(&ui->find, ui->prompt.input);
		ui->last_hit.found = 0;
		/* The first match at or after the cursor. */
		uint64_t t = ui_cursor_ns(ui);
		struct inspect_hit hit = inspect_find(
		    &ui->find, ui->store, 1, t > ui->view.vp.span_ns / 2 ? t - ui->view.vp.span_ns / 2 : 0);
		if (!hit.found)
			hit = inspect_find(&ui->find, ui->store, 1, 0);
		if (!hit.found) {
			ui_set_message(ui, "no match for '%s'", ui->find.query);
			return;
		}
		ui->last_hit = hit;
		ui_show_event(ui, &hit);
		return;
	}
	char *end;
	double s = strtod(ui->prompt.input, &end);
	while (*end == ' ' || *end == 's')
		end++;
	if (end == ui->prompt.input || *end) {
		ui_set_message(ui, "go to: '%s' is not a number of seconds", ui->prompt.input);
		return;
	}
	int64_t rel = (int64_t)(s * 1e9);
	uint64_t o = ui_origin(ui);
	uint64_t t = rel < 0 && (uint64_t)-rel > o ? 0 : (uint64_t)((int64_t)o + rel);
	ui->view.follow = 0;
	ui->view.vp.start_ns = t > ui->view.vp.span_ns / 2 ? t - ui->view.vp.span_ns / 2 : 0;
	ui->view.cursor_col = -1;
}

/* Keys while a text prompt is up: editing, Enter submits, Esc cancels. */
static void ui_text_prompt_key(struct ui *ui, int key)
{
	size_t len = strlen(ui->prompt.input);
	if (key == 27) {
		ui->prompt.kind = UI_PROMPT_NONE;
	} else if (key == '\n' || key == '\r' || key == KEY_ENTER) {
		enum ui_prompt kind = ui->prompt.kind;
		ui->prompt.kind = UI_PROMPT_NONE;
		ui_prompt_submit(ui, kind);
	} else if (key == KEY_BACKSPACE || key == 127 || key == 8) {
		if (len)
			ui->prompt.input[len - 1] = 0;
	} else if (key == 21) { /* Ctrl-U */
		ui->prompt.input[0] = 0;
	} else if (key >= 0x20 && key < 0x7f && len + 1 < sizeof ui->prompt.input) {
		ui->prompt.input[len] = (char)key;
		ui->prompt.input[len + 1] = 0;
	}
}

int ui_handle_input(struct ui *ui, const struct ui_status *status)
{
	int actions = 0;
	int key;
	while ((key = getch()) != ERR) {
		ui->frame.input_serial++;
		if (key == KEY_RESIZE) {
			/* the next draw picks up LINES/COLS */
		} else if (ui->prompt.kind == UI_PROMPT_QUIT) {
			actions |= ui_quit_prompt_key(ui, key);
		} else if (ui->prompt.kind == UI_PROMPT_DUMP_SCOPE) {
			ui_dump_scope_key(ui, status, key);
		} else if (ui->prompt.kind != UI_PROMPT_NONE) {
			if (key == 3)
				actions |= UI_ACTION_INTERRUPT;
			else
				ui_text_prompt_key(ui, key);
		} else {
			for (size_t i = 0; i < sizeof ui_keys / sizeof ui_keys[0]; i++) {
				if (ui_keys[i].key == key) {
					actions |= ui_keys[i].fn(ui, status, key);
					break;
				}
			}
		}
		if (actions & (UI_ACTION_QUIT | UI_ACTION_DETACH | UI_ACTION_STOP))
			break;
	}
	return actions;
}

/* The help overlay, generated from the key table. */
void ui_draw_help(struct ui *ui)
{
	static char text[64][160];
	const char *lines[64];
	int n = 0;
	for (size_t i = 0; i < sizeof ui_keys / sizeof ui_keys[0] && n < 60; i++) {
		const char *label = ui_keys[i].label;
		if (!label)
			continue;
		/* Arrow labels are spelled in the table portably and drawn with the glyph set. */
		if (strcmp(label, "LR") == 0)
			label = ui->cells.g->leftright;
		else if (strcmp(label, "UD") == 0)
			label = ui->cells.g->updown;
		char lab[32];
		int lw = ui_clip(ui, label, 11, lab, sizeof lab);
		snprintf(text[n], sizeof text[n], "%s%*s %s", lab, 11 - lw, "", ui_keys[i].help);
		lines[n] = text[n];
		n++;
	}
	/* What the cost rows show (they have no key of their own). */
	snprintf(text[n++], sizeof text[0],
	         "cost rows   under a process: est. time the profiler adds to its threads");
	snprintf(text[n++], sizeof text[0],
	         "            (%%) and the collector's CPU (ms/s), at the cursor in the label;");
	snprintf(text[n++], sizeof text[0], "            %s marks time the overhead budget reduced sampling",
	         ui->cells.g->reduced);
	for (int i = n - 3; i < n; i++)
		lines[i] = text[i];
	ui_draw_box_lines(ui, "cuscope keys  (mouse: wheel zooms, click picks, drag pans)", lines, n,
	                  "Esc or ? closes this help", 74);
}
