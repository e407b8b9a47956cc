/* Theme parsing: slots, colours, unknown keys (one warning), fallback, built-ins match the files. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cuscope/theme.h"

static void test_parse_slots(void **state)
{
	(void)state;
	struct theme t;
	theme_default(&t);
	char warn[256];
	int skipped =
	    theme_parse(&t, "# c\nname = x\nstatus = 196 on 21 bold underline\n  gap=default on gray\n", warn,
	                sizeof warn);
	assert_int_equal(skipped, 0);
	assert_string_equal(warn, "");
	assert_string_equal(t.name, "x");
	assert_int_equal(t.slot[THEME_STATUS].fg, 196);
	assert_int_equal(t.slot[THEME_STATUS].bg, 21);
	assert_int_equal(t.slot[THEME_STATUS].attr, THEME_BOLD | THEME_UNDERLINE);
	assert_int_equal(t.slot[THEME_GAP].fg, THEME_DEFAULT_COLOR);
	assert_int_equal(t.slot[THEME_GAP].bg, 8);
	/* untouched slots keep the dark look */
	struct theme d;
	theme_default(&d);
	assert_memory_equal(&t.slot[THEME_AXIS], &d.slot[THEME_AXIS], sizeof d.slot[0]);
}

static void test_unknown_keys_one_warning(void **state)
{
	(void)state;
	struct theme t;
	theme_default(&t);
	char warn[256];
	int skipped = theme_parse(&t, "bogus = red\nstatus = nocolour\nalso_bogus = 1\naxis = red\n", warn,
	                          sizeof warn);
	assert_int_equal(skipped, 3);
	assert_non_null(strstr(warn, "unknown key 'bogus' (line 1)"));
	assert_non_null(strstr(warn, "and 2 more"));
	assert_null(strchr(warn, '\n'));
	assert_int_equal(t.slot[THEME_AXIS].fg, 1);
}

static void test_colors(void **state)
{
	(void)state;
	int16_t c;
	assert_int_equal(theme_parse_color("bright-red", &c), 0);
	assert_int_equal(c, 9);
	assert_int_equal(theme_parse_color("255", &c), 0);
	assert_int_equal(c, 255);
	assert_int_equal(theme_parse_color("256", &c), -EINVAL);
	assert_int_equal(theme_parse_color("pink", &c), -EINVAL);
	assert_int_equal(theme_degrade_color(196, 256), 196);
	assert_int_equal(theme_degrade_color(196, 16), 9); /* pure red -> bright red */
	assert_int_equal(theme_degrade_color(196, 8), 1);
	assert_int_equal(theme_degrade_color(12, 8), 4);
	assert_int_equal(theme_degrade_color(232, 16), 0); /* near black */
	assert_int_equal(theme_degrade_color(-1, 8), -1);
}

static char *read_file(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	static char buf[65536];
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = 0;
	return buf;
}

/* The compiled-in copies are the files (run from the repository root, as tests/run.sh does). */
static void test_builtin_matches_files(void **state)
{
	(void)state;
	size_t n = 0;
	for (; theme_builtin_names[n]; n++) {
		char path[256];
		snprintf(path, sizeof path, "themes/%s.theme", theme_builtin_names[n]);
		char *text = read_file(path);
		if (!text)
			fail_msg("cannot read %s (run from the repository root)", path);
		if (strcmp(text, theme_builtin_text(theme_builtin_names[n])) != 0)
			fail_msg("%s differs from its built-in copy in src/model/theme_builtin.c", path);
		struct theme t;
		char warn[256];
		theme_default(&t);
		assert_int_equal(theme_parse(&t, text, warn, sizeof warn), 0);
		assert_string_equal(t.name, theme_builtin_names[n]);
	}
	assert_true(n >= 4);
	assert_string_equal(theme_builtin_names[0], "dark");
}

static void test_load_search_and_fallback(void **state)
{
	(void)state;
	char dir[] = "/tmp/cuscope-theme-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char path[512];
	snprintf(path, sizeof path, "%s/mine.theme", dir);
	FILE *f = fopen(path, "w");
	fputs("status = 1 on 2\nwhatever = 3\n", f);
	fclose(f);
	const char *dirs[] = {dir, NULL};
	struct theme t;
	char msg[300], from[512];
	assert_int_equal(theme_load(&t, "mine", dirs, msg, sizeof msg, from, sizeof from), 0);
	assert_string_equal(from, path);
	assert_int_equal(t.slot[THEME_STATUS].fg, 1);
	assert_non_null(strstr(msg, "unknown key 'whatever'"));
	assert_int_equal(theme_load(&t, path, NULL, msg, sizeof msg, from, sizeof from), 0); /* by path */
	assert_int_equal(t.slot[THEME_STATUS].bg, 2);
	assert_int_equal(theme_load(&t, "light", dirs, msg, sizeof msg, from, sizeof from), 0); /* built-in */
	assert_string_equal(from, "built-in");
	assert_string_equal(t.name, "light");
	assert_int_equal(theme_load(&t, "nope", dirs, msg, sizeof msg, from, sizeof from), -ENOENT);
	assert_string_equal(t.name, "dark");
	assert_non_null(strstr(msg, "not found"));
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse_slots),
	    cmocka_unit_test(test_unknown_keys_one_warning),
	    cmocka_unit_test(test_colors),
	    cmocka_unit_test(test_builtin_matches_files),
	    cmocka_unit_test(test_load_search_and_fallback),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
