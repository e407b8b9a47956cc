/*
 * Perfetto protobuf export (a Trace of TracePackets: the native input of ui.perfetto.dev and
 * trace_processor) with the tracks, names, args, flows and counters of the Chrome JSON export (export.c):
 *   process (pid)       track with a ProcessDescriptor, process_name = command line
 *   OS thread (tid)     track with a ThreadDescriptor: NVTX push/pop ranges, open ranges (a begin, no end),
 *                       marks (instants), CUDA API calls and host syncs
 *   NVTX async row      child track of the process: "NVTX async", "NVTX async #2", ...
 *   GPU stream row      child track of the process named like the UI label, "GPU0 s7": kernels,
 *                       copies, memsets
 *   inferred steps      child track of the process, "step (inferred)": "step" slices in category
 *                       "inferred" (steps.h), for a process without repeating NVTX ranges
 *   thread counter      counter track under its thread, named by the event ("task-clock"): the newest
 *                       value
 *   GPU hardware metric counter track under the sampling process, "GPU0 METRIC": a double value per
 *                       sample at its start, the last one again at the last sample's end
 * Flows: the launching API call's slice carries flow id (process index << 32 | correlation id) and
 * the GPU op's slice terminates it (flow ids are global within a trace), where the JSON draws an arrow.
 *
 * Every track is a packet sequence of its own (trusted_packet_sequence_id) written in time order, so a
 * reader never reorders a track's begin and end events. A thread's rows are merged by start time into
 * properly nested begin/end pairs; a slice that would end after its parent (never for push/pop ranges)
 * is cut at the parent's end. The first packet of a sequence clears the incremental state and sets the
 * defaults (CLOCK_MONOTONIC timestamps, the track). Names, categories and argument keys and string values
 * are interned per sequence; when the table passes a bound it is cleared with a new
 * SEQ_INCREMENTAL_STATE_CLEARED packet, so the writer's memory stays bounded (by the largest packet, the
 * table and a thread's nesting) whatever the capture holds. Timestamps are CLOCK_MONOTONIC ns; a
 * ClockSnapshot first makes MONOTONIC the trace clock and pairs it with REALTIME (the first process's
 * clock anchor). Field numbers are those of the official perfetto/protos/perfetto/trace protos.
 */
#include "pb.h"
#include "export_perfetto.h"

#include "cuscope/export.h"
#include "cuscope/safefs.h"
#include "cuscope/steps.h"
#include "cuscope/store.h"
#include "cuscope/wire.h"
#include "cuscope/xalloc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

/* ---- merging a track's rows into nested begin/end events ---- */

enum src_kind { SRC_RANGE, SRC_OPEN, SRC_GPU, SRC_MARK };

/* One row of a track: events sorted by start, each starting with start_ns, end_ns. */
struct src {
	const uint8_t *v;
	size_t n, i, stride;
	enum src_kind kind;
	int style; /* ranges and opens */
};

struct merge {
	struct src *src;
	size_t n, cap;
	uint64_t *ends; /* open slices, innermost last (ends never increase towards the top) */
	size_t depth, ends_cap;
	struct store_range *opens; /* copies of open ranges, sorted by start */
	size_t open_n, open_cap;
};

static void merge_add(struct merge *m, const void *v, size_t n, size_t stride, enum src_kind kind, int style)
{
	if (!n)
		return;
	xgrow((void **)&m->src, &m->cap, m->n + 1, sizeof *m->src);
	m->src[m->n++] = (struct src){v, n, 0, stride, kind, style};
}

static uint64_t src_start(const struct src *s)
{
	uint64_t t;
	memcpy(&t, s->v + s->i * s->stride, sizeof t);
	return t;
}

static uint64_t src_end(const struct src *s)
{
	uint64_t t;
	if (s->kind == SRC_OPEN)
		return UINT64_MAX;
	memcpy(&t, s->v + s->i * s->stride + sizeof t, sizeof t);
	return s->kind == SRC_MARK ? src_start(s) : t;
}

static int cmp_range_start(const void *a, const void *b)
{
	const struct store_range *x = a, *y = b;
	return x->start_ns < y->start_ns ? -1 : x->start_ns > y->start_ns;
}

/*
 * Writes the rows added to m (already a sequence of its own) in time order: at each step the row whose
 * next event starts first (the longest on a tie, then the row added first), after the ends of every
 * slice finished by then. Resets m.
 */
