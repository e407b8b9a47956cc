/*
 * UI frame benchmark: builds a synthetic store of N events by feeding hand-made wire frames through
 * store_feed (HELLO, STRING, EVENTS with NVTX push/pop on 4 threads, GPU kernels and copies on 2
 * streams), then draws the real UI (ui_new_on) into a curses screen opened with newterm on a file,
 * TERM=xterm-256color, 200x60 by default. Prints frame times (p50/p99) and the bytes the terminal
 * would receive per frame (file growth) for: a live view scrolling with now, a full repaint, and
 * static frames at several zooms; plus store bytes per event.
 *
 *   ui_bench [EVENTS] [COLS] [ROWS] [FRAMES]     (default 10000000 200 60 200)
 */
#include <curses.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cuscope/store.h"
#include "cuscope/ui.h"
#include "cuscope/wire.h"

#define US 1000ull
#define MS 1000000ull
#define S  1000000000ull

static FILE *report;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * S + (uint64_t)ts.tv_nsec;
}

static void feed(struct store *st, uint32_t type, const void *p, uint32_t len)
{
	const char *cause = NULL;
	if (store_feed(st, 0, type, p, len, &cause) != 0) {
		fprintf(stderr, "ui_bench: store_feed: %s\n", cause ? cause : "?");
		exit(1);
	}
}

static void string(struct store *st, uint32_t id, const char *text)
{
	unsigned char buf[512];
	struct wire_string s = {id, (uint32_t)strlen(text)};
	memcpy(buf, &s, sizeof s);
	memcpy(buf + sizeof s, text, s.length);
	feed(st, WIRE_FRAME_STRING, buf, (uint32_t)(sizeof s + s.length));
}

#define BATCH 4096

