/*
 * The UI's private header: struct ui and what its files (one per pane, plus cells, state and keys)
 * share. Nothing outside src/ui includes it.
 */
#ifndef CUSCOPE_UI_IMPL_H
#define CUSCOPE_UI_IMPL_H

#define NCURSES_WIDECHAR 1
#include <curses.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "cuscope/ui.h"
#include "cuscope/costview.h"
#include "cuscope/inspect.h"
#include "cuscope/layout.h"
#include "cuscope/nvtxstats.h"
#include "cuscope/panes.h"
#include "cuscope/rankspane.h"
#include "cuscope/store.h"
#include "cuscope/theme.h"
#include "cuscope/util.h"
#include "cuscope/viewport.h"

struct nvml;

#define UI_MESSAGE_NS     (3ull * 1000000000ull)
#define UI_LOG_TAIL       (64 * 1024) /* bytes of the log read per draw */
#define UI_DEFAULT_SPAN   (10ull * 1000000000ull)
#define UI_DEFAULT_GAP_MS 10.0
#define UI_MAX_DEVICES    8
#define UI_SPARK_MAX      256

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

/* The glyph sets (cells.c). */
extern const struct ui_glyphs ui_glyphs_utf8;
extern const struct ui_glyphs ui_glyphs_ascii;

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
	uint64_t ranks_at; /* when the ranks pane's rows were computed: new rows redraw */
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

/* cells.c: the terminal, glyphs and colours. */
struct ui_cells {
	SCREEN *screen;
	const struct ui_glyphs *g;
	int color;
	struct theme theme, mono;
	size_t theme_index; /* in theme_builtin_names, for t */
	char exe_dir[PATH_MAX];
};

/* state.c: the visible time window and how it moves. */
struct ui_view {
	struct viewport vp;
	int ready;  /* vp set from the data once */
	int follow; /* live view tracks now */
	int paused; /* frozen: no follow, no layout or panel updates, data clipped at pause_ns */
	uint64_t pause_ns, pause_events;
	int cursor_col;  /* time cursor column in the timeline; < 0 = centre */
	uint64_t now_ns; /* CLOCK_MONOTONIC "now" of a live view, 0 for a capture */
	uint64_t gap_ns; /* shade GPU idle gaps at least this long (0: off) */
};

/* timeline.c: the lane rows on screen. */
struct ui_lanes {
	struct layout layout;
	uint64_t gen_built; /* store generation the layout was built from */
	size_t height;      /* rows for lanes in the last frame */
	struct viewport_seg *segs;
	size_t seg_cap;
	uint32_t *density; /* samples per timeline cell of one thread lane */
	size_t density_cap;
	uint32_t density_max; /* fullest cell over the visible thread rows: the strips' full scale */
};

/* keys.c: the prompt on the bottom line and the dump it asks for. */
struct ui_prompts {
	enum ui_prompt kind;
	char input[512];
	int dump_whole; /* the pending dump covers the whole capture */
	int dump_ready; /* a dump request waits for the CLI (ui_dump_request) */
	uint64_t dump_from_ns, dump_to_ns;
	char dump_path[512];
};

/* keys.c: a mouse drag in progress. */
struct ui_mouse {
	int drag_x, dragging;
};

/* state.c, status.c: the message on the bottom line and those waiting for it. */
struct ui_messages {
	char text[768];
	uint64_t until;      /* CLOCK_MONOTONIC end of the shown message */
	char queued[4][256]; /* messages waiting for the line (each gets its few seconds) */
	int queued_count;
	uint64_t notice_shown; /* store_notice_total already put on the line */
};

/* panes.c: the NVTX statistics panel. */
struct ui_nvtx_pane {
	struct nvtx_stats stats;
	size_t *order; /* display order of stats.v */
	size_t order_cap;
	int hidden; /* h */
	int focus;  /* Tab */
	size_t sel, top;
};

/* steps.c: the steps inferred for each process without repeating NVTX ranges (steps.h). */
struct ui_steps_proc {
	struct store_range *v; /* sorted, not overlapping; name_id and domain_id 0 */
	size_t n, cap;
	uint64_t first_index; /* number of v[0] among the steps shown since the start (for the colours) */
	uint64_t fed_end_ns;  /* the NVTX panel holds this process's steps ending up to here */
};
struct ui_steps {
	struct ui_steps_proc *procs; /* by store process index */
	size_t count;
	uint64_t generation, at_ns; /* store generation and time of the last computation */
	uint64_t cost_ns;           /* what it took */
};

