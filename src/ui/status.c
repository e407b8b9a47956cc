/*
 * The ncurses timeline: status line, GPU utilisation header, time axis with a time cursor, lane
 * gutter and timeline cells (idle GPU gaps shaded), each process's cost rows (the collector's own cost,
 * and stretches the overhead budget reduced), NVTX statistics panel, log pane, overlays (help,
 * event details) and prompts (quit, find, go to). Geometry, folding, histograms and utilisation
 * come from the model; themes are data (model/theme.c). This file turns them into cells and keys
 * into view changes: one key table, handlers that return flags, one doupdate per frame.
 */
#define NCURSES_WIDECHAR 1
#include "cuscope/ui.h"

#include <curses.h>
#include <errno.h>
#include <fcntl.h>
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
#include <wchar.h>

#include "cuscope/clock.h"
#include "cuscope/costview.h"
#include "cuscope/cpuview.h"
#include "cuscope/layout.h"
#include "cuscope/log.h"
#include "cuscope/nvml.h"
#include "cuscope/nvtxstats.h"
#include "cuscope/store.h"
#include "cuscope/theme.h"
#include "cuscope/util.h"
#include "cuscope/viewport.h"
#include "cuscope/wire.h"
#include "cuscope/xalloc.h"

#define UI_GUTTER         24 /* label cells plus the separator */
#define UI_MESSAGE_NS     (3ull * 1000000000ull)
#define UI_LOG_TAIL       (64 * 1024) /* bytes of the log read per draw */
#define UI_DEFAULT_SPAN   (10ull * 1000000000ull)
#define UI_DEFAULT_GAP_MS 10.0
#define UI_DETAIL_LINES   48
#define UI_MAX_DEVICES    8
#define UI_SPARK_MAX      256
#define UI_HOT_TOP        8  /* rows of the hot-functions panel */
#define UI_STACK_FRAMES   16 /* frames of a stack in the details overlay */

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
	const char *block;    /* kernel fill without colour, and a one-cell kernel */
	const char *bar;      /* copy / memset / sync fill */
	const char *cursor;   /* time cursor mark on the axis */
	const char *folded;   /* a folded group */
	const char *unfolded; /* an open group */
	const char *gap;      /* idle GPU gap fill */
	const char *spark[9]; /* sparkline levels, empty to full */
	const char *micro;    /* "µs" */
	const char *evicted;  /* fill of time no longer in memory */
	const char *reduced;  /* thread baseline where the overhead budget reduced sampling */
};

static const struct ui_glyphs ui_glyphs_utf8 = {
    "▮",   "◆",   "│", "─", "─", "█", "▶", "●", "▸",
    "↑/↓", "←/→", "█", "▬", "▼", "▸", "▾", "░", {" ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"},
    "µs",  "╱",   "┄"};
static const struct ui_glyphs ui_glyphs_ascii = {
    "|",     "*",     "|", "-", "-", "#", ">", "*", ">",
    "Up/Dn", "Lt/Rt", "#", "=", "v", "+", "-", ".", {" ", "_", ".", "-", "~", "=", "+", "*", "#"},
    "us",    "/",     "~"};

enum ui_prompt {
	UI_PROMPT_NONE = 0,
	UI_PROMPT_QUIT,
	UI_PROMPT_FIND,
	UI_PROMPT_GOTO,
	UI_PROMPT_DUMP_SCOPE, /* visible window or whole capture? */
	UI_PROMPT_DUMP_FILE,  /* file name to write */
};

enum ui_overlay {
	UI_OVERLAY_NONE = 0,
	UI_OVERLAY_HELP,
	UI_OVERLAY_DETAILS,
};

struct ui_frame_sig {
	uint64_t generation;
	uint64_t view_start, view_span;
	uint64_t now_col; /* now in cells: open ranges grow even while paused */
	uint64_t input_serial;
	const char *command, *log_path;
	long events_per_s;
	long gpu_per_s;
	uint64_t notices;
	int pid, live, alive, exit_code, exit_signal;
	int lines, cols, message;
	long long log_size, log_mtime;
	unsigned nvml_sum;
	uint64_t memory_from;
	char log_note[96];
};

/* A GPU (process, device) with its stream rows, for the utilisation header. */
struct ui_device {
	size_t process;
	uint32_t device;
	char label[32];
	char uuid[48];
	struct util_row *rows;
	size_t nrows, cap;
};

/* A search hit or an event picked under the cursor: where it is and what it is. */
struct ui_hit {
	int found;
	int gpu;  /* a struct store_gpu_op on a gpu row; else a store_range (or call) */
	int call; /* LAYOUT_ROW_OSRT or LAYOUT_ROW_GC: a struct store_call in `calls` */
	struct store_call calls;
	size_t process, lane, row;
	enum store_lane_kind lane_kind;
	struct store_range range;
	struct store_gpu_op op;
	int open; /* a range still open */
};

struct ui {
	struct store *store;
	struct ui_options options;
	SCREEN *screen;
	const struct ui_glyphs *g;
	int color;
	struct theme theme, mono;
	size_t theme_index; /* in theme_builtin_names, for t */
	char exe_dir[PATH_MAX];

	struct viewport vp;
	int view_ready; /* vp set from the data once */
	int follow;     /* live view tracks now */
	int paused;     /* frozen: no follow, no layout or panel updates, data clipped at pause_ns */
	uint64_t pause_ns, pause_events;
	int cursor_col; /* time cursor column in the timeline; < 0 = centre */
	uint64_t now_ns;
	uint64_t gen_built; /* store generation the layout was built from */
	struct layout layout;
	size_t lanes_height; /* rows for lanes in the last frame */
	int lanes_y;
	uint64_t gap_ns;

	int show_log;
	enum ui_overlay overlay;
	enum ui_prompt prompt;
	char input[512];
	int dump_whole; /* the pending dump covers the whole capture */
	int dump_ready; /* a dump request waits for the CLI (ui_dump_request) */
	uint64_t dump_from_ns, dump_to_ns;
	char dump_path[512];
	char details[UI_DETAIL_LINES][256];
	int detail_count;
	char message[768];
	uint64_t message_until;
	char queued[4][256]; /* messages waiting for the line (each gets its few seconds) */
	int queued_count;
	uint64_t input_serial;

	/* find */
	char query[128];
	int8_t *match; /* per name id: -1 unknown, 0/1 */
	size_t match_cap;
	struct ui_hit last_hit;

	/* NVTX panel */
	struct nvtx_stats stats;
	size_t *order;
	size_t order_cap;
	int panel_hidden; /* h */
	int panel_focus;  /* Tab */
	size_t panel_sel, panel_top;
	int panel_y, panel_h;

	/* GPU header */
	struct ui_device devices[UI_MAX_DEVICES];
	size_t device_count;
	struct nvml *nvml;
	int nvml_tried;
	unsigned nvml_sum;

	/* hot-functions panel (H) and the sample density of thread rows */
	int hot_shown;
	int hot_y, hot_h;
	uint32_t *density; /* per timeline cell */
	size_t density_cap;
	uint32_t density_max; /* fullest cell over the visible thread rows: the strips' full scale */

	/* mouse drag */
	int drag_x, dragging;

	struct viewport_seg *segs;
	size_t seg_cap;

	struct ui_frame_sig last;
	int drawn_once;

	uint64_t gpu_rate_t0, gpu_rate_c0; /* last GPU rate sample: time, store_gpu_event_count */
	double gpu_rate;                   /* GPU records per second */
	uint64_t notice_shown;             /* store_notice_total already put on the message line */

	/* cost rows: per timeline cell of one process */
	struct costview_rate *cost_cells;
	size_t cost_cells_cap;
	uint64_t frames;           /* frames drawn */
	uint64_t cost_cells_frame; /* frame and process cost_cells hold (both rows use them) */
	size_t cost_cells_process;
};

static volatile sig_atomic_t ui_curses_active;
static struct ui *ui_current; /* where log lines go while curses owns the screen */

/* ---- small helpers ----------------------------------------------------------------------- */

static attr_t ui_theme_attr(uint16_t a)
{
	attr_t r = A_NORMAL;
	if (a & THEME_BOLD)
		r |= A_BOLD;
	if (a & THEME_DIM)
		r |= A_DIM;
	if (a & THEME_REVERSE)
		r |= A_REVERSE;
	if (a & THEME_UNDERLINE)
		r |= A_UNDERLINE;
	return r;
}

static attr_t ui_attr(const struct ui *ui, enum theme_slot slot)
{
	if (!ui->color)
		return ui_theme_attr(ui->mono.slot[slot].attr);
	return COLOR_PAIR(slot + 1) | ui_theme_attr(ui->theme.slot[slot].attr);
}

