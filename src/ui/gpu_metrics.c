/* GPU hardware metrics as counter lanes under each GPU device header. */
#include "ui_impl.h"

#include <stdio.h>
#include <string.h>

#include "cuscope/gpumetric.h"
#include "cuscope/xalloc.h"

void ui_draw_metric_row(struct ui *ui, int y, const struct layout_row *row, char *label, size_t size)
{
	int gx = ui_gutter(), cols = ui->view.vp.cols;
	struct store_gpu_metric_info mi;
	char name[48], value[32];
	label[0] = '\0';
	if (row->row >= store_gpu_metric_count(ui->store) || cols <= 0)
		return;
	store_gpu_metric_get(ui->store, row->row, &mi);
	gpumetric_label(mi.name, name, sizeof name);
	size_t have_cap = ui->metrics.cap;
	xgrow((void **)&ui->metrics.cells, &ui->metrics.cap, (size_t)cols, sizeof *ui->metrics.cells);
	xgrow((void **)&ui->metrics.have, &have_cap, ui->metrics.cap, sizeof *ui->metrics.have);
	uint64_t end = viewport_end_ns(&ui->view.vp), to = ui_data_end(ui, end);
	double full = gpumetric_cells(ui->store, row->row, ui->view.vp.start_ns, end, (size_t)cols,
	                              ui->metrics.cells, ui->metrics.have);
	/* Percentages against 100 %, anything else against the largest cell in view. */
	if (strcmp(mi.unit, "percent") == 0)
		full = 100;
	attr_t a = ui_attr(ui, THEME_UTIL_SM);
	for (int c = 0; c < cols; c++) {
		if (viewport_ns_of(&ui->view.vp, c) >= to)
			break;
		if (!ui->metrics.have[c])
			continue;
		double v = ui->metrics.cells[c];
		int lvl = full > 0 && v > 0 ? 1 + (int)(v / full * 7.0 + 0.5) : 0;
		ui_put(ui, y, gx + c, 1, a, ui->cells.g->spark[lvl > 8 ? 8 : lvl]);
	}
	/* The value at the cursor: the sample holding it (or the newest before it). */
	uint64_t t = ui_cursor_ns(ui);
	const struct store_gpu_metric_point *pt;
	size_t n = store_gpu_metric_query(ui->store, row->row, t, t + 1, &pt);
	if (!n) {
		n = store_gpu_metric_query(ui->store, row->row, 0, t + 1, &pt);
		pt = n ? pt + n - 1 : NULL;
	}
	if (pt)
		snprintf(label, size, "   %s %s", name,
		         gpumetric_text(mi.unit, pt->value, pt->end_ns - pt->start_ns, value, sizeof value));
	else
		snprintf(label, size, "   %s", name);
}