/* ranks.c: the ranks pane (R): per rank step times, NCCL, compute and GPU idle, the straggler first. */
struct ui_ranks_pane {
	struct rankspane model; /* rows (recomputed at most once a second), selection */
	int shown;              /* R */
	int focus;              /* R or Tab: Up/Down move the selection, Enter jumps */
};

/* panes.c: the hot-functions pane (H). */
struct ui_hot_pane {
	int shown;
	int order;       /* enum ui_hot_order (i switches self / inclusive) */
	int suggested;   /* the --python-perf hint was shown once */
	int auto_python; /* the thread last drawn in auto order had Python frames */
};

enum ui_hot_order {
	UI_HOT_AUTO,      /* inclusive Python functions on a Python thread, else self */
	UI_HOT_SELF,      /* leaf functions by self samples */
	UI_HOT_INCLUSIVE, /* by inclusive samples (Python frames only on a Python thread) */
};

/* panes.c: the target's output log (l). */
struct ui_log_pane {
	int shown;
};

/* gpu_header.c: the utilisation header and the GPU record rate. */
struct ui_gpu_header {
	struct ui_device devices[UI_MAX_DEVICES];
	size_t device_count;
	struct nvml *nvml;
	int nvml_tried;
	unsigned nvml_sum;
	uint64_t rate_t0, rate_c0; /* last rate sample: time, store_gpu_event_count */
	double rate;               /* GPU records per second */
};

/* cost_rows.c: per timeline cell of one process, shared by its two rows in a frame. */
struct ui_cost_rows {
	struct costview_rate *cells;
	size_t cap;
	uint64_t frame; /* frame and process the cells hold */
	size_t process;
};

/* state.c: the triggers' firings (--trigger), marked on the axis, walked with } and {. */
#define UI_TRIGGERS_MAX 10000u
struct ui_trigger_marks {
	uint64_t *time_ns; /* in order of firing */
	char (*expr)[64];  /* their expressions, cut */
	size_t count, cap;
};

/* gpu_metrics.c: one GPU metric lane's cells (drawn one row at a time). */
struct ui_metric_rows {
	double *cells;
	uint8_t *have;
	size_t cap;
};

/* ui.c: what the last frame showed, to skip drawing an unchanged one. */
struct ui_frame {
	struct ui_frame_sig last;
	int drawn_once;
	uint64_t count;        /* frames drawn */
	uint64_t input_serial; /* keys read */
};

struct ui {
	struct store *store;
	struct ui_options options;
	struct ui_cells cells;
	struct ui_view view;
	struct ui_lanes lanes;
	enum ui_overlay overlay;
	struct ui_prompts prompt;
	struct ui_mouse mouse;
	struct ui_messages msg;
	struct inspect_text details; /* the details overlay (panes.c) */
	struct inspect_find find;    /* the last search (keys.c) */
	struct inspect_hit last_hit; /* its last match */
	struct ui_nvtx_pane nvtx;
	struct ui_hot_pane hot;
	struct ui_ranks_pane ranks;
	struct ui_steps steps;
	struct ui_log_pane log;
	struct ui_gpu_header gpu;
	struct ui_cost_rows cost;
	struct ui_trigger_marks triggers;
	struct ui_metric_rows metrics;
	struct ui_frame frame;
	struct panes panes; /* the last frame's screen layout */
};

/* ---- cells.c ---- */
attr_t ui_attr(const struct ui *ui, enum theme_slot slot);
/* The colour slot of a range or kernel name: neighbouring ids get different colours. */
enum theme_slot ui_range_slot(uint32_t name_id);
/*
 * Copies up to maxw display cells of s into out, replacing what the terminal cannot show (control
 * bytes, invalid UTF-8, non-ASCII without a UTF-8 locale) by '?'. Returns the cells used.
 */
