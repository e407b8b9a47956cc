/*
 * Lane groups of a job (model/rankgroup.c and its users): which process is a launcher and how many
 * ranks it started (torchrun's agent, srun's step under a shell, nested launchers, pids of another
 * capture, reused pids), group labels ("rank N (restart K)", "launcher: N ranks"), NCCL kernels as
 * communication (and the theme's comm slot), a restarted worker as its own row of the ranks pane, and a
 * layout whose launcher starts folded once, without overriding what the user chose.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cuscope/layout.h"
#include "cuscope/rankgroup.h"
#include "cuscope/rankspane.h"
#include "cuscope/store.h"
#include "cuscope/theme.h"
#include "cuscope/wire.h"

/*
 * A shell (1000) runs srun's step (1001) that runs torchrun's agent (1002) with ranks 0..2
 * (1003..1005), each with a DataLoader worker of its rank; rank 1 restarted (1009, restart 1, same
 * rank: still 3 ranks). A lone process (1020) and a plain child of the shell (1021) start nothing.
 */
static void test_launchers(void **state)
{
	(void)state;
	const struct rankgroup_proc p[] = {
	    {0, 1000, 1, -1},   {0, 1001, 1000, -1}, {0, 1002, 1001, -1}, {0, 1003, 1002, 0},
	    {0, 1004, 1002, 1}, {0, 1005, 1002, 2},  {0, 1006, 1003, 0},  {0, 1007, 1004, 1},
	    {0, 1008, 1005, 2}, {0, 1009, 1002, 1},  {0, 1020, 1, -1},    {0, 1021, 1000, -1},
	};
	size_t n = sizeof p / sizeof p[0], out[sizeof p / sizeof p[0]];
	rankgroup_launchers(p, n, out);
	const size_t want[] = {3, 3, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0};
	for (size_t i = 0; i < n; i++)
		if (out[i] != want[i])
			fail_msg("process %d: %zu ranks under it, want %zu", (int)p[i].pid, out[i], want[i]);
}

/*
 * Pids are compared within a capture: a process of capture 1 whose ppid is the pid of capture 0's
 * launcher is no child of it. A process with no ranked descendant is no launcher; pids reused in a
 * cycle (a is b's parent and b is a's) end the walk.
 */
static void test_launchers_captures_cycles(void **state)
{
	(void)state;
	const struct rankgroup_proc p[] = {
	    {0, 500, 1, -1},   {0, 501, 500, 0},  {1, 600, 500, 1}, {1, 500, 1, -1},
	    {1, 700, 701, -1}, {1, 701, 700, -1}, {1, 702, 701, 3},
	};
	size_t n = sizeof p / sizeof p[0], out[sizeof p / sizeof p[0]];
	rankgroup_launchers(p, n, out);
	assert_int_equal(out[0], 1); /* only rank 0: capture 1's 600 is not its child */
	assert_int_equal(out[1], 0);
	assert_int_equal(out[2], 0);
	assert_int_equal(out[3], 1); /* capture 1's 500: the parent of 600 */
	assert_int_equal(out[4], 1); /* the cycle 700 <-> 701 holds rank 3 */
	assert_int_equal(out[5], 1);
	assert_int_equal(out[6], 0);
	/* No ranks at all: no launchers. */
	const struct rankgroup_proc q[] = {{0, 10, 1, -1}, {0, 11, 10, -1}};
	size_t o2[2] = {7, 7};
	rankgroup_launchers(q, 2, o2);
	assert_int_equal(o2[0], 0);
	assert_int_equal(o2[1], 0);
}

/*
 * A live view of two hosts (attach --ssh: one capture) whose containers gave them the same pids:
 * each host's launcher (pid 1) started its own two ranks (pids 10, 11); each is a launcher of 2, not
 * one of 4 and the other of none.
 */
static void test_launchers_hosts(void **state)
{
	(void)state;
	const struct rankgroup_proc p[] = {
	    {0, 1, 0, -1, "nodeA"}, {0, 10, 1, 0, "nodeA"}, {0, 11, 1, 1, "nodeA"},
	    {0, 1, 0, -1, "nodeB"}, {0, 10, 1, 2, "nodeB"}, {0, 11, 1, 3, "nodeB"},
	};
	size_t n = sizeof p / sizeof p[0], out[sizeof p / sizeof p[0]];
	rankgroup_launchers(p, n, out);
	assert_int_equal(out[0], 2);
	assert_int_equal(out[3], 2);
}

