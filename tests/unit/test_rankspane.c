/*
 * The ranks pane as data (model/rankspane.c): row text (straggler mark, host column only with several
 * hosts, "-" without GPU data), the selection (clamped, scrolled, following its rank when the order
 * changes), where Enter goes (the rank's process and a window around its slowest step), when rows are
 * recomputed (once, then at most once a second while the store changes), and rows from a real store.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cuscope/rankspane.h"
#include "cuscope/store.h"
#include "cuscope/wire.h"

#define MS 1000000ull

static struct stats_rank_row *rows_new(size_t n)
{
	return calloc(n, sizeof(struct stats_rank_row));
}

/* Three ranks on one host: rank 1 the straggler, rank 2 without steps. */
static void three_ranks(struct rankspane *rp, const char *host2)
{
	struct stats_rank_row *v = rows_new(3);
	v[0] = (struct stats_rank_row){.host = "node1",
	                               .rank = 1,
	                               .pid = 818,
	                               .process = 2,
	                               .steps = 4,
	                               .step_p50_ns = 40300000,
	                               .step_p99_ns = 42100000,
	                               .step_total_ns = 200 * MS,
	                               .nccl_ns = 50 * MS,
	                               .compute_ns = 150 * MS,
	                               .gpu_idle_ns = 25 * MS,
	                               .main_process = 3,
	                               .main_lane = 1,
	                               .slow_start_ns = 1000 * MS,
	                               .slow_end_ns = 1080 * MS};
	strcpy(v[0].gpu, "GPU-abc");
	v[1] = (struct stats_rank_row){.host = "node1",
	                               .rank = 0,
	                               .pid = 817,
	                               .process = 1,
	                               .steps = 4,
	                               .step_p50_ns = 10300000,
	                               .step_p99_ns = 11000000,
	                               .step_total_ns = 42 * MS,
	                               .compute_ns = 42 * MS,
	                               .main_lane = 0};
	v[2] = (struct stats_rank_row){
	    .host = host2, .rank = 2, .pid = 821, .process = 4, .main_lane = SIZE_MAX};
	rankspane_set_rows(rp, v, 3);
}

static void test_row_text(void **state)
{
	(void)state;
	struct rankspane rp;
	rankspane_init(&rp);
	three_ranks(&rp, "node1");
	char buf[256];
	rankspane_header(&rp, buf, sizeof buf);
	assert_string_equal(buf, "   rank      pid  steps  step p50  step p99      NCCL   compute GPU idle");
	rankspane_row_text(&rp, 0, buf, sizeof buf);
	assert_string_equal(
	    buf, "      1      818      4    40.3ms    42.1ms    50.0ms     150ms    12.5%  < straggler");
	/* No GPU data: NCCL and GPU idle "-", not 0; only the first row is the straggler. */
	rankspane_row_text(&rp, 1, buf, sizeof buf);
	assert_string_equal(buf, "      0      817      4    10.3ms    11.0ms         -    42.0ms        -");
	/* No steps: nothing but rank, pid and 0 steps. */
	rankspane_row_text(&rp, 2, buf, sizeof buf);
	assert_string_equal(buf, "      2      821      0         -         -         -         -        -");
	rankspane_row_text(&rp, 3, buf, sizeof buf);
	assert_string_equal(buf, "");
	assert_int_equal(rp.multi_host, 0);
	/* Several hosts: a host column, in the heading and the rows. */
	three_ranks(&rp, "node2");
	assert_int_equal(rp.multi_host, 1);
	rankspane_header(&rp, buf, sizeof buf);
	assert_string_equal(
	    buf,
	    "   rank  host                  pid  steps  step p50  step p99      NCCL   compute GPU idle");
	rankspane_row_text(&rp, 2, buf, sizeof buf);
	assert_string_equal(
	    buf,
	    "      2  node2                 821      0         -         -         -         -        -");
	/* A single rank is nobody's straggler. */
	struct stats_rank_row *one = rows_new(1);
	one[0] =
	    (struct stats_rank_row){.rank = 0, .pid = 5, .steps = 2, .step_total_ns = MS, .compute_ns = MS};
	rankspane_set_rows(&rp, one, 1);
	rankspane_row_text(&rp, 0, buf, sizeof buf);
	assert_null(strstr(buf, "straggler"));
	rankspane_fini(&rp);
}