int ui_clip(const struct ui *ui, const char *s, int maxw, char *out, size_t outsz);
/* Writes s at (y, x) clipped to maxw cells with attribute a; returns the cells written. */
int ui_put(const struct ui *ui, int y, int x, int maxw, attr_t a, const char *s);
/* Fills cells [x, x + n) of row y with one glyph. */
void ui_fill(int y, int x, int n, attr_t a, const char *glyph);
/* A span of time for the status line: "10.0s", "250.0ms", "12.5us". */
void ui_format_span(char *buf, size_t size, uint64_t ns);
/* A duration in at most 7 cells: "812ns", "41.2us", "41.2ms", "1.20s". */
void ui_format_dur(char *buf, size_t size, uint64_t ns);
/* A rate or count in a few cells: "812", "41k", "1.20M". */
void ui_format_rate(char *buf, size_t size, double rate);
/* Loads a theme by name or path and applies it; quiet: only problems are shown (start-up). */
void ui_load_theme(struct ui *ui, const char *name, int quiet);
/* Starts colour unless NO_COLOR is set or the terminal has none. */
void ui_init_colors(struct ui *ui);

/* ---- state.c ---- */
int ui_gutter(void);
/* Cells of the timeline on this terminal (panes_timeline_cols). */
int ui_timeline_cols(void);
/* "Now" for drawing: the pause instant, the CLI's clock when live, else the end of the data. */
uint64_t ui_now(const struct ui *ui);
/* Upper bound of the data drawn: the pause instant while paused. */
uint64_t ui_data_end(const struct ui *ui, uint64_t to);
/* Time labelled 0 on the axis: the first process's start. */
uint64_t ui_origin(const struct ui *ui);
/* The configured visible span (--window), ns. */
uint64_t ui_window_ns(const struct ui *ui);
/* The time cursor's column, inside the timeline (the centre until one is set). */
int ui_cursor_col(const struct ui *ui);
/* Time at the middle of the cursor's cell. */
uint64_t ui_cursor_ns(const struct ui *ui);
/* Places the right edge on now, aligned to whole cells so columns don't shimmer as time moves. */
void ui_follow_now(struct ui *ui);
/* Sets "now" and the columns for this frame; first sets the window from the data; follows now. */
void ui_update_view(struct ui *ui, const struct ui_status *status);
/* Rebuilds the lane rows from the store (not while paused: the picture stays still). */
void ui_rebuild_layout(struct ui *ui, int force);
/* Shows a message now (the answer to a key), replacing what the line shows. */
void ui_say(struct ui *ui, const char *text);
/* ui_say with one string argument formatted into fmt. */
void ui_set_message(struct ui *ui, const char *fmt, const char *arg);
/* Moves the view onto an event, selects its row and puts the cursor on it. */
void ui_show_event(struct ui *ui, const struct inspect_hit *hit);
/* Whether the view is of a live target (not a capture file). */
int ui_live(const struct ui_status *status);
/* Pauses (freezing the picture at now) or resumes following now. */
void ui_set_paused(struct ui *ui, int on);
/* Zooms keeping the cursor's time on the cursor's column. */
void ui_zoom(struct ui *ui, double factor);
/* Pans by cols columns; looking back in time means not following now. */
void ui_pan_cols(struct ui *ui, int64_t cols);
/* Minimum length of a GPU idle gap worth explaining or jumping to. */
uint64_t ui_gap_min(const struct ui *ui);
/* Centres the view on trigger firing i, the cursor on it, and says which it is. */
void ui_trigger_show(struct ui *ui, size_t i);
/* What model/inspect needs of the view: window, cursor, now, the pause clip, origin, gap threshold. */
void ui_inspect_view(const struct ui *ui, struct inspect_view *v);
/* Where a reduced stretch of the cost rows still open ends (inspect_cost_until). */
uint64_t ui_cost_until(const struct ui *ui, size_t process);

/* ---- keys.c ---- */
/* The help overlay, generated from the key table. */
void ui_draw_help(struct ui *ui);

/* ---- timeline.c ---- */
void ui_draw_axis(struct ui *ui, int y);
/* The strips' full scale: the fullest cell over the thread rows on screen. */
void ui_density_scale(struct ui *ui, size_t first, size_t rows);
/* One lane row on line y: its label in the gutter and its events on the timeline. */
void ui_draw_lane_row(struct ui *ui, int y, const struct layout_row *row, int selected);
/*
 * The "not in memory" band over the lanes: time older than a bounded live store still holds is
 * drawn as such (labelled), never as empty lanes or an idle GPU.
 */
