/* The screen layout as a pure function of the terminal size and the panes shown (see panes.h). */
#include "cuscope/panes.h"

#include <string.h>

int panes_gutter(int cols)
{
	return cols < 3 * PANES_GUTTER ? cols / 3 : PANES_GUTTER;
}

int panes_timeline_cols(int cols)
{
	int c = cols - panes_gutter(cols);
	return c > 1 ? c : 1;
}

int panes_header_lines(int lines, size_t devices)
{
	int max = lines >= 40 ? 4 : lines >= 20 ? 2 : 0;
	return devices < (size_t)max ? (int)devices : max;
}

void panes_compute(const struct panes_input *in, struct panes *out)
{
	int lines = in->lines;
	memset(out, 0, sizeof *out);
	out->lines = lines;
	out->cols = in->cols;
	out->gutter = panes_gutter(in->cols);
	out->timeline_cols = panes_timeline_cols(in->cols);
	int hdr_h = panes_header_lines(lines, in->devices);
	/* The log takes a third of what the fixed lines leave, at least 4 lines or none. */
	int log_h = 0;
	if (in->log_shown) {
		log_h = (lines - 3) / 3;
		if (log_h < 4)
			log_h = lines - 3 >= 8 ? 4 : 0;
	}
	/* The NVTX panel: a header and its rows, at most a quarter of the screen (3 lines at least). */
	int panel_h = 0;
	if (in->nvtx_shown) {
		int cap = lines / 4;
		if (cap < 3)
			cap = 3;
		panel_h = in->nvtx_rows + 1 < (size_t)cap ? (int)in->nvtx_rows + 1 : cap;
		if (lines - 3 - hdr_h - log_h - panel_h < 4)
			panel_h = 0;
	}
	int hot_h = 0;
	if (in->hot_shown) {
		hot_h = PANES_HOT_TOP + 1;
		if (hot_h > lines / 3)
			hot_h = lines / 3;
		if (lines - 3 - hdr_h - log_h - panel_h - hot_h < 4)
			hot_h = 0;
	}
	/* The ranks pane: a heading and its rows (one line saying there are none), at most a quarter of
	 * the screen (2 lines at least), giving way to the lanes like the others. */
	int ranks_h = 0;
	if (in->ranks_shown) {
		size_t want = (in->ranks_rows ? in->ranks_rows : 1) + 1;
		int cap = lines / 4 < 2 ? 2 : lines / 4;
		ranks_h = want < (size_t)cap ? (int)want : cap;
		if (lines - 3 - hdr_h - log_h - panel_h - hot_h - ranks_h < 4)
			ranks_h = 0;
	}
	out->header_y = 1;
	out->header_h = hdr_h;
	out->axis_y = 1 + hdr_h;
	out->axis_h = lines > out->axis_y + 1;
	out->lanes_y = out->axis_y + 1;
	int lanes_h = lines - out->lanes_y - 1 - log_h - panel_h - hot_h - ranks_h;
	out->lanes_h = lanes_h > 0 ? lanes_h : 0;
	out->ranks_y = out->lanes_y + out->lanes_h;
	out->ranks_h = ranks_h;
	out->hot_y = out->ranks_y + ranks_h;
	out->hot_h = hot_h;
	out->nvtx_y = out->hot_y + hot_h;
	out->nvtx_h = panel_h;
	out->log_y = lines - 1 - log_h;
	out->log_h = log_h;
	out->bottom_y = lines > 1 ? lines - 1 : -1;
}

/* Whether y lies in [y0, y0 + h). */
static int panes_in(int y, int y0, int h)
{
	return h > 0 && y >= y0 && y < y0 + h;
}

struct panes_cell panes_hit(const struct panes *p, int x, int y)
{
	struct panes_cell c = {PANES_NONE, 0, x - p->gutter};
	if (x < 0 || y < 0 || x >= p->cols || y >= p->lines)
		return c;
	/* In drawing order: later panes cover earlier ones (the bottom line is drawn last). */
	static const enum panes_area order[] = {PANES_BOTTOM, PANES_LOG,   PANES_NVTX, PANES_HOT,
	                                        PANES_RANKS,  PANES_LANES, PANES_AXIS, PANES_HEADER};
	for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
		int y0 = 0, h = 0;
		switch (order[i]) {
		case PANES_BOTTOM:
			y0 = p->bottom_y, h = p->bottom_y >= 0;
			break;
		case PANES_LOG:
			y0 = p->log_y, h = p->log_h;
			break;
		case PANES_NVTX:
			y0 = p->nvtx_y, h = p->nvtx_h;
			break;
		case PANES_HOT:
			y0 = p->hot_y, h = p->hot_h > 1 ? p->hot_h : 0;
			break;
		case PANES_RANKS:
			y0 = p->ranks_y, h = p->ranks_h;
			break;
		case PANES_LANES:
			y0 = p->lanes_y, h = p->lanes_h;
			break;
		case PANES_AXIS:
			y0 = p->axis_y, h = p->axis_h;
			break;
		default:
			y0 = p->header_y, h = p->header_h;
			break;
		}
		if (panes_in(y, y0, h)) {
			c.area = order[i];
			c.line = y - y0;
			return c;
		}
	}
	c.area = y == 0 ? PANES_STATUS : PANES_NONE;
	return c;
}
