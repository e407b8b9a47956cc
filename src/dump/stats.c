/*
 * Stats sections. Each section is built as a generic table (named columns, typed cells) and then
 * printed by one of three writers, so table, CSV and JSON always hold the same rows.
 */
#include "cuscope/hashmap.h"
#include "cuscope/stats.h"
#include "cuscope/stats_cpu.h"
#include "cuscope/stats_ranks.h"
#include "cuscope/steps.h"
#include "cuscope/store.h"
#include "cuscope/trigger.h"
#include "cuscope/u64.h"
#include "cuscope/wire.h"
#include "cuscope/xalloc.h"
#include "stats_table.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* ---- nvtx ---- */

/* Style 3: steps inferred from a process's kernel stream (steps.h), listed as "step" in domain "inferred". */
static const char *const style_names[] = {"PushPop", "StartEnd", "Mark", "Inferred"};
#define STYLE_INFERRED 3

struct nvtx_group {
	uint32_t name_id, domain_id;
	int style;
	uint64_t *durations;
	size_t n, cap;
	uint64_t total;
};

struct nvtx_groups {
	struct nvtx_group *v;
	size_t n, cap;
	struct hashmap map; /* by (name, domain, style): index + 1 */
};

struct group_key {
	const struct nvtx_groups *g;
	uint32_t name, domain;
	int style;
};

static uint32_t group_hash(uint32_t name, uint32_t domain, int style)
{
	return (name * 2654435761u) ^ (domain * 40503u) ^ (uint32_t)style * 97u;
}

static int group_eq(const void *key, uint32_t ref)
{
	const struct group_key *k = key;
	const struct nvtx_group *e = &k->g->v[ref - 1];
	return e->name_id == k->name && e->domain_id == k->domain && e->style == k->style;
}

static uint64_t group_rehash(const void *ctx, uint32_t ref)
{
	const struct nvtx_groups *g = ctx;
	return group_hash(g->v[ref - 1].name_id, g->v[ref - 1].domain_id, g->v[ref - 1].style);
}

static struct nvtx_group *group_get(struct nvtx_groups *g, uint32_t name, uint32_t domain, int style)
{
	hashmap_reserve(&g->map, 256, group_rehash, g, xcalloc);
	struct group_key key = {g, name, domain, style};
	uint32_t *slot = hashmap_slot(&g->map, group_hash(name, domain, style), group_eq, &key);
	if (*slot)
		return &g->v[*slot - 1];
	xgrow((void **)&g->v, &g->cap, g->n + 1, sizeof *g->v);
	struct nvtx_group *e = &g->v[g->n];
	memset(e, 0, sizeof *e);
	e->name_id = name;
	e->domain_id = domain;
	e->style = style;
	hashmap_fill(&g->map, slot, (uint32_t)++g->n);
	return e;
}

static void group_add_ns(struct nvtx_group *e, uint64_t d)
{
	xgrow((void **)&e->durations, &e->cap, e->n + 1, sizeof *e->durations);
	e->durations[e->n++] = d;
	e->total += d;
}

static void group_add(struct nvtx_groups *g, const struct store_range *r, int style)
{
	group_add_ns(group_get(g, r->name_id, r->domain_id, style), r->end_ns - r->start_ns);
}

/* The steps inferred for each process without repeating NVTX ranges, as one group. */
static void group_add_inferred(struct nvtx_groups *g, const struct store *st)
{
	struct steps_result r = {0};
	for (size_t p = 0; p < store_process_count(st); p++) {
		steps_infer(st, p, 0, &r);
		for (size_t i = 0; i < r.n; i++)
			group_add_ns(group_get(g, 0, 0, STYLE_INFERRED), r.v[i].end_ns - r.v[i].start_ns);
	}
	steps_result_fini(&r);
}

static int cmp_group_total(const void *a, const void *b)
{
	const struct nvtx_group *x = a, *y = b;
	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	if (x->n != y->n)
		return x->n > y->n ? -1 : 1;
	return x->name_id < y->name_id ? -1 : x->name_id > y->name_id;
}

static const struct column nvtx_cols[] = {
    {"name", CELL_STR},   {"domain", CELL_STR},   {"style", CELL_STR},
    {"count", CELL_INT},  {"total_ns", CELL_INT}, {"min_ns", CELL_INT},
    {"p50_ns", CELL_INT}, {"p99_ns", CELL_INT},   {"max_ns", CELL_INT},
};