/* N events over `span` ns: half NVTX push/pop (step > fwd/bwd on 4 threads), half GPU ops. */
static void build(struct store *st, uint64_t n, uint64_t t0, uint64_t span)
{
	unsigned char hb[sizeof(struct wire_hello) + 8];
	struct wire_hello h;
	memset(&h, 0, sizeof h);
	memcpy(h.magic, WIRE_MAGIC, 8);
	h.version = WIRE_VERSION;
	h.hello_size = sizeof h;
	h.pid = 4242;
	h.ppid = 1;
	h.start_mono_ns = t0;
	h.features = WIRE_FEATURE_CUPTI;
	strcpy(h.host, "bench");
	h.cmdline_len = 6;
	memcpy(hb, &h, sizeof h);
	memcpy(hb + sizeof h, "train\0", 6);
	feed(st, WIRE_FRAME_HELLO, hb, sizeof h + 6);
	string(st, 1, "step");
	string(st, 2, "forward");
	string(st, 3, "backward");
	string(st, 4, "_Z10gemm_kernelPfS_S_iii");
	string(st, 5, "_Z11elementwisePfi");
	string(st, 6, "cudaLaunchKernel");

	/* NVTX: per thread, steps of 6 events (push step, push fwd, pop, push bwd, pop, pop). */
	uint64_t nvtx_events = n / 2, gpu_events = n - nvtx_events;
	uint64_t per_thread = nvtx_events / 4 / 6;
	uint64_t step_ns = per_thread ? span / per_thread : span;
	struct wire_event *ev = calloc(BATCH, sizeof *ev);
	for (uint32_t th = 0; th < 4; th++) {
		size_t k = 0;
		for (uint64_t i = 0; i < per_thread; i++) {
			uint64_t s = t0 + i * step_ns + th * 7;
			uint64_t q = step_ns / 8;
			struct wire_event six[6] = {
			    {s, 0, 100 + th, 1, 0, WIRE_EV_NVTX_PUSH, 0},
			    {s + q, 0, 100 + th, 2, 0, WIRE_EV_NVTX_PUSH, 0},
			    {s + 3 * q, 0, 100 + th, 0, 0, WIRE_EV_NVTX_POP, 0},
			    {s + 4 * q, 0, 100 + th, 3, 0, WIRE_EV_NVTX_PUSH, 0},
			    {s + 6 * q, 0, 100 + th, 0, 0, WIRE_EV_NVTX_POP, 0},
			    {s + 7 * q, 0, 100 + th, 0, 0, WIRE_EV_NVTX_POP, 0},
			};
			for (int j = 0; j < 6; j++) {
				ev[k++] = six[j];
				if (k == BATCH) {
					feed(st, WIRE_FRAME_EVENTS, ev, (uint32_t)(k * sizeof *ev));
					k = 0;
				}
			}
		}
		if (k)
			feed(st, WIRE_FRAME_EVENTS, ev, (uint32_t)(k * sizeof *ev));
	}
	free(ev);

	/* GPU: two streams; kernels back to back with a planted 50 ms idle gap every second. */
	struct wire_gpu_event *g = calloc(BATCH, sizeof *g);
	uint64_t per_stream = gpu_events / 2;
	uint64_t op_ns = per_stream ? span / per_stream : span;
	for (uint32_t stream = 0; stream < 2; stream++) {
		size_t k = 0;
		for (uint64_t i = 0; i < per_stream; i++) {
			uint64_t s = t0 + i * op_ns;
			if ((s - t0) % S < 50 * MS)
				continue; /* the gap */
			struct wire_gpu_event *e = &g[k++];
			memset(e, 0, sizeof *e);
			e->start_ns = s;
			e->end_ns = s + op_ns * 3 / 4;
			e->stream = 7 + stream * 6;
			e->context = 1;
			e->kind = stream == 1 && i % 10 == 0 ? WIRE_GPU_MEMCPY : WIRE_GPU_KERNEL;
			e->subkind = e->kind == WIRE_GPU_MEMCPY ? 1 : 0;
			e->bytes = 1 << 20;
			e->name_id = i % 3 ? 4 : 5;
			e->grid[0] = 128;
			e->block[0] = 256;
			if (k == BATCH) {
				feed(st, WIRE_FRAME_GPU, g, (uint32_t)(k * sizeof *g));
				k = 0;
			}
		}
		if (k)
			feed(st, WIRE_FRAME_GPU, g, (uint32_t)(k * sizeof *g));
	}
	free(g);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static off_t out_size(FILE *out)
{
	struct stat sb;
	fflush(out);
	return fstat(fileno(out), &sb) == 0 ? sb.st_size : 0;
}

/* Prints p50/p99 of frame times and bytes. */
static void summarize(const char *what, uint64_t *t, off_t *bytes, int n)
{
	qsort(t, (size_t)n, sizeof *t, cmp_u64);
	uint64_t b[4096];
	for (int i = 0; i < n; i++)
		b[i] = (uint64_t)bytes[i];
	qsort(b, (size_t)n, sizeof *b, cmp_u64);
	fprintf(report,
	        "%-34s frame p50 %7.2f ms  p99 %7.2f ms  max %7.2f ms   bytes/frame p50 %6llu  p99 %6llu  "
	        "max %6llu\n",
	        what, (double)t[n / 2] / 1e6, (double)t[(n * 99) / 100] / 1e6, (double)t[n - 1] / 1e6,
	        (unsigned long long)b[n / 2], (unsigned long long)b[(n * 99) / 100],
	        (unsigned long long)b[n - 1]);
}

int main(int argc, char **argv)
{
	uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 10000000ull;
	int cols = argc > 2 ? atoi(argv[2]) : 200, rows = argc > 3 ? atoi(argv[3]) : 60;
	int frames = argc > 4 ? atoi(argv[4]) : 200;
	if (frames > 4096)
		frames = 4096;
	report = fdopen(dup(STDOUT_FILENO), "w");
	setvbuf(report, NULL, _IOLBF, 0);

	uint64_t t0 = 1000 * S, span = 120 * S; /* two minutes of capture */
	struct store *st = store_new();
	uint64_t b0 = now_ns();
	build(st, n, t0, span);
	uint64_t b1 = now_ns();
	uint64_t events = store_event_count(st);
	fprintf(
	    report,
	    "store: %llu events (%llu GPU) over %.0f s, built in %.1f s (%.2f M ev/s through store_feed); "
	    "store_memory_bytes %.1f MiB = %.1f B/event\n",
	    (unsigned long long)events, (unsigned long long)store_gpu_event_count(st), (double)span / 1e9,
	    (double)(b1 - b0) / 1e9, (double)events / ((double)(b1 - b0) / 1e3),
	    (double)store_memory_bytes(st) / (1 << 20), (double)store_memory_bytes(st) / (double)events);

	/* The UI draws into a file: its growth is what a terminal would receive. */
	char path[] = "/tmp/cuscope-ui-bench-XXXXXX";
	int fd = mkstemp(path);
	FILE *out = fdopen(fd, "w+");
	FILE *in = fopen("/dev/null", "r");
	unlink(path);
	setenv("TERM", "xterm-256color", 1);
	char buf[16];
	snprintf(buf, sizeof buf, "%d", cols);
	setenv("COLUMNS", buf, 1);
	snprintf(buf, sizeof buf, "%d", rows);
	setenv("LINES", buf, 1);
	unsetenv("NO_COLOR");
	/* ui_draw re-reads the size from stdout's terminal: keep stdout off any terminal. */
	int devnull = open("/dev/null", O_WRONLY);
	dup2(devnull, STDOUT_FILENO);
	struct ui_options opts = {.window_s = 10.0, .no_mouse = 1};
	const char *cause = NULL;
	struct ui *ui = ui_new_on(st, &opts, out, in, &cause);
	if (!ui) {
		fprintf(stderr, "ui_bench: %s\n", cause ? cause : "no ui");
		return 1;
	}
	uint64_t *t = calloc((size_t)frames, sizeof *t);
	off_t *bytes = calloc((size_t)frames, sizeof *bytes);
	struct ui_status status = {.command = "train", .pid = 4242, .live = 1, .target_alive = 1};

	/* 1. Live, following now, 33 ms of new time per frame over the last minute. */
	uint64_t now = t0 + span / 2;
	status.now_ns = now;
	uint64_t f0 = now_ns();
	ui_draw(ui, &status, 1);
	fprintf(report,
	        "first frame: %.1f ms (the NVTX panel reads every completed range once; later frames only "
	        "new ones)\n",
	        (double)(now_ns() - f0) / 1e6);
	for (int i = 0; i < frames; i++) {
		status.now_ns = now + (uint64_t)i * 33 * MS;
		off_t before = out_size(out);
		uint64_t a = now_ns();
		ui_draw(ui, &status, 0);
		t[i] = now_ns() - a;
		bytes[i] = out_size(out) - before;
	}
	char what[128];
	snprintf(what, sizeof what, "live scroll, 10 s window, %dx%d", cols, rows);
	summarize(what, t, bytes, frames);

	/* 2. Full repaint: the screen cleared and everything sent again. */
	int reps = frames < 50 ? frames : 50;
	for (int i = 0; i < reps; i++) {
		off_t before = out_size(out);
		uint64_t a = now_ns();
		clearok(curscr, TRUE);
		ui_draw(ui, &status, 1);
		t[i] = now_ns() - a;
		bytes[i] = out_size(out) - before;
	}
	summarize("full repaint (clear + redraw)", t, bytes, reps);

	/* 3. Static forced frames at several zooms (capture view): the whole 2 min, 10 s, 1 ms. */
	status.live = 0;
	status.now_ns = 0;
	static const uint64_t spans[] = {0, 10 * S, 1 * MS};
	static const char *const names[] = {"whole capture (2 min, all events)", "10 s window",
	                                    "1 ms window"};
	for (size_t z = 0; z < 3; z++) {
		ui_view_set(ui, z == 0 ? t0 : t0 + span / 3, spans[z] ? spans[z] : span + span / 50);
		for (int i = 0; i < reps; i++) {
			off_t before = out_size(out);
			uint64_t a = now_ns();
			ui_draw(ui, &status, 1);
			t[i] = now_ns() - a;
			bytes[i] = out_size(out) - before;
		}
		summarize(names[z], t, bytes, reps);
	}
	ui_free(ui);
	store_free(st);
	free(t);
	free(bytes);
	return 0;
}
