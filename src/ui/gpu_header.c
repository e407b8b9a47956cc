/* The GPU utilisation header: one line per (process, device) with SM and copy sparklines, the GPU record
 * rate. */
#include "ui_impl.h"

#include <stdio.h>
#include <string.h>

#include "cuscope/clock.h"
#include "cuscope/gpumetric.h"
#include "cuscope/nvml.h"
#include "cuscope/wire.h"
#include "cuscope/xalloc.h"

/* Collects per (process, device) the stream rows, for the utilisation header. */
void ui_collect_devices(struct ui *ui)
{
	for (size_t i = 0; i < ui->gpu.device_count; i++)
		ui->gpu.devices[i].nrows = 0;
	size_t nd = 0;
	for (size_t p = 0; p < store_process_count(ui->store); p++) {
		struct store_process_info pi;
		store_process_get(ui->store, p, &pi);
		for (size_t l = 0; l < pi.lane_count; l++) {
			struct store_lane_info li;
			store_lane_get(ui->store, p, l, &li);
			if (li.kind != STORE_LANE_GPU_STREAM)
				continue;
			size_t d = 0;
			while (d < nd &&
			       !(ui->gpu.devices[d].process == p && ui->gpu.devices[d].device == li.device))
				d++;
			if (d == nd) {
				if (nd == UI_MAX_DEVICES)
					continue;
				struct ui_device *dv = &ui->gpu.devices[nd++];
				dv->process = p;
				dv->device = li.device;
				dv->nrows = 0;
				struct store_gpu_device_info di;
				const char *name = "";
				dv->uuid[0] = 0;
				if (store_gpu_device_find(ui->store, p, li.device, &di) == 0) {
					name = di.short_name;
					snprintf(dv->uuid, sizeof dv->uuid, "%s", di.uuid);
				}
				snprintf(dv->label, sizeof dv->label, "GPU%u %s", li.device, name);
			}
			struct ui_device *dv = &ui->gpu.devices[d];
			for (size_t r = 0; r < li.gpu_row_count; r++) {
				xgrow((void **)&dv->rows, &dv->cap, dv->nrows + 1, sizeof *dv->rows);
				dv->nrows++;
				dv->rows[dv->nrows - 1].n =
				    store_lane_gpu_all(ui->store, p, l, r, &dv->rows[dv->nrows - 1].ops);
			}
		}
	}
	ui->gpu.device_count = nd;
}

/* A sparkline of busy fractions over [from, to) in w cells. */
static void ui_sparkline(struct ui *ui, int y, int x, int w, const struct ui_device *dv, uint8_t kind,
                         uint64_t from, uint64_t to, attr_t a)
{
	if (w <= 0 || to <= from)
		return;
	uint64_t end = ui_data_end(ui, to);
	attrset(a);
	move(y, x);
	for (int i = 0; i < w; i++) {
		uint64_t s = from + (uint64_t)((double)(to - from) * i / w);
		uint64_t e = from + (uint64_t)((double)(to - from) * (i + 1) / w);
		if (e > end)
			e = end;
		if (s < store_memory_from_ns(ui->store)) {
			/* Not in memory: unknown, never an idle GPU. */
			addstr(ui->cells.g->evicted);
			continue;
		}
		double f = e > s ? util_busy(dv->rows, dv->nrows, kind, s, e, 256, 16) : 0;
		int lvl = (int)(f * 8 + 0.5);
		if (f > 0 && lvl == 0)
			lvl = 1;
		addstr(ui->cells.g->spark[lvl > 8 ? 8 : lvl]);
	}
}

/*
 * " GPU0 H200  SM ▇▇▆▃▁  71%   copy ▁▂▁  4%  nvml 68%  warps ▅64%  tensor ▄41%  dram rd 1.2 TB/s":
 * busy now (last second) and over the view, then the GPU's hardware metrics over the last second,
 * percentages with a bar.
 */
