/* The panes below the lanes: NVTX statistics, hot functions, the target's log; the framed overlay box and the
 * details overlay. */
#include "ui_impl.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cuscope/cpuview.h"
#include "cuscope/wire.h"
#include "cuscope/xalloc.h"

/* The panel's rows in display order (largest total first). */
void ui_panel_order(struct ui *ui)
{
	if (ui->nvtx.stats.count > ui->nvtx.order_cap) {
		ui->nvtx.order_cap = ui->nvtx.stats.count * 2;
		ui->nvtx.order = xrealloc(ui->nvtx.order, ui->nvtx.order_cap * sizeof *ui->nvtx.order);
	}
	nvtx_stats_order(&ui->nvtx.stats, ui->nvtx.order);
}

int ui_panel_shown(const struct ui *ui)
{
	return !ui->nvtx.hidden && ui->nvtx.stats.count > 0;
}

/* The NVTX panel: per name and domain n, p50, p90, p99, max and a log-scale histogram. */
void ui_draw_panel(struct ui *ui, int y0, int h)
{
	ui_panel_order(ui);
	if (ui->nvtx.sel >= ui->nvtx.stats.count)
		ui->nvtx.sel = ui->nvtx.stats.count ? ui->nvtx.stats.count - 1 : 0;
	int rows = h - 1;
	if (ui->nvtx.sel < ui->nvtx.top)
		ui->nvtx.top = ui->nvtx.sel;
	if (rows > 0 && ui->nvtx.sel >= ui->nvtx.top + (size_t)rows)
		ui->nvtx.top = ui->nvtx.sel - (size_t)rows + 1;
	int hist_w = COLS >= 120 ? 20 : COLS >= 100 ? 14 : 10;
	int num_w = 7 + 4 * 8;
	int name_w = COLS - num_w - hist_w - 3;
	if (name_w < 8)
		name_w = 8;
	char line[512], hdr[512];
	attr_t ha = ui_attr(ui, THEME_PANEL_HEADER) | (ui->nvtx.focus ? A_REVERSE : 0);
	ui_fill(y0, 0, COLS, ha, " ");
	snprintf(hdr, sizeof hdr, " %-*.*s %6s %7s %7s %7s %7s  %s", name_w - 1, name_w - 1,
	         ui->nvtx.focus ? "NVTX ranges (Enter: slowest, Tab: back)" : "NVTX ranges (Tab: focus)", "n",
	         "p50", "p90", "p99", "max", "histogram (log)");
	ui_put(ui, y0, 0, COLS, ha, hdr);
	for (int i = 0; i < rows; i++) {
		size_t k = ui->nvtx.top + (size_t)i;
		if (k >= ui->nvtx.stats.count)
			break;
		const struct nvtx_stat *e = ui->nvtx.stats.v[ui->nvtx.order[k]];
		char name[256], p50[16], p90[16], p99[16], mx[16], n[16];
		if (e->domain_id == NVTX_STATS_INFERRED)
			snprintf(name, sizeof name, "step (inferred)");
		else if (e->domain_id)
			snprintf(name, sizeof name, "%s (%s)", store_string(ui->store, e->name_id),
			         store_string(ui->store, e->domain_id));
		else
			snprintf(name, sizeof name, "%s", store_string(ui->store, e->name_id));
		ui_format_dur(p50, sizeof p50, hist_percentile(&e->hist, 50));
		ui_format_dur(p90, sizeof p90, hist_percentile(&e->hist, 90));
		ui_format_dur(p99, sizeof p99, hist_percentile(&e->hist, 99));
		ui_format_dur(mx, sizeof mx, e->hist.max_ns);
		ui_format_rate(n, sizeof n, (double)e->hist.count);
		if (e->hist.count < 100000)
			snprintf(n, sizeof n, "%llu", (unsigned long long)e->hist.count);
		int sel = ui->nvtx.focus && k == ui->nvtx.sel;
		attr_t a = ui_attr(ui, THEME_PANEL) | (sel ? A_REVERSE : 0);
		int y = y0 + 1 + i;
		ui_fill(y, 0, COLS, a, " ");
		char clipped[256];
		ui_clip(ui, name, name_w - 1, clipped, sizeof clipped);
		ui_put(ui, y, 1, name_w - 1, a | A_BOLD, clipped);
		snprintf(line, sizeof line, "%6s %7s %7s %7s %7s  ", n, p50, p90, p99, mx);
		int x = name_w + 1;
		x += ui_put(ui, y, x, COLS - x, a, line);
		uint64_t bins[64];
		int bw = hist_w < 64 ? hist_w : 64;
		if (x + bw > COLS)
			bw = COLS - x;
		if (bw <= 0)
			continue;
		uint64_t top = hist_coarse(&e->hist, (size_t)bw, bins);
		attrset(ui_attr(ui, ui_range_slot(e->name_id)) & ~A_REVERSE);
		if (!ui->cells.color)
			attrset(a);
		move(y, x);
		for (int b = 0; b < bw; b++) {
			int lvl = top ? (int)((bins[b] * 8 + top - 1) / top) : 0;
			addstr(ui->cells.g->spark[lvl > 8 ? 8 : lvl]);
		}
	}
}

