/*
 * The ranks stats section (stats_ranks_compute): hand-made processes with rank labels, NVTX ranges
 * and kernels fed into a store, checked row by row: the straggler first, workers folded into their
 * rank, the step range found on the main thread (NCCL and torch operator ranges ignored) or named.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cuscope/stats.h"
#include "cuscope/stats_ranks.h"
#include "cuscope/store.h"
#include "cuscope/wire.h"

#define MS 1000000ull

/* String ids every process uses. */
enum {
	S_STEP = 1,
	S_MUL,
	S_ALLREDUCE,
	S_NCCL_DOMAIN,
	S_FWD,
	S_LOAD,
	S_NCCL_KERNEL,
	S_GEMM,
	S_LAUNCH,
	S_A,
	S_B
};

static void feed(struct store *st, int source, uint32_t type, const void *payload, size_t length)
{
	const char *cause = NULL;
	int rc = store_feed(st, source, type, payload, (uint32_t)length, &cause);
	if (rc)
		fail_msg("store_feed(%u): %s", type, cause ? cause : "?");
}

static void string(struct store *st, int source, uint32_t id, const char *text)
{
	unsigned char buf[sizeof(struct wire_string) + 64];
	struct wire_string s = {id, (uint32_t)strlen(text)};
	memcpy(buf, &s, sizeof s);
	memcpy(buf + sizeof s, text, s.length);
	feed(st, source, WIRE_FRAME_STRING, buf, sizeof s + s.length);
}

/* The host the next processes announce (a live view of several hosts: attach --ssh). */
static const char *hello_host = "node1";

/* A process as source `source`, with rank and restart count (-1 = none) and the strings above. */
static void process_restart(struct store *st, int source, int pid, int ppid, int32_t rank, int32_t restart)
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
	h.features = WIRE_FEATURE_NVTX | WIRE_FEATURE_THREADS | WIRE_FEATURE_CUPTI;
	snprintf(h.host, sizeof h.host, "%s", hello_host);
	if (rank >= 0) {
		h.ids = WIRE_ID_RANK;
		h.rank = rank;
	}
	if (restart >= 0) {
		h.ids |= WIRE_ID_RESTART_COUNT;
		h.restart_count = restart;
	}
	h.cmdline_len = 5;
	memcpy(buf, &h, sizeof h);
	memcpy(buf + sizeof h, "prog\0", 5);
	feed(st, source, WIRE_FRAME_HELLO, buf, sizeof h + 5);
	static const char *const names[] = {
	    NULL,          "step",
	    "aten::mul",   "AllReduce",
	    "NCCL",        "forward",
	    "load",        "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*)",
	    "gemm_kernel", "cudaLaunchKernel",
	    "a",           "b"};
	for (uint32_t id = 1; id < sizeof names / sizeof names[0]; id++)
		string(st, source, id, names[id]);
}

/* A process as source `source`, with rank (-1 = none) and the strings above. */
static void process(struct store *st, int source, int pid, int ppid, int32_t rank)
{
	process_restart(st, source, pid, ppid, rank, -1);
}

/* A push/pop range [start, end) on thread tid (domain 0 = default). */
static void range(struct store *st, int source, uint32_t tid, uint64_t start, uint64_t end, uint32_t name,
                  uint32_t domain)
{
	struct wire_event e[2];
	memset(e, 0, sizeof e);
	e[0].kind = WIRE_EV_NVTX_PUSH;
	e[0].time_ns = start;
	e[0].tid = tid;
	e[0].name_id = name;
	e[0].domain_id = domain;
	e[1].kind = WIRE_EV_NVTX_POP;
	e[1].time_ns = end;
	e[1].tid = tid;
	feed(st, source, WIRE_FRAME_EVENTS, e, sizeof e);
}

