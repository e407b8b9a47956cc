/*
 * Cost of the ranks pane's recomputation (stats_ranks_compute): a store of RANKS processes with rank
 * labels, each on its own GPU (UUID described, as CUPTI does), fed with steps of STEP events: a
 * "step" range with a nested "forward" and "backward", 20 kernels with their cudaLaunchKernel calls
 * and one NCCL all-reduce kernel. Prints the events held and the time of REPEAT recomputations
 * (min and median), plus the straggler found (rank RANKS-1 has longer compute kernels).
 *   make build/tests/bench/ranks_bench && build/tests/bench/ranks_bench [EVENTS=2000000] [RANKS=8] [REPEAT=5]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuscope/clock.h"
#include "cuscope/stats_ranks.h"
#include "cuscope/store.h"
#include "cuscope/u64.h"
#include "cuscope/wire.h"

#define US      1000ull
#define KERNELS 20 /* compute kernels per step */
/* Events per step: 3 ranges (6), KERNELS kernels with their API calls, one NCCL kernel + call. */
#define STEP_EVENTS (6 + 2 * KERNELS + 2)

enum { S_STEP = 1, S_FWD, S_BWD, S_GEMM, S_NCCL, S_LAUNCH, S_DEV, S_COUNT };

static void feed(struct store *st, int source, uint32_t type, const void *p, size_t len)
{
	const char *cause = NULL;
	if (store_feed(st, source, type, p, (uint32_t)len, &cause) != 0) {
		fprintf(stderr, "ranks_bench: store_feed(%u): %s\n", type, cause ? cause : "?");
		exit(1);
	}
}

static void string(struct store *st, int source, uint32_t id, const char *text)
{
	unsigned char buf[sizeof(struct wire_string) + 128];
	struct wire_string s = {id, (uint32_t)strlen(text)};
	memcpy(buf, &s, sizeof s);
	memcpy(buf + sizeof s, text, s.length);
	feed(st, source, WIRE_FRAME_STRING, buf, sizeof s + s.length);
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
	h.features = WIRE_FEATURE_NVTX | WIRE_FEATURE_THREADS | WIRE_FEATURE_CUPTI;
	strcpy(h.host, "node1");
	h.ids = WIRE_ID_RANK;
	h.rank = rank;
	h.cmdline_len = 5;
	memcpy(buf, &h, sizeof h);
	memcpy(buf + sizeof h, "prog\0", 5);
	feed(st, source, WIRE_FRAME_HELLO, buf, sizeof h + 5);
	static const char *const names[S_COUNT] = {NULL,
	                                           "step",
	                                           "forward",
	                                           "backward",
	                                           "gemm_kernel",
	                                           "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*)",
	                                           "cudaLaunchKernel",
	                                           "NVIDIA H200"};
	for (uint32_t id = 1; id < S_COUNT; id++)
		string(st, source, id, names[id]);
	struct wire_gpu_device d;
	memset(&d, 0, sizeof d);
	d.device = 0; /* per-task CUDA_VISIBLE_DEVICES: every rank sees device 0 */
	d.name_id = S_DEV;
	for (int i = 0; i < 16; i++)
		d.uuid[i] = (uint8_t)(rank * 16 + i);
	d.sm_count = 132;
	feed(st, source, WIRE_FRAME_GPU_DEVICE, &d, sizeof d);
}

static struct wire_event evs[4096];
static struct wire_gpu_event gpus[4096];
static size_t n_ev, n_gpu;

static void flush(struct store *st, int source)
{
	if (n_ev)
		feed(st, source, WIRE_FRAME_EVENTS, evs, n_ev * sizeof evs[0]);
	if (n_gpu)
		feed(st, source, WIRE_FRAME_GPU, gpus, n_gpu * sizeof gpus[0]);
	n_ev = n_gpu = 0;
}

static void nvtx(struct store *st, int source, int kind, uint64_t t, uint32_t tid, uint32_t name)
{
	if (n_ev == sizeof evs / sizeof evs[0])
		flush(st, source);
	struct wire_event *e = &evs[n_ev++];
	memset(e, 0, sizeof *e);
	e->kind = (uint8_t)kind;
	e->time_ns = t;
	e->tid = tid;
	e->name_id = name;
}