/*
 * The thread lane the hot panel describes: the selected row's thread, else the thread with the most
 * samples in view. 0 when no thread has samples there.
 */
static int ui_hot_lane(const struct ui *ui, size_t *process, size_t *lane)
{
	uint64_t to = ui_data_end(ui, viewport_end_ns(&ui->view.vp));
	if (ui->lanes.layout.selected < ui->lanes.layout.count) {
		const struct layout_row *r = &ui->lanes.layout.rows[ui->lanes.layout.selected];
		if (layout_is_thread_row(r)) {
			*process = r->process;
			*lane = r->lane;
			return 1;
		}
	}
	size_t most = 0;
	int found = 0;
	for (size_t p = 0; p < store_process_count(ui->store); p++) {
		struct store_process_info pi;
		store_process_get(ui->store, p, &pi);
		for (size_t l = 0; l < pi.lane_count; l++) {
			const struct store_sample *v;
			size_t n = store_lane_samples(ui->store, p, l, ui->view.vp.start_ns, to, &v);
			if (n > most) {
				most = n;
				*process = p;
				*lane = l;
				found = 1;
			}
		}
	}
	return found;
}

/* 1 if a frame is CPython's own code (module python3.x or libpython3.x, symbolised or not: an
 * unsymbolised frame's module is the same file). */
static int ui_hot_is_interpreter(const struct ui *ui, uint32_t frame_id)
{
	const char *mod = store_frame_module(ui->store, frame_id);
	return strncmp(mod, "python3", 7) == 0 || strncmp(mod, "libpython3", 10) == 0;
}

void ui_hot_toggle_order(struct ui *ui)
{
	/* From what is on screen: auto shows inclusive on a Python thread (the header says which). */
	int inclusive =
	    ui->hot.order == UI_HOT_INCLUSIVE || (ui->hot.order == UI_HOT_AUTO && ui->hot.auto_python);
	ui->hot.order = inclusive ? UI_HOT_SELF : UI_HOT_INCLUSIVE;
	ui->hot.shown = 1;
}

/*
 * The hot-functions panel: top functions of one thread in the visible window, by self samples, or
 * by inclusive samples (Python functions only, on a thread with Python frames). Auto order: a
 * Python thread inclusive, any other self. A thread whose listed leaves are mostly CPython's own
 * code (Python without perf trampolines) gets the --python-perf hint once.
 */
