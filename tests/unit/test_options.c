/* The one options table (cli/options.c): which verb takes which option, how values are checked,
 * and where parsing stops (the first operand: the command's own options are never ours). */
#include "cuscope/cli.h"
#include "cuscope/export.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

/* Parses a NULL-terminated list of words for verb (argv[0] is the verb's name). */
static int parse(unsigned verb, struct cli_args *args, char **words)
{
	int argc = 0;
	while (words[argc])
		argc++;
	return cli_parse_options(verb, argc, words, args);
}

#define PARSE(verb, args, ...) parse(verb, args, (char *[]){__VA_ARGS__, NULL})

static void test_record_options(void **unused)
{
	(void)unused;
	struct cli_args a = {.launch = {.wait_viewer_ms = 3000}};
	int rc = PARSE(CLI_RECORD, &a, "record", "-o", "out.cuscope", "--duration", "2.5", "--buffer-mb", "8",
	               "--sample-hz", "500", "--follow", "python3,torchrun", "--overhead-budget", "1.5",
	               "--no-gpu", "--", "cmd", "--no-gpu");
	assert_int_equal(rc, -1);
	assert_string_equal(a.output, "out.cuscope");
	assert_true(a.duration_s == 2.5);
	assert_int_equal(a.launch.buffer_mb, 8);
	assert_string_equal(a.launch.sample_hz, "500");
	assert_string_equal(a.launch.follow, "python3,torchrun");
	assert_string_equal(a.launch.overhead_budget, "1.5");
	assert_int_equal(a.launch.no_gpu, 1);
	assert_int_equal(a.launch.wait_viewer_ms, 3000); /* the verb's default stays */
	assert_int_equal(a.first, 15);                   /* "cmd": its own --no-gpu is its business */
}

/* --torch: live mode, record and run take it; attach refuses it in one line (its Python hook
 * runs only as a program starts); the readers do not know it. */
static void test_torch_option(void **unused)
{
	(void)unused;
	static const unsigned takes[] = {CLI_LIVE, CLI_RECORD, CLI_RUN};
	for (size_t i = 0; i < sizeof takes / sizeof takes[0]; i++) {
		struct cli_args a = {0};
		assert_int_equal(PARSE(takes[i], &a, "v", "--torch", "--", "python", "--torch"), -1);
		assert_int_equal(a.launch.torch, 1);
		assert_int_equal(a.first, 3);
	}
	struct cli_args a = {0};
	assert_int_equal(PARSE(CLI_RECORD, &a, "record", "--", "python"), -1);
	assert_int_equal(a.launch.torch, 0);
	assert_int_equal(PARSE(CLI_ATTACH, &a, "attach", "--torch", "42"), CLI_EXIT_USAGE);
	assert_int_equal(PARSE(CLI_VIEW, &a, "view", "--torch", "f"), CLI_EXIT_USAGE);
}

/* Parsing ends at the first operand even without "--". */
static void test_stops_at_command(void **unused)
{
	(void)unused;
	struct cli_args a = {0};
	assert_int_equal(PARSE(CLI_LIVE, &a, "cuscope", "--ascii", "prog", "--ascii", "-h"), -1);
	assert_int_equal(a.ui.ascii, 1);
	assert_int_equal(a.first, 2);
}

/* Each verb takes only its own options; a letter means what the verb's table entry says. */
static void test_options_belong_to_verbs(void **unused)
{
	(void)unused;
	struct cli_args a = {0};
	assert_int_equal(PARSE(CLI_VIEW, &a, "view", "--sample-hz", "5", "f"), CLI_EXIT_USAGE);
	assert_int_equal(PARSE(CLI_RECORD, &a, "record", "--ascii", "-o", "f", "cmd"), CLI_EXIT_USAGE);
	assert_int_equal(PARSE(CLI_STATS, &a, "stats", "--duration", "1", "f"), CLI_EXIT_USAGE);
	assert_int_equal(PARSE(CLI_INFO, &a, "info", "-o", "x", "f"), CLI_EXIT_USAGE);
	assert_int_equal(PARSE(CLI_RECORD, &a, "record", "-V"), CLI_EXIT_USAGE);
	/* -r is attach's --record but stats' --report (which needs a value). */
	a = (struct cli_args){0};
	assert_int_equal(PARSE(CLI_ATTACH, &a, "attach", "-r", "-o", "f", "42"), -1);
	assert_int_equal(a.record, 1);
	assert_int_equal(a.first, 4);
	assert_int_equal(PARSE(CLI_STATS, &a, "stats", "f", "-r"), -1); /* an operand first: ends there */
	assert_int_equal(PARSE(CLI_STATS, &a, "stats", "-r"), CLI_EXIT_USAGE);
	a = (struct cli_args){.stats_mask = 0};
	assert_int_equal(PARSE(CLI_STATS, &a, "stats", "-r", "nvtx", "-f", "json", "f"), -1);
	assert_int_not_equal(a.stats_mask, 0);
	assert_int_equal(a.stats_format, STATS_FORMAT_JSON);
	/* --format is checked by each verb's own entry. */
	assert_int_equal(PARSE(CLI_DIFF, &a, "diff", "--format=csv", "a", "b"), CLI_EXIT_USAGE);
	assert_int_equal(PARSE(CLI_STATS, &a, "stats", "--format=csv", "a"), -1);
	assert_int_equal(PARSE(CLI_EXPORT, &a, "export", "--format=json", "a"), -1);
	assert_ptr_equal(a.export_format, export_format_find("chrome")); /* json names chrome */
	assert_ptr_equal(a.export_format->write, export_chrome_json);
	assert_int_equal(PARSE(CLI_EXPORT, &a, "export", "-f", "perfetto", "a"), -1);
	assert_ptr_equal(a.export_format->write, export_perfetto);
	assert_int_equal(PARSE(CLI_EXPORT, &a, "export", "--format=csv", "a"), CLI_EXIT_USAGE);
	assert_string_equal(export_format_names(), "chrome, json or perfetto");
	assert_ptr_equal(export_format_default()->write, export_chrome_json);
}

