/*
 * Hit-testing, find and the details text (see inspect.h). Moved out of the UI so that it runs, and
 * is tested, without a terminal.
 */
#include "cuscope/inspect.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuscope/costview.h"
#include "cuscope/gpumetric.h"
#include "cuscope/timerow.h"
#include "cuscope/u64.h"
#include "cuscope/wire.h"
#include "cuscope/xalloc.h"

#define INSPECT_STACK_FRAMES 16 /* frames of a stack in the details */

uint64_t inspect_data_end(const struct inspect_view *v, uint64_t to)
{
	return v->clip_ns < to ? v->clip_ns : to;
}

uint64_t inspect_cursor_ns(const struct inspect_view *v)
{
	uint64_t a = viewport_ns_of(&v->vp, v->cursor_col), b = viewport_ns_of(&v->vp, v->cursor_col + 1);
	return a + (b - a) / 2;
}

static void inspect_format_bytes(char *buf, size_t size, uint64_t b)
{
	if (b >= (1ull << 30))
		snprintf(buf, size, "%.2f GiB (%llu B)", (double)b / (1ull << 30), (unsigned long long)b);
	else if (b >= (1ull << 20))
		snprintf(buf, size, "%.2f MiB (%llu B)", (double)b / (1ull << 20), (unsigned long long)b);
	else if (b >= 1024)
		snprintf(buf, size, "%.1f KiB (%llu B)", (double)b / 1024, (unsigned long long)b);
	else
		snprintf(buf, size, "%llu B", (unsigned long long)b);
}

/* Distance from t to [a, b] (0 inside). */
static uint64_t inspect_dist(uint64_t t, uint64_t a, uint64_t b)
{
	return t < a ? a - t : t > b ? t - b : 0;
}

/* The event of a lane row nearest to time t, within slack ns. */
struct inspect_hit inspect_row_hit(const struct inspect_view *v, const struct layout_row *row, uint64_t t,
                                   uint64_t slack)
{
	struct inspect_hit hit = {0};
	uint64_t best = UINT64_MAX;
	uint64_t from = t > slack ? t - slack : 0, to = inspect_data_end(v, t + slack + 1);
	struct store_lane_info li;
	if (row->kind == LAYOUT_ROW_PROCESS || row->kind == LAYOUT_ROW_GPU_DEVICE ||
	    row->kind == LAYOUT_ROW_COST || row->kind == LAYOUT_ROW_STEPS ||
	    row->kind == LAYOUT_ROW_GPU_METRIC)
		return hit;
	store_lane_get(v->store, row->process, row->lane, &li);
	hit.process = row->process;
	hit.lane = row->lane;
	hit.row = row->row;
	hit.lane_kind = li.kind;
	if (row->kind == LAYOUT_ROW_CUDA_API || row->kind == LAYOUT_ROW_GPU_STREAM) {
		const struct store_gpu_op *ops;
		size_t n = store_lane_gpu_query(v->store, row->process, row->lane, row->row, from, to, &ops);
		for (size_t i = 0; i < n; i++) {
			uint64_t d = inspect_dist(t, ops[i].start_ns, ops[i].end_ns);
			if (d <= slack && d < best) {
				best = d;
				hit.found = 1;
				hit.gpu = 1;
				hit.op = ops[i];
			}
		}
		return hit;
	}
	if (row->kind == LAYOUT_ROW_OSRT || row->kind == LAYOUT_ROW_GC) {
		const struct store_call *c;
		size_t n =
		    row->kind == LAYOUT_ROW_OSRT
		        ? store_lane_osrt_query(v->store, row->process, row->lane, row->row, from, to, &c)
		        : store_lane_gc_query(v->store, row->process, row->lane, row->row, from, to, &c);
		for (size_t i = 0; i < n; i++) {
			uint64_t d = inspect_dist(t, c[i].start_ns, c[i].end_ns);
			if (d <= slack && d < best) {
				best = d;
				hit.found = 1;
				hit.call = (int)row->kind;
				hit.calls = c[i];
			}
		}
		return hit;
	}
	const struct store_range *r;
	size_t n;
	if (row->kind == LAYOUT_ROW_THREAD)
		n = store_lane_mark_query(v->store, row->process, row->lane, from, to, &r);
	else
		n = store_lane_row_query(v->store, row->process, row->lane, row->row, from, to, &r);
	for (size_t i = 0; i < n; i++) {
		uint64_t d = inspect_dist(t, r[i].start_ns, r[i].end_ns);
		if (d <= slack && d < best) {
			best = d;
			hit.found = 1;
			hit.range = r[i];
		}
	}
	if (row->kind == LAYOUT_ROW_THREAD)
		return hit;
	uint64_t now = v->now_ns;
	for (size_t i = 0; i < li.open_count; i++) {
		struct store_range o;
		size_t orow;
		store_lane_open_get(v->store, row->process, row->lane, i, &o, &orow);
		if (orow != row->row || o.start_ns > now)
			continue;
		uint64_t d = inspect_dist(t, o.start_ns, now);
		if (d <= slack && d < best) {
			best = d;
			hit.found = 1;
			hit.range = o;
			hit.range.end_ns = 0;
			hit.open = 1;
		}
	}
	return hit;
}