void ui_draw_hot(struct ui *ui, int y0, int h)
{
	attr_t ha = ui_attr(ui, THEME_PANEL_HEADER), a = ui_attr(ui, THEME_PANEL);
	char hdr[512], tn[128] = "";
	size_t process = 0, lane = 0;
	struct store_hot_function hot[PANES_HOT_TOP];
	uint64_t samples = 0;
	size_t n = 0;
	int inclusive = 0, python = 0;
	if (ui_hot_lane(ui, &process, &lane)) {
		struct store_lane_info li;
		store_lane_get(ui->store, process, lane, &li);
		snprintf(tn, sizeof tn, "%s %d", li.name && *li.name ? li.name : "thread", (int)li.tid);
		size_t top = h - 1 < PANES_HOT_TOP ? (size_t)(h - 1) : PANES_HOT_TOP;
		uint64_t from = ui->view.vp.start_ns, to = ui_data_end(ui, viewport_end_ns(&ui->view.vp));
		if (ui->hot.order != UI_HOT_SELF) {
			n = store_hot_inclusive(ui->store, process, lane, from, to, top, hot, &samples,
			                        &python);
			inclusive = ui->hot.order == UI_HOT_INCLUSIVE || python;
			ui->hot.auto_python = python;
		}
		if (!inclusive)
			n = store_hot_functions(ui->store, process, lane, from, to, top, hot, &samples);
		/* A Python thread without Python frames: the interpreter's own code is most of the leaves
		 * listed (the rest is what it calls: libc, the loader's TLS lookups). */
		uint64_t interp = 0, listed = 0;
		for (size_t i = 0; i < n && !inclusive; i++) {
			listed += hot[i].self;
			interp += ui_hot_is_interpreter(ui, hot[i].frame_id) ? hot[i].self : 0;
		}
		if (listed && interp * 2 > listed && !ui->hot.suggested && ui->hot.order == UI_HOT_SELF)
			store_hot_inclusive(ui->store, process, lane, from, to, 0, hot, NULL, &python);
		if (listed && interp * 2 > listed && !ui->hot.suggested && !python) {
			ui->hot.suggested = 1;
			/* After attach no flag helps: perf trampolines are turned on when Python starts. */
			struct store_process_info pi;
			store_process_get(ui->store, process, &pi);
			ui_say(ui,
			       pi.features & WIRE_FEATURE_ATTACHED
			           ? "hot: Python function names unavailable after attach: start the program "
			             "under cuscope (--python-perf)"
			           : "hot: only CPython's own frames; with --python-perf (CPython >= 3.12) "
			             "stacks "
			             "show Python functions");
		}
	}
	ui_fill(y0, 0, COLS, ha, " ");
	const char *what = !inclusive ? "Hot functions"
	                   : python   ? "Python functions (inclusive)"
	                              : "Functions (inclusive)";
	const char *other = inclusive ? "i: self" : "i: inclusive";
	if (tn[0])
		snprintf(hdr, sizeof hdr, "%6s %6s %6s  %s of %s in view: %llu samples  (%s, H hides)",
		         inclusive ? "total" : "self", "share", inclusive ? "self" : "total", what, tn,
		         (unsigned long long)samples, other);
	else
		snprintf(hdr, sizeof hdr,
		         "%6s %6s %6s  Hot functions: no thread has samples in view  (H hides)", "self",
		         "share", "total");
	ui_put(ui, y0, 0, COLS, ha | A_BOLD, hdr);
	for (int i = 0; i + 1 < h; i++) {
		int y = y0 + 1 + i;
		ui_fill(y, 0, COLS, a, " ");
		if ((size_t)i >= n)
			continue;
		char line[512], label[1024];
		const char *mod = store_frame_module(ui->store, hot[i].frame_id);
		uint64_t first = inclusive ? hot[i].total : hot[i].self;
		uint64_t second = inclusive ? hot[i].self : hot[i].total;
		snprintf(line, sizeof line, "%6llu %5.1f%% %6llu  ", (unsigned long long)first,
		         cpuview_share(first, samples), (unsigned long long)second);
		int x = ui_put(ui, y, 0, COLS, a, line);
		x += ui_put(ui, y, x, COLS - x, a | A_BOLD,
		            store_frame_label(ui->store, hot[i].frame_id, label, sizeof label));
		if (*mod) {
			ui_put(ui, y, x, COLS - x, a | A_DIM, "  ");
			ui_put(ui, y, x + 2, COLS - x - 2, a | A_DIM, mod);
		}
	}
}

