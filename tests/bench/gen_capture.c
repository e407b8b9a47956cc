/*
 * Synthetic capture generator (benchmarks and export/diff tests): writes a capture of one process
 * through capture_writer_* directly, with known truth. Every step on the main thread "gen-main":
 *   push "step" [RANGE_NS] > push "inner" (domain dom.gen) > cudaLaunchKernel (API, 5 us)
 *   kernel _Z6kernelPfi ("kernel(float*, int)") on device 0 stream 7 lasting KERNEL_NS
 * every 10th step also: mark "tick", start/end "async" (1 us), cudaMemcpyAsync + a 4096-byte HtoD
 * copy, cudaMemsetAsync + a 256-byte memset, and a stream sync.
 *   gen_capture OUT STEPS [KERNEL_NS] [RANGE_NS]
 * Prints the expected counts as one JSON object on stdout.
 */
#include "cuscope/capture.h"
#include "cuscope/wire.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BATCH 8192
#define PID   4242
#define SRC   0

static struct capture_writer *w;
static struct wire_event evs[BATCH];
static struct wire_gpu_event gpus[BATCH];
static size_t n_ev, n_gpu;
static unsigned long long n_events;

static void die(const char *what)
{
	fprintf(stderr, "gen_capture: %s failed\n", what);
	exit(1);
}

static void frame(uint32_t type, const void *p, uint32_t len)
{
	if (capture_writer_frame(w, SRC, type, p, len) != 0)
		die("capture_writer_frame");
}

static void flush_ev(void)
{
	if (n_ev)
		frame(WIRE_FRAME_EVENTS, evs, (uint32_t)(n_ev * sizeof *evs));
	n_ev = 0;
}

static void flush_gpu(void)
{
	if (n_gpu)
		frame(WIRE_FRAME_GPU, gpus, (uint32_t)(n_gpu * sizeof *gpus));
	n_gpu = 0;
}

static void ev(uint16_t kind, uint64_t t, uint32_t name, uint32_t domain, uint64_t value)
{
	struct wire_event *e = &evs[n_ev++];
	memset(e, 0, sizeof *e);
	e->time_ns = t;
	e->kind = kind;
	e->name_id = name;
	e->domain_id = domain;
	e->value = value;
	e->tid = PID;
	n_events++;
	if (n_ev == BATCH)
		flush_ev();
}

static struct wire_gpu_event *gpu(uint16_t kind, uint64_t start, uint64_t end, uint32_t name, uint32_t corr)
{
	struct wire_gpu_event *g = &gpus[n_gpu++];
	memset(g, 0, sizeof *g);
	g->kind = kind;
	g->start_ns = start;
	g->end_ns = end;
	g->name_id = name;
	g->correlation_id = corr;
	g->tid = PID;
	g->context = 1;
	g->stream = 7;
	n_events++;
	return g;
}

static void gpu_done(void)
{
	if (n_gpu == BATCH)
		flush_gpu();
}

static void string(uint32_t id, const char *text)
{
	unsigned char buf[sizeof(struct wire_string) + 256];
	struct wire_string s = {id, (uint32_t)strlen(text)};
	memcpy(buf, &s, sizeof s);
	memcpy(buf + sizeof s, text, s.length);
	frame(WIRE_FRAME_STRING, buf, (uint32_t)(sizeof s + s.length));
}

