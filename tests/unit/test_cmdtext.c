/* The status line's command text: basename, arguments cut from the middle, pid never cut. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "cuscope/cmdtext.h"

static void test_fits_whole(void **state)
{
	(void)state;
	char out[256];
	size_t w =
	    cmdtext_fit("/a/very/long/checkout/bin/long_running -t 6", " pid 42 ", 80, "…", out, sizeof out);
	assert_string_equal(out, "long_running -t 6 pid 42 ");
	assert_int_equal(w, strlen(out));
}

static void test_middle_cut_keeps_name_tail_and_pid(void **state)
{
	(void)state;
	char out[512], cmd[400];
	snprintf(cmd, sizeof cmd, "/x/prog -o /tmp/%0200d/done", 0);
	size_t w = cmdtext_fit(cmd, " pid 123 ", 40, "…", out, sizeof out);
	assert_int_equal(w, 40);
	assert_int_equal(cmdtext_cells(out), 40);
	assert_memory_equal(out, "prog -o /tmp/", 13);
	assert_non_null(strstr(out, "…"));
	assert_non_null(strstr(out, "0/done pid 123 "));
	assert_string_equal(out + strlen(out) - strlen(" pid 123 "), " pid 123 ");
}

static void test_long_name_kept_before_tail(void **state)
{
	(void)state;
	char out[256];
	/* The head takes the whole basename even when it is more than half of the room. */
	cmdtext_fit("/d/a_program_with_a_long_name --flag value --other thing", " pid 7 ", 40, "...", out,
	            sizeof out);
	assert_int_equal(cmdtext_cells(out), 40);
	assert_memory_equal(out, "a_program_with_a_long_name", 26);
	assert_string_equal(out + strlen(out) - 7, " pid 7 ");
	assert_non_null(strstr(out, "...hing pid 7 "));
}

static void test_tiny_room_keeps_pid(void **state)
{
	(void)state;
	char out[256];
	cmdtext_fit("/bin/long_running -x", " pid 99 ", 4, "…", out, sizeof out);
	assert_string_equal(out, " pid 99 ");
	cmdtext_fit("/bin/long_running -x", " pid 99 ", 14, "…", out, sizeof out);
	assert_string_equal(out, "long_… pid 99 ");
}

static void test_utf8_never_split(void **state)
{
	(void)state;
	char out[256];
	/* Each é is two bytes; a cut inside one would leave an invalid byte on the screen. */
	cmdtext_fit("prog éééééééééééééééééééé", "", 12, "…", out, sizeof out);
	assert_int_equal(cmdtext_cells(out), 12);
	assert_string_equal(out, "prog é…ééééé");
}

static void test_small_buffer_terminated(void **state)
{
	(void)state;
	char out[8];
	cmdtext_fit("/bin/long_running -x", " pid 99 ", 80, "…", out, sizeof out);
	assert_int_equal(strlen(out), 7);
	assert_string_equal(out, "long_ru");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_fits_whole),
	    cmocka_unit_test(test_middle_cut_keeps_name_tail_and_pid),
	    cmocka_unit_test(test_long_name_kept_before_tail),
	    cmocka_unit_test(test_tiny_room_keeps_pid),
	    cmocka_unit_test(test_utf8_never_split),
	    cmocka_unit_test(test_small_buffer_terminated),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
