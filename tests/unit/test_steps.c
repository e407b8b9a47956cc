/*
 * Steps without annotations (steps.h): crafted kernel sequences of N real iterations with warm-up,
 * noise kernels (a periodic eval, a logging kernel), data-dependent kernel counts and different periods;
 * the inferred count must be N +- 1, a sequence with no repetition infers nothing. Then through a store:
 * kernels fed as the collector sends them, a process with a repeating NVTX range is not inferred.
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
#include "cuscope/rankspane.h"
#include "cuscope/stats.h"
#include "cuscope/stats_ranks.h"
#include "cuscope/steps.h"
#include "cuscope/store.h"
#include "cuscope/wire.h"

#define US 1000ull

/* A growing stream of events with a clock: each launch takes 5 us of CPU, its kernel runs 20 us later. */
struct seq {
	struct steps_event *v;
	size_t n, cap;
	uint64_t t;
	uint64_t rng;
	uint64_t starts[256]; /* launch times of the iterations' first kernels (after the wait) */
	size_t nstarts;
};

static uint32_t seq_rand(struct seq *s, uint32_t below)
{
	s->rng = s->rng * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)((s->rng >> 33) % below);
}

static void seq_add(struct seq *s, uint32_t name)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 1024;
		s->v = realloc(s->v, s->cap * sizeof *s->v);
		assert_non_null(s->v);
	}
	s->v[s->n++] = (struct steps_event){name, 42, s->t, s->t + 5 * US, s->t + 20 * US, s->t + 30 * US};
	s->t += 10 * US;
}

/* A CPU wait (data loading, a sync) before the next launch. */
static void seq_wait(struct seq *s, uint64_t ns)
{
	s->t += ns;
}

static size_t detect(const struct seq *s, struct steps_result *r)
{
	steps_detect(s->v, s->n, r);
	return r->n;
}

static void assert_about(size_t got, size_t want)
{
	if (got + 1 < want || got > want + 1)
		fail_msg("inferred %zu steps, want %zu +- 1", got, want);
}

/* Names 100.. a forward, 200.. a backward, 300.. an optimizer; 400.. noise; 900.. warm-up. */
static void iteration(struct seq *s, size_t layers, size_t opt)
{
	seq_wait(s, 2000 * US); /* the loop waits for its data */
	if (s->nstarts < sizeof s->starts / sizeof s->starts[0])
		s->starts[s->nstarts++] = s->t;
	for (size_t l = 0; l < layers; l++) {
		seq_add(s, 100); /* gemm, relu: the same names in every layer */
		seq_add(s, 101);
	}
	seq_add(s, 102); /* loss */
	for (size_t l = 0; l < layers; l++) {
		seq_add(s, 200);
		seq_add(s, 201);
		seq_add(s, 100);
	}
	for (size_t k = 0; k < opt; k++)
		seq_add(s, (uint32_t)(300 + k));
}

/* Plain loops of several periods: N steps each, the first starting at the first forward kernel. */
static void test_periods(void **state)
{
	(void)state;
	static const size_t layers[] = {1, 4, 30}, opt[] = {1, 3, 12}, steps[] = {5, 40, 200};
	for (size_t a = 0; a < 3; a++) {
		for (size_t b = 0; b < 3; b++) {
			struct seq s = {.rng = 1};
			for (size_t i = 0; i < steps[b]; i++)
				iteration(&s, layers[a], opt[a]);
			struct steps_result r = {0};
			assert_about(detect(&s, &r), steps[b]);
			/* The phase: every step starts where the loop waited, at the first forward kernel. */
			assert_int_equal(r.v[0].start_ns, s.v[0].cpu_ns);
			assert_int_equal(r.v[0].size, 5 * layers[a] + 1 + opt[a]);
			assert_int_equal(r.v[0].tid, 42);
			assert_int_equal(r.gpu_time, 0);
			assert_int_equal(r.period, 5 * layers[a] + 1 + opt[a]);
			for (size_t i = 1; i < r.n; i++)
				assert_true(r.v[i].start_ns >= r.v[i - 1].end_ns);
			steps_result_fini(&r);
			free(s.v);
		}
	}
}

