/* The cost rows of a process: the time the profiler adds and the collector's CPU, per timeline cell. */
#include "ui_impl.h"

#include <stdio.h>

#include "cuscope/xalloc.h"

/* CPU-side cost sources the overhead budget reduced in timeline cell c (bit mask, see costview.h). */
unsigned ui_cost_reduced_cell(const struct ui *ui, size_t process, int c, uint64_t until)
{
	uint64_t t0 = viewport_ns_of(&ui->view.vp, c), t1 = viewport_ns_of(&ui->view.vp, c + 1);
	return costview_reduced_mask(ui->store, process, COSTVIEW_CPU_SOURCES, t0, t1 > t0 ? t1 : t0 + 1,
	                             until);
}

/*
 * A cost row of a process: row 0 the estimated time added to the program's threads (%), row 1 the
 * collector's CPU (ms per second), each cell against the fullest in view (at least 1 % / 10 ms/s);
 * cells where the budget reduced a CPU-side source are underlined on row 0. The label gets the value
 * at the time cursor (or the newest one past it).
 */
void ui_draw_cost_row(struct ui *ui, int y, const struct layout_row *row, char *label, size_t size)
{
	int gx = ui_gutter(), cols = ui->view.vp.cols, added = row->row == 0;
	if (cols <= 0)
		return;
	xgrow((void **)&ui->cost.cells, &ui->cost.cap, (size_t)cols, sizeof *ui->cost.cells);
	uint64_t end = viewport_end_ns(&ui->view.vp), to = ui_data_end(ui, end);
	if (ui->cost.frame != ui->frame.count || ui->cost.process != row->process) {
		costview_cells(ui->store, row->process, ui->view.vp.start_ns, end, (size_t)cols,
		               ui_data_end(ui, UINT64_MAX), ui->cost.cells);
		ui->cost.frame = ui->frame.count;
		ui->cost.process = row->process;
	}
	double full = added ? 1.0 : 10.0;
	for (int c = 0; c < cols; c++) {
		const struct costview_rate *r = &ui->cost.cells[c];
		double v = added ? r->added_pct : r->cpu_ms_per_s;
		if (r->covered_ns && viewport_ns_of(&ui->view.vp, c) < to && v > full)
			full = v;
	}
	uint64_t until = ui_cost_until(ui, row->process);
	attr_t a = ui_attr(ui, added ? THEME_UTIL_SM : THEME_UTIL_COPY);
	for (int c = 0; c < cols; c++) {
		if (viewport_ns_of(&ui->view.vp, c) >= to)
			break;
		const struct costview_rate *r = &ui->cost.cells[c];
		double v = added ? r->added_pct : r->cpu_ms_per_s;
		int lvl = r->covered_ns && v > 0 ? 1 + (int)(v / full * 7.0 + 0.5) : 0;
		if (lvl > 8)
			lvl = 8;
		int reduced = added && ui_cost_reduced_cell(ui, row->process, c, until);
		if (lvl)
			ui_put(ui, y, gx + c, 1, a | (reduced ? A_UNDERLINE : 0), ui->cells.g->spark[lvl]);
		else if (reduced)
			ui_put(ui, y, gx + c, 1, ui_attr(ui, THEME_MESSAGE), ui->cells.g->reduced);
	}
	struct costview_rate at;
	int have =
	    costview_at(ui->store, row->process, ui_cursor_ns(ui), ui_data_end(ui, UINT64_MAX), &at) == 0;
	if (added && have)
		snprintf(label, size, " cost +%.1f%% est.", at.added_pct);
	else if (added)
		snprintf(label, size, " cost (1st second)");
	else if (have)
		snprintf(label, size, "   collector %.1fms/s", at.cpu_ms_per_s);
	else
		snprintf(label, size, "   collector");
}