static void section_nvtx(const struct store *st, struct table *t)
{
	struct nvtx_groups g = {0};
	for (size_t p = 0; p < store_process_count(st); p++) {
		struct store_process_info pi;
		store_process_get(st, p, &pi);
		for (size_t l = 0; l < pi.lane_count; l++) {
			struct store_lane_info li;
			store_lane_get(st, p, l, &li);
			int style = li.kind == STORE_LANE_NVTX_ASYNC ? 1 : 0;
			for (size_t row = 0; row < li.row_count; row++) {
				const struct store_range *r;
				size_t n = store_lane_row_all(st, p, l, row, &r);
				for (size_t i = 0; i < n; i++)
					group_add(&g, &r[i], style);
			}
			const struct store_range *m;
			size_t n = store_lane_mark_query(st, p, l, 0, UINT64_MAX, &m);
			for (size_t i = 0; i < n; i++)
				group_add(&g, &m[i], 2);
		}
	}
	group_add_inferred(&g, st);
	if (g.n)
		qsort(g.v, g.n, sizeof *g.v, cmp_group_total);
	for (size_t i = 0; i < g.n; i++) {
		struct nvtx_group *e = &g.v[i];
		u64_sort(e->durations, e->n);
		int inferred = e->style == STYLE_INFERRED;
		stats_table_row(t, inferred ? "step" : store_string(st, e->name_id),
		                inferred ? "inferred" : store_string(st, e->domain_id), style_names[e->style],
		                (int64_t)e->n, (int64_t)e->total, (int64_t)e->durations[0],
		                (int64_t)u64_percentile(e->durations, e->n, 0.50),
		                (int64_t)u64_percentile(e->durations, e->n, 0.99),
		                (int64_t)e->durations[e->n - 1]);
		free(e->durations);
	}
	free(g.v);
	hashmap_fini(&g.map);
}

/* ---- threads, processes, losses ---- */

static const struct column thread_cols[] = {{"pid", CELL_INT}, {"tid", CELL_INT}, {"name", CELL_STR}};

static void section_threads(const struct store *st, struct table *t)
{
	for (size_t p = 0; p < store_process_count(st); p++) {
		struct store_process_info pi;
		store_process_get(st, p, &pi);
		for (size_t l = 0; l < pi.lane_count; l++) {
			struct store_lane_info li;
			store_lane_get(st, p, l, &li);
			if (li.kind == STORE_LANE_THREAD)
				stats_table_row(t, (int64_t)pi.pid, (int64_t)li.tid, li.name);
		}
	}
}

static const struct column process_cols[] = {
    {"pid", CELL_INT},  {"ppid", CELL_INT},       {"cmdline", CELL_STR},    {"status", CELL_STR},
    {"rank", CELL_INT}, {"local_rank", CELL_INT}, {"world_size", CELL_INT}, {"restart_count", CELL_INT}};

/* With several captures (store_capture_begin), also where each process ran. */
static const struct column process_cols_captures[] = {
    {"pid", CELL_INT},  {"ppid", CELL_INT},       {"cmdline", CELL_STR},    {"status", CELL_STR},
    {"rank", CELL_INT}, {"local_rank", CELL_INT}, {"world_size", CELL_INT}, {"restart_count", CELL_INT},
    {"host", CELL_STR}, {"capture", CELL_INT}};

static void section_processes(const struct store *st, struct table *t)
{
	if (store_capture_count(st) > 1) {
		t->cols = process_cols_captures;
		t->col_count = sizeof process_cols_captures / sizeof process_cols_captures[0];
	}
	for (size_t p = 0; p < store_process_count(st); p++) {
		struct store_process_info pi;
		store_process_get(st, p, &pi);
		char end[128];
		store_process_end_text(&pi, end, sizeof end);
		stats_table_row(t, (int64_t)pi.pid, (int64_t)pi.ppid, pi.cmdline, end[0] ? end : "complete",
		                (int64_t)pi.rank, (int64_t)pi.local_rank, (int64_t)pi.world_size,
		                (int64_t)pi.restart_count, pi.host, (int64_t)pi.capture);
	}
}

