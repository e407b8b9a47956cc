/*
 * GPU hardware metrics in the store and the view: series per (GPU UUID, metric) across processes,
 * samples that are no measurement left out, late samples placed in order, range queries, the
 * memory window; labels, units, rates, per-cell means and the header summary; the counter lanes
 * under each GPU device header (by UUID) and their folding.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cuscope/gpumetric.h"
#include "cuscope/layout.h"
#include "cuscope/store.h"
#include "cuscope/wire.h"

#define MS 1000000ull
#define S  1000000000ull
#define T0 (1000 * S)

static const uint8_t U1[16] = {0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88,
                               0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff, 0x01};
static const char U1_TEXT[] = "GPU-11223344-5566-7788-99aa-bbccddeeff01";
static const uint8_t U2[16] = {2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2};

static void feed(struct store *st, int source, uint32_t type, const void *payload, uint32_t length)
{
	const char *cause = NULL;
	if (store_feed(st, source, type, payload, length, &cause))
		fail_msg("store_feed(%u): %s", type, cause ? cause : "?");
}

static void hello(struct store *st, int source, int pid)
{
	unsigned char buf[sizeof(struct wire_hello) + 5];
	struct wire_hello h;
	memset(&h, 0, sizeof h);
	memcpy(h.magic, WIRE_MAGIC, 8);
	h.version = WIRE_VERSION;
	h.hello_size = sizeof h;
	h.pid = pid;
	h.ppid = 1;
	h.start_mono_ns = T0;
	h.cmdline_len = 5;
	memcpy(buf, &h, sizeof h);
	memcpy(buf + sizeof h, "prog\0", 5);
	feed(st, source, WIRE_FRAME_HELLO, buf, sizeof h + 5);
}

static void string(struct store *st, int source, uint32_t id, const char *text)
{
	unsigned char buf[sizeof(struct wire_string) + 256];
	struct wire_string s = {id, (uint32_t)strlen(text)};
	memcpy(buf, &s, sizeof s);
	memcpy(buf + sizeof s, text, s.length);
	feed(st, source, WIRE_FRAME_STRING, buf, (uint32_t)(sizeof s + s.length));
}

static void sample(struct store *st, int source, const uint8_t *uuid, uint32_t id, uint64_t start,
                   uint64_t end, double v)
{
	struct wire_gpu_metric m;
	memset(&m, 0, sizeof m);
	m.start_ns = start;
	m.end_ns = end;
	m.value = v;
	memcpy(m.uuid, uuid, 16);
	m.metric_id = id;
	m.source = WIRE_GPU_METRIC_PM;
	feed(st, source, WIRE_FRAME_GPU_METRICS, &m, sizeof m);
}

/* A device described by the process and one kernel on its stream 7 (so it has a GPU header). */
static void device_with_kernel(struct store *st, int source, const uint8_t *uuid, uint32_t name_id)
{
	struct wire_gpu_device dev;
	memset(&dev, 0, sizeof dev);
	dev.name_id = name_id;
	memcpy(dev.uuid, uuid, 16);
	feed(st, source, WIRE_FRAME_GPU_DEVICE, &dev, sizeof dev);
	struct wire_gpu_event ev[2];
	memset(ev, 0, sizeof ev);
	ev[0].kind = WIRE_GPU_CONTEXT;
	ev[0].start_ns = ev[0].end_ns = T0;
	ev[0].context = 1;
	ev[0].stream = 1;
	ev[1].kind = WIRE_GPU_KERNEL;
	ev[1].start_ns = T0 + MS;
	ev[1].end_ns = T0 + 2 * MS;
	ev[1].context = 1;
	ev[1].stream = 7;
	ev[1].name_id = name_id;
	feed(st, source, WIRE_FRAME_GPU, ev, sizeof ev);
}

