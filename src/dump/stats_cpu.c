/*
 * CPU stats sections: hot functions per thread (by self samples, and by inclusive samples), blocking
 * calls (and Python GC) per thread, and per-thread counters, handed row by row to the caller's table
 * (see stats_cpu.h).
 */
#include "cuscope/stats_cpu.h"
#include "cuscope/store.h"
#include "cuscope/u64.h"
#include "cuscope/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Thread lanes of a process sorted by tid. */
struct thread_ref {
	size_t lane;
	pid_t tid;
};

static int cmp_thread_ref(const void *a, const void *b)
{
	const struct thread_ref *x = a, *y = b;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->lane < y->lane ? -1 : x->lane > y->lane;
}

static struct thread_ref *threads_by_tid(const struct store *st, size_t p, size_t *count)
{
	struct store_process_info pi;
	store_process_get(st, p, &pi);
	struct thread_ref *v = NULL;
	size_t n = 0, cap = 0;
	for (size_t l = 0; l < pi.lane_count; l++) {
		struct store_lane_info li;
		store_lane_get(st, p, l, &li);
		if (li.kind != STORE_LANE_THREAD)
			continue;
		xgrow((void **)&v, &cap, n + 1, sizeof *v);
		v[n++] = (struct thread_ref){l, li.tid};
	}
	if (n)
		qsort(v, n, sizeof *v, cmp_thread_ref);
	*count = n;
	return v;
}

/* ---- hot ---- */

static const struct stats_cpu_column hot_cols[] = {
    {"pid", STATS_CPU_INT},      {"tid", STATS_CPU_INT},    {"thread", STATS_CPU_STR},
    {"function", STATS_CPU_STR}, {"module", STATS_CPU_STR}, {"samples", STATS_CPU_INT},
    {"share", STATS_CPU_FLOAT},
};

void stats_cpu_hot(const struct store *st, stats_cpu_row_fn row, void *ctx)
{
	struct store_hot_function top[STATS_CPU_HOT_TOP];
	for (size_t p = 0; p < store_process_count(st); p++) {
		struct store_process_info pi;
		store_process_get(st, p, &pi);
		size_t n;
		struct thread_ref *threads = threads_by_tid(st, p, &n);
		for (size_t i = 0; i < n; i++) {
			struct store_lane_cpu_info ci;
			store_lane_cpu_get(st, p, threads[i].lane, &ci);
			if (!ci.samples)
				continue;
			struct store_lane_info li;
			store_lane_get(st, p, threads[i].lane, &li);
			uint64_t samples;
			/* Callers with no self samples sort after every leaf: the top rows are leaves. */
			size_t m = store_hot_functions(st, p, threads[i].lane, 0, UINT64_MAX,
			                               STATS_CPU_HOT_TOP, top, &samples);
			for (size_t k = 0; k < m && top[k].self; k++) {
				char share[32], label[1024];
				double f = samples ? (double)top[k].self / (double)samples : 0.0;
				snprintf(share, sizeof share, "%.4f", f);
				struct stats_cpu_cell cells[] = {
				    {NULL, pi.pid, 0},
				    {NULL, li.tid, 0},
				    {li.name, 0, 0},
				    {store_frame_label(st, top[k].frame_id, label, sizeof label), 0, 0},
				    {store_frame_module(st, top[k].frame_id), 0, 0},
				    {NULL, (int64_t)top[k].self, 0},
				    {share, 0, f},
				};
				row(ctx, cells, sizeof cells / sizeof cells[0]);
			}
		}
		free(threads);
	}
}

/* ---- hot-inclusive ---- */

static const struct stats_cpu_column inclusive_cols[] = {
    {"pid", STATS_CPU_INT},      {"tid", STATS_CPU_INT},     {"thread", STATS_CPU_STR},
    {"function", STATS_CPU_STR}, {"module", STATS_CPU_STR},  {"inclusive", STATS_CPU_INT},
    {"self", STATS_CPU_INT},     {"share", STATS_CPU_FLOAT},
};

