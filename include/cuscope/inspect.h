/*
 * What the timeline shows where, as data: the event of a lane row nearest a time (hit-testing),
 * find by name, the next GPU idle gap, and the text of the details overlay. Pure: it takes a small
 * view of the window (no curses) and returns hits and lines of text, so it is testable on a store
 * built in memory.
 */
#ifndef CUSCOPE_INSPECT_H
#define CUSCOPE_INSPECT_H

#include <stddef.h>
#include <stdint.h>

#include "cuscope/cpuview.h"
#include "cuscope/layout.h"
#include "cuscope/store.h"
#include "cuscope/viewport.h"

#define INSPECT_LINES 48 /* lines of the details text */

/* What the screen shows: the window, the time cursor and the clocks that bound the data. */
struct inspect_view {
	const struct store *store;
	struct viewport vp;
	int cursor_col;      /* the time cursor's column in [0, vp.cols) */
	uint64_t now_ns;     /* CLOCK_MONOTONIC "now": open ranges reach it (the pause instant if paused) */
	uint64_t clip_ns;    /* data after this is not shown (the pause instant); UINT64_MAX: no clip */
	uint64_t origin_ns;  /* the time labelled 0 on the axis */
	uint64_t gap_min_ns; /* shortest GPU idle gap worth explaining or jumping to */
};

/* A search hit or an event picked under the cursor: where it is and what it is. */
struct inspect_hit {
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

/* Lines of the details overlay. */
struct inspect_text {
	char lines[INSPECT_LINES][256];
	int count;
};

/* A search by name: the query and a per-name-id cache of whether it matches. */
struct inspect_find {
	char query[128];
	int8_t *match; /* per name id: -1 unknown, 0/1 */
	size_t match_cap;
};

/* Upper bound of the data shown: to, or the clip (pause instant) when earlier. */
uint64_t inspect_data_end(const struct inspect_view *v, uint64_t to);
/* Time at the middle of the cursor's cell. */
uint64_t inspect_cursor_ns(const struct inspect_view *v);
/* The event of a lane row nearest to time t, within slack ns (found = 0 when none). */
struct inspect_hit inspect_row_hit(const struct inspect_view *v, const struct layout_row *row, uint64_t t,
                                   uint64_t slack);
/* The layout row showing a hit (compare with layout_find). */
struct layout_row inspect_hit_row(const struct store *store, const struct inspect_hit *hit);

/* An empty search; inspect_find_fini frees its cache. */
void inspect_find_init(struct inspect_find *f);
void inspect_find_fini(struct inspect_find *f);
/* Sets the search text (case-insensitive substring) and forgets the cached matches. */
void inspect_find_set(struct inspect_find *f, const char *query);
/*
 * The nearest event whose name matches the query, starting strictly after (dir > 0) or before
 * (dir < 0) time from, over every row of every lane. Scans from a binary-searched start and stops
 * at the first match of each row: O(rows · log n) plus the non-matching events skipped.
 */
struct inspect_hit inspect_find(struct inspect_find *f, const struct store *store, int dir, uint64_t from);
/*
 * The next (dir > 0) or previous GPU idle gap of at least min_ns on any stream row from time t:
 * 1 with *hit (its row; op.start_ns/end_ns the gap) and *gap, or 0 when there is none.
 */
int inspect_gap_step(const struct store *store, uint64_t t, int dir, uint64_t min_ns, struct inspect_hit *hit,
                     struct cpuview_gap *gap);

/* The details of an event: what it is, when, where, and what surrounds it. Replaces out. */
void inspect_details(const struct inspect_view *v, struct inspect_text *out, const struct inspect_hit *hit);
/*
 * Details with nothing under the cursor: the samples of the cursor's cell on a thread row (and
 * what the overhead budget reduced there), the cost rows' readings, or the GPU idle gap holding the
 * cursor on a stream row. 1 when out was filled.
 */
int inspect_cell_details(const struct inspect_view *v, struct inspect_text *out,
                         const struct layout_row *row);
/* Where a reduced stretch still open ends: now while the process is connected, else its newest reading. */
uint64_t inspect_cost_until(const struct inspect_view *v, size_t process);

#endif