static void merge_run(struct pf *x, struct merge *m, size_t lane, const struct store_lane_info *li)
{
	xgrow((void **)&m->ends, &m->ends_cap, m->n + 1, sizeof *m->ends);
	m->depth = 0;
	for (;;) {
		struct src *best = NULL;
		uint64_t bs = 0, be = 0;
		for (size_t i = 0; i < m->n; i++) {
			struct src *s = &m->src[i];
			if (s->i == s->n)
				continue;
			uint64_t st = src_start(s), en = src_end(s);
			if (!best || st < bs || (st == bs && en > be)) {
				best = s;
				bs = st;
				be = en;
			}
		}
		while (m->depth && m->ends[m->depth - 1] != UINT64_MAX &&
		       (!best || m->ends[m->depth - 1] <= bs))
			pf_event_end(x, m->ends[--m->depth]);
		if (!best)
			break;
		const void *item = best->v + best->i * best->stride;
		best->i++;
		switch (best->kind) {
		case SRC_MARK:
			pf_event_nvtx(x, lane, item, STORE_STYLE_MARK, 0);
			continue;
		case SRC_RANGE:
			pf_event_nvtx(x, lane, item, best->style, 0);
			break;
		case SRC_OPEN:
			pf_event_nvtx(x, lane, item, best->style, 1);
			break;
		case SRC_GPU:
			pf_event_gpu(x, li, item);
			break;
		}
		if (m->depth && be > m->ends[m->depth - 1])
			be = m->ends[m->depth - 1]; /* cut at the parent's end: begin/end pairs must nest */
		/* A row holds one slice at a time and open ranges stay: the depth stays within rows + opens.
		 */
		xgrow((void **)&m->ends, &m->ends_cap, m->depth + 1, sizeof *m->ends);
		m->ends[m->depth++] = be;
	}
	m->n = 0;
	m->open_n = 0;
}

/* Sorted copies of a lane's open ranges on `row` (any row when row is SIZE_MAX) that begin before the
 * window's end. */
static void merge_opens(struct pf *x, struct merge *m, size_t l, const struct store_lane_info *li, size_t row,
                        int style)
{
	m->open_n = 0;
	for (size_t i = 0; i < li->open_count; i++) {
		struct store_range r;
		size_t r_row;
		store_lane_open_get(x->st, x->process, l, i, &r, &r_row);
		if (r.start_ns >= x->to || (row != SIZE_MAX && r_row != row))
			continue;
		xgrow((void **)&m->opens, &m->open_cap, m->open_n + 1, sizeof *m->opens);
		m->opens[m->open_n++] = r;
	}
	if (m->open_n > 1)
		qsort(m->opens, m->open_n, sizeof *m->opens, cmp_range_start);
	merge_add(m, m->opens, m->open_n, sizeof *m->opens, SRC_OPEN, style);
}

/* ---- tracks ---- */

/* A child track of the process named label (JSON: a pseudo-thread), ordered by rank; starts its sequence. */
static void pf_child_track(struct pf *x, const char *label, uint64_t rank)
{
	uint64_t uuid = x->next_extra_uuid++;
	pf_sequence(x, uuid);
	pb_reset(&x->frame);
	pb_uint(&x->frame, F_TD_UUID, uuid);
	pb_uint(&x->frame, F_TD_PARENT_UUID, x->process_uuid);
	pb_string(&x->frame, F_TD_NAME, label);
	pb_int(&x->frame, F_TD_SIBLING_ORDER_RANK, (int64_t)rank);
	pf_descriptor_write(x);
}