void inspect_find_init(struct inspect_find *f)
{
	memset(f, 0, sizeof *f);
}

void inspect_find_fini(struct inspect_find *f)
{
	free(f->match);
	memset(f, 0, sizeof *f);
}

void inspect_find_set(struct inspect_find *f, const char *query)
{
	snprintf(f->query, sizeof f->query, "%.*s", (int)sizeof f->query - 1, query);
	if (f->match)
		memset(f->match, -1, f->match_cap);
}

/* Whether the name with this id contains the search text (cached per id). */
static int inspect_name_matches(struct inspect_find *f, const struct store *store, uint32_t id)
{
	if (!id)
		return 0;
	if (id < (1u << 24)) {
		if (id >= f->match_cap) {
			size_t cap = f->match_cap ? f->match_cap : 1024;
			while (cap <= id)
				cap *= 2;
			f->match = xrealloc(f->match, cap);
			memset(f->match + f->match_cap, -1, cap - f->match_cap);
			f->match_cap = cap;
		}
		if (f->match[id] < 0)
			f->match[id] = strcasestr(store_string(store, id), f->query) != NULL;
		return f->match[id];
	}
	return strcasestr(store_string(store, id), f->query) != NULL;
}

/* Considers element i (start s) of a row as the next match in direction dir from `from`. */
static int inspect_better(int dir, uint64_t s, const struct inspect_hit *best)
{
	if (!best->found)
		return 1;
	uint64_t b = best->gpu ? best->op.start_ns : best->range.start_ns;
	return dir > 0 ? s < b : s > b;
}

struct inspect_hit inspect_find(struct inspect_find *f, const struct store *store, int dir, uint64_t from)
{
	struct inspect_hit best = {0};
	for (size_t p = 0; p < store_process_count(store); p++) {
		struct store_process_info pi;
		store_process_get(store, p, &pi);
		for (size_t l = 0; l < pi.lane_count; l++) {
			struct store_lane_info li;
			store_lane_get(store, p, l, &li);
			for (size_t r = 0; r < li.row_count; r++) {
				const struct store_range *v;
				size_t n = store_lane_row_all(store, p, l, r, &v);
				if (dir > 0) {
					for (size_t i = viewport_lower_bound(v, n, 0, from + 1); i < n; i++) {
						if (!inspect_better(dir, v[i].start_ns, &best))
							break;
						if (inspect_name_matches(f, store, v[i].name_id)) {
							best = (struct inspect_hit){.found = 1,
							                            .process = p,
							                            .lane = l,
							                            .row = r,
							                            .lane_kind = li.kind,
							                            .range = v[i]};
							break;
						}
					}
				} else {
					for (size_t i = viewport_lower_bound(v, n, 0, from); i-- > 0;) {
						if (!inspect_better(dir, v[i].start_ns, &best))
							break;
						if (inspect_name_matches(f, store, v[i].name_id)) {
							best = (struct inspect_hit){.found = 1,
							                            .process = p,
							                            .lane = l,
							                            .row = r,
							                            .lane_kind = li.kind,
							                            .range = v[i]};
							break;
						}
					}
				}
			}
			for (size_t r = 0; r < li.gpu_row_count; r++) {
				const struct store_gpu_op *v;
				size_t n = store_lane_gpu_all(store, p, l, r, &v);
				size_t i = timerow_bound(v, n, sizeof *v, TIMEROW_START,
				                         dir > 0 ? from + 1 : from, 0);
				for (; dir > 0 ? i < n : i-- > 0; dir > 0 ? i++ : 0) {
					if (!inspect_better(dir, v[i].start_ns, &best))
						break;
					if (inspect_name_matches(f, store, v[i].name_id)) {
						best = (struct inspect_hit){.found = 1,
						                            .gpu = 1,
						                            .process = p,
						                            .lane = l,
						                            .row = r,
						                            .lane_kind = li.kind,
						                            .op = v[i]};
						break;
					}
				}
			}
		}
	}
	return best;
}