/* Reads the last bytes of the log and returns the start of each of its last max lines. */
static size_t ui_log_tail(const char *path, char *buf, size_t size, char **lines, size_t max)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	struct stat sb;
	size_t n = 0;
	if (fstat(fd, &sb) == 0) {
		off_t off = sb.st_size > (off_t)size - 1 ? sb.st_size - (off_t)size + 1 : 0;
		ssize_t got = pread(fd, buf, size - 1, off);
		n = got > 0 ? (size_t)got : 0;
	}
	close(fd);
	buf[n] = 0;
	/* Split into lines, keeping what a terminal would show: text after the last \r of a line
	 * (progress bars), escape sequences removed. */
	size_t count = 0;
	char *p = buf, *end = buf + n;
	if (n && end[-1] == '\n')
		*--end = 0;
	while (p < end) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		char *line_end = nl ? nl : end;
		*line_end = 0;
		char *cr = strrchr(p, '\r');
		char *line = cr ? cr + 1 : p;
		char *w = line;
		for (char *r = line; *r; r++) {
			if (*r == 0x1b) {
				if (r[1] == '[') {
					r += 2;
					while (*r && !(*r >= 0x40 && *r <= 0x7e))
						r++;
					if (!*r)
						break;
				}
				continue;
			}
			*w++ = *r == '\t' ? ' ' : *r;
		}
		*w = 0;
		if (count < max) {
			lines[count++] = line;
		} else {
			memmove(lines, lines + 1, (max - 1) * sizeof *lines);
			lines[max - 1] = line;
		}
		p = line_end + 1;
	}
	return count;
}

void ui_draw_log(struct ui *ui, const struct ui_status *st, int y0, int h)
{
	char title[512];
	const char *path = st && st->log_path ? st->log_path : NULL;
	ui_fill(y0, 0, COLS, ui_attr(ui, THEME_AXIS), ui->cells.g->hline);
	snprintf(title, sizeof title, " log: %s  (l hides) ", path ? path : "none (output not captured)");
	ui_put(ui, y0, 2, COLS - 4, ui_attr(ui, THEME_AXIS) | A_BOLD, title);
	if (!path || h < 2)
		return;
	static char buf[UI_LOG_TAIL + 1];
	char *lines[256];
	size_t max = (size_t)(h - 1) < 256 ? (size_t)(h - 1) : 256;
	size_t n = ui_log_tail(path, buf, sizeof buf, lines, max);
	for (size_t i = 0; i < n; i++)
		ui_put(ui, y0 + 1 + (int)i, 1, COLS - 1, ui_attr(ui, THEME_LOG), lines[i]);
}

/* A framed box of lines in the middle of the screen. */
void ui_draw_box_lines(struct ui *ui, const char *title, const char *const *lines, int n, const char *footer,
                       int want_w)
{
	int h = n + 3, w = want_w;
	if (h > LINES)
		h = LINES;
	if (w > COLS)
		w = COLS;
	int y0 = (LINES - h) / 2, x0 = (COLS - w) / 2;
	attr_t a = ui_attr(ui, THEME_HELP);
	for (int y = 0; y < h; y++)
		ui_fill(y0 + y, x0, w, a, " ");
	ui_put(ui, y0, x0 + 2, w - 4, a | A_BOLD, title);
	for (int i = 0; i < n && 1 + i < h - 1; i++)
		ui_put(ui, y0 + 1 + i, x0 + 2, w - 4, a, lines[i]);
	ui_put(ui, y0 + h - 1, x0 + 2, w - 4, a | A_DIM, footer);
}

void ui_draw_details(struct ui *ui)
{
	const char *lines[INSPECT_LINES];
	for (int i = 0; i < ui->details.count; i++)
		lines[i] = ui->details.lines[i];
	ui_draw_box_lines(ui, "event details", lines, ui->details.count, "Esc or Enter closes",
	                  COLS - 4 > 110 ? 110 : COLS - 4);
}
