/* The shared open-addressing map: lookups by the caller's keys, growth that keeps every entry,
 * probes that wrap past the last slot, a full fixed table that says so instead of looping, and a
 * failed allocation that leaves the map as it was. */
#include "cuscope/hashmap.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

/* Entries: keys[ref - 1]; the hash is the key itself unless a test forces collisions. */
struct table {
	uint64_t keys[4096];
	size_t n;
	uint64_t (*hash_of)(uint64_t key);
};

struct lookup {
	const struct table *t;
	uint64_t key;
};

static uint64_t hash_identity(uint64_t key)
{
	return key;
}

static uint64_t hash_constant(uint64_t key)
{
	(void)key;
	return 7; /* everything collides */
}

static int entry_eq(const void *key, uint32_t ref)
{
	const struct lookup *q = key;
	return q->t->keys[ref - 1] == q->key;
}

static uint64_t entry_hash(const void *ctx, uint32_t ref)
{
	const struct table *t = ctx;
	return t->hash_of(t->keys[ref - 1]);
}

static uint32_t find(const struct hashmap *m, const struct table *t, uint64_t key)
{
	struct lookup q = {t, key};
	return hashmap_find(m, t->hash_of(key), entry_eq, &q);
}

/* Interns key: its existing ref, or a new one. */
static uint32_t intern(struct hashmap *m, struct table *t, uint64_t key)
{
	assert_int_equal(hashmap_reserve(m, 8, entry_hash, t, calloc), 0);
	struct lookup q = {t, key};
	uint32_t *slot = hashmap_slot(m, t->hash_of(key), entry_eq, &q);
	assert_non_null(slot);
	if (!*slot) {
		t->keys[t->n++] = key;
		hashmap_fill(m, slot, (uint32_t)t->n);
	}
	return *slot;
}

static void test_empty_map(void **state)
{
	(void)state;
	struct table t = {.hash_of = hash_identity};
	struct hashmap m = {0};
	assert_int_equal(find(&m, &t, 1), 0);
	struct lookup q = {&t, 1};
	assert_null(hashmap_slot(&m, 1, entry_eq, &q));
	assert_int_equal(hashmap_bytes(&m), 0);
	hashmap_fini(&m);
}

static void test_grows_and_keeps_entries(void **state)
{
	(void)state;
	struct table *t = calloc(1, sizeof *t);
	t->hash_of = hash_identity;
	struct hashmap m = {0};
	for (uint64_t k = 0; k < 3000; k++)
		assert_int_equal(intern(&m, t, k * 1000003u), k + 1);
	for (uint64_t k = 0; k < 3000; k++) /* equal keys find the same entry */
		assert_int_equal(intern(&m, t, k * 1000003u), k + 1);
	assert_int_equal(t->n, 3000);
	assert_int_equal(m.count, 3000);
	assert_true(m.slot_count >= 6000);
	assert_int_equal(find(&m, t, 17), 0);
	hashmap_fini(&m);
	free(t);
}

static void test_probe_wraps(void **state)
{
	(void)state;
	/* Keys that all hash to the last slot of 16 go on from slot 0. */
	struct table t = {.hash_of = hash_identity};
	uint32_t slots[16];
	struct hashmap m;
	hashmap_init_fixed(&m, slots, 16);
	for (uint64_t k = 0; k < 4; k++) {
		uint64_t key = 15 + 16 * k;
		struct lookup q = {&t, key};
		uint32_t *slot = hashmap_slot(&m, key, entry_eq, &q);
		assert_non_null(slot);
		assert_int_equal(slot - slots, k == 0 ? 15 : (long)k - 1);
		t.keys[t.n++] = key;
		hashmap_fill(&m, slot, (uint32_t)t.n);
	}
	for (uint64_t k = 0; k < 4; k++)
		assert_int_equal(find(&m, &t, 15 + 16 * k), k + 1);
	assert_int_equal(find(&m, &t, 15 + 16 * 4), 0);
}

static void test_full_fixed_table(void **state)
{
	(void)state;
	struct table t = {.hash_of = hash_constant};
	uint32_t slots[8];
	struct hashmap m;
	hashmap_init_fixed(&m, slots, 8);
	for (uint64_t k = 0; k < 8; k++) {
		struct lookup q = {&t, k};
		uint32_t *slot = hashmap_slot(&m, 7, entry_eq, &q);
		assert_non_null(slot);
		t.keys[t.n++] = k;
		hashmap_fill(&m, slot, (uint32_t)t.n);
	}
	/* Every slot is taken: present keys are still found, an absent one gets NULL, not a loop. */
	for (uint64_t k = 0; k < 8; k++)
		assert_int_equal(find(&m, &t, k), k + 1);
	struct lookup q = {&t, 99};
	assert_null(hashmap_slot(&m, 7, entry_eq, &q));
	assert_int_equal(find(&m, &t, 99), 0);
	/* A fixed map never grows, and is never freed by the map. */
	assert_int_equal(hashmap_reserve(&m, 8, entry_hash, &t, calloc), -ENOSPC);
	hashmap_fini(&m);
	assert_int_equal(slots[0] != 0, 1);
}

static void *failing_calloc(size_t count, size_t size)
{
	(void)count;
	(void)size;
	return NULL;
}

static void test_failed_growth_keeps_map(void **state)
{
	(void)state;
	struct table t = {.hash_of = hash_identity};
	struct hashmap m = {0};
	for (uint64_t k = 1; k <= 4; k++)
		intern(&m, &t, k);
	size_t slots = m.slot_count;
	/* 4 of 8 used: one more needs growth, and the allocator refuses. */
	assert_int_equal(hashmap_reserve(&m, 8, entry_hash, &t, failing_calloc), -ENOMEM);
	assert_int_equal(m.slot_count, slots);
	for (uint64_t k = 1; k <= 4; k++)
		assert_int_equal(find(&m, &t, k), k);
	hashmap_fini(&m);
}

/* A bounded cache on its own arrays: the probe gives up after `limit` slots. */
struct cache {
	uint64_t key[16];
};

static enum hashmap_look cache_look(const void *ctx, size_t slot)
{
	const struct cache *c = ctx;
	if (!c->key[slot])
		return HASHMAP_EMPTY;
	return c->key[slot] == 5 ? HASHMAP_MATCH : HASHMAP_OTHER;
}

static void test_probe_limit(void **state)
{
	(void)state;
	struct cache c = {{0}};
	for (size_t i = 0; i < 16; i++)
		c.key[i] = 100 + i;
	int matched = 1;
	assert_int_equal(hashmap_probe(16, 14, 4, cache_look, &c, &matched), SIZE_MAX);
	assert_int_equal(matched, 0);
	c.key[1] = 5; /* three slots from 14, past the wrap */
	assert_int_equal(hashmap_probe(16, 14, 4, cache_look, &c, &matched), 1);
	assert_int_equal(matched, 1);
	c.key[0] = 0;
	assert_int_equal(hashmap_probe(16, 14, 4, cache_look, &c, &matched), 0);
	assert_int_equal(matched, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_empty_map),
	    cmocka_unit_test(test_grows_and_keeps_entries),
	    cmocka_unit_test(test_probe_wraps),
	    cmocka_unit_test(test_full_fixed_table),
	    cmocka_unit_test(test_failed_growth_keeps_map),
	    cmocka_unit_test(test_probe_limit),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