int inspect_gap_step(const struct store *store, uint64_t t, int dir, uint64_t min_ns, struct inspect_hit *hit,
                     struct cpuview_gap *gap)
{
	struct inspect_hit best = {0};
	struct cpuview_gap bg = {0};
	for (size_t p = 0; p < store_process_count(store); p++) {
		struct store_process_info pi;
		store_process_get(store, p, &pi);
		for (size_t l = 0; l < pi.lane_count; l++) {
			struct store_lane_info li;
			store_lane_get(store, p, l, &li);
			if (li.kind != STORE_LANE_GPU_STREAM)
				continue;
			for (size_t r = 0; r < li.gpu_row_count; r++) {
				const struct store_gpu_op *ops;
				size_t n = store_lane_gpu_all(store, p, l, r, &ops);
				struct cpuview_gap g;
				if (!cpuview_gap_step(ops, n, t, dir, min_ns, &g))
					continue;
				if (best.found &&
				    (dir > 0 ? g.start_ns >= bg.start_ns : g.start_ns <= bg.start_ns))
					continue;
				bg = g;
				best = (struct inspect_hit){.found = 1,
				                            .gpu = 1,
				                            .process = p,
				                            .lane = l,
				                            .row = r,
				                            .lane_kind = li.kind};
				best.op.start_ns = g.start_ns;
				best.op.end_ns = g.end_ns;
			}
		}
	}
	*hit = best;
	*gap = bg;
	return best.found;
}

/* The layout row showing a hit. */
struct layout_row inspect_hit_row(const struct store *store, const struct inspect_hit *hit)
{
	struct store_process_info pi;
	struct store_lane_info li;
	store_process_get(store, hit->process, &pi);
	store_lane_get(store, hit->process, hit->lane, &li);
	struct layout_row key = {.process = hit->process,
	                         .lane = hit->lane,
	                         .row = hit->row,
	                         .pid = pi.pid,
	                         .tid = li.tid,
	                         .device = li.device};
	if (hit->gpu)
		key.kind = li.kind == STORE_LANE_GPU_STREAM ? LAYOUT_ROW_GPU_STREAM : LAYOUT_ROW_CUDA_API;
	else
		key.kind = li.kind == STORE_LANE_NVTX_ASYNC ? LAYOUT_ROW_ASYNC : LAYOUT_ROW_NVTX;
	return key;
}

static void inspect_thread_name(const struct inspect_view *v, size_t process, pid_t tid, char *buf,
                                size_t size)
{
	struct store_process_info pi;
	store_process_get(v->store, process, &pi);
	for (size_t l = 0; l < pi.lane_count; l++) {
		struct store_lane_info li;
		store_lane_get(v->store, process, l, &li);
		if (li.kind == STORE_LANE_THREAD && li.tid == tid) {
			snprintf(buf, size, "%s %d", li.name && *li.name ? li.name : "thread", (int)tid);
			return;
		}
	}
	snprintf(buf, size, "thread %d", (int)tid);
}

static void inspect_time_label(const struct inspect_view *v, uint64_t ns, char *buf, size_t size)
{
	uint64_t o = v->origin_ns;
	if (ns >= o)
		snprintf(buf, size, "%.6f s", (double)(ns - o) / 1e9);
	else
		snprintf(buf, size, "-%.6f s", (double)(o - ns) / 1e9);
}

#define INSPECT_LINE(...)                                                                                    \
	do {                                                                                                 \
		if (out->count < INSPECT_LINES)                                                              \
			snprintf(out->lines[out->count++], sizeof out->lines[0], __VA_ARGS__);               \
	} while (0)

