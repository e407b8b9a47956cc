/*
 * Chrome Trace Event JSON export. Tracks:
 *   process (pid)           "M" process_name = command line
 *   OS thread (tid)         NVTX push/pop ranges ("X"), open ranges ("B"), marks ("i"), CUDA API calls and
 *                           host syncs ("X")
 *   NVTX async row          pseudo-thread "NVTX async" (one per packed row, so slices never overlap)
 *   GPU stream row          pseudo-thread named like the UI label, "GPU0 s7": kernels, copies, memsets
 *   thread counter          "C" event named by the event ("task-clock"), series "tid N": the newest value
 *   GPU hardware metric     "C" events of the sampling process named "GPU0 METRIC", series "value": one
 *                           per sample at its start, and the last value again at the last sample's end
 * Flow arrows ("s" on the launching API call, "f" with bp "e" on the GPU op) carry id = correlation id
 * (plus process index << 32 beyond the first process). Written through a 64 KiB buffer, hand-formatted.
 */
#include "cuscope/escape.h"
#include "cuscope/export.h"
#include "export_sink.h"
#include "cuscope/steps.h"
#include "cuscope/store.h"
#include "cuscope/wire.h"

#include "cuscope/safefs.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define OUT_BUF         (64u << 10)
#define PSEUDO_TID_BASE 1000000000 /* above any Linux tid (pid_max <= 2^22) */
#define GPU_SORT_BASE   1000000

struct out {
	struct export_sink sink;
	size_t n;
	char buf[OUT_BUF];
};

static void out_flush(struct out *o)
{
	export_sink_write(&o->sink, o->buf, o->n);
	o->n = 0;
}

static void out_mem(struct out *o, const void *p, size_t len)
{
	if (o->n + len > OUT_BUF) {
		out_flush(o);
		if (len > OUT_BUF) {
			/* Never happens for our small pieces; kept correct anyway. */
			const char *c = p;
			while (len) {
				size_t k = len < OUT_BUF ? len : OUT_BUF;
				memcpy(o->buf, c, k);
				o->n = k;
				out_flush(o);
				c += k;
				len -= k;
			}
			return;
		}
	}
	memcpy(o->buf + o->n, p, len);
	o->n += len;
}

static void out_s(struct out *o, const char *s)
{
	out_mem(o, s, strlen(s));
}

