/*
 * The ncurses timeline: status line, time axis, lane gutter and timeline cells, log pane, help and
 * quit prompt. Geometry and folding come from the model (viewport, layout); this file only turns
 * them into cells and keys into view changes.
 */
#define NCURSES_WIDECHAR 1
#include "cuscope/ui.h"

#include <curses.h>
#include <errno.h>
#include <fcntl.h>
#include <langinfo.h>
#include <locale.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <wchar.h>

#include "cuscope/clock.h"
#include "cuscope/layout.h"
#include "cuscope/log.h"
#include "cuscope/store.h"
#include "cuscope/viewport.h"
#include "cuscope/wire.h"
#include "cuscope/xalloc.h"

#define UI_GUTTER       24 /* label cells plus the separator */
#define UI_MESSAGE_NS   (3ull * 1000000000ull)
#define UI_LOG_TAIL     (64 * 1024) /* bytes of the log read per draw */
#define UI_DEFAULT_SPAN (10ull * 1000000000ull)
#define UI_RANGE_COLORS 6

/* Colour slots: the built-in dark theme. mono is what a slot looks like without colour. */
enum ui_slot {
	SLOT_NORMAL = 0,
	SLOT_STATUS,
	SLOT_STATUS_LIVE,
	SLOT_AXIS,
	SLOT_PROCESS,
	SLOT_THREAD,
	SLOT_FOLD,
	SLOT_MARK,
	SLOT_BASELINE,
	SLOT_LOG,
	SLOT_HELP,
	SLOT_MESSAGE,
	SLOT_PROMPT,
	SLOT_GPU_HEADER, /* "GPU0 H200" device header */
	SLOT_COPY,       /* memcpy boxes */
	SLOT_MEMSET,
	SLOT_SYNC,   /* host waits */
	SLOT_API,    /* CUDA API calls wide enough for a name */
	SLOT_RANGE0, /* UI_RANGE_COLORS slots for range boxes, picked by name */
	SLOT_COUNT = SLOT_RANGE0 + UI_RANGE_COLORS,
};

struct ui_color {
	short fg, bg;
	attr_t attr; /* added in colour mode */
	attr_t mono; /* used alone without colour */
};

static const struct ui_color ui_palette[SLOT_COUNT] = {
    [SLOT_NORMAL] = {-1, -1, A_NORMAL, A_NORMAL},
    [SLOT_STATUS] = {COLOR_WHITE, COLOR_BLUE, A_NORMAL, A_REVERSE},
    [SLOT_STATUS_LIVE] = {COLOR_GREEN, COLOR_BLUE, A_BOLD, A_REVERSE | A_BOLD},
    [SLOT_AXIS] = {COLOR_CYAN, -1, A_NORMAL, A_NORMAL},
    [SLOT_PROCESS] = {COLOR_YELLOW, -1, A_BOLD, A_BOLD},
    [SLOT_THREAD] = {COLOR_WHITE, -1, A_NORMAL, A_NORMAL},
    [SLOT_FOLD] = {COLOR_YELLOW, -1, A_NORMAL, A_NORMAL},
    [SLOT_MARK] = {COLOR_RED, -1, A_BOLD, A_BOLD},
    [SLOT_BASELINE] = {COLOR_BLUE, -1, A_NORMAL, A_DIM},
    [SLOT_LOG] = {COLOR_WHITE, -1, A_NORMAL, A_NORMAL},
    [SLOT_HELP] = {COLOR_WHITE, COLOR_BLUE, A_NORMAL, A_REVERSE},
    [SLOT_MESSAGE] = {COLOR_YELLOW, -1, A_BOLD, A_BOLD},
    [SLOT_PROMPT] = {COLOR_BLACK, COLOR_YELLOW, A_NORMAL, A_REVERSE},
    [SLOT_GPU_HEADER] = {COLOR_GREEN, -1, A_BOLD, A_BOLD},
    [SLOT_COPY] = {COLOR_MAGENTA, -1, A_BOLD, A_NORMAL},
    [SLOT_MEMSET] = {COLOR_CYAN, -1, A_BOLD, A_NORMAL},
    [SLOT_SYNC] = {COLOR_RED, -1, A_BOLD, A_BOLD},
    [SLOT_API] = {COLOR_WHITE, -1, A_DIM, A_DIM},
    [SLOT_RANGE0 + 0] = {COLOR_BLACK, COLOR_GREEN, A_NORMAL, A_NORMAL},
    [SLOT_RANGE0 + 1] = {COLOR_BLACK, COLOR_CYAN, A_NORMAL, A_NORMAL},
    [SLOT_RANGE0 + 2] = {COLOR_BLACK, COLOR_YELLOW, A_NORMAL, A_NORMAL},
    [SLOT_RANGE0 + 3] = {COLOR_BLACK, COLOR_MAGENTA, A_NORMAL, A_NORMAL},
    [SLOT_RANGE0 + 4] = {COLOR_WHITE, COLOR_BLUE, A_NORMAL, A_NORMAL},
    [SLOT_RANGE0 + 5] = {COLOR_WHITE, COLOR_RED, A_NORMAL, A_NORMAL},
};

/* Glyph sets: UTF-8 only when the locale says so and --ascii was not given. */
struct ui_glyphs {
	const char *fold;     /* many narrow ranges in one cell */
	const char *mark;     /* an NVTX mark */
	const char *vline;    /* gutter separator */
	const char *hline;    /* process header rule, log pane border */
	const char *baseline; /* thread lifetime */
	const char *single;   /* a range exactly one cell wide */
	const char *open_end; /* right end of a range still open */
	const char *live;     /* status dot */
	const char *arrow;    /* status separator */
	const char *updown;
	const char *leftright;
	const char *block; /* kernel fill without colour, and a one-cell kernel */
	const char *bar;   /* copy / memset / sync fill */
};

static const struct ui_glyphs ui_glyphs_utf8 = {"▮", "◆", "│",   "─",   "─", "█", "▶",
                                                "●", "▸", "↑/↓", "←/→", "█", "▬"};