void stats_cpu_hot_inclusive(const struct store *st, stats_cpu_row_fn row, void *ctx)
{
	struct store_hot_function top[STATS_CPU_HOT_TOP];
	for (size_t p = 0; p < store_process_count(st); p++) {
		struct store_process_info pi;
		store_process_get(st, p, &pi);
		size_t n;
		struct thread_ref *threads = threads_by_tid(st, p, &n);
		for (size_t i = 0; i < n; i++) {
			struct store_lane_cpu_info ci;
			store_lane_cpu_get(st, p, threads[i].lane, &ci);
			if (!ci.samples)
				continue;
			struct store_lane_info li;
			store_lane_get(st, p, threads[i].lane, &li);
			uint64_t samples;
			size_t m = store_hot_inclusive(st, p, threads[i].lane, 0, UINT64_MAX,
			                               STATS_CPU_HOT_TOP, top, &samples, NULL);
			for (size_t k = 0; k < m; k++) {
				char share[32], label[1024];
				double f = samples ? (double)top[k].total / (double)samples : 0.0;
				snprintf(share, sizeof share, "%.4f", f);
				struct stats_cpu_cell cells[] = {
				    {NULL, pi.pid, 0},
				    {NULL, li.tid, 0},
				    {li.name, 0, 0},
				    {store_frame_label(st, top[k].frame_id, label, sizeof label), 0, 0},
				    {store_frame_module(st, top[k].frame_id), 0, 0},
				    {NULL, (int64_t)top[k].total, 0},
				    {NULL, (int64_t)top[k].self, 0},
				    {share, 0, f},
				};
				row(ctx, cells, sizeof cells / sizeof cells[0]);
			}
		}
		free(threads);
	}
}

/* ---- osrt ---- */

struct call_group {
	uint32_t name_id; /* 0 = the GC row */
	uint64_t *durations;
	size_t n, cap;
	uint64_t total;
};

static int cmp_call_group(const void *a, const void *b)
{
	const struct call_group *x = a, *y = b;
	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	if (x->n != y->n)
		return x->n > y->n ? -1 : 1;
	return x->name_id < y->name_id ? -1 : x->name_id > y->name_id;
}

static void group_add(struct call_group **g, size_t *n, size_t *cap, uint32_t name, uint64_t d)
{
	size_t i;
	for (i = 0; i < *n && (*g)[i].name_id != name; i++)
		;
	if (i == *n) {
		xgrow((void **)g, cap, *n + 1, sizeof **g);
		memset(&(*g)[i], 0, sizeof **g);
		(*g)[i].name_id = name;
		(*n)++;
	}
	struct call_group *e = &(*g)[i];
	xgrow((void **)&e->durations, &e->cap, e->n + 1, sizeof *e->durations);
	e->durations[e->n++] = d;
	e->total += d;
}

static const struct stats_cpu_column osrt_cols[] = {
    {"pid", STATS_CPU_INT},    {"tid", STATS_CPU_INT},    {"thread", STATS_CPU_STR},
    {"call", STATS_CPU_STR},   {"count", STATS_CPU_INT},  {"total_ns", STATS_CPU_INT},
    {"p50_ns", STATS_CPU_INT}, {"p99_ns", STATS_CPU_INT}, {"max_ns", STATS_CPU_INT},
};

