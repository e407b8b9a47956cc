/*
 * The ncurses timeline: status line, GPU utilisation header, time axis with a time cursor, lane
 * gutter and timeline cells (idle GPU gaps shaded), each process's cost rows, NVTX statistics panel,
 * hot functions, log pane, overlays (help, event details) and prompts. Geometry, folding, histograms
 * and utilisation come from the model; themes are data (model/theme.c). The UI is cut by pane (see
 * ui_impl.h); this file owns the terminal and draws one frame: one doupdate per frame.
 */
#include "ui_impl.h"

#include <langinfo.h>
#include <libgen.h>
#include <limits.h>
#include <locale.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cuscope/clock.h"
#include "cuscope/log.h"
#include "cuscope/nvml.h"
#include "cuscope/xalloc.h"

static volatile sig_atomic_t ui_curses_active;
static struct ui *ui_current; /* where log lines go while curses owns the screen */

/* Re-reads the terminal size: the CLI may own SIGWINCH, so don't rely on KEY_RESIZE alone. */
static void ui_check_size(void)
{
	struct winsize ws;
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0 &&
	    (ws.ws_row != LINES || ws.ws_col != COLS))
		resizeterm(ws.ws_row, ws.ws_col);
}

static void ui_signature(struct ui *ui, const struct ui_status *st, struct ui_frame_sig *sig)
{
	memset(sig, 0, sizeof *sig);
	sig->generation = store_generation(ui->store);
	sig->view_start = ui->view.vp.start_ns;
	sig->view_span = ui->view.vp.span_ns;
	sig->now_col = ui_now(ui) / viewport_ns_per_col(&ui->view.vp);
	sig->input_serial = ui->frame.input_serial;
	if (st) {
		sig->command = st->command;
		sig->log_path = st->log_path;
		sig->events_per_s = (long)st->events_per_s;
		sig->gpu_per_s = (long)ui->gpu.rate;
		sig->pid = st->pid;
		sig->live = st->live;
		sig->alive = st->target_alive;
		sig->exit_code = st->exit_code;
		sig->exit_signal = st->exit_signal;
		if (st->log_note)
			snprintf(sig->log_note, sizeof sig->log_note, "%s", st->log_note);
	}
	sig->memory_from = store_memory_from_ns(ui->store);
	sig->ranks_at = ui->ranks.model.computed_at_ns;
	sig->notices = store_notice_total(ui->store);
	sig->lines = LINES;
	sig->cols = COLS;
	sig->message = ui->msg.text[0] && clock_mono_ns() < ui->msg.until;
	sig->nvml_sum = ui->gpu.nvml_sum;
	struct stat sb;
	if (ui->log.shown && st && st->log_path && stat(st->log_path, &sb) == 0) {
		sig->log_size = (long long)sb.st_size;
		sig->log_mtime = (long long)sb.st_mtim.tv_sec * 1000000000ll + sb.st_mtim.tv_nsec;
	}
}