static void pf_lane(struct pf *x, struct merge *m, size_t l)
{
	struct store_lane_info li;
	store_lane_get(x->st, x->process, l, &li);
	char label[160];
	if (li.kind == STORE_LANE_THREAD) {
		uint64_t uuid = x->lane_uuid0 + l;
		pf_sequence(x, uuid);
		pb_reset(&x->frame);
		pb_uint(&x->frame, F_TD_UUID, uuid);
		size_t t = pb_open(&x->frame, F_TD_THREAD);
		pb_int(&x->frame, F_TH_PID, x->pid);
		pb_int(&x->frame, F_TH_TID, li.tid);
		if (!*li.name)
			snprintf(label, sizeof label, "thread %d", (int)li.tid);
		pb_string(&x->frame, F_TH_THREAD_NAME, *li.name ? li.name : label);
		pb_close(&x->frame, t);
		pf_descriptor_write(x);
		for (size_t row = 0; row < li.row_count; row++) {
			const struct store_range *r;
			size_t n = store_lane_row_query(x->st, x->process, l, row, x->from, x->to, &r);
			merge_add(m, r, n, sizeof *r, SRC_RANGE, STORE_STYLE_PUSHPOP);
		}
		merge_opens(x, m, l, &li, SIZE_MAX, STORE_STYLE_PUSHPOP);
		for (size_t row = 0; row < li.gpu_row_count; row++) {
			const struct store_gpu_op *v;
			size_t n = store_lane_gpu_query(x->st, x->process, l, row, x->from, x->to, &v);
			merge_add(m, v, n, sizeof *v, SRC_GPU, 0);
		}
		const struct store_range *mk;
		size_t n = store_lane_mark_query(x->st, x->process, l, x->from, x->to, &mk);
		merge_add(m, mk, n, sizeof *mk, SRC_MARK, STORE_STYLE_MARK);
		merge_run(x, m, l, &li);
		return;
	}
	if (li.kind == STORE_LANE_NVTX_ASYNC) {
		size_t rows = li.row_count;
		for (size_t i = 0; i < li.open_count; i++) {
			struct store_range r;
			size_t row;
			store_lane_open_get(x->st, x->process, l, i, &r, &row);
			if (row + 1 > rows && row < 4096)
				rows = row + 1;
		}
		for (size_t row = 0; row < rows; row++) {
			if (row == 0)
				snprintf(label, sizeof label, "NVTX async");
			else
				snprintf(label, sizeof label, "NVTX async #%zu", row + 1);
			pf_child_track(x, label, GPU_SORT_BASE / 2 + row);
			if (row < li.row_count) {
				const struct store_range *r;
				size_t n =
				    store_lane_row_query(x->st, x->process, l, row, x->from, x->to, &r);
				merge_add(m, r, n, sizeof *r, SRC_RANGE, STORE_STYLE_STARTEND);
			}
			merge_opens(x, m, l, &li, row, STORE_STYLE_STARTEND);
			merge_run(x, m, l, &li);
		}
		return;
	}
	if (li.kind == STORE_LANE_GPU_STREAM) {
		const char *gl = store_lane_gpu_label(x->st, x->process, l);
		for (size_t row = 0; row < li.gpu_row_count; row++) {
			if (row == 0)
				snprintf(label, sizeof label, "%s", gl);
			else
				snprintf(label, sizeof label, "%s #%zu", gl, row + 1);
			pf_child_track(x, label,
			               GPU_SORT_BASE + (uint64_t)li.device * 100000 +
			                   (uint64_t)li.stream % 100000);
			const struct store_gpu_op *v;
			size_t n = store_lane_gpu_query(x->st, x->process, l, row, x->from, x->to, &v);
			merge_add(m, v, n, sizeof *v, SRC_GPU, 0);
			merge_run(x, m, l, &li);
		}
	}
}

/* The steps inferred for a process without repeating NVTX ranges: a child track "step (inferred)". */
static void pf_inferred(struct pf *x)
{
	struct steps_result r = {0};
	steps_infer(x->st, x->process, 0, &r);
	int track = 0;
	for (size_t i = 0; i < r.n; i++) {
		if (r.v[i].start_ns >= x->to || r.v[i].end_ns <= x->from)
			continue;
		if (!track++)
			pf_child_track(x, "step (inferred)", GPU_SORT_BASE / 4);
		pf_event_step(x, &r, i);
	}
	steps_result_fini(&r);
}

/* Counters of the process: a counter track under the thread (the process when the thread is unknown). */
static void pf_counters(struct pf *x)
{
	for (size_t i = 0; i < store_counter_count(x->st, x->process); i++) {
		struct store_counter c;
		store_counter_get(x->st, x->process, i, &c);
		if (c.time_ns < x->from || c.time_ns >= x->to)
			continue;
		size_t l = store_thread_lane_find(x->st, x->process, c.tid);
		uint64_t uuid = x->next_extra_uuid++;
		pf_sequence(x, uuid);
		pb_reset(&x->frame);
		pb_uint(&x->frame, F_TD_UUID, uuid);
		pb_uint(&x->frame, F_TD_PARENT_UUID, l == SIZE_MAX ? x->process_uuid : x->lane_uuid0 + l);
		pb_string(&x->frame, F_TD_NAME, store_string(x->st, c.event_id));
		pb_bytes(&x->frame, F_TD_COUNTER, NULL, 0);
		pf_descriptor_write(x);
		pf_event_start(x, TYPE_COUNTER);
		pb_int(&x->te, F_TE_COUNTER_VALUE, (int64_t)c.value);
		pf_event_finish(x, c.time_ns);
		x->counts->counters++;
	}
}