static const struct ui_glyphs ui_glyphs_ascii = {"|", "*", "|",     "-",     "-", "#", ">",
                                                 "*", ">", "Up/Dn", "Lt/Rt", "#", "="};

struct ui_frame_sig {
	uint64_t generation;
	uint64_t view_start, view_span;
	uint64_t now_col; /* now in cells: open ranges grow even while paused */
	const char *command, *log_path;
	long events_per_s;
	long gpu_per_s;
	uint64_t notices;
	int pid, live, alive, exit_code, exit_signal;
	int lines, cols, follow, show_log, show_help, prompt, message;
	size_t top, selected;
	long long log_size, log_mtime;
};

struct ui {
	struct store *store;
	struct ui_options options;
	SCREEN *screen;
	const struct ui_glyphs *g;
	int color;

	struct viewport vp;
	int view_ready; /* vp set from the data once */
	int follow;     /* live view tracks now */
	uint64_t now_ns;
	uint64_t gen_built; /* store generation the layout was built from */
	struct layout layout;
	size_t lanes_height; /* rows for lanes in the last frame */

	int show_log, show_help, prompt_quit;
	char message[256];
	uint64_t message_until;

	struct viewport_seg *segs;
	size_t seg_cap;

	struct ui_frame_sig last;
	int drawn_once;

	uint64_t gpu_rate_t0, gpu_rate_c0; /* last GPU rate sample: time, store_gpu_event_count */
	double gpu_rate;                   /* GPU records per second */
	uint64_t notice_shown;             /* store_notice_total already put on the message line */
};

static volatile sig_atomic_t ui_curses_active;
static struct ui *ui_current; /* where log lines go while curses owns the screen */

/* ---- small helpers ----------------------------------------------------------------------- */

static attr_t ui_attr(const struct ui *ui, enum ui_slot slot)
{
	if (!ui->color)
		return ui_palette[slot].mono;
	return COLOR_PAIR(slot) | ui_palette[slot].attr;
}

static enum ui_slot ui_range_slot(uint32_t name_id)
{
	uint32_t h = name_id * 2654435761u; /* spread neighbouring ids over the colours */
	return SLOT_RANGE0 + (h >> 16) % UI_RANGE_COLORS;
}

/*
 * Copies up to maxw display cells of s into out, replacing what the terminal cannot show (control
 * bytes, invalid UTF-8, non-ASCII without a UTF-8 locale) by '?'. Returns the cells used.
 */
static int ui_clip(const struct ui *ui, const char *s, int maxw, char *out, size_t outsz)
{
	size_t o = 0;
	int w = 0;
	mbstate_t st;
	memset(&st, 0, sizeof st);
	while (*s && w < maxw && o + 8 < outsz) {
		unsigned char c = (unsigned char)*s;
		if (c < 0x80) {
			out[o++] = (c < 0x20 || c == 0x7f) ? ' ' : (char)c;
			w++;
			s++;
			continue;
		}
		if (ui->g == &ui_glyphs_ascii) {
			/* One '?' per character: continuation bytes of UTF-8 add nothing. */
			if ((c & 0xc0) != 0x80) {
				out[o++] = '?';
				w++;
			}
			s++;
			continue;
		}
		wchar_t wc;
		size_t len = mbrtowc(&wc, s, MB_CUR_MAX, &st);
		int cw = (len == (size_t)-1 || len == (size_t)-2 || len == 0) ? -1 : wcwidth(wc);
		if (cw < 0) {
			memset(&st, 0, sizeof st);
			out[o++] = '?';
			w++;
			s++;
			continue;
		}
		if (w + cw > maxw)
			break;
		memcpy(out + o, s, len);
		o += len;
		w += cw;
		s += len;
	}
	out[o] = 0;
	return w;
}

/* Writes s at (y, x) clipped to maxw cells with attribute a; returns the cells written. */
static int ui_put(const struct ui *ui, int y, int x, int maxw, attr_t a, const char *s)
{
	char buf[1024];
	if (maxw <= 0 || x >= COLS || y >= LINES)
		return 0;
	if (x + maxw > COLS)
		maxw = COLS - x;
	int w = ui_clip(ui, s, maxw, buf, sizeof buf);
	attrset(a);
	mvaddstr(y, x, buf);
	return w;
}

/* Fills cells [x, x + n) of row y with one glyph. */
static void ui_fill(int y, int x, int n, attr_t a, const char *glyph)
{
	if (x + n > COLS)
		n = COLS - x;
	attrset(a);
	move(y, x);
	for (int i = 0; i < n; i++)
		addstr(glyph);
}

static void ui_format_span(char *buf, size_t size, uint64_t ns)
{
	if (ns >= 1000000000ull)
		snprintf(buf, size, "%.1fs", (double)ns / 1e9);
	else if (ns >= 1000000ull)
		snprintf(buf, size, "%.1fms", (double)ns / 1e6);
	else
		snprintf(buf, size, "%.1fus", (double)ns / 1e3);
}

static void ui_format_rate(char *buf, size_t size, double rate)
{
	if (rate >= 1e6)
		snprintf(buf, size, "%.2fM", rate / 1e6);
	else if (rate >= 1e3)
		snprintf(buf, size, "%.0fk", rate / 1e3);
	else
		snprintf(buf, size, "%.0f", rate);
}

/* ---- view state ---------------------------------------------------------------------------- */

static int ui_gutter(void)
{
	return COLS < 3 * UI_GUTTER ? COLS / 3 : UI_GUTTER;
}

static int ui_timeline_cols(void)
{
	int c = COLS - ui_gutter();
	return c > 1 ? c : 1;
}

/* "Now" for drawing: the CLI's clock when live, else the end of the data. */
static uint64_t ui_now(const struct ui *ui)
{
	return ui->now_ns ? ui->now_ns : store_last_ns(ui->store);
}

/* Time labelled 0 on the axis: the first process's start. */
static uint64_t ui_origin(const struct ui *ui)
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