/* Values are checked before anything runs; each bad one is refused. */
static void test_values_checked(void **unused)
{
	(void)unused;
	static const char *const bad[][2] = {
	    {"--follow", "a,"},
	    {"--follow", "a/b"},
	    {"--follow", ",a"},
	    {"--follow", ""},
	    {"--overhead-budget", "0"},
	    {"--overhead-budget", "100.1"},
	    {"--overhead-budget", "1.55"},
	    {"--overhead-budget", "x"},
	    {"--sample-hz", "10001"},
	    {"--sample-hz", "-1"},
	    {"--osrt-threshold-us", "x"},
	    {"--counters", ""},
	    {"--log-mb", "0"},
	    {"--buffer-mb", "65537"},
	    {"--memory-mb", "15"},
	    {"--disk-mb", "x"},
	    {"--window", "0"},
	    {"--gap-ms", "-1"},
	    {"--gpu-metrics", ""},
	    {"--gpu-metrics", "sm__cycles_active.avg,"},
	    {"--gpu-metrics", "a,,b"},
	    {"--gpu-metrics", "a b"},
	    {"--gpu-metrics", "a;b"},
	    {"--gpu-metrics", "a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q"},
	    {"--gpu-metrics-hz", "0"},
	    {"--gpu-metrics-hz", "1001"},
	    {"--gpu-metrics-hz", "5x"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct cli_args a = {0};
		assert_int_equal(PARSE(CLI_LIVE, &a, "cuscope", (char *)bad[i][0], (char *)bad[i][1], "cmd"),
		                 CLI_EXIT_USAGE);
	}
	static const char *const good[][2] = {
	    {"--follow", "all"},
	    {"--follow", "none"},
	    {"--follow", "a,b"},
	    {"--overhead-budget", "off"},
	    {"--overhead-budget", "100"},
	    {"--overhead-budget", "0.1"},
	    {"--sample-hz", "0"},
	    {"--osrt-threshold-us", "off"},
	    {"--memory-mb", "16"},
	    {"--gap-ms", "0"},
	    {"--window", "0.5"},
	    {"--gpu-metrics", "off"},
	    {"--gpu-metrics", "on"},
	    {"--gpu-metrics", "TPC.TriageCompute.sm__pipe_tensor_cycles_active_realtime.avg.pct_of_peak_"
	                      "sustained_elapsed,dram__bytes_read.sum"},
	    {"--gpu-metrics-hz", "1"},
	    {"--gpu-metrics-hz", "1000"},
	};
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
		struct cli_args a = {0};
		assert_int_equal(
		    PARSE(CLI_LIVE, &a, "cuscope", (char *)good[i][0], (char *)good[i][1], "cmd"), -1);
	}
	struct cli_args a = {0};
	assert_int_equal(PARSE(CLI_LIVE, &a, "cuscope", "--gap-ms", "0", "cmd"), -1);
	assert_true(a.ui.gap_ms < 0); /* 0 turns shading off */
	assert_int_equal(PARSE(CLI_EXPORT, &a, "export", "--from", "0", "--to", "1.5", "f"), -1);
	assert_true(a.from_s == 0 && a.to_s == 1.5);
	assert_int_equal(PARSE(CLI_EXPORT, &a, "export", "--from", "-1", "f"), CLI_EXIT_USAGE);
	/* The GPU metric options reach the launch options (the collector's environment); readers refuse them.
	 */
	struct cli_args g = {0};
	assert_int_equal(
	    PARSE(CLI_RECORD, &g, "record", "-o", "x", "--gpu-metrics", "off", "--gpu-metrics-hz", "20", "c"),
	    -1);
	assert_string_equal(g.launch.gpu_metrics, "off");
	assert_string_equal(g.launch.gpu_metrics_hz, "20");
	assert_int_equal(PARSE(CLI_STATS, &g, "stats", "--gpu-metrics", "off", "f"), CLI_EXIT_USAGE);
}

/* --help works for every verb and ends parsing with status 0. */
static void test_help_everywhere(void **unused)
{
	(void)unused;
	static const unsigned verbs[] = {CLI_LIVE,  CLI_RECORD, CLI_ATTACH, CLI_RUN, CLI_VIEW,
	                                 CLI_STATS, CLI_EXPORT, CLI_DIFF,   CLI_INFO};
	FILE *saved = stdout;
	stdout = fopen("/dev/null", "w");
	assert_non_null(stdout);
	for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++) {
		struct cli_args a = {0};
		assert_int_equal(PARSE(verbs[i], &a, "x", "--help", "--bogus"), 0);
		assert_int_equal(PARSE(verbs[i], &a, "x", "-h"), 0);
		if (verbs[i] != CLI_LIVE)
			assert_non_null(cli_verb_find(cli_verb_name(verbs[i])));
	}
	fclose(stdout);
	stdout = saved;
	assert_string_equal(cli_verb_name(CLI_LIVE), "");
	assert_string_equal(cli_verb_name(CLI_ATTACH), "attach");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_record_options), cmocka_unit_test(test_stops_at_command),
	    cmocka_unit_test(test_torch_option),   cmocka_unit_test(test_options_belong_to_verbs),
	    cmocka_unit_test(test_values_checked), cmocka_unit_test(test_help_everywhere),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