enum { S_STEP = 1, S_TICK, S_ASYNC, S_KERNEL, S_LAUNCH, S_MEMCPY, S_MAIN, S_DOM, S_MEMSET, S_SYNC, S_INNER };

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: gen_capture OUT STEPS [KERNEL_NS] [RANGE_NS]\n");
		return 2;
	}
	long steps = atol(argv[2]);
	uint64_t kernel_ns = argc > 3 ? strtoull(argv[3], NULL, 10) : 20000;
	uint64_t range_ns = argc > 4 ? strtoull(argv[4], NULL, 10) : 50000;
	if (steps < 0 || kernel_ns < 1 || range_ns < 20000 || kernel_ns + 10000 > range_ns + 500) {
		fprintf(stderr, "gen_capture: need RANGE_NS >= 20000 and KERNEL_NS <= RANGE_NS - 9500\n");
		return 2;
	}
	int err = 0;
	const char *cause = "";
	w = capture_writer_open(argv[1], &err, &cause);
	if (!w) {
		fprintf(stderr, "gen_capture: %s: %s\n", argv[1], cause);
		return 1;
	}
	const char *manifest = "generator=gen_capture\n";
	capture_writer_manifest(w, manifest, strlen(manifest));

	unsigned char hbuf[sizeof(struct wire_hello) + 16];
	struct wire_hello h;
	memset(&h, 0, sizeof h);
	memcpy(h.magic, WIRE_MAGIC, 8);
	h.version = WIRE_VERSION;
	h.hello_size = sizeof h;
	h.pid = PID;
	h.ppid = 1;
	h.start_mono_ns = 1000000000ull;
	h.anchor_mono_ns = h.start_mono_ns;
	h.anchor_real_ns = 1700000000ull * 1000000000ull;
	h.features = WIRE_FEATURE_NVTX | WIRE_FEATURE_CUPTI;
	strcpy(h.host, "genhost");
	h.cmdline_len = 8;
	memcpy(hbuf, &h, sizeof h);
	memcpy(hbuf + sizeof h, "gen\0prog", 8);
	frame(WIRE_FRAME_HELLO, hbuf, sizeof h + 8);
	const char *names[] = {"",
	                       "step",
	                       "tick",
	                       "async",
	                       "_Z6kernelPfi",
	                       "cudaLaunchKernel",
	                       "cudaMemcpyAsync",
	                       "gen-main",
	                       "dom.gen",
	                       "cudaMemsetAsync",
	                       "cudaStreamSynchronize",
	                       "inner"};
	for (uint32_t i = 1; i < sizeof names / sizeof names[0]; i++)
		string(i, names[i]);

	uint64_t t = h.start_mono_ns + 1000;
	ev(WIRE_EV_THREAD_NAME, t, S_MAIN, 0, 0);
	struct wire_gpu_event *g = gpu(WIRE_GPU_CONTEXT, t, t, 0, 0);
	g->stream = 1; /* the legacy default stream */
	gpu_done();
	uint32_t corr = 1;
	long ticks = 0;
	for (long s = 0; s < steps; s++) {
		ev(WIRE_EV_NVTX_PUSH, t, S_STEP, 0, 0);
		ev(WIRE_EV_NVTX_PUSH, t + 500, S_INNER, S_DOM, 0);
		gpu(WIRE_GPU_API_RUNTIME, t + 1000, t + 6000, S_LAUNCH, corr);
		gpu_done();
		g = gpu(WIRE_GPU_KERNEL, t + 10000, t + 10000 + kernel_ns, S_KERNEL, corr);
		g->grid[0] = 128;
		g->grid[1] = g->grid[2] = 1;
		g->block[0] = 256;
		g->block[1] = g->block[2] = 1;
		g->registers = 32;
		g->shared_static = 1024;
		g->shared_dynamic = 2048;
		gpu_done();
		corr++;
		ev(WIRE_EV_NVTX_POP, t + 8000, 0, S_DOM, 0);
		if (s % 10 == 0) {
			ticks++;
			ev(WIRE_EV_NVTX_MARK, t + 8100, S_TICK, 0, 0);
			ev(WIRE_EV_NVTX_START, t + 8200, S_ASYNC, 0, (uint64_t)s + 1);
			ev(WIRE_EV_NVTX_END, t + 9200, 0, 0, (uint64_t)s + 1);
			/* after the kernel: the copy, memset and sync start at t + range_ns - 9000 */
			uint64_t u = t + range_ns - 9000;
			gpu(WIRE_GPU_API_RUNTIME, u, u + 1000, S_MEMCPY, corr);
			gpu_done();
			g = gpu(WIRE_GPU_MEMCPY, u + 1500, u + 2500, 0, corr);
			g->subkind = WIRE_MEMCPY_HTOD;
			g->src_mem = WIRE_MEM_PINNED;
			g->dst_mem = WIRE_MEM_DEVICE;
			g->flags = WIRE_GPU_FLAG_ASYNC;
			g->bytes = 4096;
			gpu_done();
			corr++;
			gpu(WIRE_GPU_API_RUNTIME, u + 3000, u + 4000, S_MEMSET, corr);
			gpu_done();
			g = gpu(WIRE_GPU_MEMSET, u + 4500, u + 5000, 0, corr);
			g->dst_mem = WIRE_MEM_DEVICE;
			g->bytes = 256;
			g->flags = WIRE_GPU_FLAG_ASYNC;
			gpu_done();
			corr++;
			g = gpu(WIRE_GPU_SYNC, u + 5500, u + 6500, 0, 0);
			g->subkind = WIRE_SYNC_STREAM;
			gpu_done();
		}
		ev(WIRE_EV_NVTX_POP, t + range_ns, 0, 0, 0);
		t += range_ns + 1000;
	}
	flush_ev();
	flush_gpu();
	if (capture_writer_close(w) != 0)
		die("capture_writer_close");
	printf(
	    "{\"events\": %llu, \"step\": %ld, \"inner\": %ld, \"kernel\": %ld, \"cudaLaunchKernel\": %ld, "
	    "\"tick\": %ld, \"async\": %ld, \"memcpy\": %ld, \"memset\": %ld, \"sync\": %ld, "
	    "\"kernel_ns\": %llu, \"range_ns\": %llu}\n",
	    n_events, steps, steps, steps, steps, ticks, ticks, ticks, ticks, ticks,
	    (unsigned long long)kernel_ns, (unsigned long long)range_ns);
	return 0;
}
