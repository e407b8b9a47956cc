/*
 * The fields of NVTX extended payloads (WIRE_EV_NVTX_ARG) by the range, open or completed, or the
 * mark they follow: a side table keyed by (process, lane, start, name), bounded in size, filled only
 * for ranges that carry fields.
 */
#include "store_impl.h"

#include "cuscope/xalloc.h"

#include <stdlib.h>

#define STORE_ARGS_MAX (1u << 20) /* fields kept in a store (16 MiB), and ranges with fields */

struct args_entry {
	uint64_t start_ns;
	uint32_t process, lane;
	uint32_t name_id;
	uint32_t first; /* its first field in args */
	uint32_t count; /* fields, at most WIRE_ARGS_MAX */
	uint32_t reserved;
};

struct store_args {
	struct args_entry *entries;
	size_t entry_count, entry_cap;
	struct store_arg *args; /* a range's fields are contiguous: entry.first, entry.count */
	size_t arg_count, arg_cap;
	struct hashmap map; /* entries by key: index + 1 */
	uint64_t dropped;   /* fields not kept: past the bound, past WIRE_ARGS_MAX, or with no range */
};

struct args_key {
	const struct store_args *a;
	uint64_t start_ns;
	uint32_t process, lane, name_id;
};

static uint64_t args_hash(uint64_t start_ns, uint32_t process, uint32_t lane, uint32_t name_id)
{
	uint64_t h = start_ns * 0x9e3779b97f4a7c15ull;
	h ^= ((uint64_t)process << 40 ^ (uint64_t)lane << 20 ^ name_id) * 0xc2b2ae3d27d4eb4full;
	return h ^ h >> 29;
}

static int args_eq(const void *key, uint32_t ref)
{
	const struct args_key *k = key;
	const struct args_entry *e = &k->a->entries[ref - 1];
	return e->start_ns == k->start_ns && e->process == k->process && e->lane == k->lane &&
	       e->name_id == k->name_id;
}

static uint64_t args_rehash(const void *ctx, uint32_t ref)
{
	const struct args_entry *e = &((const struct store_args *)ctx)->entries[ref - 1];
	return args_hash(e->start_ns, e->process, e->lane, e->name_id);
}

void store_args_range_begun(struct lane *thread_lane, size_t range_lane, uint64_t start_ns, uint32_t name_id)
{
	thread_lane->arg_open = 1;
	thread_lane->arg_entry = 0;
	thread_lane->arg_lane = (uint32_t)range_lane;
	thread_lane->arg_start = start_ns;
	thread_lane->arg_name = name_id;
}

/* The entry that a field following the thread's last range goes to, made on its first field;
 * NULL when the table is full. */
static struct args_entry *args_entry_for(struct store *st, struct store_args *a, size_t process,
                                         struct lane *l)
{
	if (l->arg_entry)
		return &a->entries[l->arg_entry - 1];
	if (a->entry_count >= STORE_ARGS_MAX)
		return NULL;
	hashmap_reserve(&a->map, 256, args_rehash, a, xcalloc);
	struct args_key key = {a, l->arg_start, (uint32_t)process, l->arg_lane, l->arg_name};
	uint32_t *slot =
	    hashmap_slot(&a->map, args_hash(key.start_ns, key.process, key.lane, key.name_id), args_eq, &key);
	if (!slot)
		return NULL;
	if (*slot) {
		/* The same range again (a replayed open range in a new live segment): its fields anew. */
		l->arg_entry = *slot;
		a->entries[*slot - 1].count = 0;
		return &a->entries[*slot - 1];
	}
	xgrow((void **)&a->entries, &a->entry_cap, a->entry_count + 1, sizeof *a->entries);
	a->entries[a->entry_count] = (struct args_entry){.start_ns = l->arg_start,
	                                                 .process = (uint32_t)process,
	                                                 .lane = l->arg_lane,
	                                                 .name_id = l->arg_name,
	                                                 .first = (uint32_t)a->arg_count};
	hashmap_fill(&a->map, slot, (uint32_t)++a->entry_count);
	l->arg_entry = (uint32_t)a->entry_count;
	(void)st;
	return &a->entries[a->entry_count - 1];
}

void store_args_event(struct store *st, size_t process, struct lane *l, const struct wire_event *ev,
                      uint32_t name_id, uint32_t text_id)
{
	if (!st->args)
		st->args = xcalloc(1, sizeof *st->args);
	struct store_args *a = st->args;
	if (!l->arg_open) {
		a->dropped++; /* no push, start or mark just before it on this thread */
		return;
	}
	struct args_entry *e = args_entry_for(st, a, process, l);
	if (!e || e->count >= WIRE_ARGS_MAX || a->arg_count + WIRE_ARGS_MAX > STORE_ARGS_MAX) {
		a->dropped++;
		return;
	}
	xgrow((void **)&a->args, &a->arg_cap, a->arg_count + e->count + 1, sizeof *a->args);
	if (e->first + e->count != a->arg_count) {
		/* Another range's fields came in between (another source's frame): move this range's
		 * fields to the end, so that they stay contiguous. */
		for (uint32_t i = 0; i < e->count; i++)
			a->args[a->arg_count + i] = a->args[e->first + i];
		e->first = (uint32_t)a->arg_count;
		a->arg_count += e->count;
	}
	uint32_t type = ev->flags < WIRE_ARG_TYPE_MAX ? ev->flags : WIRE_ARG_UINT;
	/* An enum value without a name reads as its number. */
	if (type == WIRE_ARG_ENUM && !text_id)
		type = WIRE_ARG_UINT;
	a->args[a->arg_count++] =
	    (struct store_arg){name_id, type, ev->value, type == WIRE_ARG_ENUM ? text_id : 0, 0};
	e->count++;
}

size_t store_range_args(const struct store *st, size_t process, size_t lane, const struct store_range *r,
                        struct store_arg *out, size_t max)
{
	const struct store_args *a = st->args;
	if (!a || !a->entry_count)
		return 0;
	struct args_key key = {a, r->start_ns, (uint32_t)process, (uint32_t)lane, r->name_id};
	uint32_t ref =
	    hashmap_find(&a->map, args_hash(key.start_ns, key.process, key.lane, key.name_id), args_eq, &key);
	if (!ref)
		return 0;
	const struct args_entry *e = &a->entries[ref - 1];
	size_t n = e->count < max ? e->count : max;
	for (size_t i = 0; i < n; i++)
		out[i] = a->args[e->first + i];
	return n;
}

uint64_t store_args_dropped(const struct store *st)
{
	return st->args ? st->args->dropped : 0;
}

size_t store_args_memory_bytes(const struct store *st)
{
	const struct store_args *a = st->args;
	if (!a)
		return 0;
	return sizeof *a + a->entry_cap * sizeof *a->entries + a->arg_cap * sizeof *a->args +
	       hashmap_bytes(&a->map);
}

void store_args_free(struct store *st)
{
	struct store_args *a = st->args;
	if (!a)
		return;
	free(a->entries);
	free(a->args);
	hashmap_fini(&a->map);
	free(a);
	st->args = NULL;
}
