#include "cuscope/nvtxstats.h"

#include <stdlib.h>
#include <string.h>

#include "cuscope/hashmap.h"
#include "cuscope/store.h"
#include "cuscope/xalloc.h"

void nvtx_stats_init(struct nvtx_stats *s)
{
	memset(s, 0, sizeof *s);
	s->exact_max = NVTX_STATS_EXACT_MAX;
}

void nvtx_stats_fini(struct nvtx_stats *s)
{
	for (size_t i = 0; i < s->count; i++) {
		hist_fini(&s->v[i]->hist);
		free(s->v[i]);
	}
	free(s->v);
	hashmap_fini(&s->map);
	for (size_t p = 0; p < s->proc_count; p++) {
		for (size_t l = 0; l < s->procs[p].lane_count; l++)
			free(s->procs[p].lanes[l].seen);
		free(s->procs[p].lanes);
	}
	free(s->procs);
	memset(s, 0, sizeof *s);
}

/* Entries by (name, domain): map references are index + 1. */
struct nvtx_key {
	const struct nvtx_stats *s;
	uint32_t name_id, domain_id;
};

static uint64_t nvtx_hash(uint32_t name_id, uint32_t domain_id)
{
	uint64_t k = ((uint64_t)domain_id << 32 | name_id) * 0x9e3779b97f4a7c15ull;
	return k >> 20;
}

static int nvtx_eq(const void *key, uint32_t ref)
{
	const struct nvtx_key *k = key;
	const struct nvtx_stat *e = k->s->v[ref - 1];
	return e->name_id == k->name_id && e->domain_id == k->domain_id;
}

static uint64_t nvtx_rehash(const void *ctx, uint32_t ref)
{
	const struct nvtx_stats *s = ctx;
	return nvtx_hash(s->v[ref - 1]->name_id, s->v[ref - 1]->domain_id);
}

const struct nvtx_stat *nvtx_stats_find(const struct nvtx_stats *s, uint32_t name_id, uint32_t domain_id)
{
	struct nvtx_key key = {s, name_id, domain_id};
	uint32_t ref = hashmap_find(&s->map, nvtx_hash(name_id, domain_id), nvtx_eq, &key);
	return ref ? s->v[ref - 1] : NULL;
}

void nvtx_stats_add(struct nvtx_stats *s, size_t process, size_t lane, size_t row, uint32_t name_id,
                    uint32_t domain_id, uint64_t start_ns, uint64_t end_ns)
{
	hashmap_reserve(&s->map, 64, nvtx_rehash, s, xcalloc);
	struct nvtx_key key = {s, name_id, domain_id};
	uint32_t *slot = hashmap_slot(&s->map, nvtx_hash(name_id, domain_id), nvtx_eq, &key);
	struct nvtx_stat *e;
	if (!*slot) {
		e = xcalloc(1, sizeof *e);
		e->name_id = name_id;
		e->domain_id = domain_id;
		if (s->exact_values < s->exact_max)
			hist_keep_values(&e->hist);
		xgrow((void **)&s->v, &s->cap, s->count + 1, sizeof *s->v);
		s->v[s->count++] = e;
		hashmap_fill(&s->map, slot, (uint32_t)s->count);
	} else {
		e = s->v[*slot - 1];
	}
	uint64_t d = end_ns > start_ns ? end_ns - start_ns : 0;
	if (!e->hist.count || d > e->hist.max_ns) {
		e->process = process;
		e->lane = lane;
		e->row = row;
		e->slow_start_ns = start_ns;
		e->slow_end_ns = end_ns;
	}
	hist_add(&e->hist, d);
	if (e->hist.values && ++s->exact_values > s->exact_max) {
		/* Over the bound: the entry that grew past it estimates from now on. */
		s->exact_values -= e->hist.values->n;
		hist_drop_values(&e->hist);
	}
	s->ranges++;
}

/* The scanned-count cell of (process, lane, row), grown on demand. */
static size_t *nvtx_seen(struct nvtx_stats *s, size_t p, size_t l, size_t r)
{
	if (p >= s->proc_count) {
		s->procs = xrealloc(s->procs, (p + 1) * sizeof *s->procs);
		memset(s->procs + s->proc_count, 0, (p + 1 - s->proc_count) * sizeof *s->procs);
		s->proc_count = p + 1;
	}
	struct nvtx_seen_proc *pp = &s->procs[p];
	if (l >= pp->lane_count) {
		pp->lanes = xrealloc(pp->lanes, (l + 1) * sizeof *pp->lanes);
		memset(pp->lanes + pp->lane_count, 0, (l + 1 - pp->lane_count) * sizeof *pp->lanes);
		pp->lane_count = l + 1;
	}
	struct nvtx_seen_lane *ll = &pp->lanes[l];
	if (r >= ll->rows) {
		ll->seen = xrealloc(ll->seen, (r + 1) * sizeof *ll->seen);
		memset(ll->seen + ll->rows, 0, (r + 1 - ll->rows) * sizeof *ll->seen);
		ll->rows = r + 1;
	}
	return &ll->seen[r];
}

size_t nvtx_stats_update(struct nvtx_stats *s, const struct store *store)
{
	size_t added = 0;
	for (size_t p = 0; p < store_process_count(store); p++) {
		struct store_process_info pi;
		store_process_get(store, p, &pi);
		for (size_t l = 0; l < pi.lane_count; l++) {
			struct store_lane_info li;
			store_lane_get(store, p, l, &li);
			if (li.kind == STORE_LANE_GPU_STREAM)
				continue;
			for (size_t r = 0; r < li.row_count; r++) {
				const struct store_range *v;
				size_t n = store_lane_row_all(store, p, l, r, &v);
				size_t *seen = nvtx_seen(s, p, l, r);
				/* Rows grow at the end and lose their oldest ranges at the front (a bounded
				 * live store): seen counts ranges since the row began, so statistics cover
				 * every range received, evicted or not. A range inserted out of order
				 * (async) may be missed. */
				uint64_t dropped = store_lane_row_dropped(store, p, l, r);
				size_t from = *seen > dropped ? (size_t)(*seen - dropped) : 0;
				for (size_t i = from; i < n; i++)
					nvtx_stats_add(s, p, l, r, v[i].name_id, v[i].domain_id,
					               v[i].start_ns, v[i].end_ns);
				if (n > from)
					added += n - from;
				*seen = (size_t)dropped + n;
			}
		}
	}
	return added;
}

static const struct nvtx_stats *nvtx_sort_ctx;

static int nvtx_order_cmp(const void *a, const void *b)
{
	const struct nvtx_stat *x = nvtx_sort_ctx->v[*(const size_t *)a];
	const struct nvtx_stat *y = nvtx_sort_ctx->v[*(const size_t *)b];
	if (x->hist.total_ns != y->hist.total_ns)
		return x->hist.total_ns > y->hist.total_ns ? -1 : 1;
	return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

void nvtx_stats_order(const struct nvtx_stats *s, size_t *order)
{
	for (size_t i = 0; i < s->count; i++)
		order[i] = i;
	nvtx_sort_ctx = s;
	qsort(order, s->count, sizeof *order, nvtx_order_cmp);
	nvtx_sort_ctx = NULL;
}