static void test_selection(void **state)
{
	(void)state;
	struct rankspane rp;
	rankspane_init(&rp);
	rankspane_select(&rp, 1, 2); /* no rows */
	assert_int_equal(rp.sel, 0);
	three_ranks(&rp, "node1");
	rankspane_select(&rp, -1, 2);
	assert_int_equal(rp.sel, 0);
	rankspane_select(&rp, 1, 2);
	assert_int_equal(rp.sel, 1);
	assert_int_equal(rp.top, 0);
	rankspane_select(&rp, 5, 2); /* clamped to the last row, scrolled to keep it in 2 lines */
	assert_int_equal(rp.sel, 2);
	assert_int_equal(rp.top, 1);
	rankspane_select(&rp, -2, 2);
	assert_int_equal(rp.sel, 0);
	assert_int_equal(rp.top, 0);
	/* New rows in another order: the selection stays on its rank (pid 817). */
	rankspane_select(&rp, 1, 2);
	struct stats_rank_row *v = rows_new(3);
	v[0] = (struct stats_rank_row){.rank = 0, .pid = 817};
	v[1] = (struct stats_rank_row){.rank = 1, .pid = 818};
	v[2] = (struct stats_rank_row){.rank = 2, .pid = 821};
	rankspane_set_rows(&rp, v, 3);
	assert_int_equal(rp.sel, 0);
	/* Two hosts' ranks with one pid (a live view of several hosts): the selection keeps its host. */
	v = rows_new(2);
	v[0] = (struct stats_rank_row){.host = "nodeA", .rank = 0, .pid = 817};
	v[1] = (struct stats_rank_row){.host = "nodeB", .rank = 1, .pid = 817};
	rankspane_set_rows(&rp, v, 2);
	rankspane_select(&rp, 1, 3);
	assert_int_equal(rp.sel, 1);
	v = rows_new(2);
	v[0] = (struct stats_rank_row){.host = "nodeB", .rank = 1, .pid = 817};
	v[1] = (struct stats_rank_row){.host = "nodeA", .rank = 0, .pid = 817};
	rankspane_set_rows(&rp, v, 2);
	assert_int_equal(rp.sel, 0);
	v = rows_new(2);
	v[0] = (struct stats_rank_row){.host = "nodeA", .rank = 0, .pid = 817};
	v[1] = (struct stats_rank_row){.host = "nodeB", .rank = 1, .pid = 817};
	rankspane_set_rows(&rp, v, 2);
	assert_int_equal(rp.sel, 1);
	/* Gone: back to the first row. */
	rankspane_select(&rp, 2, 3);
	v = rows_new(1);
	v[0] = (struct stats_rank_row){.rank = 0, .pid = 817};
	rankspane_set_rows(&rp, v, 1);
	assert_int_equal(rp.sel, 0);
	assert_int_equal(rp.top, 0);
	rankspane_fini(&rp);
}

static void test_jump(void **state)
{
	(void)state;
	struct rankspane rp;
	struct rankspane_jump j;
	rankspane_init(&rp);
	assert_int_equal(rankspane_jump(&rp, &j), 0);
	three_ranks(&rp, "node1");
	/* The straggler: its process on top, its main thread (in a child) unfolded, the window on its
	 * 80 ms slowest step with 10 ms either side. */
	assert_int_equal(rankspane_jump(&rp, &j), 1);
	assert_int_equal(j.process, 2);
	assert_int_equal(j.main_process, 3);
	assert_int_equal(j.main_lane, 1);
	assert_int_equal(j.has_window, 1);
	assert_int_equal(j.step_start_ns, 1000 * MS);
	assert_int_equal(j.step_end_ns, 1080 * MS);
	assert_int_equal(j.start_ns, 990 * MS);
	assert_int_equal(j.span_ns, 100 * MS);
	/* A rank without steps: its lanes, the window stays. */
	rankspane_select(&rp, 2, 3);
	assert_int_equal(rankspane_jump(&rp, &j), 1);
	assert_int_equal(j.process, 4);
	assert_int_equal(j.main_lane, SIZE_MAX);
	assert_int_equal(j.has_window, 0);
	rankspane_fini(&rp);
}