void stats_cpu_osrt(const struct store *st, stats_cpu_row_fn row, void *ctx)
{
	for (size_t p = 0; p < store_process_count(st); p++) {
		struct store_process_info pi;
		store_process_get(st, p, &pi);
		size_t nt;
		struct thread_ref *threads = threads_by_tid(st, p, &nt);
		for (size_t i = 0; i < nt; i++) {
			size_t l = threads[i].lane;
			struct store_lane_cpu_info ci;
			store_lane_cpu_get(st, p, l, &ci);
			if (!ci.osrt_calls && !ci.gc_count)
				continue;
			/* Few distinct calls per thread: a linear group list is enough. */
			struct call_group *g = NULL;
			size_t n = 0, cap = 0;
			for (size_t r = 0; r < ci.osrt_row_count; r++) {
				const struct store_call *c;
				size_t m = store_lane_osrt_query(st, p, l, r, 0, UINT64_MAX, &c);
				for (size_t k = 0; k < m; k++)
					group_add(&g, &n, &cap, c[k].name_id ? c[k].name_id : UINT32_MAX,
					          c[k].end_ns - c[k].start_ns);
			}
			for (size_t r = 0; r < ci.gc_row_count; r++) {
				const struct store_call *c;
				size_t m = store_lane_gc_query(st, p, l, r, 0, UINT64_MAX, &c);
				for (size_t k = 0; k < m; k++)
					group_add(&g, &n, &cap, 0, c[k].end_ns - c[k].start_ns);
			}
			if (n)
				qsort(g, n, sizeof *g, cmp_call_group);
			struct store_lane_info li;
			store_lane_get(st, p, l, &li);
			for (size_t k = 0; k < n; k++) {
				struct call_group *e = &g[k];
				u64_sort(e->durations, e->n);
				const char *call = e->name_id == 0            ? STATS_CPU_GC_CALL
				                   : e->name_id == UINT32_MAX ? "?"
				                                              : store_string(st, e->name_id);
				struct stats_cpu_cell cells[] = {
				    {NULL, pi.pid, 0},
				    {NULL, li.tid, 0},
				    {li.name, 0, 0},
				    {call, 0, 0},
				    {NULL, (int64_t)e->n, 0},
				    {NULL, (int64_t)e->total, 0},
				    {NULL, (int64_t)u64_percentile(e->durations, e->n, 0.50), 0},
				    {NULL, (int64_t)u64_percentile(e->durations, e->n, 0.99), 0},
				    {NULL, (int64_t)e->durations[e->n - 1], 0},
				};
				row(ctx, cells, sizeof cells / sizeof cells[0]);
				free(e->durations);
			}
			free(g);
		}
		free(threads);
	}
}

/* ---- counters ---- */

struct counter_ref {
	const struct store *st;
	struct store_counter c;
};

static int cmp_counter_ref(const void *a, const void *b)
{
	const struct counter_ref *x = a, *y = b;
	if (x->c.tid != y->c.tid)
		return x->c.tid < y->c.tid ? -1 : 1;
	return strcmp(store_string(x->st, x->c.event_id), store_string(y->st, y->c.event_id));
}

static const struct stats_cpu_column counter_cols[] = {
    {"pid", STATS_CPU_INT},   {"tid", STATS_CPU_INT},   {"thread", STATS_CPU_STR},
    {"event", STATS_CPU_STR}, {"value", STATS_CPU_INT},
};

void stats_cpu_counters(const struct store *st, stats_cpu_row_fn row, void *ctx)
{
	for (size_t p = 0; p < store_process_count(st); p++) {
		struct store_process_info pi;
		store_process_get(st, p, &pi);
		size_t n = store_counter_count(st, p);
		if (!n)
			continue;
		struct counter_ref *v = xcalloc(n, sizeof *v);
		for (size_t i = 0; i < n; i++) {
			v[i].st = st;
			store_counter_get(st, p, i, &v[i].c);
		}
		qsort(v, n, sizeof *v, cmp_counter_ref);
		for (size_t i = 0; i < n; i++) {
			size_t lane = store_thread_lane_find(st, p, v[i].c.tid);
			const char *name = "";
			struct store_lane_info li;
			if (lane != SIZE_MAX) {
				store_lane_get(st, p, lane, &li);
				name = li.name;
			}
			struct stats_cpu_cell cells[] = {
			    {NULL, pi.pid, 0},
			    {NULL, v[i].c.tid, 0},
			    {name, 0, 0},
			    {store_string(st, v[i].c.event_id), 0, 0},
			    {NULL, (int64_t)v[i].c.value, 0},
			};
			row(ctx, cells, sizeof cells / sizeof cells[0]);
		}
		free(v);
	}
}

#define COLS(a) a, sizeof a / sizeof a[0]
static const struct stats_cpu_section sections[] = {
    {"hot", COLS(hot_cols), stats_cpu_hot},
    {"osrt", COLS(osrt_cols), stats_cpu_osrt},
    {"counters", COLS(counter_cols), stats_cpu_counters},
    {"hot-inclusive", COLS(inclusive_cols), stats_cpu_hot_inclusive},
};

const struct stats_cpu_section *stats_cpu_sections(size_t *count)
{
	*count = sizeof sections / sizeof sections[0];
	return sections;
}