/* NVTX parent (row above, enclosing) and children (row below, inside) of a push/pop range. */
static void inspect_details_nesting(const struct inspect_view *v, struct inspect_text *out,
                                    const struct inspect_hit *hit, uint64_t end)
{
	char dur[32];
	if (hit->row > 0) {
		const struct store_range *r;
		size_t n = store_lane_row_query(v->store, hit->process, hit->lane, hit->row - 1,
		                                hit->range.start_ns, hit->range.start_ns + 1, &r);
		int found = 0;
		for (size_t i = 0; i < n; i++) {
			if (r[i].start_ns <= hit->range.start_ns && r[i].end_ns >= end) {
				cpuview_format_dur(dur, sizeof dur, r[i].end_ns - r[i].start_ns);
				INSPECT_LINE("parent    %s (%s)", store_string(v->store, r[i].name_id), dur);
				found = 1;
			}
		}
		if (!found)
			INSPECT_LINE("parent    (still open)");
	} else {
		INSPECT_LINE("parent    none (outermost)");
	}
	const struct store_range *c;
	size_t n = store_lane_row_query(v->store, hit->process, hit->lane, hit->row + 1, hit->range.start_ns,
	                                end, &c);
	size_t kids = 0;
	char list[200] = "";
	for (size_t i = 0; i < n; i++) {
		if (c[i].start_ns < hit->range.start_ns || c[i].end_ns > end)
			continue;
		if (kids < 4) {
			size_t l = strlen(list);
			snprintf(list + l, sizeof list - l, "%s%s", kids ? ", " : "",
			         store_string(v->store, c[i].name_id));
		}
		kids++;
	}
	if (kids)
		INSPECT_LINE("children  %zu: %s%s", kids, list, kids > 4 ? ", ..." : "");
	else
		INSPECT_LINE("children  none");
}

/* The frames of a stack, leaf first: "  function  module" per line, at most max of them. */
static void inspect_details_stack(const struct inspect_view *v, struct inspect_text *out, uint32_t stack_id,
                                  size_t max, const char *indent)
{
	const uint32_t *frames;
	size_t depth = store_stack_frames(v->store, stack_id, &frames);
	if (!depth) {
		INSPECT_LINE("%sno stack", indent);
		return;
	}
	for (size_t i = 0; i < depth && i < max; i++) {
		const char *mod = store_frame_module(v->store, frames[i]);
		char label[512]; /* a Python frame as FILE:QUALNAME */
		INSPECT_LINE("%s%-2zu %s%s%s", indent, i,
		             store_frame_label(v->store, frames[i], label, sizeof label), *mod ? "  " : "",
		             mod);
	}
	if (depth > max)
		INSPECT_LINE("%s... %zu more frames (outermost last)", indent, depth - max);
}

/* A blocking call or a GC range: name, time, thread and the caller's stack. */
static void inspect_details_call(const struct inspect_view *v, struct inspect_text *out,
                                 const struct inspect_hit *hit)
{
	char t0[48], dur[32];
	struct store_lane_info li;
	struct store_process_info pi;
	store_process_get(v->store, hit->process, &pi);
	store_lane_get(v->store, hit->process, hit->lane, &li);
	const struct store_call *c = &hit->calls;
	inspect_time_label(v, c->start_ns, t0, sizeof t0);
	cpuview_format_dur(dur, sizeof dur, c->end_ns - c->start_ns);
	int gc = hit->call == LAYOUT_ROW_GC;
	INSPECT_LINE("%s  %s", gc ? "Python GC    " : "blocking call", store_string(v->store, c->name_id));
	INSPECT_LINE("start          %s", t0);
	INSPECT_LINE("duration       %s", dur);
	INSPECT_LINE("thread         %s %d (pid %d)", li.name && *li.name ? li.name : "thread", (int)li.tid,
	             (int)pi.pid);
	if (!gc) {
		INSPECT_LINE("stack (leaf first):");
		inspect_details_stack(v, out, c->stack_id, INSPECT_STACK_FRAMES, "  ");
	}
}

/* The samples of a thread lane in [t0, t1): their count and the most frequent stack. 0 if none. */
static int inspect_details_samples(const struct inspect_view *v, struct inspect_text *out, size_t process,
                                   size_t lane, uint64_t t0, uint64_t t1)
{
	const struct store_sample *sv;
	size_t n = store_lane_samples(v->store, process, lane, t0, t1, &sv);
	if (!n)
		return 0;
	uint64_t *ids = xmalloc(n * sizeof *ids);
	for (size_t i = 0; i < n; i++)
		ids[i] = sv[i].stack_id;
	u64_sort(ids, n);
	uint32_t best = 0;
	size_t best_n = 0, distinct = 0;
	for (size_t i = 0; i < n;) {
		size_t j = i;
		while (j < n && ids[j] == ids[i])
			j++;
		distinct++;
		if (j - i > best_n)
			best_n = j - i, best = (uint32_t)ids[i];
		i = j;
	}
	free(ids);
	struct store_lane_info li;
	store_lane_get(v->store, process, lane, &li);
	char a[48], w[32];
	out->count = 0;
	inspect_time_label(v, t0, a, sizeof a);
	cpuview_format_dur(w, sizeof w, t1 - t0);
	INSPECT_LINE("CPU samples    %zu in this cell (%s from %s)", n, w, a);
	INSPECT_LINE("thread         %s %d", li.name && *li.name ? li.name : "thread", (int)li.tid);
	INSPECT_LINE("stack          the most frequent: %zu of %zu samples (%zu distinct stacks)", best_n, n,
	             distinct);
	inspect_details_stack(v, out, best, INSPECT_STACK_FRAMES, "  ");
	return 1;
}