static void test_series_and_queries(void **state)
{
	(void)state;
	struct store *st = store_new();
	hello(st, 0, 100);
	hello(st, 1, 200);
	string(st, 0, 1, "sm__cycles_active.avg");
	string(st, 1, 7, "sm__cycles_active.avg"); /* the same name under another process's id */
	string(st, 0, 2, "dram__bytes_read.sum");
	/* In order, then one late sample placed before the others. */
	sample(st, 0, U1, 1, T0 + 10 * MS, T0 + 20 * MS, 2);
	sample(st, 0, U1, 1, T0 + 20 * MS, T0 + 30 * MS, 3);
	sample(st, 1, U1, 7, T0, T0 + 10 * MS, 1);
	sample(st, 0, U2, 1, T0, T0 + 10 * MS, 50);
	sample(st, 0, U1, 2, T0, T0 + 10 * MS, 4e6);
	/* No measurement: NaN, backwards, unnamed, never named, time 0. */
	sample(st, 0, U1, 1, T0 + S, T0 + S + MS, NAN);
	sample(st, 0, U1, 1, T0 + S, T0 + S - MS, 1);
	sample(st, 0, U1, 0, T0 + S, T0 + S + MS, 1);
	sample(st, 0, U1, 99, T0 + S, T0 + S + MS, 1);
	sample(st, 0, U1, 1, 0, MS, 1);
	assert_int_equal(store_gpu_metric_samples(st), 5);
	assert_int_equal(store_gpu_metric_count(st), 3);
	struct store_gpu_metric_info mi;
	store_gpu_metric_get(st, 0, &mi);
	assert_string_equal(mi.uuid, U1_TEXT);
	assert_string_equal(mi.name, "sm__cycles_active.avg");
	assert_string_equal(mi.unit, "cycles");
	assert_int_equal(mi.points, 3);
	assert_int_equal(mi.process, 0);
	const struct store_gpu_metric_point *pt;
	assert_int_equal(store_gpu_metric_query(st, 0, 0, UINT64_MAX, &pt), 3);
	assert_true(pt[0].value == 1 && pt[1].value == 2 && pt[2].value == 3);
	/* Overlap: [T0+15ms, T0+20ms) touches only the second; an end is exclusive. */
	assert_int_equal(store_gpu_metric_query(st, 0, T0 + 15 * MS, T0 + 20 * MS, &pt), 1);
	assert_true(pt[0].value == 2);
	assert_int_equal(store_gpu_metric_query(st, 0, T0 + 10 * MS, T0 + 20 * MS, &pt), 1);
	assert_int_equal(store_gpu_metric_query(st, 0, T0 + 30 * MS, T0 + S, &pt), 0);
	store_gpu_metric_get(st, 1, &mi);
	assert_string_equal(mi.uuid, "GPU-02020202-0202-0202-0202-020202020202");
	store_gpu_metric_get(st, 2, &mi);
	assert_string_equal(mi.unit, "bytes");
	size_t series[4];
	assert_int_equal(gpumetric_series_of(st, U1_TEXT, series, 4), 2);
	assert_int_equal(series[0], 0);
	assert_int_equal(series[1], 2);
	/* The memory window drops what ended before it (a sample ending at it stays). */
	assert_int_equal(store_evict_before(st, T0 + 20 * MS), 3);
	assert_int_equal(store_gpu_metric_query(st, 0, 0, UINT64_MAX, &pt), 2);
	assert_true(pt[0].value == 2 && pt[1].value == 3);
	assert_int_equal(store_gpu_metric_query(st, 1, 0, UINT64_MAX, &pt), 0);
	store_free(st);
}

/* Samples in reverse order (a crafted capture): the late ones beyond the window are dropped and
 * counted, those kept stay sorted, and it takes linear time. */
static void test_reverse_order_bounded(void **state)
{
	(void)state;
	struct store *st = store_new();
	hello(st, 0, 100);
	string(st, 0, 1, "sm__cycles_active.avg");
	enum { N = 200000 };
	struct wire_gpu_metric *m = calloc(N, sizeof *m);
	assert_non_null(m);
	for (size_t i = 0; i < N; i++) {
		m[i].start_ns = T0 + (uint64_t)(N - i) * MS;
		m[i].end_ns = m[i].start_ns + MS;
		m[i].value = (double)i;
		memcpy(m[i].uuid, U1, 16);
		m[i].metric_id = 1;
	}
	for (size_t off = 0; off < N; off += 1000)
		feed(st, 0, WIRE_FRAME_GPU_METRICS, m + off, 1000 * sizeof *m);
	free(m);
	struct store_gpu_metric_info mi;
	store_gpu_metric_get(st, 0, &mi);
	assert_int_equal(mi.points + mi.dropped, N);
	assert_true(mi.points <= 257);
	const struct store_gpu_metric_point *pt;
	size_t n = store_gpu_metric_query(st, 0, 0, UINT64_MAX, &pt);
	for (size_t i = 1; i < n; i++)
		assert_true(pt[i - 1].start_ns <= pt[i].start_ns);
	store_free(st);
}