static uint64_t ui_window_ns(const struct ui *ui)
{
	double w = ui->options.window_s;
	return w > 0 ? (uint64_t)(w * 1e9) : UI_DEFAULT_SPAN;
}

/* Zoom-out limit: the whole retained window, but never less than the configured window. */
static uint64_t ui_max_span(const struct ui *ui)
{
	uint64_t first = store_first_ns(ui->store), end = ui_now(ui);
	uint64_t retained = end > first ? end - first : 0;
	uint64_t w = ui_window_ns(ui);
	return retained > w ? retained : w;
}

/* Places the right edge on now, aligned to whole cells so columns don't shimmer as time moves. */
static void ui_follow_now(struct ui *ui)
{
	uint64_t npc = viewport_ns_per_col(&ui->vp);
	uint64_t now = ui_now(ui);
	uint64_t right = (now / npc + 1) * npc;
	ui->vp.start_ns = right > ui->vp.span_ns ? right - ui->vp.span_ns : 0;
	/* Until the data fills the window it grows from the left edge: no empty time before it. */
	uint64_t first = store_first_ns(ui->store), origin = ui_origin(ui);
	uint64_t floor_ns = first && first < origin ? first : origin;
	if (ui->vp.start_ns < floor_ns)
		ui->vp.start_ns = floor_ns;
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

static void ui_update_view(struct ui *ui, const struct ui_status *status)
{
	ui->now_ns = status && status->live ? status->now_ns : 0;
	/* Once nothing can send any more, "now" is the end of the data: following an empty future
	 * would only scroll the capture off the screen. */
	if (ui->now_ns && !status->target_alive && !ui_any_connected(ui) && store_last_ns(ui->store))
		ui->now_ns = store_last_ns(ui->store);
	ui->vp.cols = ui_timeline_cols();
	if (!ui->view_ready) {
		if (status && status->live) {
			viewport_set(&ui->vp, 0, ui_window_ns(ui), ui_timeline_cols());
			ui->follow = 1;
			ui->view_ready = 1;
		} else if (store_event_count(ui->store) > 0) {
			/* A capture opens showing all of it. */
			uint64_t first = store_first_ns(ui->store), last = store_last_ns(ui->store);
			uint64_t span = last > first ? last - first : 0;
			if (span < VIEWPORT_MIN_SPAN_NS)
				span = VIEWPORT_MIN_SPAN_NS;
			viewport_set(&ui->vp, first, span + span / 50, ui_timeline_cols());
			ui->follow = 0;
			ui->view_ready = 1;
		} else {
			viewport_set(&ui->vp, 0, ui_window_ns(ui), ui_timeline_cols());
		}
	}
	if (status && !status->live)
		ui->follow = 0;
	if (ui->follow)
		ui_follow_now(ui);
}

/* ---- key handlers -------------------------------------------------------------------------- */

typedef int (*ui_key_fn)(struct ui *ui, const struct ui_status *status);

static int ui_key_quit(struct ui *ui, const struct ui_status *status)
{
	if (status && status->live && status->target_alive) {
		ui->prompt_quit = 1;
		return UI_ACTION_NONE;
	}
	return UI_ACTION_QUIT;
}

static int ui_key_interrupt(struct ui *ui, const struct ui_status *status)
{
	(void)ui;
	(void)status;
	return UI_ACTION_INTERRUPT;
}

static int ui_key_pause(struct ui *ui, const struct ui_status *status)
{
	if (status && status->live)
		ui->follow = !ui->follow;
	return UI_ACTION_NONE;
}

static void ui_zoom(struct ui *ui, double factor)
{
	uint64_t around = ui->follow ? ui_now(ui) : ui->vp.start_ns + ui->vp.span_ns / 2;
	viewport_zoom(&ui->vp, factor, around, VIEWPORT_MIN_SPAN_NS, ui_max_span(ui));
	if (ui->follow)
		ui_follow_now(ui);
}

static int ui_key_zoom_in(struct ui *ui, const struct ui_status *status)
{
	(void)status;
	ui_zoom(ui, 0.5);
	return UI_ACTION_NONE;
}

static int ui_key_zoom_out(struct ui *ui, const struct ui_status *status)
{
	(void)status;
	ui_zoom(ui, 2.0);
	return UI_ACTION_NONE;
}

static void ui_pan(struct ui *ui, int dir)
{
	int step = ui->vp.cols / 8 > 0 ? ui->vp.cols / 8 : 1;
	ui->follow = 0; /* looking back in time means not following now */
	viewport_pan(&ui->vp, (int64_t)dir * step);
	uint64_t end = ui_now(ui);
	if (ui->vp.start_ns > end)
		ui->vp.start_ns = end;
}

static int ui_key_left(struct ui *ui, const struct ui_status *status)
{
	(void)status;
	ui_pan(ui, -1);
	return UI_ACTION_NONE;
}

static int ui_key_right(struct ui *ui, const struct ui_status *status)
{
	(void)status;
	ui_pan(ui, 1);
	return UI_ACTION_NONE;
}

static int ui_key_home(struct ui *ui, const struct ui_status *status)
{
	(void)status;
	ui->follow = 0;
	uint64_t first = store_first_ns(ui->store);
	ui->vp.start_ns = first ? first : ui_origin(ui);
	return UI_ACTION_NONE;
}

static int ui_key_end(struct ui *ui, const struct ui_status *status)
{
	if (status && status->live) {
		ui->follow = 1;
		ui_follow_now(ui);
	} else {
		uint64_t last = store_last_ns(ui->store);
		ui->vp.start_ns = last > ui->vp.span_ns ? last - ui->vp.span_ns : 0;
	}
	return UI_ACTION_NONE;
}

static int ui_key_up(struct ui *ui, const struct ui_status *status)
{
	(void)status;
	layout_select(&ui->layout, -1, ui->lanes_height);
	return UI_ACTION_NONE;
}

static int ui_key_down(struct ui *ui, const struct ui_status *status)
{
	(void)status;
	layout_select(&ui->layout, 1, ui->lanes_height);
	return UI_ACTION_NONE;
}

static int ui_key_page_up(struct ui *ui, const struct ui_status *status)
{
	(void)status;
	layout_select(&ui->layout, -(long)(ui->lanes_height ? ui->lanes_height : 1), ui->lanes_height);
	return UI_ACTION_NONE;
}

static int ui_key_page_down(struct ui *ui, const struct ui_status *status)
{
	(void)status;
	layout_select(&ui->layout, (long)(ui->lanes_height ? ui->lanes_height : 1), ui->lanes_height);
	return UI_ACTION_NONE;
}

static int ui_key_log(struct ui *ui, const struct ui_status *status)
{
	(void)status;
	ui->show_log = !ui->show_log;
	return UI_ACTION_NONE;
}

static int ui_key_help(struct ui *ui, const struct ui_status *status)
{
	(void)status;
	ui->show_help = !ui->show_help;
	return UI_ACTION_NONE;
}

static int ui_key_escape(struct ui *ui, const struct ui_status *status)
{
	(void)status;
	if (ui->show_help)
		ui->show_help = 0;
	else
		ui->show_log = 0;
	return UI_ACTION_NONE;
}

static int ui_key_resize(struct ui *ui, const struct ui_status *status)
{
	(void)ui;
	(void)status;
	return UI_ACTION_NONE; /* the next draw picks up LINES/COLS */
}

/* One row per binding; label NULL hides an alias from the help overlay. */
struct ui_key {
	int key;
	const char *label;
	const char *help;
	ui_key_fn fn;
};

static const struct ui_key ui_keys[] = {
    {'q', "q", "quit (asks whether to detach or stop a running target)", ui_key_quit},
    {' ', "space", "pause / resume following now", ui_key_pause},
    {'+', "+ -", "zoom in / out around the centre", ui_key_zoom_in},
    {'=', NULL, NULL, ui_key_zoom_in},
    {'-', NULL, NULL, ui_key_zoom_out},
    {KEY_LEFT, "LR", "pan back / forward in time (pauses)", ui_key_left},
    {KEY_RIGHT, NULL, NULL, ui_key_right},
    {KEY_HOME, "Home", "go to the start of the data", ui_key_home},
    {KEY_END, "End", "go to now and follow it", ui_key_end},
    {KEY_UP, "UD", "select a lane (scrolls)", ui_key_up},
    {KEY_DOWN, NULL, NULL, ui_key_down},
    {KEY_PPAGE, "PgUp PgDn", "scroll lanes by a page", ui_key_page_up},
    {KEY_NPAGE, NULL, NULL, ui_key_page_down},
    {'l', "l", "show / hide the target's output log", ui_key_log},
    {'?', "?", "show / hide this help", ui_key_help},
    {27, "Esc", "close the help or the log pane", ui_key_escape},
    {KEY_RESIZE, NULL, NULL, ui_key_resize},
    {3, NULL, NULL, ui_key_interrupt},
};

/* Keys while the quit prompt is up: anything else cancels. */
static int ui_prompt_key(struct ui *ui, int key)
{
	ui->prompt_quit = 0;
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

int ui_handle_input(struct ui *ui, const struct ui_status *status)
{
	int actions = 0;
	int key;
	while ((key = getch()) != ERR) {
		if (key == KEY_RESIZE || ui->prompt_quit == 0) {
			for (size_t i = 0; i < sizeof ui_keys / sizeof ui_keys[0]; i++) {
				if (ui_keys[i].key == key) {
					actions |= ui_keys[i].fn(ui, status);
					break;
				}
			}
		} else {
			actions |= ui_prompt_key(ui, key);
		}
		if (actions & (UI_ACTION_QUIT | UI_ACTION_DETACH | UI_ACTION_STOP))
			break;
	}
	return actions;
}

/* ---- drawing --------------------------------------------------------------------------------- */

static void ui_draw_status(struct ui *ui, const struct ui_status *st)
{
	char line[1024], state[64], span[32], rate[32];
	attr_t a = ui_attr(ui, SLOT_STATUS);
	ui_fill(0, 0, COLS, a, " ");

	if (!st || !st->live)
		snprintf(state, sizeof state, "CAPTURE");
	else if (st->target_alive)
		snprintf(state, sizeof state, "%s LIVE%s", ui->g->live, ui->follow ? "" : " (paused)");
	else if (st->exit_signal)
		snprintf(state, sizeof state, "EXITED (signal %d)", st->exit_signal);
	else
		snprintf(state, sizeof state, "EXITED (code %d)", st->exit_code);
	ui_format_span(span, sizeof span, ui->vp.span_ns);
	ui_format_rate(rate, sizeof rate, st ? st->events_per_s : 0);

	int x = ui_put(ui, 0, 0, COLS, a | A_BOLD, " cuscope ");
	snprintf(line, sizeof line, "%s %s ", ui->g->arrow, st && st->command ? st->command : "");
	/* The command gets what the rest leaves, but at least some of it shows. */
	int room = COLS - x - 60;
	x += ui_put(ui, 0, x, room > 12 ? room : 12, a, line);
	if (st && st->pid) {
		snprintf(line, sizeof line, " pid %d ", (int)st->pid);
		x += ui_put(ui, 0, x, COLS - x, a, line);
	}
	x += ui_put(ui, 0, x, COLS - x,
	            st && st->live && st->target_alive ? ui_attr(ui, SLOT_STATUS_LIVE) : a | A_BOLD, state);
	snprintf(line, sizeof line, "  window %s  %s ev/s  drops %llu", span, rate,
	         (unsigned long long)store_loss_total(ui->store));
	x += ui_put(ui, 0, x, COLS - x, a, line);
	uint64_t gpu = store_gpu_event_count(ui->store);
	if (gpu) {
		if (st && st->live) {
			ui_format_rate(rate, sizeof rate, ui->gpu_rate);
			snprintf(line, sizeof line, "  gpu %s/s", rate);
		} else {
			ui_format_rate(rate, sizeof rate, (double)gpu);
			snprintf(line, sizeof line, "  gpu %s", rate);
		}
		x += ui_put(ui, 0, x, COLS - x, a, line);
	}
	uint64_t cupti = store_loss_count(ui->store, WIRE_LOSS_CUPTI_DROPPED) +
	                 store_loss_count(ui->store, WIRE_LOSS_GPU_BUFFER);
	if (cupti) {
		snprintf(line, sizeof line, "  cupti drops %llu", (unsigned long long)cupti);
		x += ui_put(ui, 0, x, COLS - x, ui_attr(ui, SLOT_STATUS_LIVE), line);
	}
	if (st && st->log_path && COLS - x - 8 >= 16) {
		snprintf(line, sizeof line, "  log %s", st->log_path);
		x += ui_put(ui, 0, x, COLS - x - 8, a, line);
	}
	if (COLS - x >= 8)
		ui_put(ui, 0, COLS - 7, 7, a, "? help ");
}

static void ui_draw_axis(struct ui *ui, int y)
{
	int gx = ui_gutter();
	attr_t a = ui_attr(ui, SLOT_AXIS);
	struct viewport_tick ticks[128];
	size_t n = viewport_ticks(&ui->vp, ui_origin(ui), ticks, 128);
	int next_free = 0;
	for (size_t i = 0; i < n; i++) {
		int x = gx + ticks[i].col;
		int w = (int)strlen(ticks[i].label);
		if (ticks[i].col < next_free || x + w > COLS)
			continue;
		ui_put(ui, y, x, w, a, ticks[i].label);
		next_free = ticks[i].col + w + 1;
	}
	if (gx + next_free + 2 <= COLS)
		ui_put(ui, y, COLS - 2, 2, a, " s");
	ui_put(ui, y, 0, gx - 1, a | A_DIM, " time");
	ui_put(ui, y, gx - 1, 1, a, ui->g->vline);
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
		ui_put(ui, y, gx + col0, 1, a, open ? ui->g->open_end : (ui->color ? " " : ui->g->single));
		return;
	}
	char text[1024];
	size_t o = 0;
	int used = 0;
	const char *filler = ui->color ? " " : ".";
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
		ui_put(ui, y, gx + col1 - 1, 1, a, open ? ui->g->open_end : "]");
}

/* Ranges of one store row: completed ones folded into cells, then the open ones up to now. */
static void ui_draw_ranges(struct ui *ui, int y, size_t process, size_t lane, size_t row,
                           const struct store_lane_info *li)
{
	const struct store_range *r;
	uint64_t from = ui->vp.start_ns, to = viewport_end_ns(&ui->vp);
	size_t n = store_lane_row_query(ui->store, process, lane, row, from, to, &r);
	size_t ns = viewport_fold(&ui->vp, r, n, ui->segs, ui->seg_cap);
	for (size_t i = 0; i < ns; i++) {
		const struct viewport_seg *s = &ui->segs[i];
		if (s->kind == VIEWPORT_SEG_FOLD) {
			attr_t a = ui_attr(ui, SLOT_FOLD) | (s->count >= 8 ? A_BOLD : 0);
			ui_put(ui, y, ui_gutter() + s->col0, 1, a, ui->g->fold);
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
		if (orow != row || o.start_ns >= to || now < from)
			continue;
		int64_t c0 = viewport_col_of(&ui->vp, o.start_ns);
		int64_t c1 = viewport_col_of(&ui->vp, now > o.start_ns ? now : o.start_ns);
		int clip_left = c0 < 0;
		int clip_right = c1 >= ui->vp.cols;
		if (c0 < 0)
			c0 = 0;
		if (c1 >= ui->vp.cols)
			c1 = ui->vp.cols - 1;
		ui_draw_box(ui, y, (int)c0, (int)c1 + 1, clip_left, clip_right, 1, o.name_id);
	}
}

/* Thread row: its lifetime as a faint line and its marks. */
static void ui_draw_thread_line(struct ui *ui, int y, size_t process, size_t lane,
                                const struct store_lane_info *li)
{
	int gx = ui_gutter();
	uint64_t end = li->end_ns ? li->end_ns : ui_now(ui);
	int64_t c0 = viewport_col_of(&ui->vp, li->first_ns);
	int64_t c1 = viewport_col_of(&ui->vp, end);
	if (c0 < 0)
		c0 = 0;
	if (c1 >= ui->vp.cols)
		c1 = ui->vp.cols - 1;
	if (li->first_ns && c1 >= c0)
		ui_fill(y, gx + (int)c0, (int)(c1 - c0 + 1), ui_attr(ui, SLOT_BASELINE), ui->g->baseline);

	const struct store_range *m;
	size_t n =
	    store_lane_mark_query(ui->store, process, lane, ui->vp.start_ns, viewport_end_ns(&ui->vp), &m);
	size_t ns = viewport_fold(&ui->vp, m, n, ui->segs, ui->seg_cap);
	for (size_t i = 0; i < ns; i++)
		ui_put(ui, y, gx + ui->segs[i].col0, 1, ui_attr(ui, SLOT_MARK), ui->g->mark);
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
	case WIRE_GPU_KERNEL:
		a = ui_attr(ui, ui_range_slot(op->name_id));
		snprintf(label, sizeof label, "%s", store_short_name(ui->store, op->name_id));
		fill = ui->color ? " " : ui->g->block;
		if (w == 1) {
			ui_put(ui, y, gx + seg->col0, 1, a, ui->color ? " " : ui->g->block);
			return;
		}
		break;
	case WIRE_GPU_MEMCPY:
		a = ui_attr(ui, SLOT_COPY);
		ui_copy_label(op->subkind, label, sizeof label);
		fill = ui->g->bar;
		break;
	case WIRE_GPU_MEMSET:
		a = ui_attr(ui, SLOT_MEMSET);
		snprintf(label, sizeof label, "memset");
		fill = ui->g->bar;
		break;
	case WIRE_GPU_SYNC:
		a = ui_attr(ui, SLOT_SYNC);
		snprintf(label, sizeof label, "sync");
		fill = ui->g->bar;
		break;
	default: /* API calls: a launch is a ▮, a long call shows its name */
		a = ui_attr(ui, SLOT_API);
		if (w == 1) {
			ui_put(ui, y, gx + seg->col0, 1, a, ui->g->fold);
			return;
		}
		snprintf(label, sizeof label, "%s", store_string(ui->store, op->name_id));
		fill = ui->g->bar;
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

/* One gpu row of a stream or thread lane: ops folded into cells, O(cells · log n). */
static void ui_draw_gpu_row(struct ui *ui, int y, size_t process, size_t lane, size_t row)
{
	const struct store_gpu_op *ops;
	size_t n = store_lane_gpu_query(ui->store, process, lane, row, ui->vp.start_ns,
	                                viewport_end_ns(&ui->vp), &ops);
	size_t ns = viewport_fold_gpu(&ui->vp, ops, n, ui->segs, ui->seg_cap);
	for (size_t i = 0; i < ns; i++) {
		const struct viewport_seg *seg = &ui->segs[i];
		if (seg->kind == VIEWPORT_SEG_FOLD) {
			/* Dense API calls read as launches; dense GPU work as a busy cell. */
			const struct store_gpu_op *op = &ops[seg->first];
			int api = op->kind == WIRE_GPU_API_RUNTIME || op->kind == WIRE_GPU_API_DRIVER;
			attr_t a = api ? ui_attr(ui, SLOT_API)
			               : ui_attr(ui, SLOT_FOLD) | (seg->count >= 8 ? A_BOLD : 0);
			if (op->kind == WIRE_GPU_MEMCPY)
				a = ui_attr(ui, SLOT_COPY);
			ui_put(ui, y, ui_gutter() + seg->col0, 1, a, ui->g->fold);
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
		uint32_t level;
		const char *text = store_notice_get(ui->store, process, i, &level, NULL);
		if (level == WIRE_NOTICE_WARNING)
			why = text;
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

static void ui_draw_lane_row(struct ui *ui, int y, const struct layout_row *row, int selected)
{
	int gx = ui_gutter();
	char label[512], tmp[256];
	attr_t la;
	struct store_process_info pi;
	struct store_lane_info li;
	store_process_get(ui->store, row->process, &pi);
	if (row->kind != LAYOUT_ROW_PROCESS)
		store_lane_get(ui->store, row->process, row->lane, &li);

	switch (row->kind) {
	case LAYOUT_ROW_PROCESS: {
		/* A header carries no ranges: it spans the full width, so "name pid" is never cut. */
		const char *base = ui_basename(pi.cmdline ? pi.cmdline : "?", tmp, sizeof tmp);
		char info[512];
		if (pi.exited && pi.exit_code >= 0)
			snprintf(info, sizeof info, "exited (code %d)", pi.exit_code);
		else if (pi.exited)
			snprintf(info, sizeof info, "exited");
		else
			snprintf(info, sizeof info, "%s", pi.connected ? "" : "disconnected");
		snprintf(label, sizeof label, "%s %d ", base, (int)pi.pid);
		la = ui_attr(ui, SLOT_PROCESS) | (selected ? A_REVERSE : 0);
		ui_fill(y, 0, COLS, ui_attr(ui, SLOT_BASELINE), ui->g->hline);
		int x = ui_put(ui, y, 0, COLS, la, label);
		const char *why = ui_gpu_unavailable(ui, row->process);
		if (why)
			snprintf(info + strlen(info), sizeof info - strlen(info), "%sGPU: unavailable (%s)",
			         *info ? "  " : "", why);
		snprintf(info + strlen(info), sizeof info - strlen(info), "%s%s ", *info ? "  " : "",
		         pi.cmdline ? pi.cmdline : "");
		snprintf(tmp, sizeof tmp, " %s", info);
		ui_put(ui, y, x + 1, COLS - x - 2, ui_attr(ui, SLOT_PROCESS) | A_DIM, tmp);
		return;
	}
	case LAYOUT_ROW_THREAD: {
		char tid[16], name[128];
		int tl = snprintf(tid, sizeof tid, " %d", (int)li.tid);
		ui_clip(ui, li.name && *li.name ? li.name : "thread", gx - 2 - tl > 1 ? gx - 2 - tl : 1, name,
		        sizeof name);
		snprintf(label, sizeof label, " %s%s", name, tid);
		la = ui_attr(ui, SLOT_THREAD) | (li.end_ns ? A_DIM : 0);
		ui_draw_thread_line(ui, y, row->process, row->lane, &li);
		break;
	}
	case LAYOUT_ROW_NVTX:
		snprintf(label, sizeof label, "   %s%zu", row->row == 0 ? "nvtx " : "  ", row->row);
		la = ui_attr(ui, SLOT_THREAD) | A_DIM;
		ui_draw_ranges(ui, y, row->process, row->lane, row->row, &li);
		break;
	case LAYOUT_ROW_CUDA_API:
		snprintf(label, sizeof label, row->row == 0 ? "   cuda api" : "");
		la = ui_attr(ui, SLOT_THREAD) | A_DIM;
		ui_draw_gpu_row(ui, y, row->process, row->lane, row->row);
		break;
	case LAYOUT_ROW_GPU_DEVICE: {
		struct store_gpu_device_info di;
		const char *name = "";
		if (store_gpu_device_find(ui->store, row->process, row->device, &di) == 0) {
			name = di.name;
			if (strncmp(name, "NVIDIA ", 7) == 0)
				name += 7;
		}
		snprintf(label, sizeof label, " GPU%u %s", row->device, name);
		la = ui_attr(ui, SLOT_GPU_HEADER);
		ui_fill(y, gx, COLS - gx, ui_attr(ui, SLOT_BASELINE), ui->g->hline);
		break;
	}
	case LAYOUT_ROW_GPU_STREAM:
		snprintf(label, sizeof label, row->row == 0 ? "  %s" : "",
		         store_lane_gpu_label(ui->store, row->process, row->lane));
		la = ui_attr(ui, SLOT_THREAD);
		ui_draw_gpu_row(ui, y, row->process, row->lane, row->row);
		break;
	case LAYOUT_ROW_ASYNC:
	default:
		snprintf(label, sizeof label, row->row == 0 ? " nvtx async" : "");
		la = ui_attr(ui, SLOT_THREAD);
		ui_draw_ranges(ui, y, row->process, row->lane, row->row, &li);
		break;
	}
	if (selected) {
		la |= A_REVERSE;
		ui_fill(y, 0, gx - 1, la, " ");
	}
	ui_put(ui, y, 0, gx - 1, la, label);
	ui_put(ui, y, gx - 1, 1, ui_attr(ui, SLOT_AXIS), ui->g->vline);
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

static void ui_draw_log(struct ui *ui, const struct ui_status *st, int y0, int h)
{
	char title[512];
	const char *path = st && st->log_path ? st->log_path : NULL;
	ui_fill(y0, 0, COLS, ui_attr(ui, SLOT_AXIS), ui->g->hline);
	snprintf(title, sizeof title, " log: %s  (l hides) ", path ? path : "none (output not captured)");
	ui_put(ui, y0, 2, COLS - 4, ui_attr(ui, SLOT_AXIS) | A_BOLD, title);
	if (!path || h < 2)
		return;
	static char buf[UI_LOG_TAIL + 1];
	char *lines[256];
	size_t max = (size_t)(h - 1) < 256 ? (size_t)(h - 1) : 256;
	size_t n = ui_log_tail(path, buf, sizeof buf, lines, max);
	for (size_t i = 0; i < n; i++)
		ui_put(ui, y0 + 1 + (int)i, 1, COLS - 1, ui_attr(ui, SLOT_LOG), lines[i]);
}

static void ui_draw_help(struct ui *ui)
{
	size_t nkeys = sizeof ui_keys / sizeof ui_keys[0];
	int h = 4, w = 74;
	for (size_t i = 0; i < nkeys; i++)
		h += ui_keys[i].label != NULL;
	if (w > COLS)
		w = COLS;
	if (h > LINES)
		h = LINES;
	int y0 = (LINES - h) / 2, x0 = (COLS - w) / 2;
	attr_t a = ui_attr(ui, SLOT_HELP);
	for (int y = 0; y < h; y++)
		ui_fill(y0 + y, x0, w, a, " ");
	ui_put(ui, y0, x0 + 2, w - 4, a | A_BOLD, "cuscope keys");
	int y = y0 + 2;
	for (size_t i = 0; i < nkeys && y < y0 + h - 1; i++) {
		const char *label = ui_keys[i].label;
		if (!label)
			continue;
		/* Arrow labels are spelled in the table portably and drawn with the glyph set. */
		if (strcmp(label, "LR") == 0)
			label = ui->g->leftright;
		else if (strcmp(label, "UD") == 0)
			label = ui->g->updown;
		ui_put(ui, y, x0 + 2, 12, a | A_BOLD, label);
		ui_put(ui, y, x0 + 14, w - 16, a, ui_keys[i].help);
		y++;
	}
	ui_put(ui, y0 + h - 1, x0 + 2, w - 4, a | A_DIM, "Esc or ? closes this help");
}

static void ui_draw_bottom(struct ui *ui, int y)
{
	if (ui->prompt_quit) {
		attr_t a = ui_attr(ui, SLOT_PROMPT);
		ui_fill(y, 0, COLS, a, " ");
		ui_put(ui, y, 0, COLS, a | A_BOLD,
		       " Target running: [d]etach (it runs on)  [s]top it  [c]ancel");
		return;
	}
	if (ui->message[0] && clock_mono_ns() < ui->message_until) {
		ui_put(ui, y, 0, COLS, ui_attr(ui, SLOT_MESSAGE), ui->message);
		return;
	}
	char hint[256];
	snprintf(hint, sizeof hint, " space pause  +/- zoom  %s pan  %s lanes  l log  ? help  q quit",
	         ui->g->leftright, ui->g->updown);
	ui_put(ui, y, 0, COLS, ui_attr(ui, SLOT_NORMAL) | A_DIM, hint);
}

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
	sig->view_start = ui->vp.start_ns;
	sig->view_span = ui->vp.span_ns;
	sig->now_col = ui_now(ui) / viewport_ns_per_col(&ui->vp);
	if (st) {
		sig->command = st->command;
		sig->log_path = st->log_path;
		sig->events_per_s = (long)st->events_per_s;
		sig->gpu_per_s = (long)ui->gpu_rate;
		sig->pid = st->pid;
		sig->live = st->live;
		sig->alive = st->target_alive;
		sig->exit_code = st->exit_code;
		sig->exit_signal = st->exit_signal;
	}
	sig->notices = store_notice_total(ui->store);
	sig->lines = LINES;
	sig->cols = COLS;
	sig->follow = ui->follow;
	sig->show_log = ui->show_log;
	sig->show_help = ui->show_help;
	sig->prompt = ui->prompt_quit;
	sig->message = ui->message[0] && clock_mono_ns() < ui->message_until;
	sig->top = ui->layout.top;
	sig->selected = ui->layout.selected;
	struct stat sb;
	if (ui->show_log && st && st->log_path && stat(st->log_path, &sb) == 0) {
		sig->log_size = (long long)sb.st_size;
		sig->log_mtime = (long long)sb.st_mtim.tv_sec * 1000000000ll + sb.st_mtim.tv_nsec;
	}
}

/* GPU rate sample (once a second) and new collector warnings onto the message line. */
static void ui_update_gpu(struct ui *ui)
{
	uint64_t now = clock_mono_ns(), count = store_gpu_event_count(ui->store);
	if (!ui->gpu_rate_t0 || count < ui->gpu_rate_c0) {
		ui->gpu_rate_t0 = now;
		ui->gpu_rate_c0 = count;
	} else if (now - ui->gpu_rate_t0 >= 1000000000ull) {
		ui->gpu_rate = (double)(count - ui->gpu_rate_c0) * 1e9 / (double)(now - ui->gpu_rate_t0);
		ui->gpu_rate_t0 = now;
		ui->gpu_rate_c0 = count;
	}
	uint64_t total = store_notice_total(ui->store);
	if (total == ui->notice_shown)
		return;
	const char *newest = NULL;
	uint64_t newest_seq = ui->notice_shown;
	for (size_t p = 0; p < store_process_count(ui->store); p++) {
		for (size_t i = 0; i < store_notice_count(ui->store, p); i++) {
			uint32_t level;
			uint64_t seq;
			const char *text = store_notice_get(ui->store, p, i, &level, &seq);
			if (level == WIRE_NOTICE_WARNING && seq > newest_seq) {
				newest = text;
				newest_seq = seq;
			}
		}
	}
	ui->notice_shown = total;
	if (newest)
		ui_message(ui, newest);
}

void ui_draw(struct ui *ui, const struct ui_status *status, int force)
{
	if (!ui)
		return;
	ui_check_size();
	ui_update_view(ui, status);
	if ((size_t)ui->vp.cols > ui->seg_cap) {
		ui->seg_cap = (size_t)ui->vp.cols;
		ui->segs = xrealloc(ui->segs, ui->seg_cap * sizeof *ui->segs);
	}
	ui_update_gpu(ui);
	uint64_t gen = store_generation(ui->store);
	if (gen != ui->gen_built || !ui->drawn_once) {
		layout_build(&ui->layout, ui->store);
		ui->gen_built = gen;
	}

	int log_h = 0;
	if (ui->show_log) {
		log_h = (LINES - 3) / 3;
		if (log_h < 4)
			log_h = LINES - 3 >= 8 ? 4 : 0;
	}
	int lanes_y = 2;
	int lanes_h = LINES - lanes_y - 1 - log_h;
	ui->lanes_height = lanes_h > 0 ? (size_t)lanes_h : 0;
	layout_clamp(&ui->layout, ui->lanes_height);

	struct ui_frame_sig sig;
	ui_signature(ui, status, &sig);
	if (!force && ui->drawn_once && memcmp(&sig, &ui->last, sizeof sig) == 0)
		return;
	ui->last = sig;
	ui->drawn_once = 1;

	erase();
	ui_draw_status(ui, status);
	if (LINES > 2)
		ui_draw_axis(ui, 1);
	for (int i = 0; i < lanes_h; i++) {
		size_t idx = ui->layout.top + (size_t)i;
		if (idx >= ui->layout.count) {
			ui_put(ui, lanes_y + i, ui_gutter() - 1, 1, ui_attr(ui, SLOT_AXIS), ui->g->vline);
			continue;
		}
		ui_draw_lane_row(ui, lanes_y + i, &ui->layout.rows[idx], idx == ui->layout.selected);
	}
	if (ui->layout.count == 0 && lanes_h > 0)
		ui_put(ui, lanes_y, ui_gutter() + 1, ui->vp.cols - 1, ui_attr(ui, SLOT_NORMAL) | A_DIM,
		       status && status->live ? "waiting for the target's first events..." : "no events");
	if (log_h > 0)
		ui_draw_log(ui, status, LINES - 1 - log_h, log_h);
	if (LINES > 1)
		ui_draw_bottom(ui, LINES - 1);
	if (ui->show_help)
		ui_draw_help(ui);
	attrset(A_NORMAL);
	wnoutrefresh(stdscr);
	doupdate();
}

void ui_message(struct ui *ui, const char *text)
{
	if (!ui)
		return;
	snprintf(ui->message, sizeof ui->message, " %s", text ? text : "");
	ui->message_until = clock_mono_ns() + UI_MESSAGE_NS;
}

/* log_warn/log_error while curses owns the screen would scribble over it: show them instead. */
static void ui_log_sink(const char *line)
{
	if (ui_current)
		ui_message(ui_current, line);
}

static void ui_init_colors(struct ui *ui)
{
	const char *no_color = getenv("NO_COLOR");
	ui->color = 0;
	if ((no_color && *no_color) || !has_colors())
		return;
	if (start_color() != OK)
		return;
	use_default_colors();
	for (int i = 1; i < SLOT_COUNT; i++)
		init_pair((short)i, ui_palette[i].fg, ui_palette[i].bg);
	ui->color = 1;
}

struct ui *ui_new(struct store *store, const struct ui_options *options, const char **cause)
{
	if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
		if (cause)
			*cause = "the live view needs a terminal on standard input and output";
		return NULL;
	}
	setlocale(LC_ALL, "");
	struct ui *ui = xcalloc(1, sizeof *ui);
	ui->store = store;
	if (options)
		ui->options = *options;
	const char *codeset = nl_langinfo(CODESET);
	int utf8 = codeset && (strcmp(codeset, "UTF-8") == 0 || strcmp(codeset, "utf8") == 0);
	ui->g = utf8 && !ui->options.ascii ? &ui_glyphs_utf8 : &ui_glyphs_ascii;

	ui->screen = newterm(NULL, stdout, stdin);
	if (!ui->screen) {
		if (cause)
			*cause = "cannot initialise the terminal (check TERM)";
		free(ui);
		return NULL;
	}
	set_term(ui->screen);
	ui_curses_active = 1;
	cbreak(); /* not raw: Ctrl-C must stay a signal for the CLI */
	noecho();
	keypad(stdscr, TRUE);
	nodelay(stdscr, TRUE);
	set_escdelay(25);
	curs_set(0);
	ui_init_colors(ui);
	layout_init(&ui->layout);
	viewport_set(&ui->vp, 0, ui_window_ns(ui), ui_timeline_cols());
	ui_current = ui;
	log_set_sink(ui_log_sink);
	return ui;
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
	if (ui->screen)
		delscreen(ui->screen);
	layout_fini(&ui->layout);
	free(ui->segs);
	free(ui);
}

void ui_emergency_restore(void)
{
	if (ui_curses_active) {
		ui_curses_active = 0;
		endwin();
	}
}
