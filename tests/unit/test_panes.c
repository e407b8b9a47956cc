/* The screen layout (model/panes.c): pane heights and positions, and which pane a cell is in. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "cuscope/panes.h"

static struct panes layout(int lines, int cols, size_t devices, int log, int nvtx, size_t nvtx_rows, int hot)
{
	struct panes_input in = {lines, cols, devices, log, nvtx, nvtx_rows, hot};
	struct panes p;
	panes_compute(&in, &p);
	return p;
}

/* layout() with the ranks pane shown and ranks rows. */
static struct panes layout_ranks(int lines, size_t devices, int log, int nvtx, size_t nvtx_rows, int hot,
                                 size_t ranks)
{
	struct panes_input in = {lines, 120, devices, log, nvtx, nvtx_rows, hot, 1, ranks};
	struct panes p;
	panes_compute(&in, &p);
	return p;
}

static void test_gutter(void **state)
{
	(void)state;
	assert_int_equal(panes_gutter(200), 24);
	assert_int_equal(panes_timeline_cols(200), 176);
	assert_int_equal(panes_gutter(72), 24); /* 3 gutters fit: the full one */
	assert_int_equal(panes_gutter(71), 23); /* narrower: a third */
	assert_int_equal(panes_gutter(60), 20);
	assert_int_equal(panes_timeline_cols(60), 40);
	assert_int_equal(panes_gutter(1), 0);
	assert_int_equal(panes_timeline_cols(1), 1); /* never 0: the viewport divides by it */
	assert_int_equal(panes_timeline_cols(0), 1);
}

static void test_header_lines(void **state)
{
	(void)state;
	assert_int_equal(panes_header_lines(19, 3), 0); /* too short for a header */
	assert_int_equal(panes_header_lines(20, 3), 2);
	assert_int_equal(panes_header_lines(39, 9), 2);
	assert_int_equal(panes_header_lines(40, 9), 4);
	assert_int_equal(panes_header_lines(40, 1), 1); /* one line per device */
	assert_int_equal(panes_header_lines(40, 0), 0);
}

static void test_lanes_only(void **state)
{
	(void)state;
	struct panes p = layout(40, 120, 1, 0, 0, 0, 0);
	assert_int_equal(p.gutter, 24);
	assert_int_equal(p.timeline_cols, 96);
	assert_int_equal(p.header_y, 1);
	assert_int_equal(p.header_h, 1);
	assert_int_equal(p.axis_y, 2);
	assert_int_equal(p.axis_h, 1);
	assert_int_equal(p.lanes_y, 3);
	assert_int_equal(p.lanes_h, 36); /* all but status, header, axis and the bottom line */
	assert_int_equal(p.hot_h, 0);
	assert_int_equal(p.nvtx_h, 0);
	assert_int_equal(p.log_h, 0);
	assert_int_equal(p.bottom_y, 39);
}

static void test_log_pane(void **state)
{
	(void)state;
	struct panes p = layout(40, 120, 0, 1, 0, 0, 0);
	assert_int_equal(p.log_h, 12); /* a third of the 37 lines the fixed lines leave */
	assert_int_equal(p.log_y, 27);
	assert_int_equal(p.lanes_y, 2);
	assert_int_equal(p.lanes_h, 25);
	p = layout(12, 80, 0, 1, 0, 0, 0);
	assert_int_equal(p.log_h, 4); /* a third is 3: at least 4 */
	p = layout(10, 80, 0, 1, 0, 0, 0);
	assert_int_equal(p.log_h, 0); /* no room for 4 */
}