/* Rows are computed once, then again only when the store changed and a second passed. */
static void test_due(void **state)
{
	(void)state;
	struct rankspane rp;
	rankspane_init(&rp);
	assert_true(rankspane_due(&rp, 5, 100));
	struct store *st = store_new();
	rankspane_update(&rp, st, 5, 100);
	assert_int_equal(rp.count, 0);
	assert_false(rankspane_due(&rp, 5, 100));
	assert_false(rankspane_due(&rp, 5, 100 + 10 * RANKSPANE_REFRESH_NS)); /* same data: never */
	assert_false(rankspane_due(&rp, 6, 100 + RANKSPANE_REFRESH_NS - 1));  /* new data, too soon */
	assert_true(rankspane_due(&rp, 6, 100 + RANKSPANE_REFRESH_NS));
	/* A costly computation (inferred steps of many ranks): the next one waits RANKSPANE_SHARE times it.
	 */
	rp.compute_cost_ns = 200000000;
	assert_false(rankspane_due(&rp, 6, 100 + RANKSPANE_SHARE * rp.compute_cost_ns - 1));
	assert_true(rankspane_due(&rp, 6, 100 + RANKSPANE_SHARE * rp.compute_cost_ns));
	store_free(st);
	rankspane_fini(&rp);
}

static void feed(struct store *st, int source, uint32_t type, const void *payload, size_t length)
{
	const char *cause = NULL;
	if (store_feed(st, source, type, payload, (uint32_t)length, &cause))
		fail_msg("store_feed(%u): %s", type, cause ? cause : "?");
}

static void process(struct store *st, int source, int pid, int32_t rank)
{
	unsigned char buf[sizeof(struct wire_hello) + 8];
	struct wire_hello h;
	memset(&h, 0, sizeof h);
	memcpy(h.magic, WIRE_MAGIC, 8);
	h.version = WIRE_VERSION;
	h.hello_size = sizeof h;
	h.pid = pid;
	h.ppid = 1;
	h.start_mono_ns = 1;
	h.features = WIRE_FEATURE_NVTX | WIRE_FEATURE_THREADS;
	strcpy(h.host, "node1");
	h.ids = WIRE_ID_RANK;
	h.rank = rank;
	h.cmdline_len = 5;
	memcpy(buf, &h, sizeof h);
	memcpy(buf + sizeof h, "prog\0", 5);
	feed(st, source, WIRE_FRAME_HELLO, buf, sizeof h + 5);
	unsigned char sb[sizeof(struct wire_string) + 8];
	struct wire_string s = {1, 4};
	memcpy(sb, &s, sizeof s);
	memcpy(sb + sizeof s, "step", 4);
	feed(st, source, WIRE_FRAME_STRING, sb, sizeof s + 4);
}

static void step(struct store *st, int source, uint32_t tid, uint64_t start, uint64_t end)
{
	struct wire_event e[2];
	memset(e, 0, sizeof e);
	e[0].kind = WIRE_EV_NVTX_PUSH;
	e[0].time_ns = start;
	e[0].tid = tid;
	e[0].name_id = 1;
	e[1].kind = WIRE_EV_NVTX_POP;
	e[1].time_ns = end;
	e[1].tid = tid;
	feed(st, source, WIRE_FRAME_EVENTS, e, sizeof e);
}

/* From a store: rank 1's steps (10, 30, 20 ms) make it the straggler; Enter goes to its 30 ms step. */
static void test_from_store(void **state)
{
	(void)state;
	struct store *st = store_new();
	process(st, 0, 100, 0);
	process(st, 1, 200, 1);
	static const uint64_t len0[] = {10, 10, 10}, len1[] = {10, 30, 20};
	for (int i = 0; i < 3; i++) {
		uint64_t t0 = 1000 * MS + (uint64_t)i * 50 * MS;
		step(st, 0, 100, t0, t0 + len0[i] * MS);
		step(st, 1, 200, t0, t0 + len1[i] * MS);
	}
	struct rankspane rp;
	rankspane_init(&rp);
	rankspane_update(&rp, st, store_generation(st), 1);
	assert_int_equal(rp.count, 2);
	assert_int_equal(rp.rows[0].rank, 1);
	assert_int_equal(rp.rows[0].steps, 3);
	char buf[256];
	rankspane_row_text(&rp, 0, buf, sizeof buf);
	assert_string_equal(
	    buf, "      1      200      3    20.0ms    30.0ms         -    60.0ms        -  < straggler");
	struct rankspane_jump j;
	assert_int_equal(rankspane_jump(&rp, &j), 1);
	struct store_process_info pi;
	store_process_get(st, j.process, &pi);
	assert_int_equal(pi.pid, 200);
	assert_int_equal(j.main_process, j.process);
	struct store_lane_info li;
	store_lane_get(st, j.main_process, j.main_lane, &li);
	assert_int_equal(li.tid, 200);
	assert_int_equal(j.step_start_ns, 1050 * MS);
	assert_int_equal(j.step_end_ns, 1080 * MS);
	assert_int_equal(j.start_ns, 1050 * MS - 30 * MS / 8);
	assert_int_equal(j.span_ns, 30 * MS + 30 * MS / 4);
	rankspane_fini(&rp);
	store_free(st);
}

