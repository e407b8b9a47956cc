/*
 * The visible time window and its mapping onto a row of terminal cells, tick choice for the time
 * axis, and folding of many ranges into cells. Pure arithmetic: no curses, testable on plain values.
 */
#ifndef CUSCOPE_VIEWPORT_H
#define CUSCOPE_VIEWPORT_H

#include <stddef.h>
#include <stdint.h>

#include "cuscope/store.h"

#define VIEWPORT_MIN_SPAN_NS 1000ull /* 1 µs: below that a cell would be a few ns */

struct viewport {
	uint64_t start_ns; /* CLOCK_MONOTONIC time at the left edge of column 0 */
	uint64_t span_ns;  /* time covered by all columns, > 0 */
	int cols;          /* cells of the timeline area, > 0 */
};

/* Sets a viewport, forcing span >= 1 ns and cols >= 1 so the arithmetic never divides by zero. */
void viewport_set(struct viewport *vp, uint64_t start_ns, uint64_t span_ns, int cols);
/* End of the visible window (exclusive), saturating. */
uint64_t viewport_end_ns(const struct viewport *vp);
/* Column holding time ns (floor); negative left of the view, >= cols right of it. */
int64_t viewport_col_of(const struct viewport *vp, uint64_t ns);
/*
 * Columns from the left edge that show time before memory_from_ns (a bounded live store's reach,
 * 0 = everything is in memory): [0, n) is drawn as the "not in memory" band.
 */
int viewport_band_cols(const struct viewport *vp, uint64_t memory_from_ns);
/* Time at the left edge of column col (col may lie outside [0, cols]); saturates at 0. */
uint64_t viewport_ns_of(const struct viewport *vp, int64_t col);
/* Nanoseconds covered by one cell, rounded up (>= 1). */
uint64_t viewport_ns_per_col(const struct viewport *vp);

/*
 * Scales the span by factor (< 1 zooms in) keeping around_ns on the same column, with the new span
 * clamped to [min_span_ns, max_span_ns] (min wins if they cross).
 */
void viewport_zoom(struct viewport *vp, double factor, uint64_t around_ns, uint64_t min_span_ns,
                   uint64_t max_span_ns);
/* Moves the window by cols columns (negative = earlier), never before time 0. */
void viewport_pan(struct viewport *vp, int64_t cols);

/* A labelled tick on the time axis. */
struct viewport_tick {
	int col;        /* column of the tick time (floor) */
	char label[24]; /* seconds relative to the origin, e.g. "12.5" */
};

/*
 * Picks a 1/2/5·10^k ns tick step so that labels (with their decimals) plus a gap of two cells fit
 * between ticks. *decimals receives the digits after the point the labels need. origin_ns is the
 * time labelled 0.
 */
uint64_t viewport_tick_step(const struct viewport *vp, uint64_t origin_ns, int *decimals);
/* Fills up to max ticks inside the view; returns how many. Labels are seconds since origin_ns. */
size_t viewport_ticks(const struct viewport *vp, uint64_t origin_ns, struct viewport_tick *out, size_t max);

/* How the axis is labelled at the current zoom (viewport_axis). */
struct viewport_axis {
	char unit[4];     /* "s", "ms" or "us" */
	uint64_t base_ns; /* labels are relative to this time (== origin for "s") */
	char base[32];    /* "" for "s"; else the base as seconds since origin, e.g. "12.345s" */
};

/*
 * Ticks with units that follow the zoom: whole-window views are labelled in seconds since origin;
 * when a tick step is under 100 ms the labels are milliseconds (under 100 µs: microseconds)
 * after a base time that the caller shows once (axis->base). Returns the ticks written.
 */
size_t viewport_axis_ticks(const struct viewport *vp, uint64_t origin_ns, struct viewport_tick *out,
                           size_t max, struct viewport_axis *axis);

/* Whether a range is too narrow for a box of its own and is folded into a density cell. */
int viewport_is_folded(const struct viewport *vp, uint64_t start_ns, uint64_t end_ns);

enum viewport_seg_kind {
	VIEWPORT_SEG_BOX = 1,  /* one range drawn as [name....] over cells [col0, col1) */
	VIEWPORT_SEG_FOLD = 2, /* count narrow ranges folded into cell col0 (col1 = col0 + 1) */
};

/* A run of cells on one row produced by viewport_fold. */
struct viewport_seg {
	enum viewport_seg_kind kind;
	int col0;       /* first cell */
	int col1;       /* one past the last cell */
	int clip_left;  /* the box began before the view (no '[') */
	int clip_right; /* the box ends after the view (no ']') */
	size_t first;   /* index of the (first) range in the input array */
	size_t count;   /* ranges covered: 1 for a box, >= 1 for a fold */
};

/*
 * First index in ranges[from, n) whose start_ns >= ns (n if none). Ranges are sorted by start, as
 * the store returns them.
 */
size_t viewport_lower_bound(const struct store_range *ranges, size_t n, size_t from, uint64_t ns);

/*
 * Lays out sorted, non-overlapping ranges (one store row) onto cells: wide ranges become boxes,
 * ranges narrower than a cell are folded per cell. Jumps with binary search, so the cost is
 * O(cols · log n) however many ranges are given. Returns the number of segments written (<= max;
 * max >= cols is always enough).
 */
size_t viewport_fold(const struct viewport *vp, const struct store_range *ranges, size_t n,
                     struct viewport_seg *out, size_t max);
/* viewport_fold for one gpu row of GPU ops (same rules; segs index into ops). */
size_t viewport_fold_gpu(const struct viewport *vp, const struct store_gpu_op *ops, size_t n,
                         struct viewport_seg *out, size_t max);
/* viewport_fold for one osrt or gc row of blocking calls / GC ranges (segs index into calls). */
size_t viewport_fold_calls(const struct viewport *vp, const struct store_call *calls, size_t n,
                           struct viewport_seg *out, size_t max);

#endif