static void out_u64(struct out *o, uint64_t v)
{
	char tmp[24];
	int i = sizeof tmp;
	do {
		tmp[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	out_mem(o, tmp + i, sizeof tmp - (size_t)i);
}

static void out_i64(struct out *o, int64_t v)
{
	if (v < 0) {
		out_mem(o, "-", 1);
		out_u64(o, (uint64_t)0 - (uint64_t)v);
	} else {
		out_u64(o, (uint64_t)v);
	}
}

/* Nanoseconds as microseconds with three decimals ("12.345"). */
static void out_us(struct out *o, int64_t ns)
{
	uint64_t a = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
	if (ns < 0)
		out_mem(o, "-", 1);
	out_u64(o, a / 1000);
	char frac[4] = {'.', (char)('0' + a % 1000 / 100), (char)('0' + a % 100 / 10), (char)('0' + a % 10)};
	out_mem(o, frac, 4);
}

static void out_sink(void *ctx, const char *bytes, size_t len)
{
	out_mem(ctx, bytes, len);
}

/* A JSON string: names come from the capture and are escaped by the one helper. */
static void out_str(struct out *o, const char *s)
{
	out_mem(o, "\"", 1);
	escape_write(s, strlen(s), ESCAPE_JSON, out_sink, o);
	out_mem(o, "\"", 1);
}

uint64_t export_time_base(const struct store *st)
{
	uint64_t base = store_first_ns(st);
	for (size_t p = 0; p < store_process_count(st); p++) {
		struct store_process_info pi;
		store_process_get(st, p, &pi);
		if (pi.start_ns && (!base || pi.start_ns < base))
			base = pi.start_ns;
	}
	return base;
}

int export_process_pid(const struct store *st, size_t process)
{
	struct store_process_info pi, other;
	store_process_get(st, process, &pi);
	if (!pi.capture)
		return pi.pid;
	for (size_t p = 0; p < process; p++) {
		store_process_get(st, p, &other);
		if (other.pid == pi.pid && other.capture != pi.capture)
			return pi.pid + (int)(pi.capture & 0xff) * EXPORT_PID_CAPTURE_STEP;
	}
	return pi.pid;
}

const char *export_process_name(const struct store *st, size_t process, char *buf, size_t size)
{
	struct store_process_info pi;
	store_process_get(st, process, &pi);
	if (store_capture_count(st) > 1)
		snprintf(buf, size, "%s (%s)", *pi.cmdline ? pi.cmdline : "?", *pi.host ? pi.host : "?");
	else if (*pi.cmdline)
		return pi.cmdline;
	else
		snprintf(buf, size, "pid %d", (int)pi.pid);
	return buf;
}

struct exporter {
	const struct store *st;
	struct out *o;
	uint64_t base, from, to;
	struct export_counts *counts;
	int first; /* no event written yet (no comma before the next) */
	size_t process;
	pid_t pid;
	int next_pseudo; /* pseudo-thread tids handed out in this process */
};

/* Starts one event object: `{"ph":"X","pid":P,"tid":T` (a comma before all but the first). */
static void ev_begin(struct exporter *x, const char *ph, int64_t tid)
{
	struct out *o = x->o;
	out_s(o, x->first ? "\n{\"ph\":\"" : ",\n{\"ph\":\"");
	x->first = 0;
	out_s(o, ph);
	out_s(o, "\",\"pid\":");
	out_i64(o, x->pid);
	out_s(o, ",\"tid\":");
	out_i64(o, tid);
}

static void ev_ts(struct exporter *x, uint64_t t_ns)
{
	out_s(x->o, ",\"ts\":");
	out_us(x->o, (int64_t)(t_ns - x->base));
}

static void ev_name_cat(struct exporter *x, const char *name, const char *cat)
{
	out_s(x->o, ",\"name\":");
	out_str(x->o, name);
	out_s(x->o, ",\"cat\":");
	out_str(x->o, cat);
}

/* An "X" event: name, cat, ts and dur; the caller adds ,"args":{...} and calls ev_end. */
static void ev_complete(struct exporter *x, int64_t tid, const char *name, const char *cat, uint64_t start,
                        uint64_t end)
{
	ev_begin(x, "X", tid);
	ev_name_cat(x, name, cat);
	ev_ts(x, start);
	out_s(x->o, ",\"dur\":");
	out_us(x->o, end >= start ? (int64_t)(end - start) : 0);
	x->counts->complete++;
}

static void ev_end(struct exporter *x)
{
	out_mem(x->o, "}", 1);
}

static void arg_u64(struct exporter *x, const char *key, uint64_t v, int first)
{
	out_s(x->o, first ? "\"" : ",\"");
	out_s(x->o, key);
	out_s(x->o, "\":");
	out_u64(x->o, v);
}

static void arg_str(struct exporter *x, const char *key, const char *v, int first)
{
	out_s(x->o, first ? "\"" : ",\"");
	out_s(x->o, key);
	out_s(x->o, "\":");
	out_str(x->o, v);
}

/* A metadata event naming a process or thread. */
static void ev_meta(struct exporter *x, const char *what, int64_t tid, const char *name)
{
	ev_begin(x, "M", tid);
	out_s(x->o, ",\"name\":\"");
	out_s(x->o, what);
	out_s(x->o, "\",\"args\":{");
	arg_str(x, "name", name, 1);
	out_s(x->o, "}}");
}

static void ev_sort_index(struct exporter *x, int64_t tid, uint64_t index)
{
	ev_begin(x, "M", tid);
	out_s(x->o, ",\"name\":\"thread_sort_index\",\"args\":{");
	arg_u64(x, "sort_index", index, 1);
	out_s(x->o, "}}");
}

static const char *const style_names[] = {"PushPop", "StartEnd", "Mark"};

/* The fields of a range's NVTX extended payload, as more args: numbers, keyed by field name. */
static void ev_nvtx_args(struct exporter *x, size_t lane, const struct store_range *r)
{
	struct store_arg a[WIRE_ARGS_MAX];
	size_t n = store_range_args(x->st, x->process, lane, r, a, WIRE_ARGS_MAX);
	for (size_t i = 0; i < n; i++) {
		out_s(x->o, ",");
		out_str(x->o, store_string(x->st, a[i].name_id));
		out_s(x->o, ":");
		if (a[i].type == WIRE_ARG_INT) {
			out_i64(x->o, (int64_t)a[i].value);
		} else if (a[i].type == WIRE_ARG_DOUBLE) {
			double d;
			memcpy(&d, &a[i].value, sizeof d);
			char buf[40];
			/* The shortest of two precisions that reads back as the same double; JSON has no
			 * infinities or NaNs, so those are strings. */
			if (!isfinite(d))
				snprintf(buf, sizeof buf, "\"%g\"", d);
			else if (snprintf(buf, sizeof buf, "%.15g", d) > 0 && strtod(buf, NULL) != d)
				snprintf(buf, sizeof buf, "%.17g", d);
			/* A whole number still reads as a float ("1.0", not the integer 1). */
			if (isfinite(d) && !strpbrk(buf, ".e"))
				strcat(buf, ".0");
			out_s(x->o, buf);
		} else if (a[i].type == WIRE_ARG_ENUM) {
			out_str(x->o, store_string(x->st, a[i].text_id));
		} else {
			out_u64(x->o, a[i].value);
		}
	}
}

/* An NVTX range (X), open range (B) or mark (i) of lane `lane`: name = message, cat = domain ("nvtx"
 * for the default), args = domain, style and the payload's fields. */
static void ev_nvtx(struct exporter *x, size_t lane, int64_t tid, const struct store_range *r, int style,
                    int open)
{
	const char *name = store_string(x->st, r->name_id), *domain = store_string(x->st, r->domain_id);
	const char *cat = *domain ? domain : "nvtx";
	if (style == STORE_STYLE_MARK) {
		ev_begin(x, "i", tid);
		ev_name_cat(x, name, cat);
		ev_ts(x, r->start_ns);
		out_s(x->o, ",\"s\":\"t\"");
		x->counts->instant++;
	} else if (open) {
		ev_begin(x, "B", tid);
		ev_name_cat(x, name, cat);
		ev_ts(x, r->start_ns);
		x->counts->open++;
	} else {
		ev_complete(x, tid, name, cat, r->start_ns, r->end_ns);
	}
	out_s(x->o, ",\"args\":{");
	arg_str(x, "domain", domain, 1);
	arg_str(x, "style", style_names[style], 0);
	if (open)
		out_s(x->o, ",\"unfinished\":true");
	ev_nvtx_args(x, lane, r);
	out_s(x->o, "}}");
}

/* Flow id of a correlation id: unique across processes. */
static uint64_t flow_id(const struct exporter *x, uint32_t correlation)
{
	return (uint64_t)x->process << 32 | correlation;
}

const char *export_gpu_op_label(const struct store *st, const struct store_gpu_op *op, char *name,
                                size_t name_size, const char **category)
{
	const char *nm = name, *cat;
	switch (op->kind) {
	case WIRE_GPU_KERNEL:
		nm = op->name_id ? store_string(st, op->name_id) : "kernel";
		cat = "kernel";
		break;
	case WIRE_GPU_MEMCPY:
		snprintf(name, name_size, "Memcpy %s", wire_memcpy_kind_name(op->subkind));
		cat = "memcpy";
		break;
	case WIRE_GPU_MEMSET:
		nm = "Memset";
		cat = "memset";
		break;
	case WIRE_GPU_SYNC:
		snprintf(name, name_size, "Sync %s", wire_sync_type_name(op->subkind));
		cat = "sync";
		break;
	case WIRE_GPU_API_RUNTIME:
	case WIRE_GPU_API_DRIVER:
		nm = op->name_id ? store_string(st, op->name_id) : "CUDA API";
		cat = op->kind == WIRE_GPU_API_RUNTIME ? "cuda_runtime" : "cuda_driver";
		break;
	default:
		snprintf(name, name_size, "GPU op %u", op->kind);
		cat = "gpu";
		break;
	}
	*category = cat;
	return nm;
}

/* A GPU op, API call or host sync as an X event with its args; flows for ops with a known launch. */
static void ev_gpu(struct exporter *x, int64_t tid, const struct store_lane_info *li,
                   const struct store_gpu_op *op)
{
	const struct store *st = x->st;
	char name[96];
	const char *cat;
	const char *nm = export_gpu_op_label(st, op, name, sizeof name, &cat);
	ev_complete(x, tid, nm, cat, op->start_ns, op->end_ns);
	out_s(x->o, ",\"args\":{");
	arg_u64(x, "correlation", op->correlation_id, 1);
	int on_stream = li->kind == STORE_LANE_GPU_STREAM;
	if (on_stream) {
		arg_u64(x, "device", li->device, 0);
		arg_u64(x, "stream", li->stream, 0);
	}
	struct store_kernel_config k;
	switch (op->kind) {
	case WIRE_GPU_KERNEL:
		if (store_gpu_op_kernel(st, x->process, op, &k) == 0) {
			char dims[96];
			snprintf(dims, sizeof dims, ",\"grid\":[%d,%d,%d],\"block\":[%d,%d,%d]", k.grid[0],
			         k.grid[1], k.grid[2], k.block[0], k.block[1], k.block[2]);
			out_s(x->o, dims);
			arg_u64(x, "registers", k.registers, 0);
			arg_u64(x, "shared_static", k.shared_static, 0);
			arg_u64(x, "shared_dynamic", k.shared_dynamic, 0);
			if (k.graph_id)
				arg_u64(x, "graph_id", k.graph_id, 0);
		}
		break;
	case WIRE_GPU_MEMCPY:
		arg_u64(x, "bytes", store_gpu_op_bytes(st, x->process, op), 0);
		arg_str(x, "kind", wire_memcpy_kind_name(op->subkind), 0);
		arg_str(x, "src_mem", wire_mem_kind_name(op->mem >> 4), 0);
		arg_str(x, "dst_mem", wire_mem_kind_name(op->mem & 15), 0);
		out_s(x->o, op->flags & WIRE_GPU_FLAG_ASYNC ? ",\"async\":true" : ",\"async\":false");
		break;
	case WIRE_GPU_MEMSET:
		arg_u64(x, "bytes", store_gpu_op_bytes(st, x->process, op), 0);
		arg_str(x, "mem", wire_mem_kind_name(op->mem & 15), 0);
		out_s(x->o, op->flags & WIRE_GPU_FLAG_ASYNC ? ",\"async\":true" : ",\"async\":false");
		break;
	case WIRE_GPU_SYNC:
		arg_str(x, "type", wire_sync_type_name(op->subkind), 0);
		break;
	default:
		break;
	}
	out_s(x->o, "}}");

	struct store_gpu_launch launch;
	if (!on_stream || op->kind == WIRE_GPU_SYNC || !op->correlation_id ||
	    store_gpu_op_get_launch(st, x->process, op, &launch) != 0)
		return;
	if (launch.end_ns <= x->from || launch.start_ns >= x->to)
		return;
	/* The start binds to the slice enclosing its ts: the midpoint of the call is inside the call. */
	uint64_t mid =
	    launch.start_ns + (launch.end_ns > launch.start_ns ? (launch.end_ns - launch.start_ns) / 2 : 0);
	ev_begin(x, "s", launch.tid);
	ev_name_cat(x, "launch", "cuda_flow");
	ev_ts(x, mid);
	out_s(x->o, ",\"id\":");
	out_u64(x->o, flow_id(x, op->correlation_id));
	ev_end(x);
	ev_begin(x, "f", tid);
	ev_name_cat(x, "launch", "cuda_flow");
	ev_ts(x, op->start_ns);
	out_s(x->o, ",\"bp\":\"e\",\"id\":");
	out_u64(x->o, flow_id(x, op->correlation_id));
	ev_end(x);
	x->counts->flows++;
}

static void export_gpu_rows(struct exporter *x, size_t l, const struct store_lane_info *li, size_t row,
                            int64_t tid)
{
	const struct store_gpu_op *v;
	size_t n = store_lane_gpu_query(x->st, x->process, l, row, x->from, x->to, &v);
	for (size_t i = 0; i < n; i++)
		ev_gpu(x, tid, li, &v[i]);
}

static void export_range_row(struct exporter *x, size_t l, size_t row, int64_t tid, int style)
{
	const struct store_range *r;
	size_t n = store_lane_row_query(x->st, x->process, l, row, x->from, x->to, &r);
	for (size_t i = 0; i < n; i++)
		ev_nvtx(x, l, tid, &r[i], style, 0);
}

static void export_open(struct exporter *x, size_t l, const struct store_lane_info *li, int64_t row_tid0,
                        int style)
{
	for (size_t i = 0; i < li->open_count; i++) {
		struct store_range r;
		size_t row;
		store_lane_open_get(x->st, x->process, l, i, &r, &row);
		if (r.start_ns >= x->to)
			continue;
		ev_nvtx(x, l, style == STORE_STYLE_STARTEND ? row_tid0 + (int64_t)row : row_tid0, &r, style,
		        1);
	}
}

static void export_lane(struct exporter *x, size_t l)
{
	struct store_lane_info li;
	store_lane_get(x->st, x->process, l, &li);
	char label[160];
	if (li.kind == STORE_LANE_THREAD) {
		if (*li.name) {
			ev_meta(x, "thread_name", li.tid, li.name);
		} else {
			snprintf(label, sizeof label, "thread %d", (int)li.tid);
			ev_meta(x, "thread_name", li.tid, label);
		}
		for (size_t row = 0; row < li.row_count; row++)
			export_range_row(x, l, row, li.tid, STORE_STYLE_PUSHPOP);
		export_open(x, l, &li, li.tid, STORE_STYLE_PUSHPOP);
		const struct store_range *m;
		size_t n = store_lane_mark_query(x->st, x->process, l, x->from, x->to, &m);
		for (size_t i = 0; i < n; i++)
			ev_nvtx(x, l, li.tid, &m[i], STORE_STYLE_MARK, 0);
		for (size_t row = 0; row < li.gpu_row_count; row++)
			export_gpu_rows(x, l, &li, row, li.tid);
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
		int64_t tid0 = PSEUDO_TID_BASE + x->next_pseudo;
		x->next_pseudo += (int)rows;
		for (size_t row = 0; row < rows; row++) {
			if (row == 0)
				snprintf(label, sizeof label, "NVTX async");
			else
				snprintf(label, sizeof label, "NVTX async #%zu", row + 1);
			ev_meta(x, "thread_name", tid0 + (int64_t)row, label);
			ev_sort_index(x, tid0 + (int64_t)row, GPU_SORT_BASE / 2 + row);
			if (row < li.row_count)
				export_range_row(x, l, row, tid0 + (int64_t)row, STORE_STYLE_STARTEND);
		}
		for (size_t i = 0; i < li.open_count; i++) {
			struct store_range r;
			size_t row;
			store_lane_open_get(x->st, x->process, l, i, &r, &row);
			if (r.start_ns < x->to && row < rows)
				ev_nvtx(x, l, tid0 + (int64_t)row, &r, STORE_STYLE_STARTEND, 1);
		}
		return;
	}
	if (li.kind == STORE_LANE_GPU_STREAM) {
		const char *gl = store_lane_gpu_label(x->st, x->process, l);
		int64_t tid0 = PSEUDO_TID_BASE + x->next_pseudo;
		x->next_pseudo += (int)li.gpu_row_count;
		for (size_t row = 0; row < li.gpu_row_count; row++) {
			if (row == 0)
				snprintf(label, sizeof label, "%s", gl);
			else
				snprintf(label, sizeof label, "%s #%zu", gl, row + 1);
			ev_meta(x, "thread_name", tid0 + (int64_t)row, label);
			ev_sort_index(x, tid0 + (int64_t)row,
			              GPU_SORT_BASE + (uint64_t)li.device * 100000 +
			                  (uint64_t)li.stream % 100000);
			export_gpu_rows(x, l, &li, row, tid0 + (int64_t)row);
		}
	}
}

/*
 * The steps inferred for a process without repeating NVTX ranges (steps.h) on a pseudo-thread of their own,
 * "step (inferred)": "step" ranges in category "inferred", numbered, with the events they hold.
 */
static void export_inferred(struct exporter *x)
{
	struct steps_result r = {0};
	steps_infer(x->st, x->process, 0, &r);
	int64_t tid = PSEUDO_TID_BASE + x->next_pseudo;
	for (size_t i = 0; i < r.n; i++) {
		const struct steps_range *s = &r.v[i];
		if (s->start_ns >= x->to || s->end_ns <= x->from)
			continue;
		if (tid == PSEUDO_TID_BASE + x->next_pseudo) {
			x->next_pseudo++;
			ev_meta(x, "thread_name", tid, "step (inferred)");
			ev_sort_index(x, tid, GPU_SORT_BASE / 4);
		}
		ev_complete(x, tid, "step", "inferred", s->start_ns, s->end_ns);
		out_s(x->o, ",\"args\":{");
		arg_u64(x, "step", i + 1, 1);
		arg_u64(x, r.api ? "api_calls" : "kernels", s->size, 0);
		arg_str(x, "start", r.gpu_time ? "gpu" : "launch", 0);
		arg_u64(x, "tid", (uint64_t)s->tid, 0);
		out_s(x->o, "}");
		ev_end(x);
	}
	steps_result_fini(&r);
}

/* A thread's counters as "C" events (newest cumulative value), one series per thread: "tid N". */
static void export_counters(struct exporter *x)
{
	for (size_t i = 0; i < store_counter_count(x->st, x->process); i++) {
		struct store_counter c;
		store_counter_get(x->st, x->process, i, &c);
		if (c.time_ns < x->from || c.time_ns >= x->to)
			continue;
		char key[32];
		snprintf(key, sizeof key, "tid %d", (int)c.tid);
		ev_begin(x, "C", c.tid);
		out_s(x->o, ",\"name\":");
		out_str(x->o, store_string(x->st, c.event_id));
		ev_ts(x, c.time_ns);
		out_s(x->o, ",\"args\":{");
		arg_u64(x, key, c.value, 1);
		out_s(x->o, "}}");
		x->counts->counters++;
	}
}

/* The GPU metric series the process sampled as "C" events ("GPU0 sm__cycles_active.avg"). */
static void export_gpu_metrics(struct exporter *x)
{
	for (size_t i = 0; i < store_gpu_metric_count(x->st); i++) {
		struct store_gpu_metric_info mi;
		store_gpu_metric_get(x->st, i, &mi);
		if (mi.process != x->process)
			continue;
		const struct store_gpu_metric_point *pt;
		size_t n = store_gpu_metric_query(x->st, i, x->from, x->to, &pt);
		char name[WIRE_MAX_STRING + 32], value[40];
		snprintf(name, sizeof name, "GPU%u %s", mi.device, mi.name);
		for (size_t k = 0; k <= n && n; k++) {
			/* The last point's end closes the series, so its final value has a width. */
			uint64_t t = k < n ? pt[k].start_ns : pt[n - 1].end_ns;
			if (t < x->from || t >= x->to)
				continue;
			ev_begin(x, "C", 0);
			out_s(x->o, ",\"name\":");
			out_str(x->o, name);
			ev_ts(x, t);
			snprintf(value, sizeof value, "%.9g", pt[k < n ? k : n - 1].value);
			out_s(x->o, ",\"args\":{\"value\":");
			out_s(x->o, value);
			out_s(x->o, "}}");
			x->counts->counters++;
		}
	}
}

int export_chrome_json(const struct store *st, const char *path, const struct export_options *opt,
                       struct export_counts *counts, char *msg_buf, size_t msg_size, const char **cause)
{
	struct out *o = calloc(1, sizeof *o);
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
	struct exporter x = {st, o, export_time_base(st), opt->from_ns, opt->to_ns, counts, 1, 0, 0, 0};
	out_s(o, "{\"traceEvents\":[");
	for (size_t p = 0; p < store_process_count(st); p++) {
		struct store_process_info pi;
		store_process_get(st, p, &pi);
		x.process = p;
		x.pid = export_process_pid(st, p);
		x.next_pseudo = 0;
		char label[4096];
		ev_meta(&x, "process_name", 0, export_process_name(st, p, label, sizeof label));
		for (size_t l = 0; l < pi.lane_count; l++)
			export_lane(&x, l);
		export_inferred(&x);
		export_counters(&x);
		export_gpu_metrics(&x);
	}
	out_s(o, "\n],\n\"displayTimeUnit\":\"ns\",\n\"otherData\":{\"generator\":\"cuscope\",\"clock\":"
	         "\"CLOCK_MONOTONIC\","
	         "\"ts_unit\":\"us since time_base_ns\",\"time_base_ns\":");
	out_u64(o, x.base);
	out_s(o, "}}\n");
	out_flush(o);
	counts->bytes = o->sink.bytes;
	int rc = export_sink_close(&o->sink, msg_buf, msg_size, cause);
	free(o);
	return rc;
}

/* Every format `cuscope export` writes; a new one is a writer and a line here. */
static const struct export_format export_formats[] = {
    {"chrome", "json", export_chrome_json},
    {"perfetto", NULL, export_perfetto},
};

const struct export_format *export_format_find(const char *name)
{
	for (size_t i = 0; i < sizeof export_formats / sizeof export_formats[0]; i++)
		if (strcmp(name, export_formats[i].name) == 0 ||
		    (export_formats[i].alias && strcmp(name, export_formats[i].alias) == 0))
			return &export_formats[i];
	return NULL;
}

const struct export_format *export_format_default(void)
{
	return &export_formats[0];
}

const char *export_format_names(void)
{
	static char names[256];
	if (names[0])
		return names;
	const char *list[2 * sizeof export_formats / sizeof export_formats[0]];
	size_t n = 0, used = 0;
	for (size_t i = 0; i < sizeof export_formats / sizeof export_formats[0]; i++) {
		list[n++] = export_formats[i].name;
		if (export_formats[i].alias)
			list[n++] = export_formats[i].alias;
	}
	for (size_t i = 0; i < n && used < sizeof names; i++) {
		const char *sep = i == 0 ? "" : i + 1 == n ? " or " : ", ";
		int w = snprintf(names + used, sizeof names - used, "%s%s", sep, list[i]);
		if (w < 0)
			break;
		used += (size_t)w;
	}
	return names;
}