void ui_draw_evicted_band(struct ui *ui, int y0, int h);

/* ---- cost_rows.c ---- */
/* CPU-side cost sources the overhead budget reduced in timeline cell c (bit mask, see costview.h). */
unsigned ui_cost_reduced_cell(const struct ui *ui, size_t process, int c, uint64_t until);
/*
 * A cost row of a process: row 0 the estimated time added to the program's threads (%), row 1 the
 * collector's CPU (ms per second), each cell against the fullest in view (at least 1 % / 10 ms/s);
 * cells where the budget reduced a CPU-side source are underlined on row 0. The label gets the value
 * at the time cursor (or the newest one past it).
 */
void ui_draw_cost_row(struct ui *ui, int y, const struct layout_row *row, char *label, size_t size);

/* ---- gpu_metrics.c ---- */
/*
 * A GPU hardware metric's counter lane: each cell the time-weighted mean of the samples in it as a
 * spark level against a full scale (100 % for percentages, else the largest in view); the label
 * names the metric and its value at the time cursor.
 */
void ui_draw_metric_row(struct ui *ui, int y, const struct layout_row *row, char *label, size_t size);

/* ---- gpu_header.c ---- */
/* Collects per (process, device) the stream rows, for the utilisation header. */
void ui_collect_devices(struct ui *ui);
/* " GPU0 H200  SM ▇▇▆▃▁  71%   copy ▁▂▁  4%  nvml 68%": busy now (last second) and over the view. */
void ui_draw_gpu_header(struct ui *ui, int y, const struct ui_device *dv);
/* GPU rate sample (once a second) and new collector warnings onto the message line. */
void ui_update_gpu(struct ui *ui);

/* ---- panes.c ---- */
/* The panel's rows in display order (largest total first). */
void ui_panel_order(struct ui *ui);
/* Whether the NVTX panel is on and has statistics to show. */
int ui_panel_shown(const struct ui *ui);
/* The NVTX panel: per name and domain n, p50, p90, p99, max and a log-scale histogram. */
void ui_draw_panel(struct ui *ui, int y0, int h);
/* The hot-functions panel: top functions of one thread in the visible window (self or inclusive). */
void ui_draw_hot(struct ui *ui, int y0, int h);
/* i: switches the hot panel between self and inclusive order (showing it if hidden). */
void ui_hot_toggle_order(struct ui *ui);
/* The log pane: a rule with the log's path, then the last lines of the target's output. */
void ui_draw_log(struct ui *ui, const struct ui_status *st, int y0, int h);
/* A framed box of lines in the middle of the screen. */
void ui_draw_box_lines(struct ui *ui, const char *title, const char *const *lines, int n, const char *footer,
                       int want_w);
/* The details overlay (ui->details, filled by model/inspect). */
void ui_draw_details(struct ui *ui);

/* ---- ranks.c ---- */
/* Recomputes the ranks pane's rows when shown and due (never per frame; not while paused). */
void ui_ranks_update(struct ui *ui);
/* The ranks pane: a heading, then one line per rank (the straggler first), or why there are none. */
void ui_draw_ranks(struct ui *ui, int y0, int h);
/* Enter on the ranks pane: the selected rank's lanes on top, unfolded, its slowest step in view. */
void ui_ranks_jump(struct ui *ui);

/* ---- steps.c ---- */
/*
 * Recomputes the inferred steps (when the store changed, not while paused, at most once a second and 5% of
 * the time) over each
 * process's newest STEPS_LIVE_EVENTS kernels, keeps the older ones, feeds the finished ones to the NVTX
 * panel ("step (inferred)") and marks the layout's step rows. 1 when a row came or went (rebuild).
 */
int ui_steps_update(struct ui *ui);
void ui_steps_fini(struct ui_steps *s);
/* The "step (inferred)" row of a process. */
void ui_draw_steps_row(struct ui *ui, int y, const struct layout_row *row);
/* The NVTX panel's inferred entry: shows its slowest step, selecting its process's steps row. */
void ui_steps_jump(struct ui *ui, const struct nvtx_stat *e);

/* ---- status.c ---- */
void ui_draw_status(struct ui *ui, const struct ui_status *st);
/* The bottom line: a prompt, else the current message, else the key hints. */
void ui_draw_bottom(struct ui *ui, int y);

#endif