/* Two warm-up iterations with many extra kernels (autotuning), 60 steps in all. */
static void test_warmup(void **state)
{
	(void)state;
	struct seq s = {.rng = 7};
	for (size_t i = 0; i < 60; i++) {
		if (i < 2)
			for (size_t k = 0; k < 150; k++)
				seq_add(&s, 900 + seq_rand(&s, 40));
		iteration(&s, 6, 4);
	}
	struct steps_result r = {0};
	assert_about(detect(&s, &r), 60);
	/*
	 * The pairs "last optimizer kernel, first forward kernel" miss the warm-up steps, so a kernel of
	 * mid-step (the loss) anchors; the steps still begin after the wait, at each iteration's first
	 * forward kernel.
	 */
	size_t at_start = 0;
	for (size_t i = 0; i < r.n; i++)
		for (size_t k = 0; k < s.nstarts; k++)
			at_start += r.v[i].start_ns == s.starts[k];
	if (at_start + 1 < s.nstarts)
		fail_msg("%zu of %zu steps start where an iteration starts", at_start, r.n);
	steps_result_fini(&r);
	free(s.v);
}

/* An eval (forward kernels again, plus its own) every 7 steps and a logging kernel every 10. */
static void test_noise(void **state)
{
	(void)state;
	struct seq s = {.rng = 3};
	for (size_t i = 0; i < 100; i++) {
		iteration(&s, 5, 3);
		if (i % 7 == 6) {
			seq_wait(&s, 5000 * US);
			for (size_t l = 0; l < 5; l++) {
				seq_add(&s, 100);
				seq_add(&s, 101);
			}
			seq_add(&s, 400); /* argmax */
		}
		if (i % 10 == 9)
			seq_add(&s, 401); /* loss.item() */
	}
	struct steps_result r = {0};
	assert_about(detect(&s, &r), 100);
	steps_result_fini(&r);
	free(s.v);
}

/*
 * tests/gpu/torch_steps.py's shape: each layer's forward kernel has a name of its own (once a step), an
 * eval pass (those forward kernels again) every 5 steps, the last step among them; 30 steps. The
 * forward kernels then occur 36 times, and the last eval's extra occurrence cuts no short interval:
 * they must not beat the optimizer's kernels, which occur once a step.
 */
static void test_eval_every_5(void **state)
{
	(void)state;
	struct seq s = {.rng = 5};
	for (size_t i = 0; i < 30; i++) {
		seq_wait(&s, 2000 * US);
		for (uint32_t l = 0; l < 3; l++) {
			seq_add(&s, 110 + l);
			seq_add(&s, 101);
		}
		seq_add(&s, 102);
		for (uint32_t l = 0; l < 3; l++) {
			seq_add(&s, 210 + l);
			seq_add(&s, 201);
		}
		for (uint32_t k = 0; k < 3; k++)
			seq_add(&s, 300 + k);
		if (i % 5 == 4) {
			for (uint32_t l = 0; l < 3; l++) {
				seq_add(&s, 110 + l);
				seq_add(&s, 101);
			}
			seq_add(&s, 400); /* argmax */
		}
	}
	struct steps_result r = {0};
	assert_about(detect(&s, &r), 30);
	steps_result_fini(&r);
	free(s.v);
}

/* Data-dependent parts: each step runs 3..12 layers (a variable sequence length, a mixture of experts). */
static void test_varying_counts(void **state)
{
	(void)state;
	struct seq s = {.rng = 11};
	for (size_t i = 0; i < 80; i++)
		iteration(&s, 3 + seq_rand(&s, 10), 5);
	struct steps_result r = {0};
	assert_about(detect(&s, &r), 80);
	steps_result_fini(&r);
	free(s.v);
}

/* No name occurs once a step (a foreach optimizer launches each of its kernels 3 times): pairs anchor. */
static void test_bigram(void **state)
{
	(void)state;
	struct seq s = {.rng = 5};
	for (size_t i = 0; i < 30; i++) {
		seq_wait(&s, 1000 * US);
		for (size_t l = 0; l < 4; l++) {
			seq_add(&s, 100);
			seq_add(&s, 101);
			seq_add(&s, 100);
		}
		for (size_t k = 0; k < 3; k++)
			for (size_t c = 0; c < 3; c++)
				seq_add(&s, (uint32_t)(300 + k));
	}
	struct steps_result r = {0};
	assert_about(detect(&s, &r), 30);
	assert_int_equal(r.bigram, 1);
	steps_result_fini(&r);
	free(s.v);
}

