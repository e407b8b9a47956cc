#include "cuscope/hashmap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static enum hashmap_look hashmap_look_empty(const void *ctx, size_t slot)
{
	const uint32_t *slots = ctx;
	return slots[slot] ? HASHMAP_OTHER : HASHMAP_EMPTY;
}

int hashmap_reserve(struct hashmap *m, size_t min_slots, hashmap_hash_fn hash, const void *ctx,
                    void *(*alloc)(size_t count, size_t size))
{
	if ((m->count + 1) * 2 <= m->slot_count)
		return 0;
	if (m->fixed)
		return -ENOSPC;
	size_t n = m->slot_count ? m->slot_count * 2 : 1;
	while (n < min_slots)
		n *= 2;
	uint32_t *slots = alloc(n, sizeof *slots);
	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < m->slot_count; i++) {
		uint32_t ref = m->slots[i];
		if (!ref)
			continue;
		int matched;
		/* Half full at most: a free slot is always found. */
		size_t s = hashmap_probe(n, hash(ctx, ref), n, hashmap_look_empty, slots, &matched);
		slots[s] = ref;
	}
	free(m->slots);
	m->slots = slots;
	m->slot_count = n;
	return 0;
}

void hashmap_fini(struct hashmap *m)
{
	if (!m->fixed)
		free(m->slots);
	memset(m, 0, sizeof *m);
}

size_t hashmap_bytes(const struct hashmap *m)
{
	return m->slot_count * sizeof *m->slots;
}