static void test_nvtx_panel(void **state)
{
	(void)state;
	struct panes p = layout(40, 120, 0, 0, 1, 3, 0);
	assert_int_equal(p.nvtx_h, 4); /* header and 3 rows */
	assert_int_equal(p.nvtx_y, 35);
	assert_int_equal(p.lanes_h, 33);
	p = layout(40, 120, 0, 0, 1, 100, 0);
	assert_int_equal(p.nvtx_h, 10); /* a quarter of the screen */
	p = layout(10, 80, 0, 0, 1, 100, 0);
	assert_int_equal(p.nvtx_h, 3); /* at least 3 while 4 lane lines stay */
	p = layout(9, 80, 0, 0, 1, 100, 0);
	assert_int_equal(p.nvtx_h, 0); /* the lanes would get 3: the panel gives way */
	p = layout(40, 120, 0, 0, 0, 100, 0);
	assert_int_equal(p.nvtx_h, 0); /* hidden */
}

static void test_hot_gives_way(void **state)
{
	(void)state;
	struct panes p = layout(40, 120, 0, 0, 0, 0, 1);
	assert_int_equal(p.hot_h, PANES_HOT_TOP + 1);
	assert_int_equal(p.hot_y, p.lanes_y + p.lanes_h);
	p = layout(21, 120, 0, 0, 0, 0, 1);
	assert_int_equal(p.hot_h, 7); /* a third of the screen */
	/* Log and panel take the room first: the hot pane would leave the lanes under 4 lines. */
	p = layout(40, 120, 4, 1, 1, 100, 1);
	assert_int_equal(p.header_h, 4);
	assert_int_equal(p.log_h, 12);
	assert_int_equal(p.nvtx_h, 10);
	assert_int_equal(p.hot_h, 0);
	assert_int_equal(p.lanes_y, 6);
	assert_int_equal(p.lanes_h, 11);
	assert_int_equal(p.nvtx_y, 17);
	assert_int_equal(p.log_y, 27);
}

/* The ranks pane (R): under the lanes, a heading and one line per rank, a quarter at most. */
static void test_ranks_pane(void **state)
{
	(void)state;
	struct panes p = layout_ranks(40, 1, 0, 0, 0, 0, 3);
	assert_int_equal(p.ranks_h, 4); /* heading + 3 ranks */
	assert_int_equal(p.ranks_y, p.lanes_y + p.lanes_h);
	assert_int_equal(p.lanes_h, 32);
	assert_int_equal(p.hot_y, p.ranks_y + p.ranks_h);
	p = layout_ranks(40, 1, 0, 0, 0, 0, 0);
	assert_int_equal(p.ranks_h, 2); /* no ranks: the heading and the line that says so */
	p = layout_ranks(40, 1, 0, 0, 0, 0, 64);
	assert_int_equal(p.ranks_h, 10); /* a quarter of 40 lines */
	/* Under the hot pane, NVTX panel and log it gives way so that the lanes keep 4 lines. */
	p = layout_ranks(40, 4, 1, 1, 100, 1, 8);
	assert_int_equal(p.ranks_h, 0);
	assert_int_equal(p.lanes_h, 11);
	p = layout_ranks(40, 1, 0, 1, 3, 1, 8);
	assert_int_equal(p.ranks_h, 9);
	assert_int_equal(p.nvtx_y, p.hot_y + p.hot_h);
	assert_int_equal(panes_hit(&p, 30, p.ranks_y).area, PANES_RANKS);
	assert_int_equal(panes_hit(&p, 30, p.ranks_y + 8).line, 8);
	assert_int_equal(panes_hit(&p, 30, p.ranks_y - 1).area, PANES_LANES);
	assert_int_equal(panes_hit(&p, 30, p.ranks_y + 9).area, PANES_HOT);
}