/* Launch calls unknown: the steps are in GPU time. */
static void test_gpu_time(void **state)
{
	(void)state;
	struct seq s = {.rng = 1};
	for (size_t i = 0; i < 25; i++)
		iteration(&s, 3, 2);
	for (size_t i = 0; i < s.n; i++)
		s.v[i].cpu_ns = s.v[i].cpu_end_ns = 0;
	struct steps_result r = {0};
	assert_about(detect(&s, &r), 25);
	assert_int_equal(r.gpu_time, 1);
	assert_int_equal(r.v[0].start_ns, s.v[0].gpu_start_ns);
	steps_result_fini(&r);
	free(s.v);
}

/* No repetition: random names (small and large alphabets), all distinct, one kernel in a loop. */
static void test_no_repetition(void **state)
{
	(void)state;
	static const uint32_t alphabets[] = {3, 8, 20, 300};
	struct steps_result r = {0};
	for (size_t a = 0; a < 4; a++) {
		struct seq s = {.rng = 99 + a};
		for (size_t i = 0; i < 20000; i++) {
			if (seq_rand(&s, 50) == 0)
				seq_wait(&s, 1000 * US);
			seq_add(&s, seq_rand(&s, alphabets[a]));
		}
		if (detect(&s, &r))
			fail_msg("alphabet %u: %zu steps inferred from random names", alphabets[a], r.n);
		free(s.v);
	}
	struct seq s = {.rng = 1};
	for (uint32_t i = 0; i < 5000; i++)
		seq_add(&s, i);
	assert_int_equal(detect(&s, &r), 0);
	s.n = 0;
	for (uint32_t i = 0; i < 5000; i++)
		seq_add(&s, 7);
	assert_int_equal(detect(&s, &r), 0);
	assert_int_equal(detect(&s, &r) + (steps_detect(NULL, 0, &r), r.n), 0);
	/* A kernel loop of 2 or 3 kernels (an autotuner's candidates, a benchmark) is not a training step. */
	for (uint32_t period = 2; period <= 3; period++) {
		s.n = 0;
		for (uint32_t i = 0; i < 3000; i++)
			seq_add(&s, 500 + i % period);
		if (detect(&s, &r))
			fail_msg("a loop of %u kernels: %zu steps inferred", period, r.n);
	}
	steps_result_fini(&r);
	free(s.v);
}

/* ---- through a store ---- */

static void feed(struct store *st, uint32_t type, const void *payload, size_t length)
{
	const char *cause = NULL;
	if (store_feed(st, 0, type, payload, (uint32_t)length, &cause))
		fail_msg("store_feed(%u): %s", type, cause ? cause : "?");
}

static void string(struct store *st, uint32_t id, const char *text)
{
	unsigned char buf[sizeof(struct wire_string) + 64];
	struct wire_string s = {id, (uint32_t)strlen(text)};
	memcpy(buf, &s, sizeof s);
	memcpy(buf + sizeof s, text, s.length);
	feed(st, WIRE_FRAME_STRING, buf, sizeof s + s.length);
}

static void hello(struct store *st, int32_t rank)
{
	unsigned char buf[sizeof(struct wire_hello) + 8];
	struct wire_hello h;
	memset(&h, 0, sizeof h);
	memcpy(h.magic, WIRE_MAGIC, 8);
	h.version = WIRE_VERSION;
	h.hello_size = sizeof h;
	h.pid = 500;
	h.ppid = 1;
	h.start_mono_ns = 1;
	h.features = WIRE_FEATURE_NVTX | WIRE_FEATURE_THREADS | WIRE_FEATURE_CUPTI;
	if (rank >= 0) {
		h.ids = WIRE_ID_RANK;
		h.rank = rank;
	}
	h.cmdline_len = 5;
	memcpy(buf, &h, sizeof h);
	memcpy(buf + sizeof h, "prog\0", 5);
	feed(st, WIRE_FRAME_HELLO, buf, sizeof h + 5);
	static const char *const names[] = {"gemm",
	                                    "relu",
	                                    "loss",
	                                    "sgd",
	                                    "cudaLaunchKernel",
	                                    "step",
	                                    "aten::mm",
	                                    "cudaMemcpyAsync",
	                                    "cudaStreamSynchronize",
	                                    "cudaEventRecord"};
	for (uint32_t i = 0; i < sizeof names / sizeof names[0]; i++)
		string(st, i + 1, names[i]);
}

