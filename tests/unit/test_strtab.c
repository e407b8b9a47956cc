/* Collector string table unit tests: interning, ids, the string and byte caps. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cuscope/strtab.h"

static uint32_t intern_str(struct strtab *tab, const char *text, int *is_new)
{
	return strtab_intern(tab, text, strlen(text), is_new);
}

static void assert_text(const struct strtab *tab, uint32_t id, const char *want)
{
	size_t len = 0;
	const char *text = strtab_text(tab, id, &len);
	assert_int_equal(len, strlen(want));
	assert_memory_equal(text, want, len);
}

static void test_overflow_id_reserved(void **state)
{
	(void)state;
	struct strtab tab;
	assert_int_equal(strtab_init(&tab, 100, 10000), 0);
	/* Id 1 is the overflow marker from the start; the first real string is 2. */
	assert_int_equal(tab.count, 2);
	assert_text(&tab, STRTAB_OVERFLOW_ID, STRTAB_OVERFLOW_TEXT);
	int is_new = -1;
	assert_int_equal(intern_str(&tab, "first", &is_new), 2);
	assert_int_equal(is_new, 1);
	/* Interning the overflow text itself gives the overflow id, not a new one. */
	assert_int_equal(intern_str(&tab, STRTAB_OVERFLOW_TEXT, &is_new), STRTAB_OVERFLOW_ID);
	assert_int_equal(is_new, 0);
	assert_int_equal(tab.overflows, 0);
	strtab_fini(&tab);
}

static void test_same_text_same_id(void **state)
{
	(void)state;
	struct strtab tab;
	assert_int_equal(strtab_init(&tab, 1000, 100000), 0);
	int is_new = -1;
	uint32_t a = intern_str(&tab, "forward", &is_new);
	assert_int_equal(is_new, 1);
	uint32_t b = intern_str(&tab, "backward", &is_new);
	assert_int_equal(is_new, 1);
	assert_int_not_equal(a, b);
	for (int i = 0; i < 5; i++) {
		is_new = -1;
		assert_int_equal(intern_str(&tab, "forward", &is_new), a);
		assert_int_equal(is_new, 0);
		is_new = -1;
		assert_int_equal(intern_str(&tab, "backward", &is_new), b);
		assert_int_equal(is_new, 0);
	}
	/* Length counts, not the NUL: a prefix is a different string; text need not be terminated. */
	uint32_t c = strtab_intern(&tab, "forward", 4, &is_new);
	assert_int_equal(is_new, 1);
	assert_int_not_equal(c, a);
	assert_text(&tab, c, "forw");
	assert_int_equal(strtab_intern(&tab, "forwXXX", 4, &is_new), c);
	assert_int_equal(is_new, 0);
	/* The empty string is a string of its own. */
	uint32_t e = strtab_intern(&tab, "", 0, &is_new);
	assert_int_equal(is_new, 1);
	assert_true(e >= 2);
	assert_int_equal(strtab_intern(&tab, "x", 0, &is_new), e);
	assert_int_equal(is_new, 0);
	/* Embedded NULs are data. */
	uint32_t n1 = strtab_intern(&tab, "a\0b", 3, &is_new);
	assert_int_equal(is_new, 1);
	uint32_t n2 = strtab_intern(&tab, "a\0c", 3, &is_new);
	assert_int_equal(is_new, 1);
	assert_int_not_equal(n1, n2);
	assert_text(&tab, a, "forward");
	assert_text(&tab, b, "backward");
	assert_int_equal(tab.overflows, 0);
	strtab_fini(&tab);
}

static void test_many_distinct(void **state)
{
	(void)state;
	struct strtab tab;
	enum { N = 20000 };
	assert_int_equal(strtab_init(&tab, N + 10, (size_t)N * 64), 0);
	char buf[64];
	/* Ids are dense and in order of first appearance, starting at 2. */
	for (uint32_t i = 0; i < N; i++) {
		int len = snprintf(buf, sizeof buf, "range %u", i);
		int is_new = 0;
		assert_int_equal(strtab_intern(&tab, buf, (size_t)len, &is_new), i + 2);
		assert_int_equal(is_new, 1);
	}
	for (uint32_t i = 0; i < N; i++) {
		int len = snprintf(buf, sizeof buf, "range %u", i);
		int is_new = 1;
		assert_int_equal(strtab_intern(&tab, buf, (size_t)len, &is_new), i + 2);
		assert_int_equal(is_new, 0);
		assert_text(&tab, i + 2, buf);
	}
	assert_int_equal(tab.count, N + 2);
	assert_int_equal(tab.overflows, 0);
	strtab_fini(&tab);
}