static void kernel(struct store *st, int source, uint32_t tid, uint64_t start, uint64_t end, uint32_t name,
                   uint32_t corr)
{
	if (n_gpu + 2 > sizeof gpus / sizeof gpus[0])
		flush(st, source);
	struct wire_gpu_event *e = &gpus[n_gpu];
	memset(e, 0, 2 * sizeof *e);
	e[0].kind = WIRE_GPU_KERNEL;
	e[0].start_ns = start;
	e[0].end_ns = end;
	e[0].stream = 7;
	e[0].context = 1;
	e[0].name_id = name;
	e[0].correlation_id = corr;
	e[0].grid[0] = e[0].block[0] = 1;
	e[1].kind = WIRE_GPU_API_RUNTIME;
	e[1].start_ns = start - 3 * US;
	e[1].end_ns = start - 2 * US;
	e[1].tid = tid;
	e[1].name_id = S_LAUNCH;
	e[1].correlation_id = corr;
	n_gpu += 2;
}

int main(int argc, char **argv)
{
	unsigned long long events = argc > 1 ? strtoull(argv[1], NULL, 10) : 2000000;
	int ranks = argc > 2 ? atoi(argv[2]) : 8;
	int repeat = argc > 3 ? atoi(argv[3]) : 5;
	if (ranks < 1 || repeat < 1) {
		fprintf(stderr, "usage: ranks_bench [EVENTS] [RANKS] [REPEAT]\n");
		return 2;
	}
	uint64_t steps = events / (uint64_t)ranks / STEP_EVENTS;
	struct store *st = store_new();
	for (int r = 0; r < ranks; r++) {
		uint32_t pid = 1000 + (uint32_t)r, corr = 1;
		process(st, r, (int)pid, r);
		/* 1 ms steps; the last rank's kernels are 10 % longer: it is the straggler. */
		uint64_t kdur = r == ranks - 1 ? 33 * US : 30 * US;
		for (uint64_t s = 0; s < steps; s++) {
			uint64_t t0 = 1000000000ull + s * 1000 * US;
			nvtx(st, r, WIRE_EV_NVTX_PUSH, t0, pid, S_STEP);
			nvtx(st, r, WIRE_EV_NVTX_PUSH, t0 + US, pid, S_FWD);
			for (int k = 0; k < KERNELS; k++) {
				uint64_t ks = t0 + 10 * US + (uint64_t)k * (kdur + 5 * US);
				kernel(st, r, pid, ks, ks + kdur, S_GEMM, corr++);
				if (k == KERNELS / 2) {
					nvtx(st, r, WIRE_EV_NVTX_POP, ks, pid, 0);
					nvtx(st, r, WIRE_EV_NVTX_PUSH, ks + US, pid, S_BWD);
				}
			}
			uint64_t nccl = t0 + 10 * US + KERNELS * (kdur + 5 * US);
			kernel(st, r, pid, nccl, t0 + 990 * US, S_NCCL, corr++);
			nvtx(st, r, WIRE_EV_NVTX_POP, t0 + 980 * US, pid, 0);
			nvtx(st, r, WIRE_EV_NVTX_POP, t0 + 995 * US, pid, 0);
		}
		flush(st, r);
	}
	uint64_t *t = calloc((size_t)repeat, sizeof *t);
	struct stats_rank_row *v = NULL;
	size_t n = 0;
	for (int i = 0; i < repeat; i++) {
		free(v);
		uint64_t a = clock_mono_ns();
		n = stats_ranks_compute(st, NULL, &v);
		t[i] = clock_mono_ns() - a;
	}
	u64_sort(t, (size_t)repeat);
	printf("ranks_bench: %llu events in the store (%d ranks, %llu steps each); stats_ranks_compute "
	       "min %.1f ms, median %.1f ms over %d runs; straggler rank %d (%llu steps)\n",
	       (unsigned long long)steps * STEP_EVENTS * (unsigned long long)ranks, ranks,
	       (unsigned long long)steps, (double)t[0] / 1e6, (double)t[repeat / 2] / 1e6, repeat,
	       n ? (int)v[0].rank : -1, n ? (unsigned long long)v[0].steps : 0ull);
	free(v);
	free(t);
	store_free(st);
	return 0;
}