/* Every size and every choice of panes: the panes tile the screen in order, without overlap. */
static void test_tiling(void **state)
{
	(void)state;
	for (int lines = 1; lines <= 70; lines++) {
		for (int mask = 0; mask < 32; mask++) {
			struct panes_input in = {lines,    100,       (size_t)mask & 3 ? 5 : 0,
			                         mask & 1, mask & 2,  7,
			                         mask & 4, mask & 16, (size_t)mask & 8 ? 12 : 0};
			struct panes p;
			panes_compute(&in, &p);
			assert_true(p.lanes_h >= 0);
			assert_int_equal(p.lanes_y, p.axis_y + 1);
			assert_int_equal(p.axis_y, 1 + p.header_h);
			assert_int_equal(p.ranks_y, p.lanes_y + p.lanes_h);
			assert_int_equal(p.hot_y, p.ranks_y + p.ranks_h);
			assert_int_equal(p.nvtx_y, p.hot_y + p.hot_h);
			if (p.log_h)
				assert_int_equal(p.log_y, p.nvtx_y + p.nvtx_h);
			if (lines >= 8) {
				/* Whatever is shown below the lanes, they keep 4 lines where the screen
				 * allows. */
				assert_int_equal(p.lanes_y + p.lanes_h + p.ranks_h + p.hot_h + p.nvtx_h +
				                     p.log_h + 1,
				                 lines);
				assert_true(p.lanes_h >= 4 ||
				            (p.hot_h == 0 && p.nvtx_h == 0 && p.ranks_h == 0));
				assert_true(p.ranks_h == 0 || p.ranks_h >= 2);
			}
			for (int y = 0; y < lines; y++) {
				struct panes_cell c = panes_hit(&p, 50, y);
				if (y == 0)
					assert_int_equal(c.area, PANES_STATUS);
				if (y == lines - 1 && lines > 1)
					assert_int_equal(c.area, PANES_BOTTOM);
			}
		}
	}
}

static void test_hit(void **state)
{
	(void)state;
	struct panes p = layout(40, 120, 1, 1, 1, 3, 0);
	/* status 0, header 1, axis 2, lanes 3..22 (20), nvtx 23..26, log 27..38, bottom 39 */
	assert_int_equal(p.lanes_h, 20);
	struct panes_cell c = panes_hit(&p, 30, 5);
	assert_int_equal(c.area, PANES_LANES);
	assert_int_equal(c.line, 2);
	assert_int_equal(c.col, 6);
	c = panes_hit(&p, 10, 3);
	assert_int_equal(c.area, PANES_LANES);
	assert_int_equal(c.line, 0);
	assert_true(c.col < 0); /* the gutter */
	c = panes_hit(&p, 30, 22);
	assert_int_equal(c.area, PANES_LANES);
	assert_int_equal(c.line, 19);
	c = panes_hit(&p, 30, 23);
	assert_int_equal(c.area, PANES_NVTX);
	assert_int_equal(c.line, 0);
	c = panes_hit(&p, 30, 27);
	assert_int_equal(c.area, PANES_LOG);
	assert_int_equal(panes_hit(&p, 30, 2).area, PANES_AXIS);
	assert_int_equal(panes_hit(&p, 30, 1).area, PANES_HEADER);
	assert_int_equal(panes_hit(&p, 0, 0).area, PANES_STATUS);
	assert_int_equal(panes_hit(&p, 0, 39).area, PANES_BOTTOM);
	assert_int_equal(panes_hit(&p, 120, 5).area, PANES_NONE);
	assert_int_equal(panes_hit(&p, 5, 40).area, PANES_NONE);
	assert_int_equal(panes_hit(&p, -1, 5).area, PANES_NONE);
	/* Before any frame (all zero) nothing is a lane. */
	struct panes z;
	memset(&z, 0, sizeof z);
	assert_int_equal(panes_hit(&z, 3, 3).area, PANES_NONE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_gutter),     cmocka_unit_test(test_header_lines),
	    cmocka_unit_test(test_lanes_only), cmocka_unit_test(test_log_pane),
	    cmocka_unit_test(test_nvtx_panel), cmocka_unit_test(test_hot_gives_way),
	    cmocka_unit_test(test_tiling),     cmocka_unit_test(test_hit),
	    cmocka_unit_test(test_ranks_pane),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