/* A kernel [start, end) on device 0, stream 7, launched by thread tid (tid 0: no launch record). */
static void kernel(struct store *st, int source, uint32_t tid, uint64_t start, uint64_t end, uint32_t name)
{
	static uint32_t corr = 1;
	struct wire_gpu_event e[2];
	memset(e, 0, sizeof e);
	e[0].kind = WIRE_GPU_KERNEL;
	e[0].start_ns = start;
	e[0].end_ns = end;
	e[0].stream = 7;
	e[0].context = 1;
	e[0].name_id = name;
	e[0].correlation_id = tid ? corr : 0;
	e[0].grid[0] = e[0].block[0] = 1;
	e[1].kind = WIRE_GPU_API_RUNTIME;
	e[1].start_ns = start > 1000 ? start - 1000 : 0;
	e[1].end_ns = start > 500 ? start - 500 : 0;
	e[1].tid = tid;
	e[1].name_id = S_LAUNCH;
	e[1].correlation_id = corr++;
	feed(st, source, WIRE_FRAME_GPU, e, (tid ? 2 : 1) * sizeof e[0]);
}

/* The row of rank, or fails. */
static const struct stats_rank_row *row_of(const struct stats_rank_row *v, size_t n, int32_t rank)
{
	for (size_t i = 0; i < n; i++)
		if (v[i].rank == rank)
			return &v[i];
	fail_msg("no row for rank %d", rank);
	return NULL;
}

/*
 * Three ranks whose 30 ms steps end together: ranks 0 and 2 wait 20 ms in an NCCL kernel per step,
 * rank 1 (the straggler) 5 ms. Frequent aten:: and NCCL-domain ranges at the top level are not
 * steps. Rank 1 comes first, with 3 steps, 15 ms of NCCL and 75 ms of compute.
 */
static void test_straggler_first(void **state)
{
	(void)state;
	struct store *st = store_new();
	for (int r = 0; r < 3; r++) {
		int pid = 100 * (r + 1);
		process(st, r, pid, 1, r);
		uint64_t wait = r == 1 ? 5 * MS : 20 * MS;
		for (uint64_t s = 0; s < 3; s++) {
			uint64_t t0 = 1000 * MS + s * 40 * MS;
			range(st, r, (uint32_t)pid, t0, t0 + 30 * MS, S_STEP, 0);
			/* 4 operators and 4 NCCL ranges per step, between steps: more frequent than "step" */
			for (uint64_t k = 0; k < 4; k++) {
				range(st, r, (uint32_t)pid, t0 + 30 * MS + k * 2 * MS,
				      t0 + 30 * MS + k * 2 * MS + MS, S_MUL, 0);
				range(st, r, (uint32_t)pid, t0 + 31 * MS + k * 2 * MS,
				      t0 + 31 * MS + k * 2 * MS + MS / 2, S_ALLREDUCE, S_NCCL_DOMAIN);
			}
			/* compute kernel 2 ms, then the NCCL kernel at the end of the step */
			kernel(st, r, (uint32_t)pid, t0 + MS, t0 + 3 * MS, S_GEMM);
			kernel(st, r, (uint32_t)pid, t0 + 30 * MS - wait, t0 + 30 * MS, S_NCCL_KERNEL);
		}
	}
	struct stats_rank_row *v;
	size_t n = stats_ranks_compute(st, NULL, &v);
	assert_int_equal(n, 3);
	assert_int_equal(v[0].rank, 1);
	assert_int_equal(v[0].pid, 200);
	assert_int_equal(v[1].rank, 0); /* equal compute time: by rank */
	assert_int_equal(v[2].rank, 2);
	for (size_t i = 0; i < n; i++) {
		uint64_t wait = v[i].rank == 1 ? 5 * MS : 20 * MS;
		assert_string_equal(store_string(st, v[i].step_name), "step");
		assert_string_equal(v[i].host, "node1");
		assert_string_equal(v[i].gpu, "GPU0");
		assert_int_equal(v[i].steps, 3);
		assert_int_equal(v[i].step_p50_ns, 30 * MS);
		assert_int_equal(v[i].step_p99_ns, 30 * MS);
		assert_int_equal(v[i].nccl_ns, 3 * wait);
		assert_int_equal(v[i].compute_ns, 3 * (30 * MS - wait));
		assert_int_equal(v[i].gpu_idle_ns, 3 * (30 * MS - wait - 2 * MS));
	}
	free(v);

	/* The same through the stats writer: the section lists rank 1 first. */
	char *text = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&text, &size);
	unsigned mask;
	const char *bad;
	size_t bad_len;
	assert_int_equal(stats_report_parse("ranks", &mask, &bad, &bad_len), 0);
	assert_int_equal(stats_write_sections(f, st, STATS_FORMAT_JSON, mask), 0);
	fclose(f);
	const char *first = strstr(text, "\"rank\":");
	assert_non_null(first);
	assert_true(strncmp(first, "\"rank\":1,", 9) == 0 || strncmp(first, "\"rank\": 1,", 10) == 0);
	assert_non_null(strstr(text, "\"compute_ns\":75000000") ? text
	                                                        : strstr(text, "\"compute_ns\": 75000000"));
	free(text);
	store_free(st);
}