/* The GPU metric series the process sampled: one counter track each under the process. */
static void pf_gpu_metrics(struct pf *x)
{
	for (size_t i = 0; i < store_gpu_metric_count(x->st); i++) {
		struct store_gpu_metric_info mi;
		store_gpu_metric_get(x->st, i, &mi);
		if (mi.process != x->process)
			continue;
		const struct store_gpu_metric_point *pt;
		size_t n = store_gpu_metric_query(x->st, i, x->from, x->to, &pt);
		if (!n)
			continue;
		char name[WIRE_MAX_STRING + 32];
		snprintf(name, sizeof name, "GPU%u %s", mi.device, mi.name);
		uint64_t uuid = x->next_extra_uuid++;
		pf_sequence(x, uuid);
		pb_reset(&x->frame);
		pb_uint(&x->frame, F_TD_UUID, uuid);
		pb_uint(&x->frame, F_TD_PARENT_UUID, x->process_uuid);
		pb_string(&x->frame, F_TD_NAME, name);
		pb_bytes(&x->frame, F_TD_COUNTER, NULL, 0);
		pf_descriptor_write(x);
		for (size_t k = 0; k <= n; k++) {
			uint64_t t = k < n ? pt[k].start_ns : pt[n - 1].end_ns;
			if (t < x->from || t >= x->to)
				continue;
			double v = pt[k < n ? k : n - 1].value;
			uint64_t bits;
			memcpy(&bits, &v, sizeof bits);
			pf_event_start(x, TYPE_COUNTER);
			pb_fixed64(&x->te, F_TE_DOUBLE_COUNTER_VALUE, bits);
			pf_event_finish(x, t);
			x->counts->counters++;
		}
	}
}

/* The first packet: CLOCK_MONOTONIC is the trace clock, paired with REALTIME where a process has an anchor.
 */
static void pf_clock_snapshot(struct pf *x, uint64_t base)
{
	uint64_t mono = base, real = 0;
	for (size_t p = 0; p < store_process_count(x->st); p++) {
		struct store_process_info pi;
		store_process_get(x->st, p, &pi);
		if (pi.anchor_mono_ns && pi.anchor_real_ns) {
			mono = pi.anchor_mono_ns;
			real = pi.anchor_real_ns;
			break;
		}
	}
	struct pb *p = &x->pkt;
	pb_reset(p);
	pb_uint(p, F_PKT_SEQUENCE_ID, ++x->seq);
	size_t cs = pb_open(p, F_PKT_CLOCK_SNAPSHOT);
	size_t c = pb_open(p, F_CS_CLOCKS);
	pb_uint(p, F_CLOCK_ID, CLOCK_MONOTONIC_ID);
	pb_uint(p, F_CLOCK_TIMESTAMP, mono);
	pb_close(p, c);
	if (real) {
		c = pb_open(p, F_CS_CLOCKS);
		pb_uint(p, F_CLOCK_ID, CLOCK_REALTIME_ID);
		pb_uint(p, F_CLOCK_TIMESTAMP, real);
		pb_close(p, c);
	}
	pb_uint(p, F_CS_PRIMARY_TRACE_CLOCK, CLOCK_MONOTONIC_ID);
	pb_close(p, cs);
	pf_packet_write(x);
}

int export_perfetto(const struct store *st, const char *path, const struct export_options *opt,
                    struct export_counts *counts, char *msg_buf, size_t msg_size, const char **cause)
{
	struct pf_out *o = calloc(1, sizeof *o);
	if (!o) {
		*cause = "out of memory";
		return -ENOMEM;
	}
	int err = export_sink_open(&o->sink, path, msg_buf, msg_size, cause);
	if (err) {
		free(o);
		return err;
	}
	memset(counts, 0, sizeof *counts);
	struct pf x = {.st = st, .o = o, .from = opt->from_ns, .to = opt->to_ns, .counts = counts};
	x.next_uuid = 1;
	x.next_extra_uuid = EXTRA_UUID_BASE;
	struct merge m = {0};
	pf_clock_snapshot(&x, export_time_base(st));
	for (size_t p = 0; p < store_process_count(st); p++) {
		struct store_process_info pi;
		store_process_get(st, p, &pi);
		x.process = p;
		x.pid = export_process_pid(st, p);
		x.process_uuid = x.next_uuid;
		x.lane_uuid0 = x.next_uuid + 1;
		x.next_uuid += 1 + pi.lane_count;
		char label[4096];
		pf_sequence(&x, x.process_uuid);
		pb_reset(&x.frame);
		pb_uint(&x.frame, F_TD_UUID, x.process_uuid);
		size_t d = pb_open(&x.frame, F_TD_PROCESS);
		pb_int(&x.frame, F_PD_PID, x.pid);
		pb_string(&x.frame, F_PD_PROCESS_NAME, export_process_name(st, p, label, sizeof label));
		pb_close(&x.frame, d);
		pf_descriptor_write(&x);
		for (size_t l = 0; l < pi.lane_count; l++)
			pf_lane(&x, &m, l);
		pf_inferred(&x);
		pf_counters(&x);
		pf_gpu_metrics(&x);
	}
	pf_out_flush(o);
	counts->bytes = o->sink.bytes;
	free(m.src);
	free(m.ends);
	free(m.opens);
	pf_intern_fini(&x.in);
	pb_fini(&x.pkt);
	pb_fini(&x.te);
	pb_fini(&x.interned);
	pb_fini(&x.frame);
	int rc = export_sink_close(&o->sink, msg_buf, msg_size, cause);
	free(o);
	return rc;
}
