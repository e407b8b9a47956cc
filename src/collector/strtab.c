#include "cuscope/strtab.h"
#include "cuscope/wire.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static uint32_t strtab_hash(const char *text, size_t length)
{
	/* FNV-1a: short names dominate, and it needs no state. */
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < length; i++)
		h = (h ^ (uint8_t)text[i]) * 16777619u;
	return h ? h : 1;
}

/* A lookup: map references are string ids. */
struct strtab_key {
	const struct strtab *tab;
	const char *text;
	size_t length;
	uint32_t hash;
};

static int strtab_eq(const void *key, uint32_t id)
{
	const struct strtab_key *k = key;
	return k->tab->hashes[id] == k->hash && k->tab->lengths[id] == k->length &&
	       memcmp(k->tab->arena + k->tab->offsets[id], k->text, k->length) == 0;
}

int strtab_init(struct strtab *tab, uint32_t max_strings, size_t max_bytes)
{
	memset(tab, 0, sizeof *tab);
	tab->max_strings = max_strings < 2 ? 2 : max_strings;
	tab->slot_count = 1024;
	while (tab->slot_count < (size_t)tab->max_strings * 2)
		tab->slot_count *= 2;
	/* The slot array is sized for the cap up front so it never rehashes. */
	uint32_t *slots = calloc(tab->slot_count, sizeof *slots);
	tab->offsets = calloc((size_t)tab->max_strings + 1, sizeof *tab->offsets);
	tab->lengths = calloc((size_t)tab->max_strings + 1, sizeof *tab->lengths);
	tab->hashes = calloc((size_t)tab->max_strings + 1, sizeof *tab->hashes);
	if (slots)
		hashmap_init_fixed(&tab->map, slots, tab->slot_count);
	tab->arena_max = max_bytes;
	tab->arena_cap = max_bytes < 65536 ? max_bytes : 65536;
	tab->arena = malloc(tab->arena_cap);
	if (!slots || !tab->offsets || !tab->lengths || !tab->hashes || !tab->arena) {
		strtab_fini(tab);
		return -ENOMEM;
	}
	/* Id 0 means "no string"; id 1 is the overflow marker. */
	tab->count = 1;
	int is_new;
	strtab_intern(tab, STRTAB_OVERFLOW_TEXT, strlen(STRTAB_OVERFLOW_TEXT), &is_new);
	return 0;
}

void strtab_fini(struct strtab *tab)
{
	free(tab->map.slots); /* the table's own storage, fixed for the map */
	free(tab->offsets);
	free(tab->lengths);
	free(tab->hashes);
	free(tab->arena);
	memset(tab, 0, sizeof *tab);
}

uint32_t strtab_intern(struct strtab *tab, const char *text, size_t length, int *is_new)
{
	/* The viewer refuses a longer string frame (and with it the connection): a CUDA kernel's
	 * mangled name can be longer. */
	if (length > WIRE_MAX_STRING)
		length = WIRE_MAX_STRING;
	uint32_t hash = strtab_hash(text, length);
	struct strtab_key key = {tab, text, length, hash};
	/* Slots are twice the cap, so a free one remains; a full table would answer overflow. */
	uint32_t *slot = hashmap_slot(&tab->map, hash, strtab_eq, &key);
	*is_new = 0;
	if (slot && *slot)
		return *slot;
	if (!slot || tab->count > tab->max_strings || tab->arena_used + length > tab->arena_max) {
		tab->overflows++;
		return STRTAB_OVERFLOW_ID;
	}
	if (tab->arena_used + length > tab->arena_cap) {
		size_t cap = tab->arena_cap * 2;
		while (cap < tab->arena_used + length)
			cap *= 2;
		if (cap > tab->arena_max)
			cap = tab->arena_max;
		char *arena = realloc(tab->arena, cap);
		if (!arena) {
			tab->overflows++;
			return STRTAB_OVERFLOW_ID;
		}
		tab->arena = arena;
		tab->arena_cap = cap;
	}
	memcpy(tab->arena + tab->arena_used, text, length);
	uint32_t id = tab->count++;
	hashmap_fill(&tab->map, slot, id);
	tab->hashes[id] = hash;
	tab->offsets[id] = (uint32_t)tab->arena_used;
	tab->lengths[id] = (uint32_t)length;
	tab->arena_used += length;
	*is_new = 1;
	return id;
}

const char *strtab_text(const struct strtab *tab, uint32_t id, size_t *length)
{
	*length = tab->lengths[id];
	return tab->arena + tab->offsets[id];
}