/* A CUDA runtime call on thread tid; with a kernel (kernel_name != 0) that it launched on stream 7. */
static void api(struct store *st, int source, uint32_t tid, uint64_t t, uint32_t api_name,
                uint32_t kernel_name)
{
	static uint32_t corr = 1;
	struct wire_gpu_event e[2];
	memset(e, 0, sizeof e);
	e[0].kind = WIRE_GPU_API_RUNTIME;
	e[0].start_ns = t;
	e[0].end_ns = t + 1000;
	e[0].tid = tid;
	e[0].name_id = api_name;
	e[0].correlation_id = corr;
	e[1].kind = WIRE_GPU_KERNEL;
	e[1].start_ns = t + 2000;
	e[1].end_ns = t + 5000;
	e[1].stream = 7;
	e[1].context = 1;
	e[1].name_id = kernel_name;
	e[1].correlation_id = corr++;
	e[1].grid[0] = e[1].block[0] = 1;
	feed(st, source, WIRE_FRAME_GPU, e, (kernel_name ? 2 : 1) * sizeof e[0]);
}

static void string(struct store *st, int source, uint32_t id, const char *text)
{
	unsigned char buf[sizeof(struct wire_string) + 64];
	struct wire_string s = {id, (uint32_t)strlen(text)};
	memcpy(buf, &s, sizeof s);
	memcpy(buf + sizeof s, text, s.length);
	feed(st, source, WIRE_FRAME_STRING, buf, sizeof s + s.length);
}

/*
 * The main thread (whose steps count, where Enter unfolds) is the one that made the most kernel
 * launch calls, not the one with the most CUDA API calls: thread 301 synchronises 20 times, thread
 * 302 launches 3 kernels and runs the 2 steps.
 */
static void test_main_thread(void **state)
{
	(void)state;
	struct store *st = store_new();
	process(st, 0, 300, 0);
	string(st, 0, 2, "cudaStreamSynchronize");
	string(st, 0, 3, "cudaLaunchKernel");
	string(st, 0, 4, "gemm_kernel");
	string(st, 0, 5, "a");
	struct wire_event e[2];
	memset(e, 0, sizeof e);
	e[0] = (struct wire_event){.kind = WIRE_EV_NVTX_PUSH, .time_ns = 900 * MS, .tid = 301, .name_id = 5};
	e[1] = (struct wire_event){.kind = WIRE_EV_NVTX_POP, .time_ns = 901 * MS, .tid = 301};
	feed(st, 0, WIRE_FRAME_EVENTS, e, sizeof e);
	for (uint64_t i = 0; i < 20; i++)
		api(st, 0, 301, 950 * MS + i * 100000, 2, 0);
	step(st, 0, 302, 1000 * MS, 1010 * MS);
	step(st, 0, 302, 1020 * MS, 1040 * MS);
	for (uint64_t i = 0; i < 3; i++)
		api(st, 0, 302, 1001 * MS + i * 100000, 3, 4);
	struct rankspane rp;
	rankspane_init(&rp);
	rankspane_update(&rp, st, store_generation(st), 1);
	assert_int_equal(rp.count, 1);
	assert_int_equal(rp.rows[0].steps, 2);
	struct rankspane_jump j;
	assert_int_equal(rankspane_jump(&rp, &j), 1);
	struct store_lane_info li;
	store_lane_get(st, j.main_process, j.main_lane, &li);
	assert_int_equal(li.tid, 302);
	assert_int_equal(j.step_start_ns, 1020 * MS);
	assert_int_equal(j.step_end_ns, 1040 * MS);
	rankspane_fini(&rp);
	store_free(st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_row_text),   cmocka_unit_test(test_selection),
	    cmocka_unit_test(test_jump),       cmocka_unit_test(test_due),
	    cmocka_unit_test(test_from_store), cmocka_unit_test(test_main_thread),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
