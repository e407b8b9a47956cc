/*
 * The GPU stats sections: kernels, memcpy, memset, sync, gpus, streams and api, each grouped from
 * the store's GPU operations and API calls (stats.c lists them among the others).
 */
#include "cuscope/hashmap.h"
#include "cuscope/stats.h"
#include "cuscope/store.h"
#include "cuscope/u64.h"
#include "cuscope/wire.h"
#include "cuscope/xalloc.h"
#include "stats_table.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* ---- GPU: kernels, memcpy, memset, sync, gpus, streams, api ---- */

/* A group of GPU ops sharing up to four key values. */
struct op_group {
	uint32_t key[4];
	uint64_t count, total_ns, bytes;
	uint64_t *durations; /* only where percentiles are asked for */
	size_t n, cap;
};

struct op_groups {
	struct op_group *v;
	size_t n, cap;
	struct hashmap map; /* by key: index + 1 */
};

struct op_key {
	const struct op_groups *g;
	const uint32_t *key;
};

static uint32_t op_key_hash(const uint32_t key[4])
{
	uint32_t h = 2166136261u;
	for (int i = 0; i < 4; i++)
		h = (h ^ key[i]) * 16777619u;
	return h;
}

static int op_key_eq(const void *key, uint32_t ref)
{
	const struct op_key *q = key;
	return memcmp(q->g->v[ref - 1].key, q->key, sizeof q->g->v[ref - 1].key) == 0;
}

static uint64_t op_key_rehash(const void *ctx, uint32_t ref)
{
	const struct op_groups *g = ctx;
	return op_key_hash(g->v[ref - 1].key);
}

static struct op_group *op_group_get(struct op_groups *g, uint32_t k0, uint32_t k1, uint32_t k2, uint32_t k3)
{
	const uint32_t key[4] = {k0, k1, k2, k3};
	hashmap_reserve(&g->map, 64, op_key_rehash, g, xcalloc);
	struct op_key q = {g, key};
	uint32_t *slot = hashmap_slot(&g->map, op_key_hash(key), op_key_eq, &q);
	if (*slot)
		return &g->v[*slot - 1];
	xgrow((void **)&g->v, &g->cap, g->n + 1, sizeof *g->v);
	struct op_group *e = &g->v[g->n];
	memset(e, 0, sizeof *e);
	memcpy(e->key, key, sizeof key);
	hashmap_fill(&g->map, slot, (uint32_t)++g->n);
	return e;
}

static void op_group_add(struct op_group *e, const struct store_gpu_op *op, uint64_t bytes, int keep)
{
	uint64_t d = op->end_ns - op->start_ns;
	e->count++;
	e->total_ns += d;
	e->bytes += bytes;
	if (keep) {
		xgrow((void **)&e->durations, &e->cap, e->n + 1, sizeof *e->durations);
		e->durations[e->n++] = d;
	}
}

static int cmp_op_group(const void *a, const void *b)
{
	const struct op_group *x = a, *y = b;
	if (x->total_ns != y->total_ns)
		return x->total_ns > y->total_ns ? -1 : 1;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return memcmp(x->key, y->key, sizeof x->key);
}

/* Groups every op of the kinds in mask (bit = 1 << kind) with key(op) over all lanes of kind. */
static void op_groups_collect(const struct store *st, struct op_groups *g, unsigned mask, int keep,
                              void (*key)(const struct store *st, size_t p, const struct store_lane_info *li,
                                          const struct store_gpu_op *op, uint32_t out[4]))
{
	for (size_t p = 0; p < store_process_count(st); p++) {
		struct store_process_info pi;
		store_process_get(st, p, &pi);
		for (size_t l = 0; l < pi.lane_count; l++) {
			struct store_lane_info li;
			store_lane_get(st, p, l, &li);
			for (size_t row = 0; row < li.gpu_row_count; row++) {
				const struct store_gpu_op *v;
				size_t n = store_lane_gpu_all(st, p, l, row, &v);
				for (size_t i = 0; i < n; i++) {
					if (!(mask & 1u << v[i].kind))
						continue;
					uint32_t k[4] = {0};
					key(st, p, &li, &v[i], k);
					op_group_add(op_group_get(g, k[0], k[1], k[2], k[3]), &v[i],
					             store_gpu_op_bytes(st, p, &v[i]), keep);
				}
			}
		}
	}
	if (g->n)
		qsort(g->v, g->n, sizeof *g->v, cmp_op_group);
	for (size_t i = 0; i < g->n; i++)
		if (g->v[i].n)
			u64_sort(g->v[i].durations, g->v[i].n);
}

static void op_groups_fini(struct op_groups *g)
{
	for (size_t i = 0; i < g->n; i++)
		free(g->v[i].durations);
	free(g->v);
	hashmap_fini(&g->map);
}

static void key_kernel(const struct store *st, size_t p, const struct store_lane_info *li,
                       const struct store_gpu_op *op, uint32_t out[4])
{
	(void)st;
	(void)p;
	out[0] = op->name_id;
	out[1] = li->device;
}

