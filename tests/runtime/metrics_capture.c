/*
 * Writes a capture with GPU hardware metric samples through the project's capture writer, with
 * known truth (t290_gpu_metrics):
 *   metrics_capture OUT [REALTIME_SHIFT_NS]
 * Process 5151 ("gemm", start T0 = 1000 s) describes device 0, "NVIDIA H200", UUID U1, runs one
 * kernel "gemm_bf16" on its stream 7 over [T0 + 1 s, T0 + 1.5 s) (so the UI has its GPU), and sends
 * 100 PM samples of 10 ms from T0 + 1 s (sample i covers [T0 + 1 s + i*10 ms, + 10 ms)) of three
 * metrics, in frames of 7 samples:
 *   sm__cycles_active.avg                   1000 + i          (min 1000, median 1049, max 1099)
 *   TPC.TriageCompute.sm__pipe_tensor_...   25 * (i % 4)      (min 0, median 25, max 75, mean 37.5)
 *   dram__bytes_read.sum                    1e6 * (i + 1)     (min 1e6, median 5e7, max 1e8)
 * and samples that are no measurement (ignored): a NaN value, an end before its start, metric id 0,
 * a metric id never named. Process 5152 ("other") sends three NVML samples of UUID U2,
 * "nvml:gpu_util" = 10, 90, 20 at T0 + 1 s, 1.1 s, 1.2 s (100 ms each), and no device.
 * REALTIME_SHIFT_NS moves both processes' CLOCK_REALTIME anchors (another host's wall clock), so
 * that several captures read together place this one's samples that much later; its GPUs are then
 * others (the UUIDs' last byte + 1: another host's GPUs).
 */
#include "cuscope/capture.h"
#include "cuscope/wire.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MS 1000000ull
#define S  1000000000ull
#define T0 (1000 * S)

static struct capture_writer *w;
static long long realtime_shift;

static void die(const char *what)
{
	fprintf(stderr, "metrics_capture: %s failed\n", what);
	exit(1);
}

static void frame(uint32_t src, uint32_t type, const void *p, uint32_t len)
{
	if (capture_writer_frame(w, src, type, p, len) != 0)
		die("capture_writer_frame");
}

static void hello(uint32_t src, int pid, const char *argv0)
{
	unsigned char buf[sizeof(struct wire_hello) + 64];
	struct wire_hello h;
	memset(&h, 0, sizeof h);
	memcpy(h.magic, WIRE_MAGIC, 8);
	h.version = WIRE_VERSION;
	h.hello_size = sizeof h;
	h.pid = pid;
	h.ppid = 1;
	h.start_mono_ns = T0;
	h.anchor_mono_ns = T0;
	h.anchor_real_ns = 1700000000ull * S + (uint64_t)realtime_shift;
	snprintf(h.host, sizeof h.host, "testhost");
	h.cmdline_len = (uint32_t)strlen(argv0) + 1;
	memcpy(buf, &h, sizeof h);
	memcpy(buf + sizeof h, argv0, h.cmdline_len);
	frame(src, WIRE_FRAME_HELLO, buf, (uint32_t)(sizeof h + h.cmdline_len));
}

static void string(uint32_t src, uint32_t id, const char *text)
{
	unsigned char buf[sizeof(struct wire_string) + 256];
	struct wire_string s = {id, (uint32_t)strlen(text)};
	memcpy(buf, &s, sizeof s);
	memcpy(buf + sizeof s, text, s.length);
	frame(src, WIRE_FRAME_STRING, buf, (uint32_t)(sizeof s + s.length));
}

