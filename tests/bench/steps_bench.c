/*
 * Cost of inferring steps (steps.h) on KERNELS kernels of one process without NVTX: a training-like loop
 * of 10..19 layers a step (gemm, relu forward; three kernels a layer backward; 6 optimizer kernels), each
 * kernel with its cudaLaunchKernel call, fed into a store. Prints the steps found (and the truth), then the
 * time (min and median of REPEAT) of steps_infer over all kernels (what `stats` and the exports pay), over
 * the newest STEPS_LIVE_EVENTS (what the live view pays once a second per process), and of steps_detect
 * alone on the same events.
 *   make build/tests/bench/steps_bench && build/tests/bench/steps_bench [KERNELS=1000000] [REPEAT=5]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuscope/clock.h"
#include "cuscope/steps.h"
#include "cuscope/store.h"
#include "cuscope/u64.h"
#include "cuscope/wire.h"

#define US 1000ull

enum { S_GEMM = 1, S_RELU, S_LOSS, S_BWD0, S_BWD1, S_BWD2, S_OPT0, S_LAUNCH = S_OPT0 + 6, S_COUNT };

static void feed(struct store *st, uint32_t type, const void *p, size_t len)
{
	const char *cause = NULL;
	if (store_feed(st, 0, type, p, (uint32_t)len, &cause) != 0) {
		fprintf(stderr, "steps_bench: store_feed(%u): %s\n", type, cause ? cause : "?");
		exit(1);
	}
}

static void string(struct store *st, uint32_t id, const char *text)
{
	unsigned char buf[sizeof(struct wire_string) + 64];
	struct wire_string s = {id, (uint32_t)strlen(text)};
	memcpy(buf, &s, sizeof s);
	memcpy(buf + sizeof s, text, s.length);
	feed(st, WIRE_FRAME_STRING, buf, sizeof s + s.length);
}

static struct wire_gpu_event gpus[4096];
static size_t n_gpu;
static uint64_t t = 1000000000ull;
static uint32_t corr = 1;

static void flush(struct store *st)
{
	if (n_gpu)
		feed(st, WIRE_FRAME_GPU, gpus, n_gpu * sizeof gpus[0]);
	n_gpu = 0;
}

static void kernel(struct store *st, uint32_t name)
{
	if (n_gpu + 2 > sizeof gpus / sizeof gpus[0])
		flush(st);
	struct wire_gpu_event *e = &gpus[n_gpu];
	memset(e, 0, 2 * sizeof *e);
	e[0].kind = WIRE_GPU_KERNEL;
	e[0].start_ns = t + 10 * US;
	e[0].end_ns = t + 15 * US;
	e[0].stream = 7;
	e[0].context = 1;
	e[0].name_id = name;
	e[0].correlation_id = corr;
	e[0].grid[0] = e[0].block[0] = 1;
	e[1].kind = WIRE_GPU_API_RUNTIME;
	e[1].start_ns = t;
	e[1].end_ns = t + 2 * US;
	e[1].tid = 100;
	e[1].name_id = S_LAUNCH;
	e[1].correlation_id = corr++;
	n_gpu += 2;
	t += 5 * US;
}

static uint64_t median_min(uint64_t *v, int n, uint64_t *min)
{
	u64_sort(v, (size_t)n);
	*min = v[0];
	return v[n / 2];
}

int main(int argc, char **argv)
{
	unsigned long long kernels = argc > 1 ? strtoull(argv[1], NULL, 10) : 1000000;
	int repeat = argc > 2 ? atoi(argv[2]) : 5;
	if (repeat < 1 || repeat > 100) {
		fprintf(stderr, "usage: steps_bench [KERNELS] [REPEAT]\n");
		return 2;
	}
	struct store *st = store_new();
	unsigned char buf[sizeof(struct wire_hello) + 8];
	struct wire_hello h;
	memset(&h, 0, sizeof h);
	memcpy(h.magic, WIRE_MAGIC, 8);
	h.version = WIRE_VERSION;
	h.hello_size = sizeof h;
	h.pid = 100;
	h.ppid = 1;
	h.start_mono_ns = 1;
	h.features = WIRE_FEATURE_THREADS | WIRE_FEATURE_CUPTI;
	h.cmdline_len = 5;
	memcpy(buf, &h, sizeof h);
	memcpy(buf + sizeof h, "prog\0", 5);
	feed(st, WIRE_FRAME_HELLO, buf, sizeof h + 5);
	static const char *const names[] = {
	    NULL,    "gemm",  "relu",  "loss",  "relu_bwd", "gemm_dx", "gemm_dw",
	    "adam0", "adam1", "adam2", "adam3", "adam4",    "adam5",   "cudaLaunchKernel"};
	for (uint32_t id = 1; id < S_COUNT; id++)
		string(st, id, names[id]);
	unsigned long long n = 0, steps = 0;
	unsigned seed = 1;
	while (n < kernels) {
		seed = seed * 1103515245u + 12345u;
		unsigned layers = 10 + (seed >> 16) % 10;
		t += 500 * US; /* the data loader */
		for (unsigned l = 0; l < layers; l++) {
			kernel(st, S_GEMM);
			kernel(st, S_RELU);
		}
		kernel(st, S_LOSS);
		for (unsigned l = 0; l < layers; l++) {
			kernel(st, S_BWD0);
			kernel(st, S_BWD1);
			kernel(st, S_BWD2);
		}
		for (unsigned k = 0; k < 6; k++)
			kernel(st, S_OPT0 + k);
		n += 5 * layers + 7;
		steps++;
	}
	flush(st);
	struct steps_result r = {0};
	uint64_t full[100], live[100], pure[100], t0;
	size_t live_n = 0;
	for (int i = 0; i < repeat; i++) {
		t0 = clock_mono_ns();
		steps_infer(st, 0, 0, &r);
		full[i] = clock_mono_ns() - t0;
		if (i == 0)
			printf("kernels %llu  iterations %llu  inferred %zu (all kernels)\n", n, steps, r.n);
		t0 = clock_mono_ns();
		steps_infer(st, 0, STEPS_LIVE_EVENTS, &r);
		live[i] = clock_mono_ns() - t0;
		live_n = r.n;
	}
	printf("inferred %zu over the newest %u kernels (live bound)\n", live_n, STEPS_LIVE_EVENTS);
	/* The detector alone, on the events steps_infer gathers (launch order, launch times). */
	struct steps_event *ev = calloc(n, sizeof *ev);
	size_t m = 0;
	const struct store_gpu_op *ops;
	struct store_lane_info li;
	struct store_process_info pi;
	store_process_get(st, 0, &pi);
	for (size_t l = 0; l < pi.lane_count; l++) {
		store_lane_get(st, 0, l, &li);
		for (size_t row = 0; li.kind == STORE_LANE_GPU_STREAM && row < li.gpu_row_count; row++) {
			size_t k = store_lane_gpu_all(st, 0, l, row, &ops);
			for (size_t i = 0; i < k && m < n; i++)
				ev[m++] = (struct steps_event){ops[i].name_id,
				                               100,
				                               ops[i].start_ns - 10 * US,
				                               ops[i].start_ns - 8 * US,
				                               ops[i].start_ns,
				                               ops[i].end_ns};
		}
	}
	for (int i = 0; i < repeat; i++) {
		t0 = clock_mono_ns();
		steps_detect(ev, m, &r);
		pure[i] = clock_mono_ns() - t0;
	}
	printf("steps_detect alone on %zu events: %zu steps\n", m, r.n);
	uint64_t mn;
	uint64_t md = median_min(full, repeat, &mn);
	printf("steps_infer, all kernels:       min %.1f ms  median %.1f ms\n", mn / 1e6, md / 1e6);
	md = median_min(live, repeat, &mn);
	printf("steps_infer, newest %u:     min %.1f ms  median %.1f ms\n", STEPS_LIVE_EVENTS, mn / 1e6,
	       md / 1e6);
	md = median_min(pure, repeat, &mn);
	printf("steps_detect alone:             min %.1f ms  median %.1f ms\n", mn / 1e6, md / 1e6);
	printf("store memory %.1f MiB\n", store_memory_bytes(st) / 1048576.0);
	steps_result_fini(&r);
	free(ev);
	store_free(st);
	return 0;
}
