/*
 * A small open-addressing hash map with linear probing, shared by the store, the model, the dumps
 * and the collector. The map holds only 32-bit references (nonzero; the caller decides what they
 * mean: an index + 1, a string id); the entries, their keys and their hashes stay in the caller's
 * arrays, and the caller says how to compare and rehash them. Growth takes the caller's allocator
 * (the viewer passes xcalloc, which dies; the collector never grows a map, it gives fixed storage
 * and gets NULL back from a full table), so the collector stays allocation-bounded and never dies.
 */
#ifndef CUSCOPE_HASHMAP_H
#define CUSCOPE_HASHMAP_H

#include <stddef.h>
#include <stdint.h>

struct hashmap {
	uint32_t *slots;   /* a reference per used slot, 0 = empty */
	size_t slot_count; /* 0 or a power of two */
	size_t count;      /* used slots */
	int fixed;         /* the slots are the caller's (hashmap_init_fixed): never grown nor freed */
};

/* What a probe finds in one slot. */
enum hashmap_look {
	HASHMAP_OTHER, /* another key: probe on */
	HASHMAP_MATCH, /* the key looked for */
	HASHMAP_EMPTY, /* nothing: the key is absent and would go here */
};

/*
 * The one probe: walks slot_count slots (a power of two) from hash, at most `limit` of them, and
 * returns the first that look(ctx, slot) calls a match or empty (*matched tells which), or SIZE_MAX
 * when none was within the limit (a full table, or a bounded cache). Any slot layout can use it.
 */
static inline size_t hashmap_probe(size_t slot_count, uint64_t hash, size_t limit,
                                   enum hashmap_look (*look)(const void *ctx, size_t slot), const void *ctx,
                                   int *matched)
{
	size_t mask = slot_count - 1;
	if (limit > slot_count)
		limit = slot_count;
	for (size_t i = 0, s = (size_t)hash & mask; i < limit; i++, s = (s + 1) & mask) {
		enum hashmap_look r = look(ctx, s);
		if (r != HASHMAP_OTHER) {
			*matched = r == HASHMAP_MATCH;
			return s;
		}
	}
	*matched = 0;
	return SIZE_MAX;
}

/* Whether the entry behind ref has the key the caller looks for (key is the caller's). */
typedef int (*hashmap_eq_fn)(const void *key, uint32_t ref);
/* The hash of the entry behind ref, to place it again when the map grows. */
typedef uint64_t (*hashmap_hash_fn)(const void *ctx, uint32_t ref);

struct hashmap_lookup_ {
	const struct hashmap *m;
	hashmap_eq_fn eq;
	const void *key;
};

static inline enum hashmap_look hashmap_look_ref_(const void *ctx, size_t slot)
{
	const struct hashmap_lookup_ *q = ctx;
	uint32_t ref = q->m->slots[slot];
	if (!ref)
		return HASHMAP_EMPTY;
	return q->eq(q->key, ref) ? HASHMAP_MATCH : HASHMAP_OTHER;
}

/*
 * The slot holding the key, or the empty slot where it would go (then *slot == 0: fill it with
 * hashmap_fill); NULL when the map has no slots or is full without it.
 */
static inline uint32_t *hashmap_slot(const struct hashmap *m, uint64_t hash, hashmap_eq_fn eq,
                                     const void *key)
{
	if (!m->slot_count)
		return NULL;
	struct hashmap_lookup_ q = {m, eq, key};
	int matched;
	size_t s = hashmap_probe(m->slot_count, hash, m->slot_count, hashmap_look_ref_, &q, &matched);
	return s == SIZE_MAX ? NULL : &m->slots[s];
}

/* The reference of the key, 0 if absent. */
static inline uint32_t hashmap_find(const struct hashmap *m, uint64_t hash, hashmap_eq_fn eq, const void *key)
{
	const uint32_t *s = hashmap_slot(m, hash, eq, key);
	return s ? *s : 0;
}

/* Puts ref (nonzero) in an empty slot that hashmap_slot returned. */
static inline void hashmap_fill(struct hashmap *m, uint32_t *slot, uint32_t ref)
{
	*slot = ref;
	m->count++;
}

/*
 * Uses the caller's slot_count slots (a power of two, cleared here); the map never grows or frees them.
 * Inline like the lookups, so the collector links nothing of hashmap.c.
 */
static inline void hashmap_init_fixed(struct hashmap *m, uint32_t *slots, size_t slot_count)
{
	for (size_t i = 0; i < slot_count; i++)
		slots[i] = 0;
	*m = (struct hashmap){slots, slot_count, 0, 1};
}
/*
 * Makes room for one more reference while keeping the map at most half full: when needed, takes
 * max(min_slots, twice the slots) from alloc (calloc-like) and places each reference again by
 * hash(ctx, ref). Returns 0, -ENOMEM (alloc failed: the map is unchanged) or -ENOSPC (a fixed map
 * that is half full).
 */
int hashmap_reserve(struct hashmap *m, size_t min_slots, hashmap_hash_fn hash, const void *ctx,
                    void *(*alloc)(size_t count, size_t size));
/* Frees grown slots; the map is empty afterwards. */
void hashmap_fini(struct hashmap *m);
/* Bytes of slots. */
size_t hashmap_bytes(const struct hashmap *m);

#endif