void ui_draw(struct ui *ui, const struct ui_status *status, int force)
{
	if (!ui)
		return;
	ui_check_size();
	ui_update_view(ui, status);
	if ((size_t)ui->view.vp.cols > ui->lanes.seg_cap) {
		ui->lanes.seg_cap = (size_t)ui->view.vp.cols;
		ui->lanes.segs = xrealloc(ui->lanes.segs, ui->lanes.seg_cap * sizeof *ui->lanes.segs);
	}
	ui_update_gpu(ui);
	if (ui->msg.queued_count && clock_mono_ns() >= ui->msg.until) {
		snprintf(ui->msg.text, sizeof ui->msg.text, "%s", ui->msg.queued[0]);
		ui->msg.until = clock_mono_ns() + UI_MESSAGE_NS;
		memmove(ui->msg.queued, ui->msg.queued + 1,
		        (size_t)--ui->msg.queued_count * sizeof ui->msg.queued[0]);
	}
	ui_rebuild_layout(ui, 0);
	if (!ui->view.paused)
		nvtx_stats_update(&ui->nvtx.stats, ui->store);
	ui_ranks_update(ui);
	if (!ui->gpu.nvml_tried && store_gpu_event_count(ui->store)) {
		ui->gpu.nvml_tried = 1;
		ui->gpu.nvml = nvml_open();
	}
	ui->gpu.nvml_sum = 0;

	struct ui_frame_sig sig;
	ui_signature(ui, status, &sig);
	sig.nvml_sum = ui->frame.last.nvml_sum; /* NVML changes show with the next data change */
	if (!force && ui->frame.drawn_once && memcmp(&sig, &ui->frame.last, sizeof sig) == 0)
		return;

	ui_collect_devices(ui);
	struct panes_input pin = {.lines = LINES,
	                          .cols = COLS,
	                          .devices = ui->gpu.device_count,
	                          .log_shown = ui->log.shown,
	                          .nvtx_shown = ui_panel_shown(ui),
	                          .nvtx_rows = ui->nvtx.stats.count,
	                          .hot_shown = ui->hot.shown,
	                          .ranks_shown = ui->ranks.shown,
	                          .ranks_rows = ui->ranks.model.count};
	panes_compute(&pin, &ui->panes);
	const struct panes *pn = &ui->panes;
	int hdr_h = pn->header_h, lanes_y = pn->lanes_y, lanes_h = pn->lanes_h;
	ui->lanes.height = (size_t)lanes_h;
	layout_clamp(&ui->lanes.layout, ui->lanes.height);

	erase();
	ui_draw_status(ui, status);
	for (int i = 0; i < hdr_h; i++)
		ui_draw_gpu_header(ui, 1 + i, &ui->gpu.devices[i]);
	sig.nvml_sum = ui->gpu.nvml_sum;
	ui->frame.last = sig;
	ui->frame.drawn_once = 1;
	ui->frame.count++;
	if (pn->axis_h)
		ui_draw_axis(ui, pn->axis_y);
	ui_density_scale(ui, ui->lanes.layout.top, (size_t)lanes_h);
	for (int i = 0; i < lanes_h; i++) {
		size_t idx = ui->lanes.layout.top + (size_t)i;
		if (idx >= ui->lanes.layout.count) {
			ui_put(ui, lanes_y + i, ui_gutter() - 1, 1, ui_attr(ui, THEME_AXIS),
			       ui->cells.g->vline);
			continue;
		}
		ui_draw_lane_row(ui, lanes_y + i, &ui->lanes.layout.rows[idx],
		                 idx == ui->lanes.layout.selected);
	}
	ui_draw_evicted_band(ui, lanes_y, lanes_h);
	if (ui->lanes.layout.count == 0 && lanes_h > 0)
		ui_put(ui, lanes_y, ui_gutter() + 1, ui->view.vp.cols - 1, ui_attr(ui, THEME_NORMAL) | A_DIM,
		       status && status->live ? "waiting for the target's first events..." : "no events");
	if (pn->ranks_h > 0)
		ui_draw_ranks(ui, pn->ranks_y, pn->ranks_h);
	if (pn->hot_h > 1)
		ui_draw_hot(ui, pn->hot_y, pn->hot_h);
	if (pn->nvtx_h > 0)
		ui_draw_panel(ui, pn->nvtx_y, pn->nvtx_h);
	if (pn->log_h > 0)
		ui_draw_log(ui, status, pn->log_y, pn->log_h);
	if (pn->bottom_y >= 0)
		ui_draw_bottom(ui, pn->bottom_y);
	if (ui->overlay == UI_OVERLAY_HELP)
		ui_draw_help(ui);
	else if (ui->overlay == UI_OVERLAY_DETAILS)
		ui_draw_details(ui);
	attrset(A_NORMAL);
	wnoutrefresh(stdscr);
	doupdate();
}

/* log_warn/log_error while curses owns the screen would scribble over it: show them instead. */
static void ui_log_sink(const char *line)
{
	if (ui_current)
		ui_message(ui_current, line);
}