static const struct column loss_cols[] = {{"cause", CELL_STR}, {"count", CELL_INT}};

static void section_losses(const struct store *st, struct table *t)
{
	for (uint32_t cause = 1; cause < WIRE_LOSS_CAUSE_MAX; cause++)
		stats_table_row(t, wire_loss_cause_name(cause), (int64_t)store_loss_count(st, cause));
}

/* ---- CPU: hot, osrt, counters (built by stats_cpu.c) ---- */

/* Appends one row from stats_cpu.c; its FLOAT cells arrive as text with 4 decimals (CELL_STR). */
static void cpu_row(void *ctx, const struct stats_cpu_cell *v, size_t n)
{
	struct table *t = ctx;
	xgrow((void **)&t->cells, &t->cap_cells, (t->rows + 1) * t->col_count, sizeof *t->cells);
	struct cell *row = &t->cells[t->rows * t->col_count];
	for (size_t c = 0; c < t->col_count; c++) {
		row[c].str = t->cols[c].type == CELL_STR ? xstrdup(c < n && v[c].str ? v[c].str : "") : NULL;
		row[c].num = c < n ? v[c].num : 0;
	}
	t->rows++;
}

static const struct column hot_cols[] = {
    {"pid", CELL_INT},    {"tid", CELL_INT},     {"thread", CELL_STR}, {"function", CELL_STR},
    {"module", CELL_STR}, {"samples", CELL_INT}, {"share", CELL_STR},
};
static const struct column osrt_cols[] = {
    {"pid", CELL_INT},    {"tid", CELL_INT},    {"thread", CELL_STR},
    {"call", CELL_STR},   {"count", CELL_INT},  {"total_ns", CELL_INT},
    {"p50_ns", CELL_INT}, {"p99_ns", CELL_INT}, {"max_ns", CELL_INT},
};
static const struct column counter_cols[] = {
    {"pid", CELL_INT}, {"tid", CELL_INT}, {"thread", CELL_STR}, {"event", CELL_STR}, {"value", CELL_INT},
};

static const struct column inclusive_cols[] = {
    {"pid", CELL_INT},    {"tid", CELL_INT},       {"thread", CELL_STR}, {"function", CELL_STR},
    {"module", CELL_STR}, {"inclusive", CELL_INT}, {"self", CELL_INT},   {"share", CELL_STR},
};

static void section_hot_inclusive(const struct store *st, struct table *t)
{
	stats_cpu_hot_inclusive(st, cpu_row, t);
}

static void section_hot(const struct store *st, struct table *t)
{
	stats_cpu_hot(st, cpu_row, t);
}

static void section_osrt(const struct store *st, struct table *t)
{
	stats_cpu_osrt(st, cpu_row, t);
}

static void section_counters(const struct store *st, struct table *t)
{
	stats_cpu_counters(st, cpu_row, t);
}

/* ---- ranks: the straggler table ---- */

static const struct column rank_cols[] = {
    {"host", CELL_STR},        {"rank", CELL_INT},    {"pid", CELL_INT},
    {"gpu", CELL_STR},         {"steps", CELL_INT},   {"step_p50_ns", CELL_INT},
    {"step_p99_ns", CELL_INT}, {"nccl_ns", CELL_INT}, {"compute_ns", CELL_INT},
    {"gpu_idle_ns", CELL_INT}, {"restart", CELL_INT}, {"steps_inferred", CELL_BOOL},
};

/* Rows in the order stats_ranks_compute sorts them: the straggler (most compute time) first. */
static void section_ranks(const struct store *st, struct table *t, const char *step_range)
{
	struct stats_rank_row *v;
	size_t n = stats_ranks_compute(st, step_range, &v);
	for (size_t i = 0; i < n; i++)
		stats_table_row(t, v[i].host, (int64_t)v[i].rank, (int64_t)v[i].pid, v[i].gpu,
		                (int64_t)v[i].steps, (int64_t)v[i].step_p50_ns, (int64_t)v[i].step_p99_ns,
		                (int64_t)v[i].nccl_ns, (int64_t)v[i].compute_ns, (int64_t)v[i].gpu_idle_ns,
		                (int64_t)v[i].restart, v[i].inferred);
	free(v);
}

/* ---- cost: the collector's own cost per process and source ---- */