/* What thread tid did during [a, b): blocking call, top of stack, NVTX range, GC. */
static void inspect_details_activity(const struct inspect_view *v, struct inspect_text *out, size_t process,
                                     pid_t tid, uint64_t a, uint64_t b, const char *why)
{
	struct store_thread_activity act;
	char tn[128], d1[32], d2[32];
	store_thread_activity(v->store, process, tid, a, b, &act);
	inspect_thread_name(v, process, tid, tn, sizeof tn);
	INSPECT_LINE("thread         %s (%s)", tn, why);
	if (act.lane == SIZE_MAX) {
		INSPECT_LINE("  no CPU data for this thread");
		return;
	}
	if (act.has_blocking) {
		cpuview_format_dur(d1, sizeof d1, act.blocking.end_ns - act.blocking.start_ns);
		cpuview_format_dur(d2, sizeof d2, act.blocking_overlap_ns);
		INSPECT_LINE("  blocked in   %s %s (%s of the gap)",
		             store_string(v->store, act.blocking.name_id), d1, d2);
		inspect_details_stack(v, out, act.blocking.stack_id, 6, "    ");
	} else {
		INSPECT_LINE("  blocked in   no blocking call overlaps the gap");
	}
	if (act.samples && act.top_frame) {
		const char *mod = store_frame_module(v->store, act.top_frame);
		INSPECT_LINE("  on CPU       %llu samples; top of stack %s%s%s (%llu)",
		             (unsigned long long)act.samples, store_frame_function(v->store, act.top_frame),
		             *mod ? "  " : "", mod, (unsigned long long)act.top_samples);
		if (act.top_stack)
			inspect_details_stack(v, out, act.top_stack, 4, "    ");
	} else {
		INSPECT_LINE("  on CPU       no samples (off CPU or not sampled)");
	}
	if (act.has_nvtx)
		INSPECT_LINE("  NVTX range   %s (depth %zu%s)", store_string(v->store, act.nvtx.name_id),
		             act.nvtx_depth, act.nvtx.end_ns ? "" : ", open");
	else
		INSPECT_LINE("  NVTX range   none");
	if (act.has_gc) {
		cpuview_format_dur(d1, sizeof d1, act.gc_overlap_ns);
		INSPECT_LINE("  Python GC    %s: %s in the gap", store_string(v->store, act.gc.name_id), d1);
	}
}

/* A GPU idle gap of a stream row: its length, the ops around it and what the host was doing. */
static void inspect_details_gap(const struct inspect_view *v, struct inspect_text *out, size_t process,
                                size_t lane, const struct store_gpu_op *ops, const struct cpuview_gap *g)
{
	char t0[48], dur[32];
	struct store_process_info pi;
	store_process_get(v->store, process, &pi);
	out->count = 0;
	cpuview_format_dur(dur, sizeof dur, g->end_ns - g->start_ns);
	inspect_time_label(v, g->start_ns, t0, sizeof t0);
	INSPECT_LINE("GPU idle       %s on %s (pid %d)", dur, store_lane_gpu_label(v->store, process, lane),
	             (int)pi.pid);
	INSPECT_LINE("start          %s", t0);
	const struct store_gpu_op *before = &ops[g->next - 1], *after = &ops[g->next];
	INSPECT_LINE(
	    "between        %s and %s",
	    before->kind == WIRE_GPU_KERNEL ? store_short_name(v->store, before->name_id) : "a copy/memset",
	    after->kind == WIRE_GPU_KERNEL ? store_short_name(v->store, after->name_id) : "a copy/memset");
	const char *why = "";
	pid_t tid = cpuview_gap_thread(v->store, process, after, &why);
	if (!tid) {
		INSPECT_LINE("thread         unknown (no CUDA API calls traced)");
		return;
	}
	inspect_details_activity(v, out, process, tid, g->start_ns, g->end_ns, why);
	const char *why2 = "";
	pid_t most = cpuview_gap_thread(v->store, process, NULL, &why2);
	if (most && most != tid)
		inspect_details_activity(v, out, process, most, g->start_ns, g->end_ns, why2);
}