/* The directory of the running binary, for themes installed beside it. */
static void ui_find_exe_dir(struct ui *ui)
{
	char path[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
	ui->cells.exe_dir[0] = 0;
	if (n <= 0)
		return;
	path[n] = 0;
	snprintf(ui->cells.exe_dir, sizeof ui->cells.exe_dir, "%s", dirname(path));
}

struct ui *ui_new_on(struct store *store, const struct ui_options *options, FILE *out, FILE *in,
                     const char **cause)
{
	setlocale(LC_ALL, "");
	struct ui *ui = xcalloc(1, sizeof *ui);
	ui->store = store;
	if (options)
		ui->options = *options;
	const char *codeset = nl_langinfo(CODESET);
	int utf8 = codeset && (strcmp(codeset, "UTF-8") == 0 || strcmp(codeset, "utf8") == 0);
	ui->cells.g = utf8 && !ui->options.ascii ? &ui_glyphs_utf8 : &ui_glyphs_ascii;
	double gap_ms = ui->options.gap_ms > 0   ? ui->options.gap_ms
	                : ui->options.gap_ms < 0 ? 0
	                                         : UI_DEFAULT_GAP_MS;
	ui->view.gap_ns = (uint64_t)(gap_ms * 1e6);
	ui->view.cursor_col = -1;
	ui_find_exe_dir(ui);

	ui->cells.screen = newterm(NULL, out, in);
	if (!ui->cells.screen) {
		if (cause)
			*cause = "cannot initialise the terminal (check TERM)";
		free(ui);
		return NULL;
	}
	set_term(ui->cells.screen);
	ui_curses_active = 1;
	cbreak(); /* not raw: Ctrl-C must stay a signal for the CLI */
	noecho();
	nonl();
	keypad(stdscr, TRUE);
	nodelay(stdscr, TRUE);
	set_escdelay(25);
	curs_set(0);
	if (!ui->options.no_mouse) {
		mousemask(BUTTON1_PRESSED | BUTTON1_RELEASED | BUTTON4_PRESSED | BUTTON5_PRESSED |
		              REPORT_MOUSE_POSITION,
		          NULL);
		mouseinterval(0);
	}
	ui_init_colors(ui);
	theme_parse(&ui->cells.mono, theme_builtin_text("mono"), NULL, 0);
	ui_load_theme(ui, ui->options.theme && *ui->options.theme ? ui->options.theme : "dark", 1);
	for (size_t i = 0; theme_builtin_names[i]; i++)
		if (strcmp(theme_builtin_names[i], ui->cells.theme.name) == 0)
			ui->cells.theme_index = i;
	layout_init(&ui->lanes.layout);
	inspect_find_init(&ui->find);
	nvtx_stats_init(&ui->nvtx.stats);
	rankspane_init(&ui->ranks.model);
	viewport_set(&ui->view.vp, 0, ui_window_ns(ui), ui_timeline_cols());
	ui_current = ui;
	log_set_sink(ui_log_sink);
	return ui;
}

struct ui *ui_new(struct store *store, const struct ui_options *options, const char **cause)
{
	if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
		if (cause)
			*cause = "the live view needs a terminal on standard input and output";
		return NULL;
	}
	return ui_new_on(store, options, stdout, stdin, cause);
}

void ui_free(struct ui *ui)
{
	if (!ui)
		return;
	if (ui_current == ui) {
		log_set_sink(NULL);
		ui_current = NULL;
	}
	if (ui_curses_active) {
		endwin();
		ui_curses_active = 0;
	}
	if (ui->cells.screen)
		delscreen(ui->cells.screen);
	layout_fini(&ui->lanes.layout);
	nvtx_stats_fini(&ui->nvtx.stats);
	rankspane_fini(&ui->ranks.model);
	ui_steps_fini(&ui->steps);
	nvml_close(ui->gpu.nvml);
	for (size_t i = 0; i < UI_MAX_DEVICES; i++)
		free(ui->gpu.devices[i].rows);
	free(ui->nvtx.order);
	inspect_find_fini(&ui->find);
	free(ui->lanes.segs);
	free(ui->lanes.density);
	free(ui->cost.cells);
	free(ui->triggers.time_ns);
	free(ui->triggers.expr);
	free(ui->metrics.cells);
	free(ui->metrics.have);
	free(ui);
}

void ui_emergency_restore(void)
{
	if (ui_curses_active) {
		ui_curses_active = 0;
		endwin();
	}
}