/*
 * A DataLoader-like worker (forked: parent is the rank's process, same rank) and a worker of the
 * worker fold into the rank's row even with more ranges of their own; a child with another rank, and
 * a process without a rank, do not.
 */
static void test_worker_folds(void **state)
{
	(void)state;
	struct store *st = store_new();
	process(st, 0, 100, 1, 0);
	process(st, 1, 101, 100, 0);
	process(st, 2, 102, 101, 0);
	process(st, 3, 103, 100, 4);
	process(st, 4, 104, 1, -1);
	for (uint64_t s = 0; s < 2; s++)
		range(st, 0, 100, 1000 * MS + s * 10 * MS, 1000 * MS + s * 10 * MS + 8 * MS, S_STEP, 0);
	for (uint64_t s = 0; s < 5; s++) {
		range(st, 1, 101, 1000 * MS + s * MS, 1000 * MS + s * MS + MS / 2, S_LOAD, 0);
		range(st, 2, 102, 1000 * MS + s * MS, 1000 * MS + s * MS + MS / 2, S_LOAD, 0);
		range(st, 4, 104, 1000 * MS + s * MS, 1000 * MS + s * MS + MS / 2, S_LOAD, 0);
	}
	/* The worker's NCCL kernel counts for its rank (it runs on the rank's GPU). */
	kernel(st, 1, 0, 1001 * MS, 1003 * MS, S_NCCL_KERNEL);
	struct stats_rank_row *v;
	size_t n = stats_ranks_compute(st, NULL, &v);
	assert_int_equal(n, 2);
	const struct stats_rank_row *r0 = row_of(v, n, 0);
	assert_int_equal(r0->pid, 100);
	assert_int_equal(r0->steps, 2);
	assert_string_equal(store_string(st, r0->step_name), "step");
	assert_int_equal(r0->step_p50_ns, 8 * MS);
	assert_int_equal(r0->nccl_ns, 2 * MS);
	assert_int_equal(r0->compute_ns, 14 * MS);
	assert_string_equal(r0->gpu, "GPU0");
	assert_int_equal(r0->gpu_idle_ns, 14 * MS);
	const struct stats_rank_row *r4 = row_of(v, n, 4);
	assert_int_equal(r4->pid, 103);
	assert_int_equal(r4->steps, 0);
	assert_string_equal(r4->gpu, ""); /* no GPU data: idle 0 */
	assert_int_equal(r4->gpu_idle_ns, 0);
	assert_int_equal(v[0].rank, 0); /* 14 ms of compute before 0 */
	free(v);
	store_free(st);
}

/*
 * A restarted worker is a group of its own even under a parent of its rank: srun gives torchrun's
 * agent SLURM_PROCID=0 (rank 0, no restart count), its first worker of rank 0 (restart 0) folds into
 * it, its restarted worker of rank 0 (restart 1) and that one's DataLoader are another row, sorted
 * after the first start at equal compute time.
 */
static void test_restart_groups(void **state)
{
	(void)state;
	struct store *st = store_new();
	process(st, 0, 50, 1, 0);
	process_restart(st, 1, 100, 50, 0, 0);
	process_restart(st, 2, 200, 50, 0, 1);
	process_restart(st, 3, 300, 200, 0, 1);
	for (uint64_t s = 0; s < 2; s++)
		range(st, 1, 100, 1000 * MS + s * 10 * MS, 1000 * MS + s * 10 * MS + 8 * MS, S_STEP, 0);
	for (uint64_t s = 0; s < 2; s++)
		range(st, 2, 200, 2000 * MS + s * 10 * MS, 2000 * MS + s * 10 * MS + 8 * MS, S_STEP, 0);
	range(st, 3, 300, 2000 * MS, 2001 * MS, S_LOAD, 0);
	struct stats_rank_row *v;
	size_t n = stats_ranks_compute(st, NULL, &v);
	assert_int_equal(n, 2);
	assert_int_equal(v[0].rank, 0);
	assert_int_equal(v[0].restart, 0);
	assert_int_equal(v[0].pid, 50);
	assert_int_equal(v[0].steps, 2);
	assert_int_equal(v[1].rank, 0);
	assert_int_equal(v[1].restart, 1);
	assert_int_equal(v[1].pid, 200);
	assert_int_equal(v[1].steps, 2);
	assert_int_equal(v[1].step_p50_ns, 8 * MS);
	free(v);
	store_free(st);
}