/* The fields of a range's NVTX extended payload on one line: "args      comm=7 bytes=4096". */
static void inspect_details_args(const struct inspect_view *v, struct inspect_text *out,
                                 const struct inspect_hit *hit)
{
	struct store_arg a[WIRE_ARGS_MAX];
	size_t n = store_range_args(v->store, hit->process, hit->lane, &hit->range, a, WIRE_ARGS_MAX);
	if (!n)
		return;
	char line[224];
	size_t len = 0;
	for (size_t i = 0; i < n && len < sizeof line; i++) {
		const char *name = store_string(v->store, a[i].name_id);
		int w;
		if (a[i].type == WIRE_ARG_INT) {
			w = snprintf(line + len, sizeof line - len, "%s%s=%" PRId64, i ? " " : "", name,
			             (int64_t)a[i].value);
		} else if (a[i].type == WIRE_ARG_DOUBLE) {
			double d;
			memcpy(&d, &a[i].value, sizeof d);
			w = snprintf(line + len, sizeof line - len, "%s%s=%g", i ? " " : "", name, d);
		} else if (a[i].type == WIRE_ARG_ENUM) {
			w = snprintf(line + len, sizeof line - len, "%s%s=%s", i ? " " : "", name,
			             store_string(v->store, a[i].text_id));
		} else {
			w = snprintf(line + len, sizeof line - len, "%s%s=%" PRIu64, i ? " " : "", name,
			             a[i].value);
		}
		if (w < 0)
			break;
		len += (size_t)w;
	}
	INSPECT_LINE("args      %s", line);
}