static void test_labels_and_text(void **state)
{
	(void)state;
	char b[64];
	assert_string_equal(gpumetric_label("sm__cycles_active.avg", b, sizeof b), "sm");
	assert_string_equal(
	    gpumetric_label(
	        "TPC.TriageCompute.sm__pipe_tensor_cycles_active_realtime.avg.pct_of_peak_sustained_elapsed",
	        b, sizeof b),
	    "tensor rt");
	assert_string_equal(
	    gpumetric_label("sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed", b, sizeof b),
	    "tensor");
	assert_string_equal(gpumetric_label("dram__bytes_write.sum", b, sizeof b), "dram wr");
	assert_string_equal(gpumetric_label("nvltx__bytes.sum", b, sizeof b), "nvl tx");
	assert_string_equal(gpumetric_label("nvml:gpm_pcie_rx_mib_s", b, sizeof b), "pcie rx");
	assert_string_equal(gpumetric_label("nvml:gpu_util", b, sizeof b), "util");
	assert_string_equal(gpumetric_label("lts__t_sectors.sum", b, sizeof b), "lts__t_sectors");
	assert_string_equal(gpumetric_text("percent", 71.4, 10 * MS, b, sizeof b), "71%");
	/* 12 MB in 10 ms is 1.2 GB/s; 1099 cycles in 10 ms 110 kcyc/s; NVML MiB/s as bytes/s. */
	assert_string_equal(gpumetric_text("bytes", 12e6, 10 * MS, b, sizeof b), "1.2 GB/s");
	assert_string_equal(gpumetric_text("cycles", 1099, 10 * MS, b, sizeof b), "110 kcyc/s");
	assert_string_equal(gpumetric_text("MiB/s", 1000, 0, b, sizeof b), "1.0 GB/s");
	assert_string_equal(gpumetric_text("", 3.25, 0, b, sizeof b), "3.25");
	assert_string_equal(store_gpu_metric_unit("nvml:gpm_sm_util"), "percent");
	assert_string_equal(store_gpu_metric_unit("nvml:gpm_nvlink_tx_mib_s"), "MiB/s");
	assert_string_equal(
	    store_gpu_metric_unit("sm__warps_active_realtime.avg.pct_of_peak_sustained_elapsed"), "percent");
}

static void test_cells_and_summary(void **state)
{
	(void)state;
	struct store *st = store_new();
	hello(st, 0, 100);
	string(st, 0, 1, "sm__warps_active_realtime.avg.pct_of_peak_sustained_elapsed");
	string(st, 0, 2, "dram__bytes_read.sum");
	string(st, 0, 3, "gr__cycles_active.avg");
	/* 10 ms samples: warps 20 % then 60 %, dram 1 MB then 3 MB. */
	sample(st, 0, U1, 1, T0, T0 + 10 * MS, 20);
	sample(st, 0, U1, 1, T0 + 10 * MS, T0 + 20 * MS, 60);
	sample(st, 0, U1, 2, T0, T0 + 10 * MS, 1e6);
	sample(st, 0, U1, 2, T0 + 10 * MS, T0 + 20 * MS, 3e6);
	sample(st, 0, U1, 3, T0, T0 + 20 * MS, 5);
	double cells[4];
	uint8_t have[4];
	/* Four 10 ms cells over [T0 - 10 ms, T0 + 30 ms): none, 20, 60, none. */
	double full = gpumetric_cells(st, 0, T0 - 10 * MS, T0 + 30 * MS, 4, cells, have);
	assert_true(!have[0] && have[1] && have[2] && !have[3]);
	assert_true(fabs(cells[1] - 20) < 1e-9 && fabs(cells[2] - 60) < 1e-9);
	assert_true(fabs(full - 60) < 1e-9);
	/* One cell over both samples: the time-weighted mean; bytes as a rate (2 MB per 10 ms). */
	double rate;
	assert_int_equal(gpumetric_mean(st, 0, T0 + 5 * MS, T0 + 20 * MS, &rate), 0);
	assert_true(fabs(rate - (20 * 5 + 60 * 10) / 15.0) < 1e-9);
	assert_int_equal(gpumetric_mean(st, 1, T0, T0 + 20 * MS, &rate), 0);
	assert_true(fabs(rate - 2e8) < 1e-3);
	assert_int_equal(gpumetric_mean(st, 1, T0 + S, T0 + 2 * S, &rate), -ENOENT);
	char buf[128];
	/* Cycle counts are left out of the summary; the rest in store order. */
	assert_string_equal(gpumetric_summary(st, U1_TEXT, T0, T0 + 20 * MS, buf, sizeof buf),
	                    "warps 40%  dram rd 200 MB/s");
	assert_string_equal(gpumetric_summary(st, U1_TEXT, T0, T0 + 20 * MS, buf, 12), "warps 40%");
	assert_string_equal(gpumetric_summary(st, "GPU-none", T0, T0 + 20 * MS, buf, sizeof buf), "");
	/* The details of a cell over both dram samples: mean rate, lowest and highest sample. */
	char lines[8][256];
	int n = gpumetric_details(st, 1, T0, T0 + 20 * MS, lines, 8);
	assert_int_equal(n, 4);
	assert_string_equal(lines[0], "GPU metric   dram__bytes_read.sum (dram rd)");
	assert_non_null(strstr(lines[1], U1_TEXT));
	assert_non_null(strstr(lines[1], "sampled by pid 100 with CUPTI PM sampling"));
	assert_string_equal(lines[2], "this cell    mean 200 MB/s over 2 samples");
	assert_string_equal(lines[3], "             lowest 100 MB/s, highest 300 MB/s");
	assert_int_equal(gpumetric_details(st, 1, T0 + S, T0 + 2 * S, lines, 8), 3);
	assert_string_equal(lines[2], "this cell    no sample");
	store_free(st);
}