/*
 * The main thread is the one that launches the most kernels; without kernels, the first thread.
 * Ties between names go to the larger total; --step-range may name a nested range.
 */
static void test_main_thread_and_names(void **state)
{
	(void)state;
	struct store *st = store_new();
	process(st, 0, 100, 1, 0);
	/* thread 100 (first): "a" 3 times; thread 101 launches the kernels and runs 2 "step"s */
	for (uint64_t s = 0; s < 3; s++)
		range(st, 0, 100, 1000 * MS + s * MS, 1000 * MS + s * MS + MS / 2, S_A, 0);
	for (uint64_t s = 0; s < 2; s++) {
		uint64_t t0 = 1100 * MS + s * 20 * MS;
		range(st, 0, 101, t0, t0 + 10 * MS, S_STEP, 0);
		range(st, 0, 101, t0 + MS, t0 + 4 * MS, S_FWD, 0); /* nested: row 1 */
		kernel(st, 0, 101, t0 + 2 * MS, t0 + 3 * MS, S_GEMM);
	}
	/* rank 1: no kernels; "a" and "b" twice each, "b" longer */
	process(st, 1, 200, 1, 1);
	for (uint64_t s = 0; s < 2; s++) {
		range(st, 1, 200, 1000 * MS + s * 10 * MS, 1000 * MS + s * 10 * MS + MS, S_A, 0);
		range(st, 1, 200, 1002 * MS + s * 10 * MS, 1002 * MS + s * 10 * MS + 3 * MS, S_B, 0);
	}
	struct stats_rank_row *v;
	size_t n = stats_ranks_compute(st, NULL, &v);
	assert_int_equal(n, 2);
	const struct stats_rank_row *r = row_of(v, n, 0);
	assert_string_equal(store_string(st, r->step_name), "step");
	assert_int_equal(r->steps, 2);
	assert_int_equal(r->compute_ns, 20 * MS);
	assert_int_equal(r->gpu_idle_ns, 18 * MS);
	r = row_of(v, n, 1);
	assert_string_equal(store_string(st, r->step_name), "b");
	assert_int_equal(r->step_p50_ns, 3 * MS);
	free(v);

	n = stats_ranks_compute(st, "forward", &v);
	r = row_of(v, n, 0);
	assert_int_equal(r->steps, 2);
	assert_int_equal(r->step_p50_ns, 3 * MS);
	assert_int_equal(r->compute_ns, 6 * MS);
	assert_int_equal(r->gpu_idle_ns, 4 * MS);
	r = row_of(v, n, 1); /* no "forward": no steps */
	assert_int_equal(r->steps, 0);
	assert_int_equal(r->compute_ns, 0);
	assert_int_equal(v[0].rank, 0);
	free(v);
	store_free(st);
}

/*
 * PyTorch's shape: the loop's thread (100) runs the "step" ranges and launches the forward's and the
 * optimizer's kernels; the autograd thread (101) launches more (the backward) and has no range. The
 * steps are the loop thread's, not none (the thread launching the most kernels alone would be 101).
 */
static void test_main_thread_autograd(void **state)
{
	(void)state;
	struct store *st = store_new();
	process(st, 0, 100, 1, 0);
	for (uint64_t s = 0; s < 4; s++) {
		uint64_t t0 = 1000 * MS + s * 20 * MS;
		range(st, 0, 100, t0, t0 + 10 * MS, S_STEP, 0);
		kernel(st, 0, 100, t0 + 2 * MS, t0 + 3 * MS, S_GEMM);
		for (uint64_t k = 0; k < 3; k++)
			kernel(st, 0, 101, t0 + 4 * MS + k * MS, t0 + 4 * MS + k * MS + MS / 2, S_GEMM);
	}
	struct stats_rank_row *v;
	size_t n = stats_ranks_compute(st, NULL, &v);
	assert_int_equal(n, 1);
	assert_int_equal(v[0].steps, 4);
	assert_string_equal(store_string(st, v[0].step_name), "step");
	assert_false(v[0].inferred);
	free(v);
	store_free(st);
}