/* Fills the details overlay for an event. */
void inspect_details(const struct inspect_view *v, struct inspect_text *out, const struct inspect_hit *hit)
{
	char t0[48], dur[32], where[128];
	struct store_lane_info li;
	struct store_process_info pi;
	store_process_get(v->store, hit->process, &pi);
	store_lane_get(v->store, hit->process, hit->lane, &li);
	out->count = 0;
	if (hit->call) {
		inspect_details_call(v, out, hit);
		return;
	}
	if (li.kind == STORE_LANE_GPU_STREAM)
		snprintf(where, sizeof where, "stream    %s (pid %d)",
		         store_lane_gpu_label(v->store, hit->process, hit->lane), (int)pi.pid);
	else if (li.kind == STORE_LANE_NVTX_ASYNC)
		snprintf(where, sizeof where, "lane      nvtx async (pid %d)", (int)pi.pid);
	else
		snprintf(where, sizeof where, "thread    %s %d (pid %d)",
		         li.name && *li.name ? li.name : "thread", (int)li.tid, (int)pi.pid);
	if (!hit->gpu) {
		const struct store_range *r = &hit->range;
		uint64_t end = hit->open ? v->now_ns : r->end_ns;
		inspect_time_label(v, r->start_ns, t0, sizeof t0);
		cpuview_format_dur(dur, sizeof dur, end - r->start_ns);
		int mark = r->start_ns == r->end_ns && !hit->open;
		INSPECT_LINE("%s  %s", mark ? "NVTX mark" : "NVTX range", store_string(v->store, r->name_id));
		if (r->domain_id)
			INSPECT_LINE("domain    %s", store_string(v->store, r->domain_id));
		inspect_details_args(v, out, hit);
		INSPECT_LINE("start     %s", t0);
		if (!mark)
			INSPECT_LINE("duration  %s%s", dur, hit->open ? " so far (open)" : "");
		INSPECT_LINE("%s", where);
		if (!mark && li.kind == STORE_LANE_THREAD)
			inspect_details_nesting(v, out, hit, end);
		return;
	}
	const struct store_gpu_op *op = &hit->op;
	inspect_time_label(v, op->start_ns, t0, sizeof t0);
	cpuview_format_dur(dur, sizeof dur, op->end_ns - op->start_ns);
	switch (op->kind) {
	case WIRE_GPU_KERNEL: {
		INSPECT_LINE("kernel    %s", store_short_name(v->store, op->name_id));
		INSPECT_LINE("name      %s", store_string(v->store, op->name_id));
		break;
	}
	case WIRE_GPU_MEMCPY:
		INSPECT_LINE("memcpy    %s", wire_memcpy_kind_name(op->subkind));
		break;
	case WIRE_GPU_MEMSET:
		INSPECT_LINE("memset");
		break;
	case WIRE_GPU_SYNC:
		INSPECT_LINE("sync      %s", wire_sync_type_name(op->subkind));
		break;
	default:
		INSPECT_LINE("CUDA API  %s", store_string(v->store, op->name_id));
		break;
	}
	INSPECT_LINE("start     %s", t0);
	INSPECT_LINE("duration  %s", dur);
	INSPECT_LINE("%s", where);
	if (op->kind == WIRE_GPU_KERNEL) {
		struct store_kernel_config kc;
		if (store_gpu_op_kernel(v->store, hit->process, op, &kc) == 0) {
			INSPECT_LINE("grid      (%d, %d, %d)   block (%d, %d, %d)", kc.grid[0], kc.grid[1],
			             kc.grid[2], kc.block[0], kc.block[1], kc.block[2]);
			INSPECT_LINE("registers %u per thread   shared memory %u B static + %u B dynamic",
			             kc.registers, kc.shared_static, kc.shared_dynamic);
			if (kc.graph_id)
				INSPECT_LINE("graph     %u", kc.graph_id);
		}
	}
	if (op->kind == WIRE_GPU_MEMCPY || op->kind == WIRE_GPU_MEMSET) {
		char b[64];
		uint64_t bytes = store_gpu_op_bytes(v->store, hit->process, op);
		inspect_format_bytes(b, sizeof b, bytes);
		uint64_t d = op->end_ns > op->start_ns ? op->end_ns - op->start_ns : 0;
		INSPECT_LINE("bytes     %s", b);
		if (d)
			INSPECT_LINE("throughput %.2f GB/s", (double)bytes / (double)d);
		if (op->kind == WIRE_GPU_MEMCPY)
			INSPECT_LINE("memory    %s -> %s", wire_mem_kind_name(op->mem >> 4),
			             wire_mem_kind_name(op->mem & 15));
		else
			INSPECT_LINE("memory    %s", wire_mem_kind_name(op->mem & 15));
	}
	if (li.kind == STORE_LANE_GPU_STREAM) {
		struct store_gpu_launch gl;
		if (store_gpu_op_get_launch(v->store, hit->process, op, &gl) == 0) {
			char tn[128], lt[48];
			inspect_thread_name(v, hit->process, gl.tid, tn, sizeof tn);
			inspect_time_label(v, gl.start_ns, lt, sizeof lt);
			INSPECT_LINE("launched  %s on %s at %s", store_string(v->store, gl.name_id), tn, lt);
			/* The innermost NVTX range around the launch call: with --torch, the operator. */
			struct store_thread_activity act;
			store_thread_activity(v->store, hit->process, gl.tid, gl.start_ns,
			                      gl.end_ns > gl.start_ns ? gl.end_ns : gl.start_ns + 1, &act);
			if (act.has_nvtx)
				INSPECT_LINE("in range  %s (around the launch)",
				             store_string(v->store, act.nvtx.name_id));
			if (op->start_ns >= gl.start_ns) {
				cpuview_format_dur(dur, sizeof dur, op->start_ns - gl.start_ns);
				INSPECT_LINE("latency   %s from the API call to the GPU start", dur);
			}
		} else {
			INSPECT_LINE("launched  unknown (graph node, API tracing off or too old)");
		}
	}
}

/* Where a reduced stretch still open ends: now while the process is connected, else its newest reading. */
uint64_t inspect_cost_until(const struct inspect_view *v, size_t process)
{
	struct store_process_info pi;
	store_process_get(v->store, process, &pi);
	if (pi.connected)
		return v->now_ns;
	uint64_t newest = 0;
	for (uint32_t s = 1; s < WIRE_COST_SOURCE_MAX; s++) {
		struct store_cost c;
		if (store_cost_get(v->store, process, s, &c) == 0 && c.time_ns > newest)
			newest = c.time_ns;
	}
	return newest;
}