/* A kernel on stream `stream` launched by thread 500 at cpu (its call 3 us), running [gpu, gpu + 10 us). */
static void kernel(struct store *st, uint32_t stream, uint64_t cpu, uint64_t gpu, uint32_t name)
{
	static uint32_t corr = 1;
	struct wire_gpu_event e[2];
	memset(e, 0, sizeof e);
	e[0].kind = WIRE_GPU_KERNEL;
	e[0].start_ns = gpu;
	e[0].end_ns = gpu + 10 * US;
	e[0].stream = stream;
	e[0].context = 1;
	e[0].name_id = name;
	e[0].correlation_id = corr;
	e[0].grid[0] = e[0].block[0] = 1;
	e[1].kind = WIRE_GPU_API_RUNTIME;
	e[1].start_ns = cpu;
	e[1].end_ns = cpu + 3 * US;
	e[1].tid = 500;
	e[1].name_id = 5;
	e[1].correlation_id = corr++;
	feed(st, WIRE_FRAME_GPU, e, sizeof e);
}

static void range(struct store *st, uint64_t start, uint64_t end, uint32_t name)
{
	struct wire_event e[2];
	memset(e, 0, sizeof e);
	e[0].kind = WIRE_EV_NVTX_PUSH;
	e[0].time_ns = start;
	e[0].tid = 500;
	e[0].name_id = name;
	e[1].kind = WIRE_EV_NVTX_POP;
	e[1].time_ns = end;
	e[1].tid = 500;
	feed(st, WIRE_FRAME_EVENTS, e, sizeof e);
}

/*
 * 12 steps of 1 ms: gemm, relu on stream 7, the loss on stream 9 (its GPU start earlier than the relu's:
 * launch order, not GPU order, across streams), sgd. Steps start at the gemm's launch call.
 */
static void steps_store(struct store *st, int ops_ranges)
{
	hello(st, 3);
	for (uint64_t i = 0; i < 12; i++) {
		uint64_t t = 1000000 * US + i * 1000 * US;
		if (ops_ranges)
			range(st, t, t + 2 * US, 7);
		kernel(st, 7, t, t + 50 * US, 1);
		kernel(st, 7, t + 10 * US, t + 300 * US, 2);
		kernel(st, 9, t + 20 * US, t + 100 * US, 3);
		kernel(st, 7, t + 30 * US, t + 400 * US, 4);
	}
}

static void test_store(void **state)
{
	(void)state;
	struct store *st = store_new();
	steps_store(st, 1); /* torch operator ranges repeat: not annotations */
	struct steps_result r = {0};
	assert_int_equal(steps_process_annotated(st, 0), 0);
	steps_infer(st, 0, 0, &r);
	assert_about(r.n, 12);
	assert_int_equal(r.v[0].start_ns, 1000000 * US);
	assert_int_equal(r.v[1].start_ns, 1001000 * US);
	assert_int_equal(r.v[0].end_ns, 1001000 * US);
	assert_int_equal(r.v[0].tid, 500);
	assert_int_equal(r.v[0].size, 4);
	assert_int_equal(r.gpu_time, 0);
	assert_int_equal(r.api, 0);
	/* Bounded: the newest 20 kernels hold 5 steps. */
	steps_infer(st, 0, 20, &r);
	assert_about(r.n, 5);
	assert_int_equal(r.v[r.n - 1].start_ns, 1011000 * US);
	steps_result_fini(&r);

	/* The ranks section takes them for rank 3's steps (it has no step range), stats lists them under
	 * nvtx. */
	struct stats_rank_row *v;
	assert_int_equal(stats_ranks_compute(st, NULL, &v), 1);
	assert_int_equal(v[0].rank, 3);
	assert_int_equal(v[0].inferred, 1);
	assert_int_equal(v[0].step_name, 0);
	assert_about(v[0].steps, 12);
	assert_int_equal(v[0].step_p50_ns, 1000 * US);
	free(v);
	/* The ranks pane says so on the rank's row. */
	struct rankspane rp;
	rankspane_init(&rp);
	rankspane_update(&rp, st, store_generation(st), 1);
	char row[256];
	rankspane_row_text(&rp, 0, row, sizeof row);
	if (!strstr(row, "(steps inferred)"))
		fail_msg("ranks pane row without the inferred mark: %s", row);
	rankspane_fini(&rp);
	char *text = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&text, &size);
	assert_int_equal(stats_write_sections(f, st, STATS_FORMAT_CSV, 1), 0); /* nvtx: the first section */
	fclose(f);
	if (!strstr(text, "\nstep,inferred,Inferred,12,") || !strstr(text, ",1000000,1000000,1000000\n"))
		fail_msg("stats nvtx section lacks the inferred steps:\n%s", text);
	free(text);
	store_free(st);

	/* A "step" range that repeats: the process is annotated, nothing is inferred. */
	st = store_new();
	steps_store(st, 0);
	for (uint64_t i = 0; i < 3; i++)
		range(st, 2000000 * US + i * 10 * US, 2000000 * US + i * 10 * US + 5 * US, 6);
	assert_int_equal(steps_process_annotated(st, 0), 1);
	steps_infer(st, 0, 0, &r);
	assert_int_equal(r.n, 0);
	assert_int_equal(stats_ranks_compute(st, NULL, &v), 1);
	assert_int_equal(v[0].inferred, 0);
	assert_int_equal(v[0].steps, 3);
	free(v);
	steps_result_fini(&r);
	store_free(st);
}

