/* Events under the cursor, find, and the text of the details overlay. */
#include "ui_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuscope/cpuview.h"
#include "cuscope/wire.h"
#include "cuscope/xalloc.h"

size_t ui_op_lower_bound(const struct store_gpu_op *v, size_t n, uint64_t ns)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (v[mid].start_ns < ns)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Distance from t to [a, b] (0 inside). */
static uint64_t ui_dist(uint64_t t, uint64_t a, uint64_t b)
{
	return t < a ? a - t : t > b ? t - b : 0;
}

/* The event of a lane row nearest to time t, within slack ns. */
struct ui_hit ui_row_hit(const struct ui *ui, const struct layout_row *row, uint64_t t, uint64_t slack)
{
	struct ui_hit hit = {0};
	uint64_t best = UINT64_MAX;
	uint64_t from = t > slack ? t - slack : 0, to = ui_data_end(ui, t + slack + 1);
	struct store_lane_info li;
	if (row->kind == LAYOUT_ROW_PROCESS || row->kind == LAYOUT_ROW_GPU_DEVICE ||
	    row->kind == LAYOUT_ROW_COST)
		return hit;
	store_lane_get(ui->store, row->process, row->lane, &li);
	hit.process = row->process;
	hit.lane = row->lane;
	hit.row = row->row;
	hit.lane_kind = li.kind;
	if (row->kind == LAYOUT_ROW_CUDA_API || row->kind == LAYOUT_ROW_GPU_STREAM) {
		const struct store_gpu_op *ops;
		size_t n = store_lane_gpu_query(ui->store, row->process, row->lane, row->row, from, to, &ops);
		for (size_t i = 0; i < n; i++) {
			uint64_t d = ui_dist(t, ops[i].start_ns, ops[i].end_ns);
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
		        ? store_lane_osrt_query(ui->store, row->process, row->lane, row->row, from, to, &c)
		        : store_lane_gc_query(ui->store, row->process, row->lane, row->row, from, to, &c);
		for (size_t i = 0; i < n; i++) {
			uint64_t d = ui_dist(t, c[i].start_ns, c[i].end_ns);
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
		n = store_lane_mark_query(ui->store, row->process, row->lane, from, to, &r);
	else
		n = store_lane_row_query(ui->store, row->process, row->lane, row->row, from, to, &r);
	for (size_t i = 0; i < n; i++) {
		uint64_t d = ui_dist(t, r[i].start_ns, r[i].end_ns);
		if (d <= slack && d < best) {
			best = d;
			hit.found = 1;
			hit.range = r[i];
		}
	}
	if (row->kind == LAYOUT_ROW_THREAD)
		return hit;
	uint64_t now = ui_now(ui);
	for (size_t i = 0; i < li.open_count; i++) {
		struct store_range o;
		size_t orow;
		store_lane_open_get(ui->store, row->process, row->lane, i, &o, &orow);
		if (orow != row->row || o.start_ns > now)
			continue;
		uint64_t d = ui_dist(t, o.start_ns, now);
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

/* Whether the name with this id contains the search text (cached per id). */
static int ui_name_matches(struct ui *ui, uint32_t id)
{
	if (!id)
		return 0;
	if (id < (1u << 24)) {
		if (id >= ui->find.match_cap) {
			size_t cap = ui->find.match_cap ? ui->find.match_cap : 1024;
			while (cap <= id)
				cap *= 2;
			ui->find.match = xrealloc(ui->find.match, cap);
			memset(ui->find.match + ui->find.match_cap, -1, cap - ui->find.match_cap);
			ui->find.match_cap = cap;
		}
		if (ui->find.match[id] < 0)
			ui->find.match[id] = strcasestr(store_string(ui->store, id), ui->find.query) != NULL;
		return ui->find.match[id];
	}
	return strcasestr(store_string(ui->store, id), ui->find.query) != NULL;
}

/* Considers element i (start s) of a row as the next match in direction dir from `from`. */
static int ui_better(int dir, uint64_t s, const struct ui_hit *best)
{
	if (!best->found)
		return 1;
	uint64_t b = best->gpu ? best->op.start_ns : best->range.start_ns;
	return dir > 0 ? s < b : s > b;
}

/*
 * The nearest event whose name matches the query, starting strictly after (dir > 0) or before
 * (dir < 0) time from, over every row of every lane. Scans from a binary-searched start and stops
 * at the first match of each row: O(rows · log n) plus the non-matching events skipped.
 */
struct ui_hit ui_find(struct ui *ui, int dir, uint64_t from)
{
	struct ui_hit best = {0};
	for (size_t p = 0; p < store_process_count(ui->store); p++) {
		struct store_process_info pi;
		store_process_get(ui->store, p, &pi);
		for (size_t l = 0; l < pi.lane_count; l++) {
			struct store_lane_info li;
			store_lane_get(ui->store, p, l, &li);
			for (size_t r = 0; r < li.row_count; r++) {
				const struct store_range *v;
				size_t n = store_lane_row_all(ui->store, p, l, r, &v);
				if (dir > 0) {
					for (size_t i = viewport_lower_bound(v, n, 0, from + 1); i < n; i++) {
						if (!ui_better(dir, v[i].start_ns, &best))
							break;
						if (ui_name_matches(ui, v[i].name_id)) {
							best = (struct ui_hit){.found = 1,
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
						if (!ui_better(dir, v[i].start_ns, &best))
							break;
						if (ui_name_matches(ui, v[i].name_id)) {
							best = (struct ui_hit){.found = 1,
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
				size_t n = store_lane_gpu_all(ui->store, p, l, r, &v);
				size_t i = ui_op_lower_bound(v, n, dir > 0 ? from + 1 : from);
				for (; dir > 0 ? i < n : i-- > 0; dir > 0 ? i++ : 0) {
					if (!ui_better(dir, v[i].start_ns, &best))
						break;
					if (ui_name_matches(ui, v[i].name_id)) {
						best = (struct ui_hit){.found = 1,
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

/* The layout row showing a hit. */
struct layout_row ui_hit_row(const struct ui *ui, const struct ui_hit *hit)
{
	struct store_process_info pi;
	struct store_lane_info li;
	store_process_get(ui->store, hit->process, &pi);
	store_lane_get(ui->store, hit->process, hit->lane, &li);
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

static void ui_thread_name(const struct ui *ui, size_t process, pid_t tid, char *buf, size_t size)
{
	struct store_process_info pi;
	store_process_get(ui->store, process, &pi);
	for (size_t l = 0; l < pi.lane_count; l++) {
		struct store_lane_info li;
		store_lane_get(ui->store, process, l, &li);
		if (li.kind == STORE_LANE_THREAD && li.tid == tid) {
			snprintf(buf, size, "%s %d", li.name && *li.name ? li.name : "thread", (int)tid);
			return;
		}
	}
	snprintf(buf, size, "thread %d", (int)tid);
}

static void ui_time_label(const struct ui *ui, uint64_t ns, char *buf, size_t size)
{
	uint64_t o = ui_origin(ui);
	if (ns >= o)
		snprintf(buf, size, "%.6f s", (double)(ns - o) / 1e9);
	else
		snprintf(buf, size, "-%.6f s", (double)(o - ns) / 1e9);
}

#define UI_DETAIL(...)                                                                                       \
	do {                                                                                                 \
		if (ui->details.count < UI_DETAIL_LINES)                                                     \
			snprintf(ui->details.lines[ui->details.count++], sizeof ui->details.lines[0],        \
			         __VA_ARGS__);                                                               \
	} while (0)

/* NVTX parent (row above, enclosing) and children (row below, inside) of a push/pop range. */
static void ui_details_nesting(struct ui *ui, const struct ui_hit *hit, uint64_t end)
{
	char dur[32];
	if (hit->row > 0) {
		const struct store_range *r;
		size_t n = store_lane_row_query(ui->store, hit->process, hit->lane, hit->row - 1,
		                                hit->range.start_ns, hit->range.start_ns + 1, &r);
		int found = 0;
		for (size_t i = 0; i < n; i++) {
			if (r[i].start_ns <= hit->range.start_ns && r[i].end_ns >= end) {
				ui_format_dur(dur, sizeof dur, r[i].end_ns - r[i].start_ns);
				UI_DETAIL("parent    %s (%s)", store_string(ui->store, r[i].name_id), dur);
				found = 1;
			}
		}
		if (!found)
			UI_DETAIL("parent    (still open)");
	} else {
		UI_DETAIL("parent    none (outermost)");
	}
	const struct store_range *c;
	size_t n = store_lane_row_query(ui->store, hit->process, hit->lane, hit->row + 1, hit->range.start_ns,
	                                end, &c);
	size_t kids = 0;
	char list[200] = "";
	for (size_t i = 0; i < n; i++) {
		if (c[i].start_ns < hit->range.start_ns || c[i].end_ns > end)
			continue;
		if (kids < 4) {
			size_t l = strlen(list);
			snprintf(list + l, sizeof list - l, "%s%s", kids ? ", " : "",
			         store_string(ui->store, c[i].name_id));
		}
		kids++;
	}
	if (kids)
		UI_DETAIL("children  %zu: %s%s", kids, list, kids > 4 ? ", ..." : "");
	else
		UI_DETAIL("children  none");
}

/* The frames of a stack, leaf first: "  function  module" per line, at most max of them. */
static void ui_details_stack(struct ui *ui, uint32_t stack_id, size_t max, const char *indent)
{
	const uint32_t *frames;
	size_t depth = store_stack_frames(ui->store, stack_id, &frames);
	if (!depth) {
		UI_DETAIL("%sno stack", indent);
		return;
	}
	for (size_t i = 0; i < depth && i < max; i++) {
		const char *mod = store_frame_module(ui->store, frames[i]);
		UI_DETAIL("%s%-2zu %s%s%s", indent, i, store_frame_function(ui->store, frames[i]),
		          *mod ? "  " : "", mod);
	}
	if (depth > max)
		UI_DETAIL("%s... %zu more frames (outermost last)", indent, depth - max);
}

/* A blocking call or a GC range: name, time, thread and the caller's stack. */
static void ui_details_call(struct ui *ui, const struct ui_hit *hit)
{
	char t0[48], dur[32];
	struct store_lane_info li;
	struct store_process_info pi;
	store_process_get(ui->store, hit->process, &pi);
	store_lane_get(ui->store, hit->process, hit->lane, &li);
	const struct store_call *c = &hit->calls;
	ui_time_label(ui, c->start_ns, t0, sizeof t0);
	ui_format_dur(dur, sizeof dur, c->end_ns - c->start_ns);
	int gc = hit->call == LAYOUT_ROW_GC;
	UI_DETAIL("%s  %s", gc ? "Python GC    " : "blocking call", store_string(ui->store, c->name_id));
	UI_DETAIL("start          %s", t0);
	UI_DETAIL("duration       %s", dur);
	UI_DETAIL("thread         %s %d (pid %d)", li.name && *li.name ? li.name : "thread", (int)li.tid,
	          (int)pi.pid);
	if (!gc) {
		UI_DETAIL("stack (leaf first):");
		ui_details_stack(ui, c->stack_id, UI_STACK_FRAMES, "  ");
	}
}

static int ui_u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

/* The samples of a thread lane in [t0, t1): their count and the most frequent stack. 0 if none. */
static int ui_details_samples(struct ui *ui, size_t process, size_t lane, uint64_t t0, uint64_t t1)
{
	const struct store_sample *v;
	size_t n = store_lane_samples(ui->store, process, lane, t0, t1, &v);
	if (!n)
		return 0;
	uint32_t *ids = xmalloc(n * sizeof *ids);
	for (size_t i = 0; i < n; i++)
		ids[i] = v[i].stack_id;
	qsort(ids, n, sizeof *ids, ui_u32_cmp);
	uint32_t best = 0;
	size_t best_n = 0, distinct = 0;
	for (size_t i = 0; i < n;) {
		size_t j = i;
		while (j < n && ids[j] == ids[i])
			j++;
		distinct++;
		if (j - i > best_n)
			best_n = j - i, best = ids[i];
		i = j;
	}
	free(ids);
	struct store_lane_info li;
	store_lane_get(ui->store, process, lane, &li);
	char a[48], w[32];
	ui->details.count = 0;
	ui_time_label(ui, t0, a, sizeof a);
	ui_format_dur(w, sizeof w, t1 - t0);
	UI_DETAIL("CPU samples    %zu in this cell (%s from %s)", n, w, a);
	UI_DETAIL("thread         %s %d", li.name && *li.name ? li.name : "thread", (int)li.tid);
	UI_DETAIL("stack          the most frequent: %zu of %zu samples (%zu distinct stacks)", best_n, n,
	          distinct);
	ui_details_stack(ui, best, UI_STACK_FRAMES, "  ");
	return 1;
}

/* What thread tid did during [a, b): blocking call, top of stack, NVTX range, GC. */
static void ui_details_activity(struct ui *ui, size_t process, pid_t tid, uint64_t a, uint64_t b,
                                const char *why)
{
	struct store_thread_activity act;
	char tn[128], d1[32], d2[32];
	store_thread_activity(ui->store, process, tid, a, b, &act);
	ui_thread_name(ui, process, tid, tn, sizeof tn);
	UI_DETAIL("thread         %s (%s)", tn, why);
	if (act.lane == SIZE_MAX) {
		UI_DETAIL("  no CPU data for this thread");
		return;
	}
	if (act.has_blocking) {
		ui_format_dur(d1, sizeof d1, act.blocking.end_ns - act.blocking.start_ns);
		ui_format_dur(d2, sizeof d2, act.blocking_overlap_ns);
		UI_DETAIL("  blocked in   %s %s (%s of the gap)",
		          store_string(ui->store, act.blocking.name_id), d1, d2);
		ui_details_stack(ui, act.blocking.stack_id, 6, "    ");
	} else {
		UI_DETAIL("  blocked in   no blocking call overlaps the gap");
	}
	if (act.samples && act.top_frame) {
		const char *mod = store_frame_module(ui->store, act.top_frame);
		UI_DETAIL("  on CPU       %llu samples; top of stack %s%s%s (%llu)",
		          (unsigned long long)act.samples, store_frame_function(ui->store, act.top_frame),
		          *mod ? "  " : "", mod, (unsigned long long)act.top_samples);
		if (act.top_stack)
			ui_details_stack(ui, act.top_stack, 4, "    ");
	} else {
		UI_DETAIL("  on CPU       no samples (off CPU or not sampled)");
	}
	if (act.has_nvtx)
		UI_DETAIL("  NVTX range   %s (depth %zu%s)", store_string(ui->store, act.nvtx.name_id),
		          act.nvtx_depth, act.nvtx.end_ns ? "" : ", open");
	else
		UI_DETAIL("  NVTX range   none");
	if (act.has_gc) {
		ui_format_dur(d1, sizeof d1, act.gc_overlap_ns);
		UI_DETAIL("  Python GC    %s: %s in the gap", store_string(ui->store, act.gc.name_id), d1);
	}
}

/* A GPU idle gap of a stream row: its length, the ops around it and what the host was doing. */
static void ui_details_gap(struct ui *ui, size_t process, size_t lane, const struct store_gpu_op *ops,
                           const struct cpuview_gap *g)
{
	char t0[48], dur[32];
	struct store_process_info pi;
	store_process_get(ui->store, process, &pi);
	ui->details.count = 0;
	ui_format_dur(dur, sizeof dur, g->end_ns - g->start_ns);
	ui_time_label(ui, g->start_ns, t0, sizeof t0);
	UI_DETAIL("GPU idle       %s on %s (pid %d)", dur, store_lane_gpu_label(ui->store, process, lane),
	          (int)pi.pid);
	UI_DETAIL("start          %s", t0);
	const struct store_gpu_op *before = &ops[g->next - 1], *after = &ops[g->next];
	UI_DETAIL(
	    "between        %s and %s",
	    before->kind == WIRE_GPU_KERNEL ? store_short_name(ui->store, before->name_id) : "a copy/memset",
	    after->kind == WIRE_GPU_KERNEL ? store_short_name(ui->store, after->name_id) : "a copy/memset");
	const char *why = "";
	pid_t tid = cpuview_gap_thread(ui->store, process, after, &why);
	if (!tid) {
		UI_DETAIL("thread         unknown (no CUDA API calls traced)");
		return;
	}
	ui_details_activity(ui, process, tid, g->start_ns, g->end_ns, why);
	const char *why2 = "";
	pid_t most = cpuview_gap_thread(ui->store, process, NULL, &why2);
	if (most && most != tid)
		ui_details_activity(ui, process, most, g->start_ns, g->end_ns, why2);
}

/* Fills the details overlay for an event. */
void ui_details(struct ui *ui, const struct ui_hit *hit)
{
	char t0[48], dur[32], where[128];
	struct store_lane_info li;
	struct store_process_info pi;
	store_process_get(ui->store, hit->process, &pi);
	store_lane_get(ui->store, hit->process, hit->lane, &li);
	ui->details.count = 0;
	if (hit->call) {
		ui_details_call(ui, hit);
		return;
	}
	if (li.kind == STORE_LANE_GPU_STREAM)
		snprintf(where, sizeof where, "stream    %s (pid %d)",
		         store_lane_gpu_label(ui->store, hit->process, hit->lane), (int)pi.pid);
	else if (li.kind == STORE_LANE_NVTX_ASYNC)
		snprintf(where, sizeof where, "lane      nvtx async (pid %d)", (int)pi.pid);
	else
		snprintf(where, sizeof where, "thread    %s %d (pid %d)",
		         li.name && *li.name ? li.name : "thread", (int)li.tid, (int)pi.pid);
	if (!hit->gpu) {
		const struct store_range *r = &hit->range;
		uint64_t end = hit->open ? ui_now(ui) : r->end_ns;
		ui_time_label(ui, r->start_ns, t0, sizeof t0);
		ui_format_dur(dur, sizeof dur, end - r->start_ns);
		int mark = r->start_ns == r->end_ns && !hit->open;
		UI_DETAIL("%s  %s", mark ? "NVTX mark" : "NVTX range", store_string(ui->store, r->name_id));
		if (r->domain_id)
			UI_DETAIL("domain    %s", store_string(ui->store, r->domain_id));
		UI_DETAIL("start     %s", t0);
		if (!mark)
			UI_DETAIL("duration  %s%s", dur, hit->open ? " so far (open)" : "");
		UI_DETAIL("%s", where);
		if (!mark && li.kind == STORE_LANE_THREAD)
			ui_details_nesting(ui, hit, end);
		return;
	}
	const struct store_gpu_op *op = &hit->op;
	ui_time_label(ui, op->start_ns, t0, sizeof t0);
	ui_format_dur(dur, sizeof dur, op->end_ns - op->start_ns);
	switch (op->kind) {
	case WIRE_GPU_KERNEL: {
		UI_DETAIL("kernel    %s", store_short_name(ui->store, op->name_id));
		UI_DETAIL("name      %s", store_string(ui->store, op->name_id));
		break;
	}
	case WIRE_GPU_MEMCPY:
		UI_DETAIL("memcpy    %s", wire_memcpy_kind_name(op->subkind));
		break;
	case WIRE_GPU_MEMSET:
		UI_DETAIL("memset");
		break;
	case WIRE_GPU_SYNC:
		UI_DETAIL("sync      %s", wire_sync_type_name(op->subkind));
		break;
	default:
		UI_DETAIL("CUDA API  %s", store_string(ui->store, op->name_id));
		break;
	}
	UI_DETAIL("start     %s", t0);
	UI_DETAIL("duration  %s", dur);
	UI_DETAIL("%s", where);
	if (op->kind == WIRE_GPU_KERNEL) {
		struct store_kernel_config kc;
		if (store_gpu_op_kernel(ui->store, hit->process, op, &kc) == 0) {
			UI_DETAIL("grid      (%d, %d, %d)   block (%d, %d, %d)", kc.grid[0], kc.grid[1],
			          kc.grid[2], kc.block[0], kc.block[1], kc.block[2]);
			UI_DETAIL("registers %u per thread   shared memory %u B static + %u B dynamic",
			          kc.registers, kc.shared_static, kc.shared_dynamic);
			if (kc.graph_id)
				UI_DETAIL("graph     %u", kc.graph_id);
		}
	}
	if (op->kind == WIRE_GPU_MEMCPY || op->kind == WIRE_GPU_MEMSET) {
		char b[64];
		uint64_t bytes = store_gpu_op_bytes(ui->store, hit->process, op);
		ui_format_bytes(b, sizeof b, bytes);
		uint64_t d = op->end_ns > op->start_ns ? op->end_ns - op->start_ns : 0;
		UI_DETAIL("bytes     %s", b);
		if (d)
			UI_DETAIL("throughput %.2f GB/s", (double)bytes / (double)d);
		if (op->kind == WIRE_GPU_MEMCPY)
			UI_DETAIL("memory    %s -> %s", wire_mem_kind_name(op->mem >> 4),
			          wire_mem_kind_name(op->mem & 15));
		else
			UI_DETAIL("memory    %s", wire_mem_kind_name(op->mem & 15));
	}
	if (li.kind == STORE_LANE_GPU_STREAM) {
		struct store_gpu_launch gl;
		if (store_gpu_op_get_launch(ui->store, hit->process, op, &gl) == 0) {
			char tn[128], lt[48];
			ui_thread_name(ui, hit->process, gl.tid, tn, sizeof tn);
			ui_time_label(ui, gl.start_ns, lt, sizeof lt);
			UI_DETAIL("launched  %s on %s at %s", store_string(ui->store, gl.name_id), tn, lt);
			if (op->start_ns >= gl.start_ns) {
				ui_format_dur(dur, sizeof dur, op->start_ns - gl.start_ns);
				UI_DETAIL("latency   %s from the API call to the GPU start", dur);
			}
		} else {
			UI_DETAIL("launched  unknown (graph node, API tracing off or too old)");
		}
	}
}

/* Where a reduced stretch still open ends: now while the process is connected, else its newest reading. */
uint64_t ui_cost_until(const struct ui *ui, size_t process)
{
	struct store_process_info pi;
	store_process_get(ui->store, process, &pi);
	if (pi.connected)
		return ui_now(ui);
	uint64_t newest = 0;
	for (uint32_t s = 1; s < WIRE_COST_SOURCE_MAX; s++) {
		struct store_cost c;
		if (store_cost_get(ui->store, process, s, &c) == 0 && c.time_ns > newest)
			newest = c.time_ns;
	}
	return newest;
}

/* Lines saying which CPU-side sources the overhead budget held reduced in [t0, t1); how many. */
static int ui_details_reduced(struct ui *ui, size_t process, uint64_t t0, uint64_t t1)
{
	uint64_t until = ui_cost_until(ui, process);
	int n = 0;
	for (uint32_t s = 1; s < WIRE_COST_SOURCE_MAX; s++) {
		uint32_t level = 0;
		if (!(COSTVIEW_CPU_SOURCES & 1u << s) ||
		    !costview_reduced_in(ui->store, process, s, t0, t1, until, &level))
			continue;
		struct store_cost c;
		store_cost_get(ui->store, process, s, &c);
		char text[160];
		costview_reduced_text(s, level, c.asked_level, text, sizeof text);
		UI_DETAIL("budget         %s", text);
		n++;
	}
	return n;
}

/* The cost rows at the cursor's cell: each source's rate there and its totals. */
static void ui_details_cost(struct ui *ui, size_t process, uint64_t t0, uint64_t t1)
{
	struct store_process_info pi;
	store_process_get(ui->store, process, &pi);
	char a[48], w[32];
	ui->details.count = 0;
	ui_time_label(ui, t0, a, sizeof a);
	ui_format_dur(w, sizeof w, t1 - t0);
	UI_DETAIL("profiler cost  pid %d, the cell of %s from %s", (int)pi.pid, w, a);
	for (uint32_t s = 1; s < WIRE_COST_SOURCE_MAX; s++) {
		struct store_cost c;
		if (store_cost_get(ui->store, process, s, &c) != 0)
			continue;
		struct costview_rate r;
		costview_rate(ui->store, process, s, t0, t1, ui_data_end(ui, UINT64_MAX), &r);
		char rate[64] = "no readings around this cell", level[32];
		if (r.covered_ns)
			snprintf(rate, sizeof rate, "%.2f ms/s CPU, est. +%.2f %%", r.cpu_ms_per_s,
			         r.added_pct);
		UI_DETAIL("  %-10s  here %s; setting now %s%s", wire_cost_source_name(s), rate,
		          costview_level_text(s, c.level, level, sizeof level),
		          c.reduced ? " (reduced)" : "");
		UI_DETAIL("              so far %.1f ms CPU, %.1f ms added, %llu events, %u back-offs",
		          (double)c.cpu_ns / 1e6, (double)c.added_ns / 1e6, (unsigned long long)c.events,
		          c.backoffs);
	}
	ui_details_reduced(ui, process, t0, t1);
	UI_DETAIL("not counted    CUPTI's time inside the driver (on the program's threads)");
	UI_DETAIL(
	    "est. added     time of the program's threads in the collector's code, as a slowdown of one");
	UI_DETAIL("               thread: added / (elapsed - added)");
}

/*
 * Details with nothing under the cursor: the samples of the cursor's cell on a thread row, or the
 * GPU idle gap holding the cursor on a stream row. 1 when the overlay was filled.
 */
int ui_cpu_details(struct ui *ui, const struct layout_row *row)
{
	if (row->kind == LAYOUT_ROW_THREAD || row->kind == LAYOUT_ROW_COST) {
		int c = ui_cursor_col(ui);
		uint64_t t0 = viewport_ns_of(&ui->view.vp, c),
		         t1 = ui_data_end(ui, viewport_ns_of(&ui->view.vp, c + 1));
		if (t1 <= t0)
			return 0;
		if (row->kind == LAYOUT_ROW_COST) {
			ui_details_cost(ui, row->process, t0, t1);
			return 1;
		}
		if (ui_details_samples(ui, row->process, row->lane, t0, t1)) {
			ui_details_reduced(ui, row->process, t0, t1);
			return 1;
		}
		ui->details.count = 0;
		return ui_details_reduced(ui, row->process, t0, t1) > 0;
	}
	if (row->kind != LAYOUT_ROW_GPU_STREAM)
		return 0;
	const struct store_gpu_op *ops;
	size_t n = store_lane_gpu_all(ui->store, row->process, row->lane, row->row, &ops);
	struct cpuview_gap g;
	if (!cpuview_gap_at(ops, n, ui_cursor_ns(ui), ui_gap_min(ui), &g))
		return 0;
	ui_details_gap(ui, row->process, row->lane, ops, &g);
	return 1;
}
