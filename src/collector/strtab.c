#include "cuscope/strtab.h"

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

int strtab_init(struct strtab *tab, uint32_t max_strings, size_t max_bytes)
{
	memset(tab, 0, sizeof *tab);
	tab->max_strings = max_strings < 2 ? 2 : max_strings;
	tab->slot_count = 1024;
	while (tab->slot_count < (size_t)tab->max_strings * 2)
		tab->slot_count *= 2;
	/* The slot array is sized for the cap up front so it never rehashes. */
	tab->slots = calloc(tab->slot_count, sizeof *tab->slots);
	tab->offsets = calloc((size_t)tab->max_strings + 1, sizeof *tab->offsets);
	tab->lengths = calloc((size_t)tab->max_strings + 1, sizeof *tab->lengths);
	tab->arena_max = max_bytes;
	tab->arena_cap = max_bytes < 65536 ? max_bytes : 65536;
	tab->arena = malloc(tab->arena_cap);
	if (!tab->slots || !tab->offsets || !tab->lengths || !tab->arena) {
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
	free(tab->slots);
	free(tab->offsets);
	free(tab->lengths);
	free(tab->arena);
	memset(tab, 0, sizeof *tab);
}

uint32_t strtab_intern(struct strtab *tab, const char *text, size_t length, int *is_new)
{
	uint32_t hash = strtab_hash(text, length);
	size_t mask = tab->slot_count - 1;
	size_t slot = hash & mask;
	*is_new = 0;
	for (;;) {
		struct strtab_entry *e = &tab->slots[slot];
		if (e->id == 0)
			break;
		if (e->hash == hash && e->length == length &&
		    memcmp(tab->arena + e->offset, text, length) == 0)
			return e->id;
		slot = (slot + 1) & mask;
	}
	if (tab->count > tab->max_strings || tab->arena_used + length > tab->arena_max) {
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
	tab->slots[slot] = (struct strtab_entry){hash, id, (uint32_t)tab->arena_used, (uint32_t)length};
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
