/* Escaping of untrusted names: terminal text, JSON strings, CSV fields, table cells. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cuscope/escape.h"

/* Output of fn(out, s) as a malloc'd string. */
static char *capture_out(void (*fn)(FILE *, const char *), const char *s)
{
	char *buf = NULL;
	size_t size = 0;
	FILE *out = open_memstream(&buf, &size);
	assert_non_null(out);
	fn(out, s);
	assert_int_equal(fclose(out), 0);
	return buf;
}

static void check(void (*fn)(FILE *, const char *), const char *in, const char *want)
{
	char *got = capture_out(fn, in);
	assert_string_equal(got, want);
	free(got);
}

static void term_dup_check(const char *in, const char *want)
{
	char *got = escape_term_dup(in);
	assert_string_equal(got, want);
	free(got);
	check(escape_term_fputs, in, want);
}

static void test_term_controls(void **state)
{
	(void)state;
	/* The title-setting OSC and a CSI clear: every control byte becomes visible text. */
	term_dup_check("a\x1b]0;pwned\x07z", "a\\x1b]0;pwned\\x07z");
	term_dup_check("\x1b[2J\x1b[H", "\\x1b[2J\\x1b[H");
	term_dup_check("tab\there\nnl\rcr", "tab\\x09here\\x0anl\\x0dcr");
	term_dup_check("\x01\x1f\x7f", "\\x01\\x1f\\x7f");
	term_dup_check("plain name (1,2) \\x", "plain name (1,2) \\x");
	term_dup_check("", "");
}

static void test_term_utf8(void **state)
{
	(void)state;
	/* Valid UTF-8 is kept: é, €, 𝄞, CJK. */
	term_dup_check("caf\xc3\xa9 \xe2\x82\xac \xf0\x9d\x84\x9e \xe6\x97\xa5",
	               "caf\xc3\xa9 \xe2\x82\xac \xf0\x9d\x84\x9e \xe6\x97\xa5");
	/* C1 controls, raw and UTF-8 encoded (U+009B is a CSI on some terminals). */
	term_dup_check("\x9b"
	               "2J",
	               "\\x9b2J");
	term_dup_check("\xc2\x9b"
	               "2J",
	               "\\xc2\\x9b2J");
	term_dup_check("\xc2\x85", "\\xc2\\x85");
	term_dup_check("\xc2\xa0", "\xc2\xa0"); /* U+00A0 is printable */
	/* Invalid: stray continuation, overlong, surrogate, truncated, beyond U+10FFFF. */
	term_dup_check("\x80", "\\x80");
	term_dup_check("\xc0\xaf", "\\xc0\\xaf");
	term_dup_check("\xed\xa0\x80", "\\xed\\xa0\\x80");
	term_dup_check("\xe2\x82", "\\xe2\\x82");
	term_dup_check("\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80");
	term_dup_check("\xff", "\\xff");
}

static void test_json(void **state)
{
	(void)state;
	check(escape_json_fputs, "a\"b\\c", "\"a\\\"b\\\\c\"");
	check(escape_json_fputs, "\x1b]0;x\x07", "\"\\u001b]0;x\\u0007\"");
	check(escape_json_fputs, "\n\t\r\x7f", "\"\\n\\t\\r\\u007f\"");
	check(escape_json_fputs, "\xc2\x9b\xc3\xa9", "\"\\u009b\xc3\xa9\"");
	check(escape_json_fputs, "bad\xff", "\"bad\\ufffd\"");
	check(escape_json_fputs, "", "\"\"");
}

static void test_csv(void **state)
{
	(void)state;
	check(escape_csv_fputs, "plain", "plain");
	check(escape_csv_fputs, "a,b", "\"a,b\"");
	check(escape_csv_fputs, "say \"hi\"", "\"say \"\"hi\"\"\"");
	check(escape_csv_fputs, " pad", "\" pad\"");
	/* Line breaks cannot split a record: they are escaped, not quoted. */
	check(escape_csv_fputs, "two\nlines", "two\\x0alines");
	check(escape_csv_fputs, "\x1b[2J,x", "\"\\x1b[2J,x\"");
}

static void field(const char *in, size_t width, int left, const char *want)
{
	char *buf = NULL;
	size_t size = 0;
	FILE *out = open_memstream(&buf, &size);
	escape_term_field(out, in, width, left);
	assert_int_equal(fclose(out), 0);
	assert_string_equal(buf, want);
	free(buf);
}

static void test_field(void **state)
{
	(void)state;
	field("abc", 5, 1, "abc  ");
	field("abc", 5, 0, "  abc");
	field("abcdef", 4, 1, "abcd");
	/* Characters, not bytes: a cut never splits one. */
	field("\xc3\xa9\xc3\xa9\xc3\xa9", 2, 1, "\xc3\xa9\xc3\xa9");
	field("\xc3\xa9", 3, 1, "\xc3\xa9  ");
	/* An escape is never cut in half: the rest of the field is padding. */
	field("ab\x1b", 4, 1, "ab  ");
	field("ab\x1b", 6, 1, "ab\\x1b");
	/* Plain text that looks like an escape is cut like any text. */
	field("\\x41bc", 3, 1, "\\x4");
	assert_int_equal(escape_term_columns("a\x1b\xc3\xa9"), 6);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_term_controls), cmocka_unit_test(test_term_utf8),
	    cmocka_unit_test(test_json),          cmocka_unit_test(test_csv),
	    cmocka_unit_test(test_field),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