/* Counter lanes follow the GPU by UUID: under every process's header of that GPU, hidden when folded. */
static void test_layout_rows(void **state)
{
	(void)state;
	struct store *st = store_new();
	hello(st, 0, 100);
	hello(st, 1, 200);
	string(st, 0, 1, "NVIDIA H200");
	string(st, 1, 1, "NVIDIA H200");
	string(st, 0, 2, "sm__cycles_active.avg");
	string(st, 0, 3, "dram__bytes_read.sum");
	device_with_kernel(st, 0, U1, 1);
	device_with_kernel(st, 1, U1, 1);
	sample(st, 0, U1, 2, T0, T0 + 10 * MS, 1);
	sample(st, 0, U1, 3, T0, T0 + 10 * MS, 1);
	sample(st, 0, U2, 2, T0, T0 + 10 * MS, 1); /* a GPU no process shows */
	struct layout l;
	layout_init(&l);
	layout_build(&l, st);
	size_t metric_rows[2] = {0, 0}, device_rows = 0;
	for (size_t i = 0; i < l.count; i++) {
		const struct layout_row *r = &l.rows[i];
		if (r->kind == LAYOUT_ROW_GPU_DEVICE) {
			device_rows++;
			/* Right under the header, before the stream rows: series 0 then 1. */
			assert_int_equal(l.rows[i + 1].kind, LAYOUT_ROW_GPU_METRIC);
			assert_int_equal(l.rows[i + 1].row, 0);
			assert_int_equal(l.rows[i + 2].kind, LAYOUT_ROW_GPU_METRIC);
			assert_int_equal(l.rows[i + 2].row, 1);
			assert_int_equal(l.rows[i + 3].kind, LAYOUT_ROW_GPU_STREAM);
		}
		if (r->kind == LAYOUT_ROW_GPU_METRIC)
			metric_rows[r->process]++;
	}
	assert_int_equal(device_rows, 2);
	assert_int_equal(metric_rows[0], 2);
	assert_int_equal(metric_rows[1], 2);
	/* Folding process 100's GPU hides its lanes, not the other's. */
	for (size_t i = 0; i < l.count; i++)
		if (l.rows[i].kind == LAYOUT_ROW_GPU_DEVICE && l.rows[i].pid == 100) {
			assert_int_equal(layout_toggle_fold(&l, i), 0);
			break;
		}
	layout_build(&l, st);
	size_t left = 0;
	for (size_t i = 0; i < l.count; i++)
		if (l.rows[i].kind == LAYOUT_ROW_GPU_METRIC) {
			assert_int_equal(l.rows[i].pid, 200);
			left++;
		}
	assert_int_equal(left, 2);
	layout_fini(&l);
	store_free(st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_series_and_queries), cmocka_unit_test(test_reverse_order_bounded),
	    cmocka_unit_test(test_labels_and_text),    cmocka_unit_test(test_cells_and_summary),
	    cmocka_unit_test(test_layout_rows),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