static struct wire_gpu_metric sample(const uint8_t *uuid, uint32_t id, uint64_t start, uint64_t end, double v,
                                     uint16_t source)
{
	struct wire_gpu_metric m;
	memset(&m, 0, sizeof m);
	m.start_ns = start;
	m.end_ns = end;
	m.value = v;
	memcpy(m.uuid, uuid, 16);
	m.metric_id = id;
	m.device = 0;
	m.source = source;
	return m;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		die("usage: metrics_capture OUT [REALTIME_SHIFT_NS]; argument check");
	realtime_shift = argc > 2 ? strtoll(argv[2], NULL, 10) : 0;
	int err = 0;
	const char *cause = NULL;
	w = capture_writer_open(argv[1], &err, &cause);
	if (!w)
		die("capture_writer_open");
	uint8_t u1[16] = {0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88,
	                  0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff, 0x01};
	uint8_t u2[16] = {2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2};
	u1[15] += realtime_shift != 0;
	u2[15] += realtime_shift != 0;
	hello(0, 5151, "gemm");
	string(0, 1, "NVIDIA H200");
	struct wire_gpu_device dev;
	memset(&dev, 0, sizeof dev);
	dev.device = 0;
	dev.name_id = 1;
	memcpy(dev.uuid, u1, 16);
	dev.sm_count = 132;
	dev.cc_major = 9;
	frame(0, WIRE_FRAME_GPU_DEVICE, &dev, sizeof dev);
	string(0, 5, "gemm_bf16");
	struct wire_gpu_event ev[2];
	memset(ev, 0, sizeof ev);
	ev[0].kind = WIRE_GPU_CONTEXT;
	ev[0].start_ns = ev[0].end_ns = T0 + S / 2;
	ev[0].context = 1;
	ev[0].stream = 1;
	ev[1].kind = WIRE_GPU_KERNEL;
	ev[1].start_ns = T0 + S;
	ev[1].end_ns = T0 + S + S / 2;
	ev[1].context = 1;
	ev[1].stream = 7;
	ev[1].name_id = 5;
	ev[1].grid[0] = ev[1].block[0] = 1;
	frame(0, WIRE_FRAME_GPU, ev, sizeof ev);
	string(0, 2, "sm__cycles_active.avg");
	string(0, 3,
	       "TPC.TriageCompute.sm__pipe_tensor_cycles_active_realtime.avg.pct_of_peak_sustained_elapsed");
	string(0, 4, "dram__bytes_read.sum");
	struct wire_gpu_metric batch[3 * 7];
	size_t n = 0;
	for (uint64_t i = 0; i < 100; i++) {
		uint64_t s = T0 + S + i * 10 * MS, e = s + 10 * MS;
		batch[n++] = sample(u1, 2, s, e, 1000.0 + (double)i, WIRE_GPU_METRIC_PM);
		batch[n++] = sample(u1, 3, s, e, 25.0 * (double)(i % 4), WIRE_GPU_METRIC_PM);
		batch[n++] = sample(u1, 4, s, e, 1e6 * (double)(i + 1), WIRE_GPU_METRIC_PM);
		if (n == sizeof batch / sizeof batch[0] || i == 99) {
			frame(0, WIRE_FRAME_GPU_METRICS, batch, (uint32_t)(n * sizeof batch[0]));
			n = 0;
		}
	}
	struct wire_gpu_metric junk[4] = {
	    sample(u1, 2, T0 + 3 * S, T0 + 3 * S + MS, NAN, WIRE_GPU_METRIC_PM),
	    sample(u1, 2, T0 + 3 * S, T0 + 2 * S, 5.0, WIRE_GPU_METRIC_PM),
	    sample(u1, 0, T0 + 3 * S, T0 + 3 * S + MS, 5.0, WIRE_GPU_METRIC_PM),
	    sample(u1, 77, T0 + 3 * S, T0 + 3 * S + MS, 5.0, WIRE_GPU_METRIC_PM),
	};
	frame(0, WIRE_FRAME_GPU_METRICS, junk, sizeof junk);
	/* Its end is the last sample's: the UI's "last second" (its GPU header) holds the samples. */
	struct wire_bye b = {T0 + 2 * S, 0, 0};
	frame(0, WIRE_FRAME_BYE, &b, sizeof b);

	hello(1, 5152, "other");
	string(1, 1, "nvml:gpu_util");
	static const double util[3] = {10, 90, 20};
	for (int i = 0; i < 3; i++) {
		struct wire_gpu_metric m =
		    sample(u2, 1, T0 + S + (uint64_t)i * 100 * MS, T0 + S + (uint64_t)(i + 1) * 100 * MS,
		           util[i], WIRE_GPU_METRIC_NVML);
		frame(1, WIRE_FRAME_GPU_METRICS, &m, sizeof m);
	}
	struct wire_bye b2 = {T0 + 2 * S, 0, 0};
	frame(1, WIRE_FRAME_BYE, &b2, sizeof b2);
	if (capture_writer_close(w) != 0)
		die("capture_writer_close");
	return 0;
}