void ui_draw_gpu_header(struct ui *ui, int y, const struct ui_device *dv)
{
	uint64_t now = ui_now(ui);
	uint64_t from = now > 1000000000ull ? now - 1000000000ull : 0;
	double sm = util_busy(dv->rows, dv->nrows, WIRE_GPU_KERNEL, from, now, 50000, 2000);
	double cp = util_busy(dv->rows, dv->nrows, WIRE_GPU_MEMCPY, from, now, 50000, 2000);
	char lab[40], pct[16], nv[24] = "";
	unsigned nvp;
	if (ui->gpu.nvml && nvml_sm_util(ui->gpu.nvml, dv->uuid, clock_mono_ns(), &nvp) == 0) {
		snprintf(nv, sizeof nv, "  nvml %u%%", nvp);
		ui->gpu.nvml_sum += nvp + 1;
	}
	int lw = ui_gutter() - 1;
	snprintf(lab, sizeof lab, " %s", dv->label);
	ui_fill(y, 0, COLS, ui_attr(ui, THEME_NORMAL), " ");
	ui_put(ui, y, 0, lw, ui_attr(ui, THEME_GPU_HEADER), lab);
	/* Hardware metrics ("tensor ▆45%") take what the sparklines can spare (they keep 24 cells):
	 * whole items, in order. */
	struct gpumetric_item items[GPUMETRIC_PER_GPU_MAX];
	size_t n_items = gpumetric_items(ui->store, dv->uuid, from, now, items, GPUMETRIC_PER_GPU_MAX);
	int room = COLS - lw - (int)strlen(nv) - 4 - 5 - 6 - 5 - 24, hwl = 0;
	size_t shown = 0;
	for (; shown < n_items; shown++) {
		int w = 2 + (int)strlen(items[shown].label) + 1 + (items[shown].fraction >= 0) +
		        (int)strlen(items[shown].value);
		if (hwl + w > room)
			break;
		hwl += w;
	}
	int rest = COLS - lw - (int)strlen(nv) - 4 - 5 - 6 - 5 - hwl;
	int sw = rest * 2 / 3, cw = rest - sw;
	int x = lw;
	x += ui_put(ui, y, x, 4, ui_attr(ui, THEME_UTIL_SM) | A_BOLD, " SM ");
	ui_sparkline(ui, y, x, sw, dv, WIRE_GPU_KERNEL, ui->view.vp.start_ns, viewport_end_ns(&ui->view.vp),
	             ui_attr(ui, THEME_UTIL_SM));
	x += sw > 0 ? sw : 0;
	snprintf(pct, sizeof pct, " %3.0f%%", sm * 100);
	x += ui_put(ui, y, x, 5, ui_attr(ui, THEME_UTIL_SM) | A_BOLD, pct);
	x += ui_put(ui, y, x, 6, ui_attr(ui, THEME_UTIL_COPY) | A_BOLD, " copy ");
	ui_sparkline(ui, y, x, cw, dv, WIRE_GPU_MEMCPY, ui->view.vp.start_ns, viewport_end_ns(&ui->view.vp),
	             ui_attr(ui, THEME_UTIL_COPY));
	x += cw > 0 ? cw : 0;
	snprintf(pct, sizeof pct, " %3.0f%%", cp * 100);
	x += ui_put(ui, y, x, 5, ui_attr(ui, THEME_UTIL_COPY) | A_BOLD, pct);
	if (nv[0])
		x += ui_put(ui, y, x, COLS - x, ui_attr(ui, THEME_UTIL_SM), nv);
	for (size_t i = 0; i < shown && x + 2 < COLS; i++) {
		x += 2;
		x += ui_put(ui, y, x, COLS - x, ui_attr(ui, THEME_GPU_HEADER), items[i].label);
		x += ui_put(ui, y, x, COLS - x, ui_attr(ui, THEME_GPU_HEADER), " ");
		if (items[i].fraction >= 0) {
			int lvl = (int)(items[i].fraction * 8 + 0.5);
			x += ui_put(ui, y, x, COLS - x, ui_attr(ui, THEME_UTIL_SM),
			            ui->cells.g->spark[lvl > 8 ? 8 : lvl]);
		}
		x += ui_put(ui, y, x, COLS - x, ui_attr(ui, THEME_GPU_HEADER) | A_BOLD, items[i].value);
	}
}

/* GPU rate sample (once a second) and new collector warnings onto the message line. */
void ui_update_gpu(struct ui *ui)
{
	uint64_t now = clock_mono_ns(), count = store_gpu_event_count(ui->store);
	if (!ui->gpu.rate_t0 || count < ui->gpu.rate_c0) {
		ui->gpu.rate_t0 = now;
		ui->gpu.rate_c0 = count;
	} else if (now - ui->gpu.rate_t0 >= 1000000000ull) {
		ui->gpu.rate = (double)(count - ui->gpu.rate_c0) * 1e9 / (double)(now - ui->gpu.rate_t0);
		ui->gpu.rate_t0 = now;
		ui->gpu.rate_c0 = count;
	}
	uint64_t total = store_notice_total(ui->store);
	if (total == ui->msg.notice_shown)
		return;
	const char *newest = NULL;
	uint64_t newest_seq = ui->msg.notice_shown;
	for (size_t p = 0; p < store_process_count(ui->store); p++) {
		for (size_t i = 0; i < store_notice_count(ui->store, p); i++) {
			struct store_notice_info n;
			store_notice_get(ui->store, p, i, &n);
			if (n.level == WIRE_NOTICE_WARNING && n.seq > newest_seq) {
				newest = n.text;
				newest_seq = n.seq;
			}
		}
	}
	ui->msg.notice_shown = total;
	if (newest)
		ui_message(ui, newest);
}