const struct column stats_kernel_cols[STATS_KERNEL_COLS] = {
    {"name", CELL_STR},   {"device", CELL_INT}, {"count", CELL_INT},  {"total_ns", CELL_INT},
    {"min_ns", CELL_INT}, {"p50_ns", CELL_INT}, {"p99_ns", CELL_INT}, {"max_ns", CELL_INT},
};

void stats_section_kernels(const struct store *st, struct table *t)
{
	struct op_groups g = {0};
	op_groups_collect(st, &g, 1u << WIRE_GPU_KERNEL, 1, key_kernel);
	for (size_t i = 0; i < g.n; i++) {
		const struct op_group *e = &g.v[i];
		stats_table_row(t, store_string(st, e->key[0]), (int64_t)e->key[1], (int64_t)e->count,
		                (int64_t)e->total_ns, (int64_t)e->durations[0],
		                (int64_t)u64_percentile(e->durations, e->n, 0.50),
		                (int64_t)u64_percentile(e->durations, e->n, 0.99),
		                (int64_t)e->durations[e->n - 1]);
	}
	op_groups_fini(&g);
}

static void key_memcpy(const struct store *st, size_t p, const struct store_lane_info *li,
                       const struct store_gpu_op *op, uint32_t out[4])
{
	(void)st;
	(void)p;
	(void)li;
	out[0] = op->subkind;
	out[1] = op->mem >> 4;
	out[2] = op->mem & 15;
	out[3] = (op->flags & WIRE_GPU_FLAG_ASYNC) != 0;
}

const struct column stats_memcpy_cols[STATS_MEMCPY_COLS] = {
    {"kind", CELL_STR},  {"src_mem", CELL_STR}, {"dst_mem", CELL_STR},  {"async", CELL_BOOL},
    {"count", CELL_INT}, {"bytes", CELL_INT},   {"total_ns", CELL_INT},
};

void stats_section_memcpy(const struct store *st, struct table *t)
{
	struct op_groups g = {0};
	op_groups_collect(st, &g, 1u << WIRE_GPU_MEMCPY, 0, key_memcpy);
	for (size_t i = 0; i < g.n; i++) {
		const struct op_group *e = &g.v[i];
		stats_table_row(t, wire_memcpy_kind_name(e->key[0]), wire_mem_kind_name(e->key[1]),
		                wire_mem_kind_name(e->key[2]), (int)e->key[3], (int64_t)e->count,
		                (int64_t)e->bytes, (int64_t)e->total_ns);
	}
	op_groups_fini(&g);
}

static void key_none(const struct store *st, size_t p, const struct store_lane_info *li,
                     const struct store_gpu_op *op, uint32_t out[4])
{
	(void)st;
	(void)p;
	(void)li;
	(void)op;
	(void)out;
}

const struct column stats_memset_cols[STATS_MEMSET_COLS] = {
    {"count", CELL_INT}, {"bytes", CELL_INT}, {"total_ns", CELL_INT}};

void stats_section_memset(const struct store *st, struct table *t)
{
	struct op_groups g = {0};
	op_groups_collect(st, &g, 1u << WIRE_GPU_MEMSET, 0, key_none);
	for (size_t i = 0; i < g.n; i++)
		stats_table_row(t, (int64_t)g.v[i].count, (int64_t)g.v[i].bytes, (int64_t)g.v[i].total_ns);
	op_groups_fini(&g);
}

static void key_subkind(const struct store *st, size_t p, const struct store_lane_info *li,
                        const struct store_gpu_op *op, uint32_t out[4])
{
	(void)st;
	(void)p;
	(void)li;
	out[0] = op->subkind;
}

const struct column stats_sync_cols[STATS_SYNC_COLS] = {
    {"type", CELL_STR}, {"count", CELL_INT}, {"total_ns", CELL_INT}};

void stats_section_sync(const struct store *st, struct table *t)
{
	struct op_groups g = {0};
	op_groups_collect(st, &g, 1u << WIRE_GPU_SYNC, 0, key_subkind);
	for (size_t i = 0; i < g.n; i++)
		stats_table_row(t, wire_sync_type_name(g.v[i].key[0]), (int64_t)g.v[i].count,
		                (int64_t)g.v[i].total_ns);
	op_groups_fini(&g);
}

const struct column stats_gpu_cols[STATS_GPU_COLS] = {
    {"device", CELL_INT}, {"name", CELL_STR}, {"uuid", CELL_STR}};

/* Devices of all processes, each (ordinal, uuid) once. */
void stats_section_gpus(const struct store *st, struct table *t)
{
	for (size_t p = 0; p < store_process_count(st); p++) {
		for (size_t d = 0; d < store_gpu_device_count(st, p); d++) {
			struct store_gpu_device_info di;
			store_gpu_device_get(st, p, d, &di);
			int seen = 0;
			for (size_t r = 0; r < t->rows && !seen; r++) {
				const struct cell *row = &t->cells[r * t->col_count];
				seen = row[0].num == (int64_t)di.device && strcmp(row[2].str, di.uuid) == 0;
			}
			if (!seen)
				stats_table_row(t, (int64_t)di.device, di.name, di.uuid);
		}
	}
}