/*
 * `srun sh -c 'python train.py'`: the shell has the rank but runs no ranges; its child (same rank,
 * folded into the shell's row) runs the steps, and they are the row's steps.
 */
static void test_steps_in_child(void **state)
{
	(void)state;
	struct store *st = store_new();
	process(st, 0, 100, 1, 3);
	process(st, 1, 101, 100, 3);
	for (uint64_t s = 0; s < 3; s++)
		range(st, 1, 101, 1000 * MS + s * 10 * MS, 1000 * MS + s * 10 * MS + 5 * MS, S_STEP, 0);
	struct stats_rank_row *v;
	size_t n = stats_ranks_compute(st, NULL, &v);
	assert_int_equal(n, 1);
	assert_int_equal(v[0].pid, 100);
	assert_int_equal(v[0].rank, 3);
	assert_int_equal(v[0].steps, 3);
	assert_int_equal(v[0].compute_ns, 15 * MS);
	free(v);
	store_free(st);
}

/* A store without ranked processes has no rows. */
static void test_no_ranks(void **state)
{
	(void)state;
	struct store *st = store_new();
	struct stats_rank_row *v;
	assert_int_equal(stats_ranks_compute(st, NULL, &v), 0);
	assert_null(v);
	process(st, 0, 100, 1, -1);
	range(st, 0, 100, 1000 * MS, 1001 * MS, S_STEP, 0);
	assert_int_equal(stats_ranks_compute(st, NULL, &v), 0);
	assert_null(v);
	store_free(st);
}

/*
 * A live view of two hosts (attach --ssh: one store, every process in capture 0) whose processes
 * have the same pids, as containers give them: each host's rank 100 with its DataLoader worker 101
 * (same rank). Each worker folds into its own host's rank, never the other host's: one row per rank,
 * each with its host and its own steps.
 */
static void test_hosts_equal_pids(void **state)
{
	(void)state;
	struct store *st = store_new();
	hello_host = "nodeA";
	process(st, 0, 100, 1, 0);
	process(st, 1, 101, 100, 0);
	hello_host = "nodeB";
	process(st, 2, 100, 1, 1);
	process(st, 3, 101, 100, 1);
	hello_host = "node1";
	for (uint64_t s = 0; s < 3; s++) {
		range(st, 0, 100, 1000 * MS + s * 10 * MS, 1000 * MS + s * 10 * MS + 8 * MS, S_STEP, 0);
		range(st, 2, 100, 1000 * MS + s * 20 * MS, 1000 * MS + s * 20 * MS + 16 * MS, S_STEP, 0);
		range(st, 1, 101, 1000 * MS + s * MS, 1000 * MS + s * MS + MS / 2, S_LOAD, 0);
		range(st, 3, 101, 1000 * MS + s * MS, 1000 * MS + s * MS + MS / 2, S_LOAD, 0);
	}
	struct stats_rank_row *v;
	size_t n = stats_ranks_compute(st, NULL, &v);
	assert_int_equal(n, 2);
	const struct stats_rank_row *r0 = row_of(v, n, 0), *r1 = row_of(v, n, 1);
	assert_string_equal(r0->host, "nodeA");
	assert_string_equal(r1->host, "nodeB");
	assert_int_equal(r0->pid, 100);
	assert_int_equal(r1->pid, 100);
	assert_int_equal(r0->steps, 3);
	assert_int_equal(r1->steps, 3);
	assert_int_equal(r0->step_p50_ns, 8 * MS);
	assert_int_equal(r1->step_p50_ns, 16 * MS);
	assert_int_equal(v[0].rank, 1); /* the most compute */
	free(v);
	store_free(st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_straggler_first),  cmocka_unit_test(test_worker_folds),
	    cmocka_unit_test(test_restart_groups),   cmocka_unit_test(test_main_thread_and_names),
	    cmocka_unit_test(test_steps_in_child),   cmocka_unit_test(test_no_ranks),
	    cmocka_unit_test(test_hosts_equal_pids), cmocka_unit_test(test_main_thread_autograd),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