static void test_labels(void **state)
{
	(void)state;
	char buf[64];
	rankgroup_label(3, -1, 0, buf, sizeof buf);
	assert_string_equal(buf, "rank 3");
	rankgroup_label(3, 0, 0, buf, sizeof buf);
	assert_string_equal(buf, "rank 3");
	rankgroup_label(3, 2, 0, buf, sizeof buf);
	assert_string_equal(buf, "rank 3 (restart 2)");
	rankgroup_label(-1, 2, 8, buf, sizeof buf);
	assert_string_equal(buf, "launcher: 8 ranks");
	rankgroup_label(-1, -1, 1, buf, sizeof buf);
	assert_string_equal(buf, "launcher: 1 rank");
	rankgroup_label(-1, -1, 0, buf, sizeof buf);
	assert_string_equal(buf, "");
	/* A ranked process is its rank even with ranks under it (an srun step with SLURM_PROCID). */
	rankgroup_label(0, -1, 4, buf, sizeof buf);
	assert_string_equal(buf, "rank 0");
	assert_int_equal(rankgroup_restart(-1), 0);
	assert_int_equal(rankgroup_restart(0), 0);
	assert_int_equal(rankgroup_restart(5), 5);
}

static void test_nccl_kernels(void **state)
{
	(void)state;
	assert_true(rankgroup_is_nccl_kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL"));
	assert_true(rankgroup_is_nccl_kernel("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t"));
	assert_true(rankgroup_is_nccl_kernel("oneRankReduce<FuncPreMulSum<float>>"));
	assert_true(rankgroup_is_nccl_kernel(
	    "void oneRankReduce<FuncPreMulSum<float> >(float*, float const*, unsigned long, unsigned long)"));
	assert_true(rankgroup_is_nccl_kernel("(anonymous namespace)::oneRankReduce"));
	assert_true(rankgroup_is_nccl_kernel(
	    "void (anonymous namespace)::oneRankReduce<FuncPreMulSum<float>>(float*)"));
	assert_false(rankgroup_is_nccl_kernel("oneRankReducer"));
	assert_false(rankgroup_is_nccl_kernel("at::oneRankReduce"));
	assert_false(rankgroup_is_nccl_kernel("gemm_kernel"));
	assert_false(rankgroup_is_nccl_kernel("void at::native::nccl_like"));
	assert_false(rankgroup_is_nccl_kernel("ncc"));
	assert_false(rankgroup_is_nccl_kernel(""));
	assert_false(rankgroup_is_nccl_kernel(NULL));
}

/*
 * The comm slot: a theme file names it "comm"; every built-in theme names it, unlike each of its
 * range colours (kernels by name); a theme without it gets the dark theme's (orange 208).
 */
static void test_theme_comm(void **state)
{
	(void)state;
	assert_string_equal(theme_slot_name(THEME_COMM), "comm");
	for (size_t i = 0; theme_builtin_names[i]; i++) {
		struct theme t;
		memset(&t, 0, sizeof t);
		t.slot[THEME_COMM] = (struct theme_style){-2, -2, 0};
		assert_int_equal(theme_parse(&t, theme_builtin_text(theme_builtin_names[i]), NULL, 0), 0);
		const struct theme_style *c = &t.slot[THEME_COMM];
		if (c->fg == -2 && c->bg == -2)
			fail_msg("theme %s does not name comm", theme_builtin_names[i]);
		for (int r = 0; r < THEME_RANGES; r++) {
			const struct theme_style *g = &t.slot[THEME_RANGE0 + r];
			if (g->fg == c->fg && g->bg == c->bg && g->attr == c->attr)
				fail_msg("theme %s: comm looks like range%d", theme_builtin_names[i], r);
		}
	}
	struct theme t;
	theme_default(&t);
	assert_int_equal(t.slot[THEME_COMM].bg, 208);
	assert_int_equal(theme_parse(&t, "name = mine\nrange0 = red on blue\n", NULL, 0), 0);
	assert_int_equal(t.slot[THEME_COMM].bg, 208);
	assert_int_equal(theme_parse(&t, "comm = white on magenta bold\n", NULL, 0), 0);
	assert_int_equal(t.slot[THEME_COMM].fg, 7);
	assert_int_equal(t.slot[THEME_COMM].bg, 5);
	assert_int_equal(t.slot[THEME_COMM].attr, THEME_BOLD);
}

/* A restarted worker's rows say so, and the rank column widens for it in the heading too. */
static void test_pane_restart(void **state)
{
	(void)state;
	struct rankspane rp;
	rankspane_init(&rp);
	struct stats_rank_row *v = calloc(2, sizeof *v);
	v[0] = (struct stats_rank_row){.rank = 1, .restart = 1, .pid = 900, .main_lane = SIZE_MAX};
	v[1] = (struct stats_rank_row){.rank = 1, .pid = 800, .main_lane = SIZE_MAX};
	rankspane_set_rows(&rp, v, 2);
	char buf[256];
	rankspane_header(&rp, buf, sizeof buf);
	assert_string_equal(
	    buf, "   rank                  pid  steps  step p50  step p99      NCCL   compute GPU idle");
	rankspane_row_text(&rp, 0, buf, sizeof buf);
	assert_string_equal(
	    buf, "      1 (restart 1)      900      0         -         -         -         -        -");
	rankspane_row_text(&rp, 1, buf, sizeof buf);
	assert_string_equal(
	    buf, "      1                  800      0         -         -         -         -        -");
	rankspane_fini(&rp);
}

static void feed(struct store *st, int source, uint32_t type, const void *payload, size_t length)
{
	const char *cause = NULL;
	if (store_feed(st, source, type, payload, (uint32_t)length, &cause))
		fail_msg("store_feed(%u): %s", type, cause ? cause : "?");
}

/* A process as source `source` with rank (-1 = none). */
static void process(struct store *st, int source, int pid, int ppid, int32_t rank)
{
	unsigned char buf[sizeof(struct wire_hello) + 8];
	struct wire_hello h;
	memset(&h, 0, sizeof h);
	memcpy(h.magic, WIRE_MAGIC, 8);
	h.version = WIRE_VERSION;
	h.hello_size = sizeof h;
	h.pid = pid;
	h.ppid = ppid;
	h.start_mono_ns = 1;
	h.features = WIRE_FEATURE_NVTX | WIRE_FEATURE_THREADS;
	strcpy(h.host, "node1");
	if (rank >= 0) {
		h.ids = WIRE_ID_RANK;
		h.rank = rank;
	}
	h.cmdline_len = 5;
	memcpy(buf, &h, sizeof h);
	memcpy(buf + sizeof h, "prog\0", 5);
	feed(st, source, WIRE_FRAME_HELLO, buf, sizeof h + 5);
}

/* The header row of pid, or fails. */
static const struct layout_row *header_of(const struct layout *l, pid_t pid)
{
	for (size_t i = 0; i < l->count; i++)
		if (l->rows[i].kind == LAYOUT_ROW_PROCESS && l->rows[i].pid == pid)
			return &l->rows[i];
	fail_msg("no header for pid %d", (int)pid);
	return NULL;
}

static size_t header_index(const struct layout *l, pid_t pid)
{
	return (size_t)(header_of(l, pid) - l->rows);
}

/*
 * torchrun's agent appears before its ranks: unfolded while it has none, folded ("launcher: 2
 * ranks") once they come; f unfolds it and later rebuilds, and more ranks, leave it so.
 */
static void test_layout_launcher_folds_once(void **state)
{
	(void)state;
	struct store *st = store_new();
	struct layout l;
	layout_init(&l);
	process(st, 0, 100, 1, -1);
	layout_build(&l, st);
	assert_int_equal(header_of(&l, 100)->folded, 0);
	assert_int_equal(header_of(&l, 100)->count, 0);
	process(st, 1, 101, 100, 0);
	process(st, 2, 102, 100, 1);
	layout_build(&l, st);
	assert_int_equal(header_of(&l, 100)->folded, 1);
	assert_int_equal(header_of(&l, 100)->count, 2);
	assert_int_equal(header_of(&l, 101)->folded, 0); /* ranks stay open */
	assert_int_equal(header_of(&l, 101)->count, 0);
	assert_int_equal(layout_toggle_fold(&l, header_index(&l, 100)), 0);
	layout_build(&l, st);
	assert_int_equal(header_of(&l, 100)->folded, 0);
	process(st, 3, 103, 100, 2);
	layout_build(&l, st);
	assert_int_equal(header_of(&l, 100)->folded, 0);
	assert_int_equal(header_of(&l, 100)->count, 3);
	/* f folds it again, as any process. */
	assert_int_equal(layout_toggle_fold(&l, header_index(&l, 100)), 0);
	layout_build(&l, st);
	assert_int_equal(header_of(&l, 100)->folded, 1);
	layout_fini(&l);
	store_free(st);
}

/* A user who folded and unfolded the shell before its ranks appeared keeps it open. */
static void test_layout_user_choice_first(void **state)
{
	(void)state;
	struct store *st = store_new();
	struct layout l;
	layout_init(&l);
	process(st, 0, 200, 1, -1);
	layout_build(&l, st);
	assert_int_equal(layout_toggle_fold(&l, header_index(&l, 200)), 0);
	layout_build(&l, st);
	assert_int_equal(header_of(&l, 200)->folded, 1);
	assert_int_equal(layout_toggle_fold(&l, header_index(&l, 200)), 0);
	layout_build(&l, st);
	assert_int_equal(header_of(&l, 200)->folded, 0);
	process(st, 1, 201, 200, 0);
	layout_build(&l, st);
	assert_int_equal(header_of(&l, 200)->folded, 0);
	assert_int_equal(header_of(&l, 200)->count, 1);
	layout_fini(&l);
	store_free(st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_launchers),
	    cmocka_unit_test(test_launchers_captures_cycles),
	    cmocka_unit_test(test_launchers_hosts),
	    cmocka_unit_test(test_labels),
	    cmocka_unit_test(test_nccl_kernels),
	    cmocka_unit_test(test_theme_comm),
	    cmocka_unit_test(test_pane_restart),
	    cmocka_unit_test(test_layout_launcher_folds_once),
	    cmocka_unit_test(test_layout_user_choice_first),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