static const struct column cost_cols[] = {
    {"pid", CELL_INT},    {"source", CELL_STR},   {"cpu_ns", CELL_INT}, {"added_ns", CELL_INT},
    {"events", CELL_INT}, {"backoffs", CELL_INT}, {"level", CELL_INT},  {"reduced", CELL_BOOL},
};

/* Totals since each process started (its newest readings); reduced = held by the budget at the end. */
static void section_cost(const struct store *st, struct table *t)
{
	for (size_t p = 0; p < store_process_count(st); p++) {
		struct store_process_info pi;
		store_process_get(st, p, &pi);
		for (uint32_t s = 1; s < WIRE_COST_SOURCE_MAX; s++) {
			struct store_cost c;
			if (store_cost_get(st, p, s, &c) != 0)
				continue;
			stats_table_row(t, (int64_t)pi.pid, wire_cost_source_name(s), (int64_t)c.cpu_ns,
			                (int64_t)c.added_ns, (int64_t)c.events, (int64_t)c.backoffs,
			                (int64_t)c.level, c.reduced);
		}
	}
}

/* ---- clock_alignment: how several captures were put on one time axis ---- */

static const struct column align_cols[] = {
    {"capture", CELL_INT},         {"host", CELL_STR},
    {"method", CELL_STR},          {"offset_ns", CELL_INT},
    {"correction_ns", CELL_INT},   {"drift_ppb", CELL_INT},
    {"matched", CELL_INT},         {"unmatched", CELL_INT},
    {"outliers", CELL_INT},        {"residual_p50_ns", CELL_INT},
    {"residual_max_ns", CELL_INT},
};

/* One row per capture (cli_load_captures kept its alignment), host from its first process; or one
 * per host of a live view's capture (clock_align_manifest_apply), all of capture 0. */
static void section_clock_alignment(const struct store *st, struct table *t)
{
	struct store_capture_clock k;
	for (uint32_t c = 0; c < store_capture_count(st) || store_capture_get_clock(st, c, &k) == 0; c++) {
		if (store_capture_get_clock(st, c, &k) != 0)
			continue;
		const char *host = k.host;
		for (size_t p = 0; !host[0] && p < store_process_count(st); p++) {
			struct store_process_info pi;
			store_process_get(st, p, &pi);
			if (pi.capture == c) {
				host = pi.host;
				break;
			}
		}
		stats_table_row(t, k.host[0] ? 0 : (int64_t)c, host, k.method, k.offset_ns, k.correction_ns,
		                k.drift_ppb, (int64_t)k.matched, (int64_t)k.unmatched, (int64_t)k.outliers,
		                k.residual_p50_ns, k.residual_max_ns);
	}
}

/* ---- triggers: the firings a viewer wrote into the capture as notices ---- */

static const struct column trigger_cols[] = {
    {"time_ns", CELL_INT}, {"expr", CELL_STR},  {"value", CELL_INT},  {"pid", CELL_INT},
    {"file", CELL_STR},    {"cause", CELL_STR}, {"pre_ns", CELL_INT}, {"pre_held_ns", CELL_INT},
};

static void section_triggers(const struct store *st, struct table *t)
{
	struct trigger_notice *v;
	size_t n = trigger_notices(st, &v);
	for (size_t i = 0; i < n; i++)
		stats_table_row(t, (int64_t)v[i].time_ns, v[i].expr, (int64_t)v[i].value_ns,
		                (int64_t)v[i].pid, v[i].file, v[i].cause, (int64_t)v[i].pre_ns,
		                (int64_t)v[i].held_ns);
	free(v);
}

struct section {
	const char *name;
	const struct column *cols;
	size_t col_count;
	void (*build)(const struct store *st, struct table *t);
	/* Instead of build, for a section that takes the step range (stats --step-range). */
	void (*build_steps)(const struct store *st, struct table *t, const char *step_range);
	int several; /* written only for several captures read together (one prints as it did) */
};