/* Lines saying which CPU-side sources the overhead budget held reduced in [t0, t1); how many. */
static int inspect_details_reduced(const struct inspect_view *v, struct inspect_text *out, size_t process,
                                   uint64_t t0, uint64_t t1)
{
	uint64_t until = inspect_cost_until(v, process);
	int n = 0;
	for (uint32_t s = 1; s < WIRE_COST_SOURCE_MAX; s++) {
		uint32_t level = 0;
		if (!(COSTVIEW_CPU_SOURCES & 1u << s) ||
		    !costview_reduced_in(v->store, process, s, t0, t1, until, &level))
			continue;
		struct store_cost c;
		store_cost_get(v->store, process, s, &c);
		char text[160];
		costview_reduced_text(s, level, c.asked_level, text, sizeof text);
		INSPECT_LINE("budget         %s", text);
		n++;
	}
	return n;
}

/* The cost rows at the cursor's cell: each source's rate there and its totals. */
static void inspect_details_cost(const struct inspect_view *v, struct inspect_text *out, size_t process,
                                 uint64_t t0, uint64_t t1)
{
	struct store_process_info pi;
	store_process_get(v->store, process, &pi);
	char a[48], w[32];
	out->count = 0;
	inspect_time_label(v, t0, a, sizeof a);
	cpuview_format_dur(w, sizeof w, t1 - t0);
	INSPECT_LINE("profiler cost  pid %d, the cell of %s from %s", (int)pi.pid, w, a);
	for (uint32_t s = 1; s < WIRE_COST_SOURCE_MAX; s++) {
		struct store_cost c;
		if (store_cost_get(v->store, process, s, &c) != 0)
			continue;
		struct costview_rate r;
		costview_rate(v->store, process, s, t0, t1, inspect_data_end(v, UINT64_MAX), &r);
		char rate[64] = "no readings around this cell", level[32];
		if (r.covered_ns)
			snprintf(rate, sizeof rate, "%.2f ms/s CPU, est. +%.2f %%", r.cpu_ms_per_s,
			         r.added_pct);
		INSPECT_LINE("  %-10s  here %s; setting now %s%s", wire_cost_source_name(s), rate,
		             costview_level_text(s, c.level, level, sizeof level),
		             c.reduced ? " (reduced)" : "");
		INSPECT_LINE("              so far %.1f ms CPU, %.1f ms added, %llu events, %u back-offs",
		             (double)c.cpu_ns / 1e6, (double)c.added_ns / 1e6, (unsigned long long)c.events,
		             c.backoffs);
	}
	inspect_details_reduced(v, out, process, t0, t1);
	INSPECT_LINE("not counted    CUPTI's time inside the driver (on the program's threads)");
	INSPECT_LINE(
	    "est. added     time of the program's threads in the collector's code, as a slowdown of one");
	INSPECT_LINE("               thread: added / (elapsed - added)");
}

/*
 * Details with nothing under the cursor: the samples of the cursor's cell on a thread row, or the
 * GPU idle gap holding the cursor on a stream row. 1 when the overlay was filled.
 */
int inspect_cell_details(const struct inspect_view *v, struct inspect_text *out, const struct layout_row *row)
{
	if (row->kind == LAYOUT_ROW_THREAD || row->kind == LAYOUT_ROW_COST) {
		int c = v->cursor_col;
		uint64_t t0 = viewport_ns_of(&v->vp, c),
		         t1 = inspect_data_end(v, viewport_ns_of(&v->vp, c + 1));
		if (t1 <= t0)
			return 0;
		if (row->kind == LAYOUT_ROW_COST) {
			inspect_details_cost(v, out, row->process, t0, t1);
			return 1;
		}
		if (inspect_details_samples(v, out, row->process, row->lane, t0, t1)) {
			inspect_details_reduced(v, out, row->process, t0, t1);
			return 1;
		}
		out->count = 0;
		return inspect_details_reduced(v, out, row->process, t0, t1) > 0;
	}
	if (row->kind == LAYOUT_ROW_GPU_METRIC) {
		int c = v->cursor_col;
		uint64_t t0 = viewport_ns_of(&v->vp, c),
		         t1 = inspect_data_end(v, viewport_ns_of(&v->vp, c + 1));
		out->count = gpumetric_details(v->store, row->row, t0, t1, out->lines, INSPECT_LINES);
		return out->count > 0;
	}
	if (row->kind != LAYOUT_ROW_GPU_STREAM)
		return 0;
	const struct store_gpu_op *ops;
	size_t n = store_lane_gpu_all(v->store, row->process, row->lane, row->row, &ops);
	struct cpuview_gap g;
	if (!cpuview_gap_at(ops, n, inspect_cursor_ns(v), v->gap_min_ns, &g))
		return 0;
	inspect_details_gap(v, out, row->process, row->lane, ops, &g);
	return 1;
}
