/*
 * The screen layout: which lines each pane gets on a terminal of a given size, and which pane a
 * screen cell belongs to (mouse hit-testing). Pure arithmetic: no curses.
 */
#ifndef CUSCOPE_PANES_H
#define CUSCOPE_PANES_H

#include <stddef.h>

#define PANES_GUTTER  24 /* label cells plus the separator, on a wide enough terminal */
#define PANES_HOT_TOP 8  /* rows of the hot-functions pane */

/* What decides the layout: the terminal and which panes are wanted. */
struct panes_input {
	int lines, cols;   /* terminal size */
	size_t devices;    /* GPU (process, device) pairs for the utilisation header */
	int log_shown;     /* the target's output log (l) */
	int nvtx_shown;    /* the NVTX panel (h) is on and has statistics */
	size_t nvtx_rows;  /* its statistics rows */
	int hot_shown;     /* the hot-functions pane (H) */
	int ranks_shown;   /* the ranks pane (R) */
	size_t ranks_rows; /* its rows (0: it says so in one line) */
};

/*
 * Lines of each pane, top to bottom: status line 0, GPU header, time axis, lanes, ranks, hot
 * functions, NVTX panel, log, and the message / prompt line last. A pane with height 0 is not drawn; the
 * optional panes give way so that the lanes keep at least 4 lines where the terminal allows.
 */
struct panes {
	int lines, cols;
	int gutter;        /* cells left of the timeline (labels and the separator) */
	int timeline_cols; /* cells of the timeline, >= 1 */
	int header_y, header_h;
	int axis_y, axis_h; /* axis_h 0 when no lane line fits below it */
	int lanes_y, lanes_h;
	int ranks_y, ranks_h; /* a heading and at least one line, or 0 */
	int hot_y, hot_h;     /* drawn when hot_h > 1 (a header and a row) */
	int nvtx_y, nvtx_h;
	int log_y, log_h;
	int bottom_y; /* -1 on a one-line terminal */
};

enum panes_area {
	PANES_NONE = 0, /* outside the screen */
	PANES_STATUS,
	PANES_HEADER,
	PANES_AXIS,
	PANES_LANES,
	PANES_RANKS,
	PANES_HOT,
	PANES_NVTX,
	PANES_LOG,
	PANES_BOTTOM,
};

/* A screen cell as the layout sees it. */
struct panes_cell {
	enum panes_area area;
	int line; /* line within the area (0 = its first) */
	int col;  /* timeline column (x - gutter): < 0 in the gutter, >= timeline_cols right of it */
};

/* Gutter width on a terminal of cols cells: PANES_GUTTER, or a third of a narrow terminal. */
int panes_gutter(int cols);
/* Timeline cells on a terminal of cols cells (at least 1). */
int panes_timeline_cols(int cols);
/* GPU header lines: one per device, at most 2 from 20 lines and 4 from 40 lines, none below. */
int panes_header_lines(int lines, size_t devices);
/* The layout for in. */
void panes_compute(const struct panes_input *in, struct panes *out);
/* Which area holds screen cell (x, y), the line within it and its timeline column. */
struct panes_cell panes_hit(const struct panes *p, int x, int y);

#endif