#define COLS(a) a, sizeof a / sizeof a[0]
static const struct section sections[] = {
    {"nvtx", COLS(nvtx_cols), section_nvtx},
    {"threads", COLS(thread_cols), section_threads},
    {"processes", COLS(process_cols), section_processes},
    {"losses", COLS(loss_cols), section_losses},
    {"kernels", COLS(stats_kernel_cols), stats_section_kernels},
    {"memcpy", COLS(stats_memcpy_cols), stats_section_memcpy},
    {"memset", COLS(stats_memset_cols), stats_section_memset},
    {"sync", COLS(stats_sync_cols), stats_section_sync},
    {"gpus", COLS(stats_gpu_cols), stats_section_gpus},
    {"streams", COLS(stats_stream_cols), stats_section_streams},
    {"api", COLS(stats_api_cols), stats_section_api},
    {"hot", COLS(hot_cols), section_hot},
    {"hot-inclusive", COLS(inclusive_cols), section_hot_inclusive},
    {"osrt", COLS(osrt_cols), section_osrt},
    {"counters", COLS(counter_cols), section_counters},
    {"cost", COLS(cost_cols), section_cost},
    {"gpu_metrics", COLS(stats_metric_cols), stats_metrics_section},
    {"ranks", COLS(rank_cols), NULL, section_ranks},
    {"clock_alignment", COLS(align_cols), section_clock_alignment, NULL, 1},
    {"triggers", COLS(trigger_cols), section_triggers},
};

int stats_format_parse(const char *text, enum stats_format *out)
{
	static const struct {
		const char *name;
		enum stats_format format;
	} names[] = {{"table", STATS_FORMAT_TABLE}, {"csv", STATS_FORMAT_CSV}, {"json", STATS_FORMAT_JSON}};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		if (strcmp(text, names[i].name) == 0) {
			*out = names[i].format;
			return 0;
		}
	}
	return -EINVAL;
}

int stats_report_parse(const char *list, unsigned *mask, const char **bad, size_t *bad_len)
{
	unsigned m = 0;
	const char *p = list;
	for (;;) {
		size_t len = strcspn(p, ",");
		size_t s = 0;
		while (s < sizeof sections / sizeof sections[0] &&
		       !(strlen(sections[s].name) == len && strncmp(sections[s].name, p, len) == 0))
			s++;
		if (s == sizeof sections / sizeof sections[0]) {
			if (len == 0 && p[len] == '\0' && p != list) /* a trailing comma */
				break;
			*bad = p;
			*bad_len = len;
			return -EINVAL;
		}
		m |= 1u << s;
		if (!p[len])
			break;
		p += len + 1;
	}
	*mask = m;
	return 0;
}

const char *stats_section_names(void)
{
	return "nvtx, threads, processes, losses, kernels, memcpy, memset, sync, gpus, streams, api, hot, "
	       "hot-inclusive, osrt, counters, cost, gpu_metrics, ranks, clock_alignment, triggers";
}

int stats_write(FILE *out, const struct store *st, enum stats_format format)
{
	return stats_write_sections(out, st, format, STATS_SECTIONS_ALL);
}

int stats_write_sections(FILE *out, const struct store *st, enum stats_format format, unsigned mask)
{
	return stats_write_sections_steps(out, st, format, mask, NULL);
}

int stats_write_sections_steps(FILE *out, const struct store *st, enum stats_format format, unsigned mask,
                               const char *step_range)
{
	if (format == STATS_FORMAT_JSON)
		fputc('{', out);
	int first = 1;
	for (size_t s = 0; s < sizeof sections / sizeof sections[0]; s++) {
		/* A live view's capture of several hosts (attach --ssh) kept how each was aligned. */
		struct store_capture_clock kept;
		int aligned = store_capture_count(st) >= 2 || store_capture_get_clock(st, 0, &kept) == 0;
		if (!(mask & 1u << s) || (sections[s].several && !aligned))
			continue;
		struct table t = {sections[s].name, sections[s].cols, sections[s].col_count, NULL, 0, 0};
		if (sections[s].build_steps)
			sections[s].build_steps(st, &t, step_range);
		else
			sections[s].build(st, &t);
		errno = 0;
		stats_table_write(out, &t, format, first);
		first = 0;
		stats_table_fini(&t);
		/* The first failed write's errno (a full disk), before later calls lose it. */
		if (ferror(out))
			return errno ? -errno : -EIO;
	}
	errno = 0;
	if (format == STATS_FORMAT_JSON)
		fputs("\n}\n", out);
	return ferror(out) ? (errno ? -errno : -EIO) : 0;
}
