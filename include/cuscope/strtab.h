/*
 * The collector's string interning: maps names to small per-process ids with a hard cap on the
 * number of strings and their bytes, so that unique-per-call names (PyTorch "seq = N") cannot
 * grow memory without bound. Used by the sender thread only; never dies on allocation failure.
 */
#ifndef CUSCOPE_STRTAB_H
#define CUSCOPE_STRTAB_H

#include <stddef.h>
#include <stdint.h>

#include "cuscope/hashmap.h"

/* Id returned once the table is full; its text is STRTAB_OVERFLOW_TEXT. */
#define STRTAB_OVERFLOW_ID   1u
#define STRTAB_OVERFLOW_TEXT "<string table full>"

struct strtab {
	struct hashmap map; /* ids by text, on fixed slots sized for the cap */
	size_t slot_count;
	uint32_t *offsets; /* id -> arena offset, id -> length via lengths, id -> hash via hashes */
	uint32_t *lengths;
	uint32_t *hashes;
	uint32_t count; /* ids in use, including the overflow id */
	uint32_t max_strings;
	char *arena;
	size_t arena_used;
	size_t arena_cap; /* grows up to arena_max */
	size_t arena_max;
	uint64_t overflows; /* lookups refused because the table was full */
};

/* Prepares an empty table holding at most max_strings strings and max_bytes bytes; 0 or -ENOMEM. */
int strtab_init(struct strtab *tab, uint32_t max_strings, size_t max_bytes);
void strtab_fini(struct strtab *tab);
/*
 * Returns the id of text (interning it; text past WIRE_MAX_STRING bytes is cut, as the viewer
 * refuses longer strings), STRTAB_OVERFLOW_ID when the table is full or memory ran
 * out, and sets *is_new when the id was just created (the caller then announces it).
 */
uint32_t strtab_intern(struct strtab *tab, const char *text, size_t length, int *is_new);
/* Text and length of an id (valid ids only). */
const char *strtab_text(const struct strtab *tab, uint32_t id, size_t *length);

#endif