/* One CUDA API call of thread 500 (no kernel record: kernel tracing off). */
static void api_call(struct store *st, uint64_t start, uint32_t name)
{
	static uint32_t corr = 100000;
	struct wire_gpu_event e;
	memset(&e, 0, sizeof e);
	e.kind = WIRE_GPU_API_RUNTIME;
	e.start_ns = start;
	e.end_ns = start + 2 * US;
	e.tid = 500;
	e.name_id = name;
	e.correlation_id = corr++;
	feed(st, WIRE_FRAME_GPU, &e, sizeof e);
}

/* Without kernels, the CUDA API call stream: copy, 3 launches, an event, a sync; 10 iterations. */
static void test_api_stream(void **state)
{
	(void)state;
	struct store *st = store_new();
	hello(st, -1);
	static const uint32_t loop[] = {8, 5, 5, 5, 10, 9};
	for (uint64_t i = 0; i < 10; i++)
		for (uint64_t k = 0; k < 6; k++)
			api_call(st, 1000000 * US + i * 1000 * US + k * 20 * US, loop[k]);
	struct steps_result r = {0};
	steps_infer(st, 0, 0, &r);
	assert_about(r.n, 10);
	assert_int_equal(r.api, 1);
	assert_int_equal(r.gpu_time, 0);
	assert_int_equal(r.v[1].start_ns - r.v[0].start_ns, 1000 * US);
	steps_result_fini(&r);
	store_free(st);
}

/* The layout's "step (inferred)" row: under the process header while set, gone when cleared. */
static void test_layout_row(void **state)
{
	(void)state;
	struct store *st = store_new();
	steps_store(st, 0);
	struct layout l;
	layout_init(&l);
	layout_build(&l, st);
	size_t without = l.count;
	assert_int_equal(l.rows[1].kind == LAYOUT_ROW_STEPS, 0);
	layout_set_steps(&l, 0, 1);
	layout_build(&l, st);
	assert_int_equal(l.count, without + 1);
	assert_int_equal(l.rows[0].kind, LAYOUT_ROW_PROCESS);
	assert_int_equal(l.rows[1].kind, LAYOUT_ROW_STEPS);
	assert_int_equal(l.rows[1].pid, 500);
	layout_set_steps(&l, 7, 0); /* a process never set: nothing to clear */
	layout_set_steps(&l, 0, 0);
	layout_build(&l, st);
	assert_int_equal(l.count, without);
	layout_fini(&l);
	store_free(st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_periods),        cmocka_unit_test(test_warmup),
	    cmocka_unit_test(test_noise),          cmocka_unit_test(test_eval_every_5),
	    cmocka_unit_test(test_varying_counts), cmocka_unit_test(test_bigram),
	    cmocka_unit_test(test_gpu_time),       cmocka_unit_test(test_no_repetition),
	    cmocka_unit_test(test_store),          cmocka_unit_test(test_api_stream),
	    cmocka_unit_test(test_layout_row),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