static void test_string_cap(void **state)
{
	(void)state;
	struct strtab tab;
	/* 10 strings including the overflow marker: ids 2..10 are usable. */
	assert_int_equal(strtab_init(&tab, 10, 100000), 0);
	char buf[32];
	for (uint32_t i = 0; i < 9; i++) {
		int len = snprintf(buf, sizeof buf, "s%u", i);
		int is_new = 0;
		assert_int_equal(strtab_intern(&tab, buf, (size_t)len, &is_new), i + 2);
		assert_int_equal(is_new, 1);
	}
	for (uint32_t i = 9; i < 100; i++) {
		int len = snprintf(buf, sizeof buf, "s%u", i);
		int is_new = -1;
		assert_int_equal(strtab_intern(&tab, buf, (size_t)len, &is_new), STRTAB_OVERFLOW_ID);
		assert_int_equal(is_new, 0);
	}
	assert_int_equal(tab.overflows, 91);
	/* Strings interned before the cap still resolve (and are not overflows). */
	int is_new = -1;
	assert_int_equal(intern_str(&tab, "s3", &is_new), 5);
	assert_int_equal(is_new, 0);
	assert_int_equal(tab.overflows, 91);
	assert_text(&tab, 10, "s8");
	assert_text(&tab, STRTAB_OVERFLOW_ID, STRTAB_OVERFLOW_TEXT);
	strtab_fini(&tab);
}

static void test_byte_cap(void **state)
{
	(void)state;
	struct strtab tab;
	/* Many strings allowed, but only 100000 bytes: the arena must never grow past that. */
	const size_t max_bytes = 100000;
	assert_int_equal(strtab_init(&tab, 1u << 20, max_bytes), 0);
	char buf[256];
	memset(buf, 'q', sizeof buf);
	uint32_t accepted = 0, refused = 0;
	size_t accepted_bytes = strlen(STRTAB_OVERFLOW_TEXT);
	for (uint32_t i = 0; i < 2000; i++) {
		int n = snprintf(buf, sizeof buf, "%u:", i);
		buf[n] = 'q';
		size_t len = 200;
		int is_new = -1;
		uint32_t id = strtab_intern(&tab, buf, len, &is_new);
		if (id == STRTAB_OVERFLOW_ID) {
			assert_int_equal(is_new, 0);
			refused++;
		} else {
			assert_int_equal(is_new, 1);
			assert_int_equal(id, accepted + 2);
			accepted++;
			accepted_bytes += len;
		}
		assert_true(tab.arena_cap <= max_bytes);
		assert_true(tab.arena_used <= max_bytes);
	}
	/* (100000 - 19) / 200 == 499 strings fit. */
	assert_int_equal(accepted, (max_bytes - strlen(STRTAB_OVERFLOW_TEXT)) / 200);
	assert_int_equal(refused, 2000 - accepted);
	assert_int_equal(tab.overflows, refused);
	assert_int_equal(tab.arena_used, accepted_bytes);
	/* A short string still fits in the remaining bytes. */
	int is_new = 0;
	uint32_t id = strtab_intern(&tab, "tiny", 4, &is_new);
	assert_int_equal(is_new, 1);
	assert_int_equal(id, accepted + 2);
	assert_text(&tab, id, "tiny");
	/* Earlier strings are intact after the arena grew (realloc moved it). */
	memset(buf, 'q', sizeof buf);
	memcpy(buf, "0:", 2);
	size_t len = 0;
	const char *t = strtab_text(&tab, 2, &len);
	assert_int_equal(len, 200);
	assert_memory_equal(t, buf, 200);
	strtab_fini(&tab);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_overflow_id_reserved),
	    cmocka_unit_test(test_same_text_same_id),
	    cmocka_unit_test(test_many_distinct),
	    cmocka_unit_test(test_string_cap),
	    cmocka_unit_test(test_byte_cap),
	};
	return cmocka_run_group_tests_name("strtab", tests, NULL, NULL);
}