struct interval {
	uint64_t start, end;
};

static int cmp_interval(const void *a, const void *b)
{
	const struct interval *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* Time covered by the union of a stream lane's GPU work (host syncs on it are not work). */
static uint64_t stream_busy_ns(const struct store *st, size_t p, size_t l, const struct store_lane_info *li)
{
	struct interval *iv = NULL;
	size_t n = 0, cap = 0;
	for (size_t row = 0; row < li->gpu_row_count; row++) {
		const struct store_gpu_op *v;
		size_t m = store_lane_gpu_all(st, p, l, row, &v);
		for (size_t i = 0; i < m; i++) {
			if (v[i].kind == WIRE_GPU_SYNC)
				continue;
			xgrow((void **)&iv, &cap, n + 1, sizeof *iv);
			iv[n++] = (struct interval){v[i].start_ns, v[i].end_ns};
		}
	}
	if (n)
		qsort(iv, n, sizeof *iv, cmp_interval);
	uint64_t busy = 0, cur_start = 0, cur_end = 0;
	for (size_t i = 0; i < n; i++) {
		if (i == 0 || iv[i].start > cur_end) {
			busy += cur_end - cur_start;
			cur_start = iv[i].start;
			cur_end = iv[i].end;
		} else if (iv[i].end > cur_end) {
			cur_end = iv[i].end;
		}
	}
	busy += cur_end - cur_start;
	free(iv);
	return busy;
}

struct stream_row {
	size_t process, lane;
	uint32_t device, stream;
};

static int cmp_stream_row(const void *a, const void *b)
{
	const struct stream_row *x = a, *y = b;
	if (x->process != y->process)
		return x->process < y->process ? -1 : 1;
	if (x->device != y->device)
		return x->device < y->device ? -1 : 1;
	return x->stream < y->stream ? -1 : x->stream > y->stream;
}

/* Keyed by (pid, device, stream): two processes on one GPU have streams of the same id. */
const struct column stats_stream_cols[STATS_STREAM_COLS] = {
    {"pid", CELL_INT},      {"rank", CELL_INT},    {"device", CELL_INT},  {"stream", CELL_INT},
    {"default", CELL_BOOL}, {"kernels", CELL_INT}, {"busy_ns", CELL_INT},
};

void stats_section_streams(const struct store *st, struct table *t)
{
	struct stream_row *rows = NULL;
	size_t n = 0, cap = 0;
	for (size_t p = 0; p < store_process_count(st); p++) {
		struct store_process_info pi;
		store_process_get(st, p, &pi);
		for (size_t l = 0; l < pi.lane_count; l++) {
			struct store_lane_info li;
			store_lane_get(st, p, l, &li);
			if (li.kind != STORE_LANE_GPU_STREAM)
				continue;
			xgrow((void **)&rows, &cap, n + 1, sizeof *rows);
			rows[n++] = (struct stream_row){p, l, li.device, li.stream};
		}
	}
	if (n)
		qsort(rows, n, sizeof *rows, cmp_stream_row);
	for (size_t i = 0; i < n; i++) {
		struct store_process_info pi;
		store_process_get(st, rows[i].process, &pi);
		struct store_lane_info li;
		store_lane_get(st, rows[i].process, rows[i].lane, &li);
		stats_table_row(t, (int64_t)pi.pid, (int64_t)pi.rank, (int64_t)li.device, (int64_t)li.stream,
		                li.is_default, (int64_t)li.kernels,
		                (int64_t)stream_busy_ns(st, rows[i].process, rows[i].lane, &li));
	}
	free(rows);
}

static void key_name(const struct store *st, size_t p, const struct store_lane_info *li,
                     const struct store_gpu_op *op, uint32_t out[4])
{
	(void)st;
	(void)p;
	(void)li;
	out[0] = op->name_id;
}

const struct column stats_api_cols[STATS_API_COLS] = {
    {"name", CELL_STR}, {"count", CELL_INT}, {"total_ns", CELL_INT}, {"p50_ns", CELL_INT}};

void stats_section_api(const struct store *st, struct table *t)
{
	struct op_groups g = {0};
	op_groups_collect(st, &g, 1u << WIRE_GPU_API_RUNTIME | 1u << WIRE_GPU_API_DRIVER, 1, key_name);
	for (size_t i = 0; i < g.n; i++) {
		const struct op_group *e = &g.v[i];
		stats_table_row(t, store_string(st, e->key[0]), (int64_t)e->count, (int64_t)e->total_ns,
		                (int64_t)u64_percentile(e->durations, e->n, 0.50));
	}
	op_groups_fini(&g);
}