static enum theme_slot ui_range_slot(uint32_t name_id)
{
	uint32_t h = name_id * 2654435761u; /* spread neighbouring ids over the colours */
	return THEME_RANGE0 + (h >> 16) % THEME_RANGES;
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
	if (maxw <= 0 || x >= COLS || y >= LINES || x < 0 || y < 0)
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
	if (x < 0 || y < 0 || y >= LINES)
		return;
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

/* A duration in at most 7 cells: "812ns", "41.2us", "41.2ms", "1.20s". */
static void ui_format_dur(char *buf, size_t size, uint64_t ns)
{
	cpuview_format_dur(buf, size, ns);
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

static void ui_format_bytes(char *buf, size_t size, uint64_t b)
{
	if (b >= (1ull << 30))
		snprintf(buf, size, "%.2f GiB (%llu B)", (double)b / (1ull << 30), (unsigned long long)b);
	else if (b >= (1ull << 20))
		snprintf(buf, size, "%.2f MiB (%llu B)", (double)b / (1ull << 20), (unsigned long long)b);
	else if (b >= 1024)
		snprintf(buf, size, "%.1f KiB (%llu B)", (double)b / 1024, (unsigned long long)b);
	else
		snprintf(buf, size, "%llu B", (unsigned long long)b);
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

/* "Now" for drawing: the pause instant, the CLI's clock when live, else the end of the data. */
static uint64_t ui_now(const struct ui *ui)
{
	if (ui->paused)
		return ui->pause_ns;
	return ui->now_ns ? ui->now_ns : store_last_ns(ui->store);
}

/* Upper bound of the data drawn: the pause instant while paused. */
static uint64_t ui_data_end(const struct ui *ui, uint64_t to)
{
	return ui->paused && ui->pause_ns < to ? ui->pause_ns : to;
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
	retained += retained / 50;
	uint64_t w = ui_window_ns(ui);
	return retained > w ? retained : w;
}

static int ui_cursor_col(const struct ui *ui)
{
	int c = ui->cursor_col < 0 ? ui->vp.cols / 2 : ui->cursor_col;
	return c >= ui->vp.cols ? ui->vp.cols - 1 : c;
}

/* Time at the middle of the cursor's cell. */
static uint64_t ui_cursor_ns(const struct ui *ui)
{
	int c = ui_cursor_col(ui);
	uint64_t a = viewport_ns_of(&ui->vp, c), b = viewport_ns_of(&ui->vp, c + 1);
	return a + (b - a) / 2;
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
	if (ui->follow && !ui->paused)
		ui_follow_now(ui);
}

/* Rebuilds the lane rows from the store (not while paused: the picture stays still). */
static void ui_rebuild_layout(struct ui *ui, int force)
{
	uint64_t gen = store_generation(ui->store);
	if (force || ((gen != ui->gen_built || !ui->drawn_once) && !ui->paused)) {
		layout_build(&ui->layout, ui->store);
		ui->gen_built = gen;
	}
}

/* Shows a message now (the answer to a key), replacing what the line shows. */
static void ui_say(struct ui *ui, const char *text)
{
	snprintf(ui->message, sizeof ui->message, " %.250s", text);
	ui->message_until = clock_mono_ns() + UI_MESSAGE_NS;
}

static void ui_set_message(struct ui *ui, const char *fmt, const char *arg)
{
	char text[768];
	snprintf(text, sizeof text, fmt, arg ? arg : "");
	ui_say(ui, text);
}

/* ---- events: under the cursor, search, details ---------------------------------------------- */

static size_t ui_op_lower_bound(const struct store_gpu_op *v, size_t n, uint64_t ns)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (v[mid].start_ns < ns)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Distance from t to [a, b] (0 inside). */
static uint64_t ui_dist(uint64_t t, uint64_t a, uint64_t b)
{
	return t < a ? a - t : t > b ? t - b : 0;
}

/* The event of a lane row nearest to time t, within slack ns. */
static struct ui_hit ui_row_hit(const struct ui *ui, const struct layout_row *row, uint64_t t, uint64_t slack)
{
	struct ui_hit hit = {0};
	uint64_t best = UINT64_MAX;
	uint64_t from = t > slack ? t - slack : 0, to = ui_data_end(ui, t + slack + 1);
	struct store_lane_info li;
	if (row->kind == LAYOUT_ROW_PROCESS || row->kind == LAYOUT_ROW_GPU_DEVICE ||
	    row->kind == LAYOUT_ROW_COST)
		return hit;
	store_lane_get(ui->store, row->process, row->lane, &li);
	hit.process = row->process;
	hit.lane = row->lane;
	hit.row = row->row;
	hit.lane_kind = li.kind;
	if (row->kind == LAYOUT_ROW_CUDA_API || row->kind == LAYOUT_ROW_GPU_STREAM) {
		const struct store_gpu_op *ops;
		size_t n = store_lane_gpu_query(ui->store, row->process, row->lane, row->row, from, to, &ops);
		for (size_t i = 0; i < n; i++) {
			uint64_t d = ui_dist(t, ops[i].start_ns, ops[i].end_ns);
			if (d <= slack && d < best) {
				best = d;
				hit.found = 1;
				hit.gpu = 1;
				hit.op = ops[i];
			}
		}
		return hit;
	}
	if (row->kind == LAYOUT_ROW_OSRT || row->kind == LAYOUT_ROW_GC) {
		const struct store_call *c;
		size_t n =
		    row->kind == LAYOUT_ROW_OSRT
		        ? store_lane_osrt_query(ui->store, row->process, row->lane, row->row, from, to, &c)
		        : store_lane_gc_query(ui->store, row->process, row->lane, row->row, from, to, &c);
		for (size_t i = 0; i < n; i++) {
			uint64_t d = ui_dist(t, c[i].start_ns, c[i].end_ns);
			if (d <= slack && d < best) {
				best = d;
				hit.found = 1;
				hit.call = (int)row->kind;
				hit.calls = c[i];
			}
		}
		return hit;
	}
	const struct store_range *r;
	size_t n;
	if (row->kind == LAYOUT_ROW_THREAD)
		n = store_lane_mark_query(ui->store, row->process, row->lane, from, to, &r);
	else
		n = store_lane_row_query(ui->store, row->process, row->lane, row->row, from, to, &r);
	for (size_t i = 0; i < n; i++) {
		uint64_t d = ui_dist(t, r[i].start_ns, r[i].end_ns);
		if (d <= slack && d < best) {
			best = d;
			hit.found = 1;
			hit.range = r[i];
		}
	}
	if (row->kind == LAYOUT_ROW_THREAD)
		return hit;
	uint64_t now = ui_now(ui);
	for (size_t i = 0; i < li.open_count; i++) {
		struct store_range o;
		size_t orow;
		store_lane_open_get(ui->store, row->process, row->lane, i, &o, &orow);
		if (orow != row->row || o.start_ns > now)
			continue;
		uint64_t d = ui_dist(t, o.start_ns, now);
		if (d <= slack && d < best) {
			best = d;
			hit.found = 1;
			hit.range = o;
			hit.range.end_ns = 0;
			hit.open = 1;
		}
	}
	return hit;
}

/* Whether the name with this id contains the search text (cached per id). */
static int ui_name_matches(struct ui *ui, uint32_t id)
{
	if (!id)
		return 0;
	if (id < (1u << 24)) {
		if (id >= ui->match_cap) {
			size_t cap = ui->match_cap ? ui->match_cap : 1024;
			while (cap <= id)
				cap *= 2;
			ui->match = xrealloc(ui->match, cap);
			memset(ui->match + ui->match_cap, -1, cap - ui->match_cap);
			ui->match_cap = cap;
		}
		if (ui->match[id] < 0)
			ui->match[id] = strcasestr(store_string(ui->store, id), ui->query) != NULL;
		return ui->match[id];
	}
	return strcasestr(store_string(ui->store, id), ui->query) != NULL;
}

/* Considers element i (start s) of a row as the next match in direction dir from `from`. */
static int ui_better(int dir, uint64_t s, const struct ui_hit *best)
{
	if (!best->found)
		return 1;
	uint64_t b = best->gpu ? best->op.start_ns : best->range.start_ns;
	return dir > 0 ? s < b : s > b;
}

/*
 * The nearest event whose name matches the query, starting strictly after (dir > 0) or before
 * (dir < 0) time from, over every row of every lane. Scans from a binary-searched start and stops
 * at the first match of each row: O(rows · log n) plus the non-matching events skipped.
 */
static struct ui_hit ui_find(struct ui *ui, int dir, uint64_t from)
{
	struct ui_hit best = {0};
	for (size_t p = 0; p < store_process_count(ui->store); p++) {
		struct store_process_info pi;
		store_process_get(ui->store, p, &pi);
		for (size_t l = 0; l < pi.lane_count; l++) {
			struct store_lane_info li;
			store_lane_get(ui->store, p, l, &li);
			for (size_t r = 0; r < li.row_count; r++) {
				const struct store_range *v;
				size_t n = store_lane_row_all(ui->store, p, l, r, &v);
				if (dir > 0) {
					for (size_t i = viewport_lower_bound(v, n, 0, from + 1); i < n; i++) {
						if (!ui_better(dir, v[i].start_ns, &best))
							break;
						if (ui_name_matches(ui, v[i].name_id)) {
							best = (struct ui_hit){.found = 1,
							                       .process = p,
							                       .lane = l,
							                       .row = r,
							                       .lane_kind = li.kind,
							                       .range = v[i]};
							break;
						}
					}
				} else {
					for (size_t i = viewport_lower_bound(v, n, 0, from); i-- > 0;) {
						if (!ui_better(dir, v[i].start_ns, &best))
							break;
						if (ui_name_matches(ui, v[i].name_id)) {
							best = (struct ui_hit){.found = 1,
							                       .process = p,
							                       .lane = l,
							                       .row = r,
							                       .lane_kind = li.kind,
							                       .range = v[i]};
							break;
						}
					}
				}
			}
			for (size_t r = 0; r < li.gpu_row_count; r++) {
				const struct store_gpu_op *v;
				size_t n = store_lane_gpu_all(ui->store, p, l, r, &v);
				size_t i = ui_op_lower_bound(v, n, dir > 0 ? from + 1 : from);
				for (; dir > 0 ? i < n : i-- > 0; dir > 0 ? i++ : 0) {
					if (!ui_better(dir, v[i].start_ns, &best))
						break;
					if (ui_name_matches(ui, v[i].name_id)) {
						best = (struct ui_hit){.found = 1,
						                       .gpu = 1,
						                       .process = p,
						                       .lane = l,
						                       .row = r,
						                       .lane_kind = li.kind,
						                       .op = v[i]};
						break;
					}
				}
			}
		}
	}
	return best;
}

/* The layout row showing a hit. */
static struct layout_row ui_hit_row(const struct ui *ui, const struct ui_hit *hit)
{
	struct store_process_info pi;
	struct store_lane_info li;
	store_process_get(ui->store, hit->process, &pi);
	store_lane_get(ui->store, hit->process, hit->lane, &li);
	struct layout_row key = {.process = hit->process,
	                         .lane = hit->lane,
	                         .row = hit->row,
	                         .pid = pi.pid,
	                         .tid = li.tid,
	                         .device = li.device};
	if (hit->gpu)
		key.kind = li.kind == STORE_LANE_GPU_STREAM ? LAYOUT_ROW_GPU_STREAM : LAYOUT_ROW_CUDA_API;
	else
		key.kind = li.kind == STORE_LANE_NVTX_ASYNC ? LAYOUT_ROW_ASYNC : LAYOUT_ROW_NVTX;
	return key;
}

/* Moves the view onto an event, selects its row and puts the cursor on it. */
static void ui_show_event(struct ui *ui, const struct ui_hit *hit)
{
	uint64_t a = hit->gpu ? hit->op.start_ns : hit->range.start_ns;
	uint64_t b = hit->gpu ? hit->op.end_ns : hit->range.end_ns;
	if (b < a)
		b = a;
	uint64_t w = b - a;
	/* Keep the zoom unless the event is narrower than a cell or wider than the view. */
	if (w * (uint64_t)ui->vp.cols < ui->vp.span_ns || w > ui->vp.span_ns) {
		uint64_t span = w * (uint64_t)ui->vp.cols / 20;
		if (w > ui->vp.span_ns)
			span = w + w / 4;
		if (span < VIEWPORT_MIN_SPAN_NS)
			span = VIEWPORT_MIN_SPAN_NS;
		if (span > ui_max_span(ui))
			span = ui_max_span(ui);
		ui->vp.span_ns = span;
	}
	uint64_t mid = a + w / 2;
	ui->vp.start_ns = mid > ui->vp.span_ns / 2 ? mid - ui->vp.span_ns / 2 : 0;
	ui->follow = 0;
	int64_t c = viewport_col_of(&ui->vp, mid);
	ui->cursor_col = c >= 0 && c < ui->vp.cols ? (int)c : -1;
	struct layout_row key = ui_hit_row(ui, hit);
	layout_reveal(&ui->layout, key.pid, key.tid, key.kind == LAYOUT_ROW_GPU_STREAM, key.device);
	ui_rebuild_layout(ui, 1);
	size_t i = layout_find(&ui->layout, &key);
	if (i < ui->layout.count) {
		ui->layout.selected = i;
		layout_clamp(&ui->layout, ui->lanes_height);
	}
}

static void ui_thread_name(const struct ui *ui, size_t process, pid_t tid, char *buf, size_t size)
{
	struct store_process_info pi;
	store_process_get(ui->store, process, &pi);
	for (size_t l = 0; l < pi.lane_count; l++) {
		struct store_lane_info li;
		store_lane_get(ui->store, process, l, &li);
		if (li.kind == STORE_LANE_THREAD && li.tid == tid) {
			snprintf(buf, size, "%s %d", li.name && *li.name ? li.name : "thread", (int)tid);
			return;
		}
	}
	snprintf(buf, size, "thread %d", (int)tid);
}

static void ui_time_label(const struct ui *ui, uint64_t ns, char *buf, size_t size)
{
	uint64_t o = ui_origin(ui);
	if (ns >= o)
		snprintf(buf, size, "%.6f s", (double)(ns - o) / 1e9);
	else
		snprintf(buf, size, "-%.6f s", (double)(o - ns) / 1e9);
}

#define UI_DETAIL(...)                                                                                       \
	do {                                                                                                 \
		if (ui->detail_count < UI_DETAIL_LINES)                                                      \
			snprintf(ui->details[ui->detail_count++], sizeof ui->details[0], __VA_ARGS__);       \
	} while (0)

/* NVTX parent (row above, enclosing) and children (row below, inside) of a push/pop range. */
static void ui_details_nesting(struct ui *ui, const struct ui_hit *hit, uint64_t end)
{
	char dur[32];
	if (hit->row > 0) {
		const struct store_range *r;
		size_t n = store_lane_row_query(ui->store, hit->process, hit->lane, hit->row - 1,
		                                hit->range.start_ns, hit->range.start_ns + 1, &r);
		int found = 0;
		for (size_t i = 0; i < n; i++) {
			if (r[i].start_ns <= hit->range.start_ns && r[i].end_ns >= end) {
				ui_format_dur(dur, sizeof dur, r[i].end_ns - r[i].start_ns);
				UI_DETAIL("parent    %s (%s)", store_string(ui->store, r[i].name_id), dur);
				found = 1;
			}
		}
		if (!found)
			UI_DETAIL("parent    (still open)");
	} else {
		UI_DETAIL("parent    none (outermost)");
	}
	const struct store_range *c;
	size_t n = store_lane_row_query(ui->store, hit->process, hit->lane, hit->row + 1, hit->range.start_ns,
	                                end, &c);
	size_t kids = 0;
	char list[200] = "";
	for (size_t i = 0; i < n; i++) {
		if (c[i].start_ns < hit->range.start_ns || c[i].end_ns > end)
			continue;
		if (kids < 4) {
			size_t l = strlen(list);
			snprintf(list + l, sizeof list - l, "%s%s", kids ? ", " : "",
			         store_string(ui->store, c[i].name_id));
		}
		kids++;
	}
	if (kids)
		UI_DETAIL("children  %zu: %s%s", kids, list, kids > 4 ? ", ..." : "");
	else
		UI_DETAIL("children  none");
}

/* The frames of a stack, leaf first: "  function  module" per line, at most max of them. */
static void ui_details_stack(struct ui *ui, uint32_t stack_id, size_t max, const char *indent)
{
	const uint32_t *frames;
	size_t depth = store_stack_frames(ui->store, stack_id, &frames);
	if (!depth) {
		UI_DETAIL("%sno stack", indent);
		return;
	}
	for (size_t i = 0; i < depth && i < max; i++) {
		const char *mod = store_frame_module(ui->store, frames[i]);
		UI_DETAIL("%s%-2zu %s%s%s", indent, i, store_frame_function(ui->store, frames[i]),
		          *mod ? "  " : "", mod);
	}
	if (depth > max)
		UI_DETAIL("%s... %zu more frames (outermost last)", indent, depth - max);
}

/* A blocking call or a GC range: name, time, thread and the caller's stack. */
static void ui_details_call(struct ui *ui, const struct ui_hit *hit)
{
	char t0[48], dur[32];
	struct store_lane_info li;
	struct store_process_info pi;
	store_process_get(ui->store, hit->process, &pi);
	store_lane_get(ui->store, hit->process, hit->lane, &li);
	const struct store_call *c = &hit->calls;
	ui_time_label(ui, c->start_ns, t0, sizeof t0);
	ui_format_dur(dur, sizeof dur, c->end_ns - c->start_ns);
	int gc = hit->call == LAYOUT_ROW_GC;
	UI_DETAIL("%s  %s", gc ? "Python GC    " : "blocking call", store_string(ui->store, c->name_id));
	UI_DETAIL("start          %s", t0);
	UI_DETAIL("duration       %s", dur);
	UI_DETAIL("thread         %s %d (pid %d)", li.name && *li.name ? li.name : "thread", (int)li.tid,
	          (int)pi.pid);
	if (!gc) {
		UI_DETAIL("stack (leaf first):");
		ui_details_stack(ui, c->stack_id, UI_STACK_FRAMES, "  ");
	}
}

static int ui_u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

/* The samples of a thread lane in [t0, t1): their count and the most frequent stack. 0 if none. */
static int ui_details_samples(struct ui *ui, size_t process, size_t lane, uint64_t t0, uint64_t t1)
{
	const struct store_sample *v;
	size_t n = store_lane_samples(ui->store, process, lane, t0, t1, &v);
	if (!n)
		return 0;
	uint32_t *ids = xmalloc(n * sizeof *ids);
	for (size_t i = 0; i < n; i++)
		ids[i] = v[i].stack_id;
	qsort(ids, n, sizeof *ids, ui_u32_cmp);
	uint32_t best = 0;
	size_t best_n = 0, distinct = 0;
	for (size_t i = 0; i < n;) {
		size_t j = i;
		while (j < n && ids[j] == ids[i])
			j++;
		distinct++;
		if (j - i > best_n)
			best_n = j - i, best = ids[i];
		i = j;
	}
	free(ids);
	struct store_lane_info li;
	store_lane_get(ui->store, process, lane, &li);
	char a[48], w[32];
	ui->detail_count = 0;
	ui_time_label(ui, t0, a, sizeof a);
	ui_format_dur(w, sizeof w, t1 - t0);
	UI_DETAIL("CPU samples    %zu in this cell (%s from %s)", n, w, a);
	UI_DETAIL("thread         %s %d", li.name && *li.name ? li.name : "thread", (int)li.tid);
	UI_DETAIL("stack          the most frequent: %zu of %zu samples (%zu distinct stacks)", best_n, n,
	          distinct);
	ui_details_stack(ui, best, UI_STACK_FRAMES, "  ");
	return 1;
}

/* What thread tid did during [a, b): blocking call, top of stack, NVTX range, GC. */
static void ui_details_activity(struct ui *ui, size_t process, pid_t tid, uint64_t a, uint64_t b,
                                const char *why)
{
	struct store_thread_activity act;
	char tn[128], d1[32], d2[32];
	store_thread_activity(ui->store, process, tid, a, b, &act);
	ui_thread_name(ui, process, tid, tn, sizeof tn);
	UI_DETAIL("thread         %s (%s)", tn, why);
	if (act.lane == SIZE_MAX) {
		UI_DETAIL("  no CPU data for this thread");
		return;
	}
	if (act.has_blocking) {
		ui_format_dur(d1, sizeof d1, act.blocking.end_ns - act.blocking.start_ns);
		ui_format_dur(d2, sizeof d2, act.blocking_overlap_ns);
		UI_DETAIL("  blocked in   %s %s (%s of the gap)",
		          store_string(ui->store, act.blocking.name_id), d1, d2);
		ui_details_stack(ui, act.blocking.stack_id, 6, "    ");
	} else {
		UI_DETAIL("  blocked in   no blocking call overlaps the gap");
	}
	if (act.samples && act.top_frame) {
		const char *mod = store_frame_module(ui->store, act.top_frame);
		UI_DETAIL("  on CPU       %llu samples; top of stack %s%s%s (%llu)",
		          (unsigned long long)act.samples, store_frame_function(ui->store, act.top_frame),
		          *mod ? "  " : "", mod, (unsigned long long)act.top_samples);
		if (act.top_stack)
			ui_details_stack(ui, act.top_stack, 4, "    ");
	} else {
		UI_DETAIL("  on CPU       no samples (off CPU or not sampled)");
	}
	if (act.has_nvtx)
		UI_DETAIL("  NVTX range   %s (depth %zu%s)", store_string(ui->store, act.nvtx.name_id),
		          act.nvtx_depth, act.nvtx.end_ns ? "" : ", open");
	else
		UI_DETAIL("  NVTX range   none");
	if (act.has_gc) {
		ui_format_dur(d1, sizeof d1, act.gc_overlap_ns);
		UI_DETAIL("  Python GC    %s: %s in the gap", store_string(ui->store, act.gc.name_id), d1);
	}
}

/* A GPU idle gap of a stream row: its length, the ops around it and what the host was doing. */
static void ui_details_gap(struct ui *ui, size_t process, size_t lane, const struct store_gpu_op *ops,
                           const struct cpuview_gap *g)
{
	char t0[48], dur[32];
	struct store_process_info pi;
	store_process_get(ui->store, process, &pi);
	ui->detail_count = 0;
	ui_format_dur(dur, sizeof dur, g->end_ns - g->start_ns);
	ui_time_label(ui, g->start_ns, t0, sizeof t0);
	UI_DETAIL("GPU idle       %s on %s (pid %d)", dur, store_lane_gpu_label(ui->store, process, lane),
	          (int)pi.pid);
	UI_DETAIL("start          %s", t0);
	const struct store_gpu_op *before = &ops[g->next - 1], *after = &ops[g->next];
	UI_DETAIL(
	    "between        %s and %s",
	    before->kind == WIRE_GPU_KERNEL ? store_short_name(ui->store, before->name_id) : "a copy/memset",
	    after->kind == WIRE_GPU_KERNEL ? store_short_name(ui->store, after->name_id) : "a copy/memset");
	const char *why = "";
	pid_t tid = cpuview_gap_thread(ui->store, process, after, &why);
	if (!tid) {
		UI_DETAIL("thread         unknown (no CUDA API calls traced)");
		return;
	}
	ui_details_activity(ui, process, tid, g->start_ns, g->end_ns, why);
	const char *why2 = "";
	pid_t most = cpuview_gap_thread(ui->store, process, NULL, &why2);
	if (most && most != tid)
		ui_details_activity(ui, process, most, g->start_ns, g->end_ns, why2);
}

/* Fills the details overlay for an event. */
static void ui_details(struct ui *ui, const struct ui_hit *hit)
{
	char t0[48], dur[32], where[128];
	struct store_lane_info li;
	struct store_process_info pi;
	store_process_get(ui->store, hit->process, &pi);
	store_lane_get(ui->store, hit->process, hit->lane, &li);
	ui->detail_count = 0;
	if (hit->call) {
		ui_details_call(ui, hit);
		return;
	}
	if (li.kind == STORE_LANE_GPU_STREAM)
		snprintf(where, sizeof where, "stream    %s (pid %d)",
		         store_lane_gpu_label(ui->store, hit->process, hit->lane), (int)pi.pid);
	else if (li.kind == STORE_LANE_NVTX_ASYNC)
		snprintf(where, sizeof where, "lane      nvtx async (pid %d)", (int)pi.pid);
	else
		snprintf(where, sizeof where, "thread    %s %d (pid %d)",
		         li.name && *li.name ? li.name : "thread", (int)li.tid, (int)pi.pid);
	if (!hit->gpu) {
		const struct store_range *r = &hit->range;
		uint64_t end = hit->open ? ui_now(ui) : r->end_ns;
		ui_time_label(ui, r->start_ns, t0, sizeof t0);
		ui_format_dur(dur, sizeof dur, end - r->start_ns);
		int mark = r->start_ns == r->end_ns && !hit->open;
		UI_DETAIL("%s  %s", mark ? "NVTX mark" : "NVTX range", store_string(ui->store, r->name_id));
		if (r->domain_id)
			UI_DETAIL("domain    %s", store_string(ui->store, r->domain_id));
		UI_DETAIL("start     %s", t0);
		if (!mark)
			UI_DETAIL("duration  %s%s", dur, hit->open ? " so far (open)" : "");
		UI_DETAIL("%s", where);
		if (!mark && li.kind == STORE_LANE_THREAD)
			ui_details_nesting(ui, hit, end);
		return;
	}
	const struct store_gpu_op *op = &hit->op;
	ui_time_label(ui, op->start_ns, t0, sizeof t0);
	ui_format_dur(dur, sizeof dur, op->end_ns - op->start_ns);
	switch (op->kind) {
	case WIRE_GPU_KERNEL: {
		UI_DETAIL("kernel    %s", store_short_name(ui->store, op->name_id));
		UI_DETAIL("name      %s", store_string(ui->store, op->name_id));
		break;
	}
	case WIRE_GPU_MEMCPY:
		UI_DETAIL("memcpy    %s", wire_memcpy_kind_name(op->subkind));
		break;
	case WIRE_GPU_MEMSET:
		UI_DETAIL("memset");
		break;
	case WIRE_GPU_SYNC:
		UI_DETAIL("sync      %s", wire_sync_type_name(op->subkind));
		break;
	default:
		UI_DETAIL("CUDA API  %s", store_string(ui->store, op->name_id));
		break;
	}
	UI_DETAIL("start     %s", t0);
	UI_DETAIL("duration  %s", dur);
	UI_DETAIL("%s", where);
	if (op->kind == WIRE_GPU_KERNEL) {
		struct store_kernel_config kc;
		if (store_gpu_op_kernel(ui->store, hit->process, op, &kc) == 0) {
			UI_DETAIL("grid      (%d, %d, %d)   block (%d, %d, %d)", kc.grid[0], kc.grid[1],
			          kc.grid[2], kc.block[0], kc.block[1], kc.block[2]);
			UI_DETAIL("registers %u per thread   shared memory %u B static + %u B dynamic",
			          kc.registers, kc.shared_static, kc.shared_dynamic);
			if (kc.graph_id)
				UI_DETAIL("graph     %u", kc.graph_id);
		}
	}
	if (op->kind == WIRE_GPU_MEMCPY || op->kind == WIRE_GPU_MEMSET) {
		char b[64];
		uint64_t bytes = store_gpu_op_bytes(ui->store, hit->process, op);
		ui_format_bytes(b, sizeof b, bytes);
		uint64_t d = op->end_ns > op->start_ns ? op->end_ns - op->start_ns : 0;
		UI_DETAIL("bytes     %s", b);
		if (d)
			UI_DETAIL("throughput %.2f GB/s", (double)bytes / (double)d);
		if (op->kind == WIRE_GPU_MEMCPY)
			UI_DETAIL("memory    %s -> %s", wire_mem_kind_name(op->mem >> 4),
			          wire_mem_kind_name(op->mem & 15));
		else
			UI_DETAIL("memory    %s", wire_mem_kind_name(op->mem & 15));
	}
	if (li.kind == STORE_LANE_GPU_STREAM) {
		struct store_gpu_launch gl;
		if (store_gpu_op_get_launch(ui->store, hit->process, op, &gl) == 0) {
			char tn[128], lt[48];
			ui_thread_name(ui, hit->process, gl.tid, tn, sizeof tn);
			ui_time_label(ui, gl.start_ns, lt, sizeof lt);
			UI_DETAIL("launched  %s on %s at %s", store_string(ui->store, gl.name_id), tn, lt);
			if (op->start_ns >= gl.start_ns) {
				ui_format_dur(dur, sizeof dur, op->start_ns - gl.start_ns);
				UI_DETAIL("latency   %s from the API call to the GPU start", dur);
			}
		} else {
			UI_DETAIL("launched  unknown (graph node, API tracing off or too old)");
		}
	}
}

/* ---- key handlers -------------------------------------------------------------------------- */

typedef int (*ui_key_fn)(struct ui *ui, const struct ui_status *status, int key);

static int ui_live(const struct ui_status *status)
{
	return status && status->live;
}

static int ui_key_quit(struct ui *ui, const struct ui_status *status, int key)
{
	(void)key;
	if (status && status->live && status->target_alive) {
		ui->prompt = UI_PROMPT_QUIT;
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

static void ui_set_paused(struct ui *ui, int on)
{
	if (on && !ui->paused) {
		ui->pause_ns = ui->now_ns ? ui->now_ns : store_last_ns(ui->store);
		ui->pause_events = store_event_count(ui->store);
		ui->paused = 1;
		ui->follow = 0;
	} else if (!on && ui->paused) {
		ui->paused = 0;
		ui->follow = 1;
		ui_follow_now(ui);
	}
}

static int ui_key_pause(struct ui *ui, const struct ui_status *status, int key)
{
	(void)key;
	if (ui_live(status))
		ui_set_paused(ui, !ui->paused);
	else
		ui_say(ui, "a capture file is already still: space pauses live views");
	return UI_ACTION_NONE;
}

/* Zooms keeping the cursor's time on the cursor's column. */
static void ui_zoom(struct ui *ui, double factor)
{
	uint64_t around = ui_cursor_ns(ui);
	if (ui->follow)
		around = ui_now(ui);
	viewport_zoom(&ui->vp, factor, around, VIEWPORT_MIN_SPAN_NS, ui_max_span(ui));
	if (ui->follow)
		ui_follow_now(ui);
}

static int ui_key_zoom(struct ui *ui, const struct ui_status *status, int key)
{
	(void)status;
	ui_zoom(ui, key == '-' || key == '_' ? 2.0 : 0.5);
	return UI_ACTION_NONE;
}

/* Pans by cols columns; looking back in time means not following now. */
static void ui_pan_cols(struct ui *ui, int64_t cols)
{
	ui->follow = 0;
	viewport_pan(&ui->vp, cols);
	uint64_t end = ui_now(ui);
	if (ui->vp.start_ns > end)
		ui->vp.start_ns = end;
}

static int ui_key_pan(struct ui *ui, const struct ui_status *status, int key)
{
	(void)status;
	int step = ui->vp.cols / 8 > 0 ? ui->vp.cols / 8 : 1;
	if (key == KEY_PPAGE || key == KEY_NPAGE)
		step = ui->vp.cols;
	ui_pan_cols(ui, (key == KEY_LEFT || key == KEY_PPAGE) ? -step : step);
	return UI_ACTION_NONE;
}

static int ui_key_home(struct ui *ui, const struct ui_status *status, int key)
{
	(void)status;
	(void)key;
	ui->follow = 0;
	uint64_t first = store_first_ns(ui->store);
	ui->vp.start_ns = first ? first : ui_origin(ui);
	return UI_ACTION_NONE;
}

static int ui_key_end(struct ui *ui, const struct ui_status *status, int key)
{
	(void)key;
	if (ui_live(status)) {
		ui->paused = 0;
		ui->follow = 1;
		ui_follow_now(ui);
	} else {
		uint64_t last = store_last_ns(ui->store);
		ui->vp.start_ns = last > ui->vp.span_ns ? last - ui->vp.span_ns : 0;
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
	} else if (c >= ui->vp.cols) {
		ui_pan_cols(ui, 1);
		c = ui->vp.cols - 1;
	}
	ui->cursor_col = c;
	return UI_ACTION_NONE;
}

/* The panel's rows in display order (largest total first). */
static void ui_panel_order(struct ui *ui)
{
	if (ui->stats.count > ui->order_cap) {
		ui->order_cap = ui->stats.count * 2;
		ui->order = xrealloc(ui->order, ui->order_cap * sizeof *ui->order);
	}
	nvtx_stats_order(&ui->stats, ui->order);
}

static int ui_panel_shown(const struct ui *ui)
{
	return !ui->panel_hidden && ui->stats.count > 0;
}

static int ui_key_updown(struct ui *ui, const struct ui_status *status, int key)
{
	(void)status;
	long d = key == KEY_UP ? -1 : 1;
	if (ui->panel_focus && ui_panel_shown(ui)) {
		long s = (long)ui->panel_sel + d;
		if (s >= 0 && (size_t)s < ui->stats.count)
			ui->panel_sel = (size_t)s;
		return UI_ACTION_NONE;
	}
	layout_select(&ui->layout, d, ui->lanes_height);
	return UI_ACTION_NONE;
}

/* Jumps to the slowest instance of the selected panel row. */
static void ui_panel_jump(struct ui *ui)
{
	if (ui->panel_sel >= ui->stats.count)
		return;
	ui_panel_order(ui);
	const struct nvtx_stat *e = ui->stats.v[ui->order[ui->panel_sel]];
	struct store_lane_info li;
	store_lane_get(ui->store, e->process, e->lane, &li);
	struct ui_hit hit = {.found = 1,
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
	size_t i = ui->layout.selected;
	if (i >= ui->layout.count)
		return UI_ACTION_NONE;
	/* A row inside a group folds the group it belongs to: the nearest header above. */
	while (i > 0 && !layout_is_group(&ui->layout.rows[i]))
		i--;
	struct layout_row key_row = ui->layout.rows[i];
	if (layout_toggle_fold(&ui->layout, i) == 0) {
		ui_rebuild_layout(ui, 1);
		size_t j = layout_find(&ui->layout, &key_row);
		if (j < ui->layout.count)
			ui->layout.selected = j;
		layout_clamp(&ui->layout, ui->lanes_height);
	}
	return UI_ACTION_NONE;
}

/* Where a reduced stretch still open ends: now while the process is connected, else its newest reading. */
static uint64_t ui_cost_until(const struct ui *ui, size_t process)
{
	struct store_process_info pi;
	store_process_get(ui->store, process, &pi);
	if (pi.connected)
		return ui_now(ui);
	uint64_t newest = 0;
	for (uint32_t s = 1; s < WIRE_COST_SOURCE_MAX; s++) {
		struct store_cost c;
		if (store_cost_get(ui->store, process, s, &c) == 0 && c.time_ns > newest)
			newest = c.time_ns;
	}
	return newest;
}

/* Lines saying which CPU-side sources the overhead budget held reduced in [t0, t1); how many. */
static int ui_details_reduced(struct ui *ui, size_t process, uint64_t t0, uint64_t t1)
{
	uint64_t until = ui_cost_until(ui, process);
	int n = 0;
	for (uint32_t s = 1; s < WIRE_COST_SOURCE_MAX; s++) {
		uint32_t level = 0;
		if (!(COSTVIEW_CPU_SOURCES & 1u << s) ||
		    !costview_reduced_in(ui->store, process, s, t0, t1, until, &level))
			continue;
		struct store_cost c;
		store_cost_get(ui->store, process, s, &c);
		char text[160];
		costview_reduced_text(s, level, c.asked_level, text, sizeof text);
		UI_DETAIL("budget         %s", text);
		n++;
	}
	return n;
}

/* The cost rows at the cursor's cell: each source's rate there and its totals. */
static void ui_details_cost(struct ui *ui, size_t process, uint64_t t0, uint64_t t1)
{
	struct store_process_info pi;
	store_process_get(ui->store, process, &pi);
	char a[48], w[32];
	ui->detail_count = 0;
	ui_time_label(ui, t0, a, sizeof a);
	ui_format_dur(w, sizeof w, t1 - t0);
	UI_DETAIL("profiler cost  pid %d, the cell of %s from %s", (int)pi.pid, w, a);
	for (uint32_t s = 1; s < WIRE_COST_SOURCE_MAX; s++) {
		struct store_cost c;
		if (store_cost_get(ui->store, process, s, &c) != 0)
			continue;
		struct costview_rate r;
		costview_rate(ui->store, process, s, t0, t1, ui_data_end(ui, UINT64_MAX), &r);
		char rate[64] = "no readings around this cell", level[32];
		if (r.covered_ns)
			snprintf(rate, sizeof rate, "%.2f ms/s CPU, est. +%.2f %%", r.cpu_ms_per_s,
			         r.added_pct);
		UI_DETAIL("  %-10s  here %s; setting now %s%s", wire_cost_source_name(s), rate,
		          costview_level_text(s, c.level, level, sizeof level),
		          c.reduced ? " (reduced)" : "");
		UI_DETAIL("              so far %.1f ms CPU, %.1f ms added, %llu events, %u back-offs",
		          (double)c.cpu_ns / 1e6, (double)c.added_ns / 1e6, (unsigned long long)c.events,
		          c.backoffs);
	}
	ui_details_reduced(ui, process, t0, t1);
	UI_DETAIL("not counted    CUPTI's time inside the driver (on the program's threads)");
	UI_DETAIL(
	    "est. added     time of the program's threads in the collector's code, as a slowdown of one");
	UI_DETAIL("               thread: added / (elapsed - added)");
}

/* Minimum length of a GPU idle gap worth explaining or jumping to. */
static uint64_t ui_gap_min(const struct ui *ui)
{
	return ui->gap_ns ? ui->gap_ns : (uint64_t)(UI_DEFAULT_GAP_MS * 1e6);
}

/*
 * Details with nothing under the cursor: the samples of the cursor's cell on a thread row, or the
 * GPU idle gap holding the cursor on a stream row. 1 when the overlay was filled.
 */
static int ui_cpu_details(struct ui *ui, const struct layout_row *row)
{
	if (row->kind == LAYOUT_ROW_THREAD || row->kind == LAYOUT_ROW_COST) {
		int c = ui_cursor_col(ui);
		uint64_t t0 = viewport_ns_of(&ui->vp, c),
		         t1 = ui_data_end(ui, viewport_ns_of(&ui->vp, c + 1));
		if (t1 <= t0)
			return 0;
		if (row->kind == LAYOUT_ROW_COST) {
			ui_details_cost(ui, row->process, t0, t1);
			return 1;
		}
		if (ui_details_samples(ui, row->process, row->lane, t0, t1)) {
			ui_details_reduced(ui, row->process, t0, t1);
			return 1;
		}
		ui->detail_count = 0;
		return ui_details_reduced(ui, row->process, t0, t1) > 0;
	}
	if (row->kind != LAYOUT_ROW_GPU_STREAM)
		return 0;
	const struct store_gpu_op *ops;
	size_t n = store_lane_gpu_all(ui->store, row->process, row->lane, row->row, &ops);
	struct cpuview_gap g;
	if (!cpuview_gap_at(ops, n, ui_cursor_ns(ui), ui_gap_min(ui), &g))
		return 0;
	ui_details_gap(ui, row->process, row->lane, ops, &g);
	return 1;
}

static int ui_key_enter(struct ui *ui, const struct ui_status *status, int key)
{
	if (ui->overlay == UI_OVERLAY_DETAILS) {
		ui->overlay = UI_OVERLAY_NONE;
		return UI_ACTION_NONE;
	}
	if (ui->panel_focus && ui_panel_shown(ui)) {
		ui_panel_jump(ui);
		return UI_ACTION_NONE;
	}
	if (ui->layout.selected >= ui->layout.count)
		return UI_ACTION_NONE;
	const struct layout_row *row = &ui->layout.rows[ui->layout.selected];
	if (layout_is_group(row) && row->kind != LAYOUT_ROW_THREAD)
		return ui_key_fold(ui, status, key);
	struct ui_hit hit = ui_row_hit(ui, row, ui_cursor_ns(ui), viewport_ns_per_col(&ui->vp));
	if (!hit.found && ui_cpu_details(ui, row)) {
		ui->overlay = UI_OVERLAY_DETAILS;
		return UI_ACTION_NONE;
	}
	if (!hit.found) {
		if (row->kind == LAYOUT_ROW_THREAD)
			return ui_key_fold(ui, status, key);
		ui_say(ui, "nothing under the cursor on this lane (move it with < >, or click)");
		return UI_ACTION_NONE;
	}
	ui_details(ui, &hit);
	ui->overlay = UI_OVERLAY_DETAILS;
	return UI_ACTION_NONE;
}

/* ] and [: the next / previous GPU idle gap (over the shading threshold) on any stream row. */
static int ui_key_gap(struct ui *ui, const struct ui_status *status, int key)
{
	(void)status;
	int dir = key == '[' ? -1 : 1;
	uint64_t t = ui_cursor_ns(ui);
	struct ui_hit best = {0};
	struct cpuview_gap bg = {0};
	for (size_t p = 0; p < store_process_count(ui->store); p++) {
		struct store_process_info pi;
		store_process_get(ui->store, p, &pi);
		for (size_t l = 0; l < pi.lane_count; l++) {
			struct store_lane_info li;
			store_lane_get(ui->store, p, l, &li);
			if (li.kind != STORE_LANE_GPU_STREAM)
				continue;
			for (size_t r = 0; r < li.gpu_row_count; r++) {
				const struct store_gpu_op *ops;
				size_t n = store_lane_gpu_all(ui->store, p, l, r, &ops);
				struct cpuview_gap g;
				if (!cpuview_gap_step(ops, n, t, dir, ui_gap_min(ui), &g))
					continue;
				if (best.found &&
				    (dir > 0 ? g.start_ns >= bg.start_ns : g.start_ns <= bg.start_ns))
					continue;
				bg = g;
				best = (struct ui_hit){.found = 1,
				                       .gpu = 1,
				                       .process = p,
				                       .lane = l,
				                       .row = r,
				                       .lane_kind = li.kind};
				best.op.start_ns = g.start_ns;
				best.op.end_ns = g.end_ns;
			}
		}
	}
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
	ui->prompt = UI_PROMPT_DUMP_SCOPE;
	return UI_ACTION_NONE;
}

static int ui_key_prompt(struct ui *ui, const struct ui_status *status, int key)
{
	(void)status;
	ui->prompt = key == '/' ? UI_PROMPT_FIND : UI_PROMPT_GOTO;
	ui->input[0] = 0;
	return UI_ACTION_NONE;
}

static void ui_find_step(struct ui *ui, int dir)
{
	if (!ui->query[0]) {
		ui_say(ui, "no search yet: / starts one");
		return;
	}
	uint64_t from;
	if (ui->last_hit.found)
		from = ui->last_hit.gpu ? ui->last_hit.op.start_ns : ui->last_hit.range.start_ns;
	else
		from = dir > 0 ? (ui->vp.start_ns ? ui->vp.start_ns - 1 : 0) : viewport_end_ns(&ui->vp);
	struct ui_hit hit = ui_find(ui, dir, from);
	if (!hit.found) {
		/* Wrap around once. */
		hit = ui_find(ui, dir, dir > 0 ? 0 : UINT64_MAX - 1);
		if (hit.found)
			ui_say(ui, dir > 0 ? "search wrapped to the start" : "search wrapped to the end");
	}
	if (!hit.found) {
		ui_set_message(ui, "no match for '%s'", ui->query);
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

/* Applies the theme of ui->theme to the colour pairs. */
static void ui_apply_theme(struct ui *ui)
{
	if (!ui->color)
		return;
	for (int i = 0; i < THEME_SLOT_COUNT; i++) {
		int fg = theme_degrade_color(ui->theme.slot[i].fg, COLORS);
		int bg = theme_degrade_color(ui->theme.slot[i].bg, COLORS);
		init_pair((short)(i + 1), (short)fg, (short)bg);
	}
	clearok(curscr, TRUE);
}

static void ui_load_theme(struct ui *ui, const char *name, int quiet)
{
	char bufs[3][512], msg[300], from[512];
	const char *dirs[4];
	theme_search_dirs(ui->exe_dir, bufs, dirs);
	theme_load(&ui->theme, name, dirs, msg, sizeof msg, from, sizeof from);
	if (msg[0] && quiet)
		ui_message(ui, msg);
	else if (msg[0])
		ui_say(ui, msg);
	else if (!quiet) {
		char text[300];
		snprintf(text, sizeof text, "theme %.60s (%.200s)", ui->theme.name, from);
		ui_say(ui, text);
	}
	ui_apply_theme(ui);
}

static int ui_key_theme(struct ui *ui, const struct ui_status *status, int key)
{
	(void)status;
	(void)key;
	size_t n = 0;
	while (theme_builtin_names[n])
		n++;
	ui->theme_index = (ui->theme_index + 1) % n;
	ui_load_theme(ui, theme_builtin_names[ui->theme_index], 0);
	return UI_ACTION_NONE;
}

static int ui_key_panel(struct ui *ui, const struct ui_status *status, int key)
{
	(void)status;
	(void)key;
	ui->panel_hidden = !ui->panel_hidden;
	if (ui->panel_hidden)
		ui->panel_focus = 0;
	return UI_ACTION_NONE;
}

static int ui_key_hot(struct ui *ui, const struct ui_status *status, int key)
{
	(void)status;
	(void)key;
	ui->hot_shown = !ui->hot_shown;
	return UI_ACTION_NONE;
}

static int ui_key_focus(struct ui *ui, const struct ui_status *status, int key)
{
	(void)status;
	(void)key;
	ui->panel_focus = ui_panel_shown(ui) ? !ui->panel_focus : 0;
	return UI_ACTION_NONE;
}

static int ui_key_log(struct ui *ui, const struct ui_status *status, int key)
{
	(void)status;
	(void)key;
	ui->show_log = !ui->show_log;
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
	else if (ui->panel_focus)
		ui->panel_focus = 0;
	else
		ui->show_log = 0;
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
    {'\n', "Enter", "details under the cursor: event, call stack, GPU gap", ui_key_enter},
    {'\r', NULL, NULL, ui_key_enter},
    {KEY_ENTER, NULL, NULL, ui_key_enter},
    {'f', "f", "fold / unfold the process, thread or GPU group", ui_key_fold},
    {'/', "/", "find by name (substring)", ui_key_prompt},
    {'n', "n N", "next / previous match", ui_key_find_next},
    {'N', NULL, NULL, ui_key_find_next},
    {'g', "g", "go to a time (seconds since the axis origin)", ui_key_prompt},
    {'d', "d", "dump the visible window or the whole capture to a file", ui_key_dump},
    {'t', "t", "next colour theme", ui_key_theme},
    {'h', "h", "show / hide the NVTX panel", ui_key_panel},
    {'H', "H", "show / hide hot functions of the selected thread in view", ui_key_hot},
    {']', "] [", "next / previous GPU idle gap (Enter on it: what the CPU did)", ui_key_gap},
    {'[', NULL, NULL, ui_key_gap},
    {'\t', "Tab", "focus the NVTX panel (Enter: slowest instance)", ui_key_focus},
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
	int gx = ui_gutter();
	int col = ev.x - gx;
	int in_lanes = ev.y >= ui->lanes_y && ev.y < ui->lanes_y + (int)ui->lanes_height;
	if (ev.bstate & (BUTTON4_PRESSED | BUTTON5_PRESSED)) {
		if (col >= 0 && col < ui->vp.cols)
			ui->cursor_col = col;
		if (col >= 0)
			ui_zoom(ui, (ev.bstate & BUTTON4_PRESSED) ? 0.8 : 1.25);
		else if (in_lanes)
			layout_select(&ui->layout, (ev.bstate & BUTTON4_PRESSED) ? -3 : 3, ui->lanes_height);
		return UI_ACTION_NONE;
	}
	if (ev.bstate & BUTTON1_PRESSED) {
		ui->dragging = 1;
		ui->drag_x = ev.x;
		if (in_lanes) {
			size_t i = ui->layout.top + (size_t)(ev.y - ui->lanes_y);
			if (i < ui->layout.count)
				ui->layout.selected = i;
		}
		if (col >= 0 && col < ui->vp.cols)
			ui->cursor_col = col;
		return UI_ACTION_NONE;
	}
	if (ui->dragging && (ev.bstate & (BUTTON1_RELEASED | REPORT_MOUSE_POSITION))) {
		int dx = ev.x - ui->drag_x;
		if (dx)
			ui_pan_cols(ui, -dx);
		ui->drag_x = ev.x;
		if (ev.bstate & BUTTON1_RELEASED)
			ui->dragging = 0;
	}
	return UI_ACTION_NONE;
}

/* Keys while the quit prompt is up: anything else cancels. */
static int ui_quit_prompt_key(struct ui *ui, int key)
{
	ui->prompt = UI_PROMPT_NONE;
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
	ui->prompt = UI_PROMPT_NONE;
	if (key != 'v' && key != 'V' && key != 'w' && key != 'W')
		return;
	ui->dump_whole = key == 'w' || key == 'W';
	ui->dump_from_ns = ui->dump_whole ? 0 : ui->vp.start_ns;
	ui->dump_to_ns = ui->dump_whole ? UINT64_MAX : ui->vp.start_ns + ui->vp.span_ns;
	time_t now = time(NULL);
	struct tm tm;
	localtime_r(&now, &tm);
	char stamp[32];
	strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
	snprintf(ui->input, sizeof ui->input, "cuscope-%d-%s.cuscope", status ? (int)status->pid : 0, stamp);
	ui->prompt = UI_PROMPT_DUMP_FILE;
}

int ui_dump_request(struct ui *ui, char *path, size_t size, uint64_t *from_ns, uint64_t *to_ns)
{
	if (!ui->dump_ready)
		return 0;
	ui->dump_ready = 0;
	snprintf(path, size, "%s", ui->dump_path);
	*from_ns = ui->dump_from_ns;
	*to_ns = ui->dump_to_ns;
	return 1;
}

/* Runs a submitted find or go-to prompt. */
static void ui_prompt_submit(struct ui *ui, enum ui_prompt kind)
{
	if (kind == UI_PROMPT_DUMP_FILE) {
		if (!ui->input[0])
			return;
		snprintf(ui->dump_path, sizeof ui->dump_path, "%s", ui->input);
		ui->dump_ready = 1;
		return;
	}
	if (kind == UI_PROMPT_FIND) {
		if (!ui->input[0])
			return;
		snprintf(ui->query, sizeof ui->query, "%.*s", (int)sizeof ui->query - 1, ui->input);
		if (ui->match)
			memset(ui->match, -1, ui->match_cap);
		ui->last_hit.found = 0;
		/* The first match at or after the cursor. */
		uint64_t t = ui_cursor_ns(ui);
		struct ui_hit hit = ui_find(ui, 1, t > ui->vp.span_ns / 2 ? t - ui->vp.span_ns / 2 : 0);
		if (!hit.found)
			hit = ui_find(ui, 1, 0);
		if (!hit.found) {
			ui_set_message(ui, "no match for '%s'", ui->query);
			return;
		}
		ui->last_hit = hit;
		ui_show_event(ui, &hit);
		return;
	}
	char *end;
	double s = strtod(ui->input, &end);
	while (*end == ' ' || *end == 's')
		end++;
	if (end == ui->input || *end) {
		ui_set_message(ui, "go to: '%s' is not a number of seconds", ui->input);
		return;
	}
	int64_t rel = (int64_t)(s * 1e9);
	uint64_t o = ui_origin(ui);
	uint64_t t = rel < 0 && (uint64_t)-rel > o ? 0 : (uint64_t)((int64_t)o + rel);
	ui->follow = 0;
	ui->vp.start_ns = t > ui->vp.span_ns / 2 ? t - ui->vp.span_ns / 2 : 0;
	ui->cursor_col = -1;
}

/* Keys while a text prompt is up: editing, Enter submits, Esc cancels. */
static void ui_text_prompt_key(struct ui *ui, int key)
{
	size_t len = strlen(ui->input);
	if (key == 27) {
		ui->prompt = UI_PROMPT_NONE;
	} else if (key == '\n' || key == '\r' || key == KEY_ENTER) {
		enum ui_prompt kind = ui->prompt;
		ui->prompt = UI_PROMPT_NONE;
		ui_prompt_submit(ui, kind);
	} else if (key == KEY_BACKSPACE || key == 127 || key == 8) {
		if (len)
			ui->input[len - 1] = 0;
	} else if (key == 21) { /* Ctrl-U */
		ui->input[0] = 0;
	} else if (key >= 0x20 && key < 0x7f && len + 1 < sizeof ui->input) {
		ui->input[len] = (char)key;
		ui->input[len + 1] = 0;
	}
}

int ui_handle_input(struct ui *ui, const struct ui_status *status)
{
	int actions = 0;
	int key;
	while ((key = getch()) != ERR) {
		ui->input_serial++;
		if (key == KEY_RESIZE) {
			/* the next draw picks up LINES/COLS */
		} else if (ui->prompt == UI_PROMPT_QUIT) {
			actions |= ui_quit_prompt_key(ui, key);
		} else if (ui->prompt == UI_PROMPT_DUMP_SCOPE) {
			ui_dump_scope_key(ui, status, key);
		} else if (ui->prompt != UI_PROMPT_NONE) {
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

/* ---- drawing --------------------------------------------------------------------------------- */

static void ui_draw_status(struct ui *ui, const struct ui_status *st)
{
	char line[1024], state[96], span[32], rate[32];
	attr_t a = ui_attr(ui, THEME_STATUS);
	ui_fill(0, 0, COLS, a, " ");

	if (!st || !st->live)
		snprintf(state, sizeof state, "CAPTURE");
	else if (ui->paused) {
		char newer[32], ev[32];
		uint64_t last = store_last_ns(ui->store), cnt = store_event_count(ui->store);
		ui_format_span(newer, sizeof newer, last > ui->pause_ns ? last - ui->pause_ns : 0);
		ui_format_rate(ev, sizeof ev, (double)(cnt > ui->pause_events ? cnt - ui->pause_events : 0));
		snprintf(state, sizeof state, "PAUSED +%s / %s ev newer", newer, ev);
	} else if (st->target_alive)
		snprintf(state, sizeof state, "%s LIVE%s", ui->g->live,
		         ui->follow ? "" : " (scrolled, End follows)");
	else if (st->exit_signal)
		snprintf(state, sizeof state, "EXITED (signal %d)", st->exit_signal);
	else
		snprintf(state, sizeof state, "EXITED (code %d)", st->exit_code);
	ui_format_span(span, sizeof span, ui->vp.span_ns);
	ui_format_rate(rate, sizeof rate, st ? st->events_per_s : 0);

	int x = ui_put(ui, 0, 0, COLS, a | A_BOLD, " cuscope ");
	snprintf(line, sizeof line, "%s %s ", ui->g->arrow, st && st->command ? st->command : "");
	/* The latest overhead-budget back-off (or what the budget holds reduced now). */
	char budget[256];
	const char *bnote = costview_budget_note(ui->store, budget, sizeof budget, NULL);
	int bw = bnote ? (int)strlen(bnote) + 2 : 0;
	if (bw > 64)
		bw = 64;
	/* The command gets what the rest leaves, but at least some of it shows. */
	uint64_t from = store_memory_from_ns(ui->store);
	int room = COLS - x - 60 - (ui->paused ? 16 : 0) - (from ? 22 : 0) - bw -
	           (st && st->log_note ? (int)strlen(st->log_note) + 2 : 0);
	x += ui_put(ui, 0, x, room > 12 ? room : 12, a, line);
	if (st && st->pid) {
		snprintf(line, sizeof line, " pid %d ", (int)st->pid);
		x += ui_put(ui, 0, x, COLS - x, a, line);
	}
	enum theme_slot ss = ui->paused                           ? THEME_STATUS_PAUSED
	                     : st && st->live && st->target_alive ? THEME_STATUS_LIVE
	                                                          : THEME_STATUS;
	x += ui_put(ui, 0, x, COLS - x, ss == THEME_STATUS ? a | A_BOLD : ui_attr(ui, ss), state);
	if (from) {
		/* A bounded live store: how far back memory reaches (older time is the band). */
		char reach[32];
		uint64_t now = ui_now(ui);
		ui_format_span(reach, sizeof reach, now > from ? now - from : 0);
		snprintf(line, sizeof line, "  memory: last %s", reach);
		x += ui_put(ui, 0, x, COLS - x, ui_attr(ui, THEME_STATUS_LIVE), line);
	}
	if (st && st->log_note) {
		snprintf(line, sizeof line, "  %s", st->log_note);
		x += ui_put(ui, 0, x, COLS - x, ui_attr(ui, THEME_STATUS_LIVE), line);
	}
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
		x += ui_put(ui, 0, x, COLS - x, ui_attr(ui, THEME_STATUS_LIVE), line);
	}
	/* After the fixed fields (their width was set aside above), so these stay where they are. */
	if (bnote) {
		snprintf(line, sizeof line, "  %s", bnote);
		x += ui_put(ui, 0, x, bw < COLS - x - 8 ? bw : COLS - x - 8, ui_attr(ui, THEME_STATUS_LIVE),
		            line);
	}
	if (st && st->log_path && COLS - x - 8 >= 16) {
		snprintf(line, sizeof line, "  log %s", st->log_path);
		x += ui_put(ui, 0, x, COLS - x - 8, a, line);
	}
	if (COLS - x >= 8)
		ui_put(ui, 0, COLS - 7, 7, a, "? help ");
}

/* Collects per (process, device) the stream rows, for the utilisation header. */
static void ui_collect_devices(struct ui *ui)
{
	for (size_t i = 0; i < ui->device_count; i++)
		ui->devices[i].nrows = 0;
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
			while (d < nd && !(ui->devices[d].process == p && ui->devices[d].device == li.device))
				d++;
			if (d == nd) {
				if (nd == UI_MAX_DEVICES)
					continue;
				struct ui_device *dv = &ui->devices[nd++];
				dv->process = p;
				dv->device = li.device;
				dv->nrows = 0;
				struct store_gpu_device_info di;
				const char *name = "";
				dv->uuid[0] = 0;
				if (store_gpu_device_find(ui->store, p, li.device, &di) == 0) {
					name = di.name;
					if (strncmp(name, "NVIDIA ", 7) == 0)
						name += 7;
					snprintf(dv->uuid, sizeof dv->uuid, "%s", di.uuid);
				}
				snprintf(dv->label, sizeof dv->label, "GPU%u %s", li.device, name);
			}
			struct ui_device *dv = &ui->devices[d];
			for (size_t r = 0; r < li.gpu_row_count; r++) {
				xgrow((void **)&dv->rows, &dv->cap, dv->nrows + 1, sizeof *dv->rows);
				dv->nrows++;
				dv->rows[dv->nrows - 1].n =
				    store_lane_gpu_all(ui->store, p, l, r, &dv->rows[dv->nrows - 1].ops);
			}
		}
	}
	ui->device_count = nd;
}

/* How many header lines the GPUs get on this screen. */
static int ui_header_lines(const struct ui *ui)
{
	int max = LINES >= 40 ? 4 : LINES >= 20 ? 2 : 0;
	return (int)ui->device_count < max ? (int)ui->device_count : max;
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
			addstr(ui->g->evicted);
			continue;
		}
		double f = e > s ? util_busy(dv->rows, dv->nrows, kind, s, e, 256, 16) : 0;
		int lvl = (int)(f * 8 + 0.5);
		if (f > 0 && lvl == 0)
			lvl = 1;
		addstr(ui->g->spark[lvl > 8 ? 8 : lvl]);
	}
}

/* " GPU0 H200  SM ▇▇▆▃▁  71%   copy ▁▂▁  4%  nvml 68%": busy now (last second) and over the view. */
static void ui_draw_gpu_header(struct ui *ui, int y, const struct ui_device *dv)
{
	uint64_t now = ui_now(ui);
	uint64_t from = now > 1000000000ull ? now - 1000000000ull : 0;
	double sm = util_busy(dv->rows, dv->nrows, WIRE_GPU_KERNEL, from, now, 50000, 2000);
	double cp = util_busy(dv->rows, dv->nrows, WIRE_GPU_MEMCPY, from, now, 50000, 2000);
	char lab[40], pct[16], nv[24] = "";
	unsigned nvp;
	if (ui->nvml && nvml_sm_util(ui->nvml, dv->uuid, clock_mono_ns(), &nvp) == 0) {
		snprintf(nv, sizeof nv, "  nvml %u%%", nvp);
		ui->nvml_sum += nvp + 1;
	}
	int lw = ui_gutter() - 1;
	snprintf(lab, sizeof lab, " %s", dv->label);
	ui_fill(y, 0, COLS, ui_attr(ui, THEME_NORMAL), " ");
	ui_put(ui, y, 0, lw, ui_attr(ui, THEME_GPU_HEADER), lab);
	int rest = COLS - lw - (int)strlen(nv) - 4 - 5 - 6 - 5;
	int sw = rest * 2 / 3, cw = rest - sw;
	int x = lw;
	x += ui_put(ui, y, x, 4, ui_attr(ui, THEME_UTIL_SM) | A_BOLD, " SM ");
	ui_sparkline(ui, y, x, sw, dv, WIRE_GPU_KERNEL, ui->vp.start_ns, viewport_end_ns(&ui->vp),
	             ui_attr(ui, THEME_UTIL_SM));
	x += sw > 0 ? sw : 0;
	snprintf(pct, sizeof pct, " %3.0f%%", sm * 100);
	x += ui_put(ui, y, x, 5, ui_attr(ui, THEME_UTIL_SM) | A_BOLD, pct);
	x += ui_put(ui, y, x, 6, ui_attr(ui, THEME_UTIL_COPY) | A_BOLD, " copy ");
	ui_sparkline(ui, y, x, cw, dv, WIRE_GPU_MEMCPY, ui->vp.start_ns, viewport_end_ns(&ui->vp),
	             ui_attr(ui, THEME_UTIL_COPY));
	x += cw > 0 ? cw : 0;
	snprintf(pct, sizeof pct, " %3.0f%%", cp * 100);
	x += ui_put(ui, y, x, 5, ui_attr(ui, THEME_UTIL_COPY) | A_BOLD, pct);
	if (nv[0])
		ui_put(ui, y, x, COLS - x, ui_attr(ui, THEME_UTIL_SM), nv);
}

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
		ui_put(ui, y, cx, 1, ui_attr(ui, THEME_CURSOR), ui->g->cursor);
	else
		mvchgat(y, cx, 1, at ^ A_REVERSE, pair, NULL);
}

static void ui_draw_axis(struct ui *ui, int y)
{
	int gx = ui_gutter();
	attr_t a = ui_attr(ui, THEME_AXIS);
	struct viewport_tick ticks[128];
	struct viewport_axis ax;
	size_t n = viewport_axis_ticks(&ui->vp, ui_origin(ui), ticks, 128, &ax);
	int next_free = 0;
	const char *unit = strcmp(ax.unit, "us") == 0 ? ui->g->micro : ax.unit;
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
	ui_put(ui, y, gx - 1, 1, a, ui->g->vline);
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
	const struct store_range *r = NULL;
	uint64_t from = ui->vp.start_ns, to = ui_data_end(ui, viewport_end_ns(&ui->vp));
	size_t n = from < to ? store_lane_row_query(ui->store, process, lane, row, from, to, &r) : 0;
	size_t ns = viewport_fold(&ui->vp, r, n, ui->segs, ui->seg_cap);
	for (size_t i = 0; i < ns; i++) {
		const struct viewport_seg *s = &ui->segs[i];
		if (s->kind == VIEWPORT_SEG_FOLD) {
			attr_t a = ui_attr(ui, THEME_FOLD) | (s->count >= 8 ? A_BOLD : 0);
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
		if (orow != row || o.start_ns >= to || now < from || o.start_ns > now)
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

/* Samples per cell of a thread lane over the view into ui->density; 0 when it has none there. */
static uint64_t ui_lane_density(struct ui *ui, size_t process, size_t lane)
{
	struct store_lane_cpu_info ci;
	store_lane_cpu_get(ui->store, process, lane, &ci);
	uint64_t to = ui_data_end(ui, viewport_end_ns(&ui->vp));
	if (!ci.samples || to <= ui->vp.start_ns)
		return 0;
	xgrow((void **)&ui->density, &ui->density_cap, (size_t)ui->vp.cols, sizeof *ui->density);
	/* Whole cells only: a paused view clips the data, not the cell width. */
	uint64_t end = viewport_end_ns(&ui->vp);
	uint64_t total = store_lane_sample_density(ui->store, process, lane, ui->vp.start_ns, end,
	                                           (size_t)ui->vp.cols, ui->density);
	if (ui->paused) {
		int64_t last = viewport_col_of(&ui->vp, to);
		for (int64_t c = last + 1; c < ui->vp.cols; c++)
			ui->density[c] = 0;
	}
	return total;
}

/* The strips' full scale: the fullest cell over the thread rows on screen. */
static void ui_density_scale(struct ui *ui, size_t first, size_t rows)
{
	ui->density_max = 0;
	for (size_t i = first; i < first + rows && i < ui->layout.count; i++) {
		const struct layout_row *r = &ui->layout.rows[i];
		if (r->kind != LAYOUT_ROW_THREAD || !ui_lane_density(ui, r->process, r->lane))
			continue;
		for (int c = 0; c < ui->vp.cols; c++)
			if (ui->density[c] > ui->density_max)
				ui->density_max = ui->density[c];
	}
}

/* One osrt or gc row: calls folded into cells, wide ones as "[read 30.1ms]" boxes. */
static void ui_draw_calls(struct ui *ui, int y, const struct layout_row *row)
{
	const struct store_call *c = NULL;
	uint64_t from = ui->vp.start_ns, to = ui_data_end(ui, viewport_end_ns(&ui->vp));
	int osrt = row->kind == LAYOUT_ROW_OSRT;
	size_t n = 0;
	if (from < to)
		n = osrt ? store_lane_osrt_query(ui->store, row->process, row->lane, row->row, from, to, &c)
		         : store_lane_gc_query(ui->store, row->process, row->lane, row->row, from, to, &c);
	size_t ns = viewport_fold_calls(&ui->vp, c, n, ui->segs, ui->seg_cap);
	attr_t a = ui_attr(ui, osrt ? THEME_OSRT : THEME_GC);
	int gx = ui_gutter();
	for (size_t i = 0; i < ns; i++) {
		const struct viewport_seg *sg = &ui->segs[i];
		int w = sg->col1 - sg->col0;
		if (sg->kind == VIEWPORT_SEG_FOLD || w <= 1) {
			ui_put(ui, y, gx + sg->col0, 1, a | (sg->count >= 8 ? A_BOLD : 0), ui->g->fold);
			continue;
		}
		const struct store_call *k = &c[sg->first];
		char label[256], text[300];
		/* Room inside the brackets: the box's cells less '[' and ']' where they show. */
		int room = w - (sg->clip_left ? 0 : 1) - (sg->clip_right ? 0 : 1);
		cpuview_call_label(store_string(ui->store, k->name_id), k->end_ns - k->start_ns,
		                   room > 0 ? (size_t)room : 0, label, sizeof label);
		snprintf(text, sizeof text, "%s%s", sg->clip_left ? "" : "[", label);
		ui_fill(y, gx + sg->col0, w, a, ui->g->bar);
		ui_put(ui, y, gx + sg->col0, w - (sg->clip_right ? 0 : 1), a | A_BOLD, text);
		if (!sg->clip_right)
			ui_put(ui, y, gx + sg->col1 - 1, 1, a | A_BOLD, "]");
	}
}

/* CPU-side cost sources the overhead budget reduced in timeline cell c (bit mask, see costview.h). */
static unsigned ui_cost_reduced_cell(const struct ui *ui, size_t process, int c, uint64_t until)
{
	uint64_t t0 = viewport_ns_of(&ui->vp, c), t1 = viewport_ns_of(&ui->vp, c + 1);
	return costview_reduced_mask(ui->store, process, COSTVIEW_CPU_SOURCES, t0, t1 > t0 ? t1 : t0 + 1,
	                             until);
}

/*
 * A cost row of a process: row 0 the estimated time added to the program's threads (%), row 1 the
 * collector's CPU (ms per second), each cell against the fullest in view (at least 1 % / 10 ms/s);
 * cells where the budget reduced a CPU-side source are underlined on row 0. The label gets the value
 * at the time cursor (or the newest one past it).
 */
static void ui_draw_cost_row(struct ui *ui, int y, const struct layout_row *row, char *label, size_t size)
{
	int gx = ui_gutter(), cols = ui->vp.cols, added = row->row == 0;
	if (cols <= 0)
		return;
	xgrow((void **)&ui->cost_cells, &ui->cost_cells_cap, (size_t)cols, sizeof *ui->cost_cells);
	uint64_t end = viewport_end_ns(&ui->vp), to = ui_data_end(ui, end);
	if (ui->cost_cells_frame != ui->frames || ui->cost_cells_process != row->process) {
		costview_cells(ui->store, row->process, ui->vp.start_ns, end, (size_t)cols,
		               ui_data_end(ui, UINT64_MAX), ui->cost_cells);
		ui->cost_cells_frame = ui->frames;
		ui->cost_cells_process = row->process;
	}
	double full = added ? 1.0 : 10.0;
	for (int c = 0; c < cols; c++) {
		const struct costview_rate *r = &ui->cost_cells[c];
		double v = added ? r->added_pct : r->cpu_ms_per_s;
		if (r->covered_ns && viewport_ns_of(&ui->vp, c) < to && v > full)
			full = v;
	}
	uint64_t until = ui_cost_until(ui, row->process);
	attr_t a = ui_attr(ui, added ? THEME_UTIL_SM : THEME_UTIL_COPY);
	for (int c = 0; c < cols; c++) {
		if (viewport_ns_of(&ui->vp, c) >= to)
			break;
		const struct costview_rate *r = &ui->cost_cells[c];
		double v = added ? r->added_pct : r->cpu_ms_per_s;
		int lvl = r->covered_ns && v > 0 ? 1 + (int)(v / full * 7.0 + 0.5) : 0;
		if (lvl > 8)
			lvl = 8;
		int reduced = added && ui_cost_reduced_cell(ui, row->process, c, until);
		if (lvl)
			ui_put(ui, y, gx + c, 1, a | (reduced ? A_UNDERLINE : 0), ui->g->spark[lvl]);
		else if (reduced)
			ui_put(ui, y, gx + c, 1, ui_attr(ui, THEME_MESSAGE), ui->g->reduced);
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
		ui_fill(y, gx + (int)c0, (int)(c1 - c0 + 1), ui_attr(ui, THEME_BASELINE), ui->g->baseline);
	/* Where the overhead budget reduced sampling (or blocking calls, counters) for this process: the
	 * baseline is marked, and samples there are underlined (they are sparser than asked). */
	int any_reduced = 0;
	if (li->first_ns && c1 >= c0 && store_cost_any(ui->store, process)) {
		uint64_t until = ui_cost_until(ui, process);
		for (int64_t c = c0; c <= c1; c++) {
			if (ui_cost_reduced_cell(ui, process, (int)c, until)) {
				ui_put(ui, y, gx + (int)c, 1, ui_attr(ui, THEME_MESSAGE), ui->g->reduced);
				any_reduced = 1;
			}
		}
	}
	/* CPU samples per cell over the baseline: ▁..█ against the fullest cell on screen. */
	if (ui_lane_density(ui, process, lane)) {
		attr_t sa = ui_attr(ui, THEME_SAMPLE);
		uint64_t until = any_reduced ? ui_cost_until(ui, process) : 0;
		for (int c = 0; c < ui->vp.cols; c++) {
			int lvl = cpuview_density_level(ui->density[c], ui->density_max);
			int under = any_reduced && ui_cost_reduced_cell(ui, process, c, until);
			if (lvl)
				ui_put(ui, y, gx + c, 1, sa | (under ? A_UNDERLINE : 0), ui->g->spark[lvl]);
		}
	}

	const struct store_range *m = NULL;
	uint64_t to = ui_data_end(ui, viewport_end_ns(&ui->vp));
	size_t n = ui->vp.start_ns < to
	               ? store_lane_mark_query(ui->store, process, lane, ui->vp.start_ns, to, &m)
	               : 0;
	size_t ns = viewport_fold(&ui->vp, m, n, ui->segs, ui->seg_cap);
	for (size_t i = 0; i < ns; i++)
		ui_put(ui, y, gx + ui->segs[i].col0, 1, ui_attr(ui, THEME_MARK), ui->g->mark);
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
		a = ui_attr(ui, THEME_COPY);
		ui_copy_label(op->subkind, label, sizeof label);
		fill = ui->g->bar;
		break;
	case WIRE_GPU_MEMSET:
		a = ui_attr(ui, THEME_MEMSET);
		snprintf(label, sizeof label, "memset");
		fill = ui->g->bar;
		break;
	case WIRE_GPU_SYNC:
		a = ui_attr(ui, THEME_SYNC);
		snprintf(label, sizeof label, "sync");
		fill = ui->g->bar;
		break;
	default: /* API calls: a launch is a ▮, a long call shows its name */
		a = ui_attr(ui, THEME_API);
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

/* Shades an idle gap [a, b) of a stream row when it is over the threshold, with its length inside. */
static void ui_draw_gap(struct ui *ui, int y, uint64_t a, uint64_t b)
{
	if (b <= a || b - a < ui->gap_ns)
		return;
	int64_t c0 = viewport_col_of(&ui->vp, a), c1 = viewport_col_of(&ui->vp, b);
	if (c1 < 0 || c0 >= ui->vp.cols)
		return;
	if (c0 < 0)
		c0 = 0;
	if (c1 > ui->vp.cols)
		c1 = ui->vp.cols;
	int w = (int)(c1 - c0);
	if (w <= 0)
		return;
	int gx = ui_gutter();
	attr_t at = ui_attr(ui, THEME_GAP);
	ui_fill(y, gx + (int)c0, w, at, ui->color ? " " : ui->g->gap);
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
	uint64_t to = ui_data_end(ui, viewport_end_ns(&ui->vp));
	if (ui->paused) /* ops that began after the pause stay hidden */
		n = ui_op_lower_bound(ops, n, to);
	size_t ns = viewport_fold_gpu(&ui->vp, ops, n, ui->segs, ui->seg_cap);
	if (stream && ui->gap_ns) {
		/* Idle gaps sit between segments: inside a fold every gap is under a cell. */
		size_t first = ns ? ui->segs[0].first : 0;
		if (!ns) {
			/* Nothing visible: maybe the whole view is one gap. */
			size_t i = ui_op_lower_bound(ops, n, ui->vp.start_ns);
			if (i > 0 && i < n)
				ui_draw_gap(ui, y, ops[i - 1].end_ns, ops[i].start_ns);
		} else {
			if (first > 0)
				ui_draw_gap(ui, y, ops[first - 1].end_ns, ops[first].start_ns);
			for (size_t i = 1; i < ns; i++) {
				size_t f = ui->segs[i].first;
				if (f > 0)
					ui_draw_gap(ui, y, ops[f - 1].end_ns, ops[f].start_ns);
			}
			size_t last = ui->segs[ns - 1].first + ui->segs[ns - 1].count;
			if (last > 0 && last < n)
				ui_draw_gap(ui, y, ops[last - 1].end_ns, ops[last].start_ns);
		}
	}
	for (size_t i = 0; i < ns; i++) {
		const struct viewport_seg *seg = &ui->segs[i];
		if (seg->kind == VIEWPORT_SEG_FOLD) {
			/* Dense API calls read as launches; dense GPU work as a busy cell. */
			const struct store_gpu_op *op = &ops[seg->first];
			int api = op->kind == WIRE_GPU_API_RUNTIME || op->kind == WIRE_GPU_API_DRIVER;
			attr_t a = api ? ui_attr(ui, THEME_API)
			               : ui_attr(ui, THEME_FOLD) | (seg->count >= 8 ? A_BOLD : 0);
			if (op->kind == WIRE_GPU_MEMCPY)
				a = ui_attr(ui, THEME_COPY);
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
		/* Only GPU-tracing notices explain missing GPU lanes (counters, sampling say other things).
		 */
		if (level == WIRE_NOTICE_WARNING && strncmp(text, "GPU tracing", 11) == 0)
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
	const char *fold_mark = row->folded ? ui->g->folded : ui->g->unfolded;

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
		snprintf(label, sizeof label, "%s%s %d ", row->folded ? ui->g->folded : "", base,
		         (int)pi.pid);
		la = ui_attr(ui, THEME_PROCESS) | (selected ? A_REVERSE : 0);
		ui_fill(y, 0, COLS, ui_attr(ui, THEME_BASELINE), ui->g->hline);
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
		if (store_gpu_device_find(ui->store, row->process, row->device, &di) == 0) {
			name = di.name;
			if (strncmp(name, "NVIDIA ", 7) == 0)
				name += 7;
		}
		snprintf(label, sizeof label, "%sGPU%u %s", fold_mark, row->device, name);
		la = ui_attr(ui, THEME_GPU_HEADER);
		ui_fill(y, gx, COLS - gx, ui_attr(ui, THEME_BASELINE), ui->g->hline);
		break;
	}
	case LAYOUT_ROW_GPU_STREAM:
		snprintf(label, sizeof label, row->row == 0 ? "  %s" : "",
		         store_lane_gpu_label(ui->store, row->process, row->lane));
		la = ui_attr(ui, THEME_THREAD);
		ui_draw_gpu_row(ui, y, row->process, row->lane, row->row, 1);
		break;
	case LAYOUT_ROW_COST:
		ui_draw_cost_row(ui, y, row, label, sizeof label);
		la = ui_attr(ui, THEME_THREAD) | (row->row ? A_DIM : 0);
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
	ui_put(ui, y, gx - 1, 1, ui_attr(ui, THEME_AXIS), ui->g->vline);
	if (selected && !ui->panel_focus) {
		/* The time cursor on the selected lane: its cell in reverse video. */
		ui_cursor_cell(ui, y);
	}
}

/* The NVTX panel: per name and domain n, p50, p90, p99, max and a log-scale histogram. */
static void ui_draw_panel(struct ui *ui, int y0, int h)
{
	ui_panel_order(ui);
	if (ui->panel_sel >= ui->stats.count)
		ui->panel_sel = ui->stats.count ? ui->stats.count - 1 : 0;
	int rows = h - 1;
	if (ui->panel_sel < ui->panel_top)
		ui->panel_top = ui->panel_sel;
	if (rows > 0 && ui->panel_sel >= ui->panel_top + (size_t)rows)
		ui->panel_top = ui->panel_sel - (size_t)rows + 1;
	int hist_w = COLS >= 120 ? 20 : COLS >= 100 ? 14 : 10;
	int num_w = 7 + 4 * 8;
	int name_w = COLS - num_w - hist_w - 3;
	if (name_w < 8)
		name_w = 8;
	char line[512], hdr[512];
	attr_t ha = ui_attr(ui, THEME_PANEL_HEADER) | (ui->panel_focus ? A_REVERSE : 0);
	ui_fill(y0, 0, COLS, ha, " ");
	snprintf(hdr, sizeof hdr, " %-*.*s %6s %7s %7s %7s %7s  %s", name_w - 1, name_w - 1,
	         ui->panel_focus ? "NVTX ranges (Enter: slowest, Tab: back)" : "NVTX ranges (Tab: focus)",
	         "n", "p50", "p90", "p99", "max", "histogram (log)");
	ui_put(ui, y0, 0, COLS, ha, hdr);
	for (int i = 0; i < rows; i++) {
		size_t k = ui->panel_top + (size_t)i;
		if (k >= ui->stats.count)
			break;
		const struct nvtx_stat *e = ui->stats.v[ui->order[k]];
		char name[256], p50[16], p90[16], p99[16], mx[16], n[16];
		if (e->domain_id)
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
		int sel = ui->panel_focus && k == ui->panel_sel;
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
		if (!ui->color)
			attrset(a);
		move(y, x);
		for (int b = 0; b < bw; b++) {
			int lvl = top ? (int)((bins[b] * 8 + top - 1) / top) : 0;
			addstr(ui->g->spark[lvl > 8 ? 8 : lvl]);
		}
	}
}

/*
 * The thread lane the hot panel describes: the selected row's thread, else the thread with the most
 * samples in view. 0 when no thread has samples there.
 */
static int ui_hot_lane(const struct ui *ui, size_t *process, size_t *lane)
{
	uint64_t to = ui_data_end(ui, viewport_end_ns(&ui->vp));
	if (ui->layout.selected < ui->layout.count) {
		const struct layout_row *r = &ui->layout.rows[ui->layout.selected];
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
			size_t n = store_lane_samples(ui->store, p, l, ui->vp.start_ns, to, &v);
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

/* The hot-functions panel: top leaf functions of one thread in the visible window. */
static void ui_draw_hot(struct ui *ui, int y0, int h)
{
	attr_t ha = ui_attr(ui, THEME_PANEL_HEADER), a = ui_attr(ui, THEME_PANEL);
	char hdr[512], tn[128] = "";
	size_t process = 0, lane = 0;
	struct store_hot_function hot[UI_HOT_TOP];
	uint64_t samples = 0;
	size_t n = 0;
	if (ui_hot_lane(ui, &process, &lane)) {
		struct store_lane_info li;
		store_lane_get(ui->store, process, lane, &li);
		snprintf(tn, sizeof tn, "%s %d", li.name && *li.name ? li.name : "thread", (int)li.tid);
		size_t top = h - 1 < UI_HOT_TOP ? (size_t)(h - 1) : UI_HOT_TOP;
		n = store_hot_functions(ui->store, process, lane, ui->vp.start_ns,
		                        ui_data_end(ui, viewport_end_ns(&ui->vp)), top, hot, &samples);
	}
	ui_fill(y0, 0, COLS, ha, " ");
	if (tn[0])
		snprintf(hdr, sizeof hdr, "%6s %6s %6s  Hot functions of %s in view: %llu samples  (H hides)",
		         "self", "share", "total", tn, (unsigned long long)samples);
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
		char line[512];
		const char *mod = store_frame_module(ui->store, hot[i].frame_id);
		snprintf(line, sizeof line, "%6llu %5.1f%% %6llu  ", (unsigned long long)hot[i].self,
		         cpuview_share(hot[i].self, samples), (unsigned long long)hot[i].total);
		int x = ui_put(ui, y, 0, COLS, a, line);
		x += ui_put(ui, y, x, COLS - x, a | A_BOLD, store_frame_function(ui->store, hot[i].frame_id));
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

static void ui_draw_log(struct ui *ui, const struct ui_status *st, int y0, int h)
{
	char title[512];
	const char *path = st && st->log_path ? st->log_path : NULL;
	ui_fill(y0, 0, COLS, ui_attr(ui, THEME_AXIS), ui->g->hline);
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
static void ui_draw_box_lines(struct ui *ui, const char *title, const char *const *lines, int n,
                              const char *footer, int want_w)
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

/* The help overlay, generated from the key table. */
static void ui_draw_help(struct ui *ui)
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
			label = ui->g->leftright;
		else if (strcmp(label, "UD") == 0)
			label = ui->g->updown;
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
	         ui->g->reduced);
	for (int i = n - 3; i < n; i++)
		lines[i] = text[i];
	ui_draw_box_lines(ui, "cuscope keys  (mouse: wheel zooms, click picks, drag pans)", lines, n,
	                  "Esc or ? closes this help", 74);
}

static void ui_draw_details(struct ui *ui)
{
	const char *lines[UI_DETAIL_LINES];
	for (int i = 0; i < ui->detail_count; i++)
		lines[i] = ui->details[i];
	ui_draw_box_lines(ui, "event details", lines, ui->detail_count, "Esc or Enter closes",
	                  COLS - 4 > 110 ? 110 : COLS - 4);
}

static void ui_draw_bottom(struct ui *ui, int y)
{
	if (ui->prompt == UI_PROMPT_QUIT) {
		attr_t a = ui_attr(ui, THEME_PROMPT);
		ui_fill(y, 0, COLS, a, " ");
		ui_put(ui, y, 0, COLS, a | A_BOLD,
		       " Target running: [d]etach (it runs on)  [s]top it  [c]ancel");
		return;
	}
	if (ui->prompt == UI_PROMPT_DUMP_SCOPE) {
		attr_t a = ui_attr(ui, THEME_PROMPT);
		ui_fill(y, 0, COLS, a, " ");
		ui_put(ui, y, 0, COLS, a | A_BOLD,
		       " Dump to a file: [v]isible window  [w]hole capture  [c]ancel (capture goes on)");
		return;
	}
	if (ui->prompt == UI_PROMPT_FIND || ui->prompt == UI_PROMPT_GOTO ||
	    ui->prompt == UI_PROMPT_DUMP_FILE) {
		attr_t a = ui_attr(ui, THEME_PROMPT);
		char text[700];
		snprintf(text, sizeof text,
		         ui->prompt == UI_PROMPT_FIND   ? " find: %s_"
		         : ui->prompt == UI_PROMPT_GOTO ? " go to (s since origin): %s_"
		                                        : " dump to file (Enter writes, Esc cancels): %s_",
		         ui->input);
		ui_fill(y, 0, COLS, a, " ");
		ui_put(ui, y, 0, COLS, a | A_BOLD, text);
		return;
	}
	if (ui->message[0] && clock_mono_ns() < ui->message_until) {
		ui_put(ui, y, 0, COLS, ui_attr(ui, THEME_MESSAGE), ui->message);
		return;
	}
	char hint[256];
	snprintf(hint, sizeof hint,
	         " space pause  +/- zoom  %s pan  %s lanes  Enter details  / find  h nvtx  H hot  ] gap  "
	         "? help  q quit",
	         ui->g->leftright, ui->g->updown);
	ui_put(ui, y, 0, COLS, ui_attr(ui, THEME_NORMAL) | A_DIM, hint);
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
	sig->input_serial = ui->input_serial;
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
		if (st->log_note)
			snprintf(sig->log_note, sizeof sig->log_note, "%s", st->log_note);
	}
	sig->memory_from = store_memory_from_ns(ui->store);
	sig->notices = store_notice_total(ui->store);
	sig->lines = LINES;
	sig->cols = COLS;
	sig->message = ui->message[0] && clock_mono_ns() < ui->message_until;
	sig->nvml_sum = ui->nvml_sum;
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

/*
 * The "not in memory" band over the lanes: time older than a bounded live store still holds is
 * drawn as such (labelled), never as empty lanes or an idle GPU.
 */
static void ui_draw_evicted_band(struct ui *ui, int y0, int h)
{
	int band = viewport_band_cols(&ui->vp, store_memory_from_ns(ui->store));
	if (band <= 0 || h <= 0)
		return;
	int gx = ui_gutter();
	attr_t a = ui_attr(ui, THEME_EVICTED) | A_DIM;
	static const char label[] = " not in memory ";
	int lw = (int)sizeof label - 1;
	for (int y = y0; y < y0 + h; y++) {
		size_t idx = ui->layout.top + (size_t)(y - y0);
		/* A process header keeps its text (it spans the whole width and holds no events). */
		if (idx < ui->layout.count && ui->layout.rows[idx].kind == LAYOUT_ROW_PROCESS)
			continue;
		ui_fill(y, gx, band, a, ui->g->evicted);
		/* The label on the second row (below a first process header) and every eighth after. */
		if ((y - y0) % 8 == 1 && band >= lw + 2)
			ui_put(ui, y, gx + (band - lw) / 2, lw, ui_attr(ui, THEME_EVICTED) | A_BOLD, label);
	}
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
	if (ui->queued_count && clock_mono_ns() >= ui->message_until) {
		snprintf(ui->message, sizeof ui->message, "%s", ui->queued[0]);
		ui->message_until = clock_mono_ns() + UI_MESSAGE_NS;
		memmove(ui->queued, ui->queued + 1, (size_t)--ui->queued_count * sizeof ui->queued[0]);
	}
	ui_rebuild_layout(ui, 0);
	if (!ui->paused)
		nvtx_stats_update(&ui->stats, ui->store);
	if (!ui->nvml_tried && store_gpu_event_count(ui->store)) {
		ui->nvml_tried = 1;
		ui->nvml = nvml_open();
	}
	ui->nvml_sum = 0;

	struct ui_frame_sig sig;
	ui_signature(ui, status, &sig);
	sig.nvml_sum = ui->last.nvml_sum; /* NVML changes show with the next data change */
	if (!force && ui->drawn_once && memcmp(&sig, &ui->last, sizeof sig) == 0)
		return;

	ui_collect_devices(ui);
	int hdr_h = ui_header_lines(ui);
	int log_h = 0;
	if (ui->show_log) {
		log_h = (LINES - 3) / 3;
		if (log_h < 4)
			log_h = LINES - 3 >= 8 ? 4 : 0;
	}
	int panel_h = 0;
	if (ui_panel_shown(ui)) {
		int want = (int)ui->stats.count + 1, cap = LINES / 4;
		if (cap < 3)
			cap = 3;
		panel_h = want < cap ? want : cap;
		if (LINES - 3 - hdr_h - log_h - panel_h < 4)
			panel_h = 0;
	}
	int hot_h = 0;
	if (ui->hot_shown) {
		hot_h = UI_HOT_TOP + 1;
		if (hot_h > LINES / 3)
			hot_h = LINES / 3;
		if (LINES - 3 - hdr_h - log_h - panel_h - hot_h < 4)
			hot_h = 0;
	}
	int axis_y = 1 + hdr_h;
	int lanes_y = axis_y + 1;
	int lanes_h = LINES - lanes_y - 1 - log_h - panel_h - hot_h;
	ui->lanes_y = lanes_y;
	ui->lanes_height = lanes_h > 0 ? (size_t)lanes_h : 0;
	layout_clamp(&ui->layout, ui->lanes_height);

	erase();
	ui_draw_status(ui, status);
	for (int i = 0; i < hdr_h; i++)
		ui_draw_gpu_header(ui, 1 + i, &ui->devices[i]);
	sig.nvml_sum = ui->nvml_sum;
	ui->last = sig;
	ui->drawn_once = 1;
	ui->frames++;
	if (LINES > axis_y + 1)
		ui_draw_axis(ui, axis_y);
	ui_density_scale(ui, ui->layout.top, lanes_h > 0 ? (size_t)lanes_h : 0);
	for (int i = 0; i < lanes_h; i++) {
		size_t idx = ui->layout.top + (size_t)i;
		if (idx >= ui->layout.count) {
			ui_put(ui, lanes_y + i, ui_gutter() - 1, 1, ui_attr(ui, THEME_AXIS), ui->g->vline);
			continue;
		}
		ui_draw_lane_row(ui, lanes_y + i, &ui->layout.rows[idx], idx == ui->layout.selected);
	}
	ui_draw_evicted_band(ui, lanes_y, lanes_h);
	if (ui->layout.count == 0 && lanes_h > 0)
		ui_put(ui, lanes_y, ui_gutter() + 1, ui->vp.cols - 1, ui_attr(ui, THEME_NORMAL) | A_DIM,
		       status && status->live ? "waiting for the target's first events..." : "no events");
	ui->hot_y = lanes_y + (lanes_h > 0 ? lanes_h : 0);
	ui->hot_h = hot_h;
	if (hot_h > 1)
		ui_draw_hot(ui, ui->hot_y, hot_h);
	ui->panel_y = ui->hot_y + hot_h;
	ui->panel_h = panel_h;
	if (panel_h > 0)
		ui_draw_panel(ui, ui->panel_y, panel_h);
	if (log_h > 0)
		ui_draw_log(ui, status, LINES - 1 - log_h, log_h);
	if (LINES > 1)
		ui_draw_bottom(ui, LINES - 1);
	if (ui->overlay == UI_OVERLAY_HELP)
		ui_draw_help(ui);
	else if (ui->overlay == UI_OVERLAY_DETAILS)
		ui_draw_details(ui);
	attrset(A_NORMAL);
	wnoutrefresh(stdscr);
	doupdate();
}

void ui_view_set(struct ui *ui, uint64_t start_ns, uint64_t span_ns)
{
	if (!ui)
		return;
	viewport_set(&ui->vp, start_ns, span_ns, ui_timeline_cols());
	ui->view_ready = 1;
	ui->follow = 0;
	ui->paused = 0;
}

void ui_message(struct ui *ui, const char *text)
{
	if (!ui)
		return;
	uint64_t now = clock_mono_ns();
	/* A message shown for less than a second is not replaced: the new one waits its turn. */
	if (ui->message[0] && now < ui->message_until &&
	    ui->message_until - now > UI_MESSAGE_NS - 1000000000ull) {
		if (ui->queued_count < 4)
			snprintf(ui->queued[ui->queued_count++], sizeof ui->queued[0], " %.250s",
			         text ? text : "");
		return;
	}
	snprintf(ui->message, sizeof ui->message, " %.250s", text ? text : "");
	ui->message_until = now + UI_MESSAGE_NS;
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
	ui->color = 1;
}

/* The directory of the running binary, for themes installed beside it. */
static void ui_find_exe_dir(struct ui *ui)
{
	char path[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
	ui->exe_dir[0] = 0;
	if (n <= 0)
		return;
	path[n] = 0;
	snprintf(ui->exe_dir, sizeof ui->exe_dir, "%s", dirname(path));
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
	ui->g = utf8 && !ui->options.ascii ? &ui_glyphs_utf8 : &ui_glyphs_ascii;
	double gap_ms = ui->options.gap_ms > 0   ? ui->options.gap_ms
	                : ui->options.gap_ms < 0 ? 0
	                                         : UI_DEFAULT_GAP_MS;
	ui->gap_ns = (uint64_t)(gap_ms * 1e6);
	ui->cursor_col = -1;
	ui_find_exe_dir(ui);

	ui->screen = newterm(NULL, out, in);
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
	theme_parse(&ui->mono, theme_builtin_text("mono"), NULL, 0);
	ui_load_theme(ui, ui->options.theme && *ui->options.theme ? ui->options.theme : "dark", 1);
	for (size_t i = 0; theme_builtin_names[i]; i++)
		if (strcmp(theme_builtin_names[i], ui->theme.name) == 0)
			ui->theme_index = i;
	layout_init(&ui->layout);
	nvtx_stats_init(&ui->stats);
	viewport_set(&ui->vp, 0, ui_window_ns(ui), ui_timeline_cols());
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
	if (ui->screen)
		delscreen(ui->screen);
	layout_fini(&ui->layout);
	nvtx_stats_fini(&ui->stats);
	nvml_close(ui->nvml);
	for (size_t i = 0; i < UI_MAX_DEVICES; i++)
		free(ui->devices[i].rows);
	free(ui->order);
	free(ui->match);
	free(ui->segs);
	free(ui->density);
	free(ui->cost_cells);
	free(ui);
}

void ui_emergency_restore(void)
{
	if (ui_curses_active) {
		ui_curses_active = 0;
		endwin();
	}
}
