/* The ranks pane (R): the straggler table of model/rankspane.c under the lanes; Enter jumps to a rank. */
#include "ui_impl.h"

#include <stdio.h>

#include "cuscope/clock.h"
#include "cuscope/rankgroup.h"

void ui_ranks_update(struct ui *ui)
{
	struct rankspane *rp = &ui->ranks.model;
	if (!ui->ranks.shown || (ui->view.paused && rp->computed))
		return;
	uint64_t gen = store_generation(ui->store), now = clock_mono_ns();
	if (rankspane_due(rp, gen, now))
		rankspane_update(rp, ui->store, gen, now);
}

void ui_draw_ranks(struct ui *ui, int y0, int h)
{
	struct rankspane *rp = &ui->ranks.model;
	int rows = h - 1;
	rankspane_select(rp, 0, rows > 0 ? (size_t)rows : 1);
	attr_t ha = ui_attr(ui, THEME_PANEL_HEADER) | (ui->ranks.focus ? A_REVERSE : 0);
	attr_t a = ui_attr(ui, THEME_PANEL);
	char line[512];
	ui_fill(y0, 0, COLS, ha, " ");
	rankspane_header(rp, line, sizeof line);
	int x = ui_put(ui, y0, 0, COLS, ha | A_BOLD, line);
	ui_put(ui, y0, x, COLS - x, ha,
	       ui->ranks.focus ? "   Ranks by compute time (Enter: go, R: hide)"
	                       : "   Ranks by compute time (Tab: focus)");
	if (rows < 1)
		return;
	if (!rp->count) {
		ui_fill(y0 + 1, 0, COLS, a, " ");
		ui_put(ui, y0 + 1, 1, COLS - 1, a | A_DIM, RANKSPANE_EMPTY);
		return;
	}
	for (int i = 0; i < rows; i++) {
		size_t k = rp->top + (size_t)i;
		if (k >= rp->count)
			break;
		int sel = ui->ranks.focus && k == rp->sel;
		attr_t ra = a | (sel ? A_REVERSE : 0) | (k == 0 && rp->count > 1 ? A_BOLD : 0);
		ui_fill(y0 + 1 + i, 0, COLS, ra, " ");
		rankspane_row_text(rp, k, line, sizeof line);
		ui_put(ui, y0 + 1 + i, 0, COLS, ra, line);
	}
}

void ui_ranks_jump(struct ui *ui)
{
	struct rankspane_jump j;
	if (!rankspane_jump(&ui->ranks.model, &j))
		return;
	const struct stats_rank_row *r = &ui->ranks.model.rows[ui->ranks.model.sel];
	struct store_process_info pi;
	store_process_get(ui->store, j.process, &pi);
	/* Unfold the rank's process and the thread its steps come from (maybe a child's). */
	layout_reveal(&ui->lanes.layout, pi.pid, 0, 0, 0);
	if (j.main_lane != SIZE_MAX) {
		struct store_process_info mi;
		struct store_lane_info li;
		store_process_get(ui->store, j.main_process, &mi);
		store_lane_get(ui->store, j.main_process, j.main_lane, &li);
		layout_reveal(&ui->lanes.layout, mi.pid, li.tid, 0, 0);
	}
	ui_rebuild_layout(ui, 1);
	struct layout_row key = {.kind = LAYOUT_ROW_PROCESS, .process = j.process, .pid = pi.pid};
	size_t i = layout_find(&ui->lanes.layout, &key);
	if (i < ui->lanes.layout.count) {
		ui->lanes.layout.selected = i;
		ui->lanes.layout.top = i; /* its header on top (clamped when the rows below are few) */
		layout_clamp(&ui->lanes.layout, ui->lanes.height);
	}
	char msg[256], label[48];
	rankgroup_label(r->rank, r->restart, 0, label, sizeof label);
	if (!j.has_window) {
		snprintf(msg, sizeof msg, "%s: no steps found", label);
		ui_say(ui, msg);
		return;
	}
	ui->view.follow = 0;
	ui->view.vp.span_ns = j.span_ns;
	ui->view.vp.start_ns = j.start_ns;
	int64_t c = viewport_col_of(&ui->view.vp, j.step_start_ns + (j.step_end_ns - j.step_start_ns) / 2);
	ui->view.cursor_col = c >= 0 && c < ui->view.vp.cols ? (int)c : -1;
	char dur[32];
	ui_format_dur(dur, sizeof dur, j.step_end_ns - j.step_start_ns);
	snprintf(msg, sizeof msg, "%s: slowest %s %s", label,
	         r->step_name  ? store_string(ui->store, r->step_name)
	         : r->inferred ? "step (inferred)"
	                       : "step",
	         dur);
	ui_say(ui, msg);
}
