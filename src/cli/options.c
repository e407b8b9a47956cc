/*
 * Every command-line option of every verb, in one declarative table: its names, the verbs that
 * take it and how its value is checked and stored. Verbs call cli_parse_options and read the
 * result from struct cli_args; none of them runs getopt itself.
 */
#include "cuscope/cli.h"
#include "cuscope/export.h"
#include "cuscope/log.h"
#include "cuscope/trigger.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef CUSCOPE_VERSION
#define CUSCOPE_VERSION "0.0.0"
#endif

/* Verbs that share a group of options. */
#define CLI_UI_VERBS        (CLI_LIVE | CLI_VIEW | CLI_ATTACH)
#define CLI_COLLECTOR_VERBS (CLI_LIVE | CLI_RECORD | CLI_ATTACH | CLI_RUN)

struct cli_option {
	const char *name; /* long name */
	int letter;       /* short option letter, 0 = none */
	int has_arg;      /* no_argument or required_argument */
	unsigned verbs;   /* CLI_* bits of the verbs that take it */
	/* Checks and stores the value: 0, 1 to end parsing with status 0 (help), -1 after one line. */
	int (*apply)(struct cli_args *a, const char *verb, const char *arg);
};

int cli_parse_seconds(const char *text, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(text, &end);
	if (errno || end == text || *end || !(v > 0) || v > 1e7)
		return -1;
	*out = v;
	return 0;
}

/* A time in seconds from a capture's start (0 allowed); 0 or -1. */
static int cli_parse_offset(const char *text, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(text, &end);
	if (errno || end == text || *end || !(v >= 0) || v > 1e7)
		return -1;
	*out = v;
	return 0;
}

/* A whole number in [lo, hi] with nothing after it; 0 or -1. */
static int cli_parse_uint(const char *arg, unsigned long lo, unsigned long hi, unsigned *out)
{
	char *end;
	unsigned long v = strtoul(arg, &end, 10);
	if (!*arg || *end || v < lo || v > hi)
		return -1;
	*out = (unsigned)v;
	return 0;
}

static int cli_opt_help(struct cli_args *a, const char *verb, const char *arg)
{
	(void)a;
	(void)arg;
	cli_usage(verb);
	return 1;
}

static int cli_opt_version(struct cli_args *a, const char *verb, const char *arg)
{
	(void)a;
	(void)verb;
	(void)arg;
	printf("cuscope %s\n", CUSCOPE_VERSION);
	return 1;
}

static int cli_opt_output(struct cli_args *a, const char *verb, const char *arg)
{
	(void)verb;
	a->output = arg;
	return 0;
}

static int cli_opt_duration(struct cli_args *a, const char *verb, const char *arg)
{
	if (cli_parse_seconds(arg, &a->duration_s) == 0)
		return 0;
	log_error("%s: --duration needs a positive number of seconds, not '%s'", verb, arg);
	return -1;
}

static int cli_opt_buffer_mb(struct cli_args *a, const char *verb, const char *arg)
{
	(void)verb;
	if (cli_parse_uint(arg, 1, 65536, &a->launch.buffer_mb) == 0)
		return 0;
	log_error("--buffer-mb needs a size in MiB (1-65536), not '%s'", arg);
	return -1;
}

static int cli_opt_record(struct cli_args *a, const char *verb, const char *arg)
{
	(void)verb;
	(void)arg;
	a->record = 1;
	return 0;
}

static int cli_opt_detached(struct cli_args *a, const char *verb, const char *arg)
{
	(void)verb;
	(void)arg;
	a->detached = 1;
	return 0;
}

/* ---- attach --ssh, relay ---- */

static int cli_opt_ssh(struct cli_args *a, const char *verb, const char *arg)
{
	(void)verb;
	a->ssh = arg;
	return 0;
}

static int cli_opt_hosts(struct cli_args *a, const char *verb, const char *arg)
{
	(void)verb;
	a->hosts_file = arg;
	return 0;
}

static int cli_opt_slurm_nodes(struct cli_args *a, const char *verb, const char *arg)
{
	(void)verb;
	(void)arg;
	a->slurm_nodes = 1;
	return 0;
}

static int cli_opt_via(struct cli_args *a, const char *verb, const char *arg)
{
	(void)verb;
	a->via = arg;
	return 0;
}

static int cli_opt_remote_cuscope(struct cli_args *a, const char *verb, const char *arg)
{
	if (arg[0] != '/') {
		log_error("%s: --remote-cuscope needs an absolute path, not '%s'", verb, arg);
		return -1;
	}
	a->remote_cuscope = arg;
	return 0;
}

static int cli_opt_job(struct cli_args *a, const char *verb, const char *arg)
{
	int ok = arg[0] != '\0' && strlen(arg) < 64;
	for (const char *c = arg; ok && *c; c++)
		ok = (*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		     *c == '_' || *c == '.' || *c == '-';
	if (!ok) {
		log_error("%s: --job needs a Slurm job id, not '%s'", verb, arg);
		return -1;
	}
	a->job = arg;
	return 0;
}

/* ---- the view (live mode, view, attach) ---- */

static int cli_opt_ascii(struct cli_args *a, const char *verb, const char *arg)
{
	(void)verb;
	(void)arg;
	a->ui.ascii = 1;
	return 0;
}

static int cli_opt_window(struct cli_args *a, const char *verb, const char *arg)
{
	(void)verb;
	if (cli_parse_seconds(arg, &a->ui.window_s) == 0)
		return 0;
	log_error("--window needs a positive number of seconds, not '%s'", arg);
	return -1;
}

static int cli_opt_theme(struct cli_args *a, const char *verb, const char *arg)
{
	(void)verb;
	a->ui.theme = arg;
	return 0;
}

static int cli_opt_gap_ms(struct cli_args *a, const char *verb, const char *arg)
{
	(void)verb;
	char *end;
	double g = strtod(arg, &end);
	if (end == arg || *end || g < 0) {
		log_error("--gap-ms needs a number of milliseconds (0 turns gap shading off), not '%s'", arg);
		return -1;
	}
	a->ui.gap_ms = g > 0 ? g : -1;
	return 0;
}

static int cli_opt_no_mouse(struct cli_args *a, const char *verb, const char *arg)
{
	(void)verb;
	(void)arg;
	a->ui.no_mouse = 1;
	return 0;
}

static int cli_opt_memory_mb(struct cli_args *a, const char *verb, const char *arg)
{
	(void)verb;
	if (cli_parse_uint(arg, 16, 1048576, &a->ui.memory_mb) == 0)
		return 0;
	log_error("--memory-mb needs a size in MiB (16-1048576), not '%s'", arg);
	return -1;
}

static int cli_opt_disk_mb(struct cli_args *a, const char *verb, const char *arg)
{
	(void)verb;
	if (cli_parse_uint(arg, 16, 1048576, &a->ui.disk_mb) == 0)
		return 0;
	log_error("--disk-mb needs a size in MiB (16-1048576), not '%s'", arg);
	return -1;
}

/* ---- the collector (live mode, record, attach, run) ---- */

/* 0 if arg is a count (or "off" where allowed); else says so in one line and returns -1. */
static int cli_check_number(const char *name, const char *arg, int allow_off)
{
	char *end;
	unsigned long v = strtoul(arg, &end, 10);
	if ((allow_off && strcmp(arg, "off") == 0) || (*arg && !*end && v <= 100000000ul))
		return 0;
	log_error("--%s needs a number%s, not '%s'", name, allow_off ? " or 'off'" : "", arg);
	return -1;
}

static int cli_opt_sample_hz(struct cli_args *a, const char *verb, const char *arg)
{
	(void)verb;
	if (cli_check_number("sample-hz", arg, 0) != 0)
		return -1;
	/* Above this a sample every period would cost more than the program's own work. */
	if (strtoul(arg, NULL, 10) > 10000) {
		log_error("--sample-hz at most 10000");
		return -1;
	}
	a->launch.sample_hz = arg;
	return 0;
}

static int cli_opt_osrt_threshold(struct cli_args *a, const char *verb, const char *arg)
{
	(void)verb;
	if (cli_check_number("osrt-threshold-us", arg, 1) != 0)
		return -1;
	a->launch.osrt_threshold_us = arg;
	return 0;
}

static int cli_opt_counters(struct cli_args *a, const char *verb, const char *arg)
{
	(void)verb;
	if (!*arg || strlen(arg) > 500) {
		log_error("--counters needs a comma list of event names (or none)");
		return -1;
	}
	a->launch.counters = arg;
	return 0;
}

/* --gpu-metrics on|off|LIST: LIST is comma-separated metric names the collector checks itself. */
static int cli_opt_gpu_metrics(struct cli_args *a, const char *verb, const char *arg)
{
	(void)verb;
	size_t n = 1;
	for (const char *p = arg; *p; p++) {
		n += *p == ',';
		/* Metric names are [A-Za-z0-9_.]: anything else is a typo, said here, not in the target. */
		if (!(*p == ',' || *p == '_' || *p == '.' || (*p >= 'a' && *p <= 'z') ||
		      (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9')))
			n = 0;
	}
	if (!*arg || strlen(arg) > 1000 || n == 0 || n > 16 || strstr(arg, ",,") || arg[0] == ',' ||
	    arg[strlen(arg) - 1] == ',') {
		log_error("--gpu-metrics takes on, off or a comma list of at most 16 metric names "
		          "(e.g. sm__cycles_active.avg,dram__bytes_read.sum)");
		return -1;
	}
	a->launch.gpu_metrics = arg;
	return 0;
}

static int cli_opt_gpu_metrics_hz(struct cli_args *a, const char *verb, const char *arg)
{
	(void)verb;
	char *end;
	unsigned long hz = strtoul(arg, &end, 10);
	if (!*arg || *end || hz < 1 || hz > 1000) {
		log_error("--gpu-metrics-hz takes samples per second from 1 to 1000 (default 50)");
		return -1;
	}
	a->launch.gpu_metrics_hz = arg;
	return 0;
}

static int cli_opt_python_perf(struct cli_args *a, const char *verb, const char *arg)
{
	(void)verb;
	(void)arg;
	a->launch.python_perf = 1;
	return 0;
}

static int cli_opt_torch(struct cli_args *a, const char *verb, const char *arg)
{
	(void)verb;
	(void)arg;
	a->launch.torch = 1;
	return 0;
}

/* The Python hook that turns torch's ranges on runs only as a launched program starts. */
static int cli_opt_torch_attach(struct cli_args *a, const char *verb, const char *arg)
{
	(void)a;
	(void)arg;
	log_error(
	    "%s: --torch is unavailable after attach (it works from the program's start): "
	    "start the program with `cuscope --torch -- CMD` or `cuscope run --detached --torch -- CMD`",
	    verb);
	return -1;
}

static int cli_opt_no_gpu(struct cli_args *a, const char *verb, const char *arg)
{
	(void)verb;
	(void)arg;
	a->launch.no_gpu = 1;
	return 0;
}

static int cli_opt_log_mb(struct cli_args *a, const char *verb, const char *arg)
{
	(void)verb;
	if (cli_parse_uint(arg, 1, 1048576, &a->launch.log_mb) == 0)
		return 0;
	log_error("--log-mb needs a size in MiB (1-1048576), not '%s'", arg);
	return -1;
}

/* 0 if arg is a --follow value: all, none, or non-empty base names separated by commas. */
static int cli_check_follow(const char *arg)
{
	if (strcmp(arg, "all") == 0 || strcmp(arg, "none") == 0)
		return 0;
	/* The collector compares names of at most NAME_MAX bytes; the whole list travels in the
	 * environment. */
	if (!*arg || strlen(arg) > 1000 || strchr(arg, '/'))
		return -1;
	for (const char *p = arg; *p;) {
		size_t len = strcspn(p, ",");
		if (len == 0 || len > NAME_MAX)
			return -1;
		p += len;
		if (*p == ',' && !*++p)
			return -1; /* a trailing comma */
	}
	return 0;
}

static int cli_opt_follow(struct cli_args *a, const char *verb, const char *arg)
{
	(void)verb;
	if (cli_check_follow(arg) != 0) {
		log_error("--follow needs all, none or a comma list of executable names (no '/'), not '%s'",
		          arg);
		return -1;
	}
	a->launch.follow = arg;
	return 0;
}

/* 0 if arg is an --overhead-budget value: "off" or a percentage in (0, 100], one decimal at most. */
static int cli_check_budget(const char *arg)
{
	if (strcmp(arg, "off") == 0)
		return 0;
	const char *p = arg;
	unsigned whole = 0, digits = 0, tenths = 0;
	while (*p >= '0' && *p <= '9' && digits < 4) {
		whole = whole * 10 + (unsigned)(*p++ - '0');
		digits++;
	}
	if (!digits)
		return -1;
	if (*p == '.') {
		p++;
		if (*p < '0' || *p > '9')
			return -1;
		tenths = (unsigned)(*p++ - '0');
	}
	if (*p)
		return -1;
	unsigned permille = whole * 10 + tenths;
	return permille > 0 && permille <= 1000 ? 0 : -1;
}

static int cli_opt_overhead_budget(struct cli_args *a, const char *verb, const char *arg)
{
	(void)verb;
	if (cli_check_budget(arg) != 0) {
		log_error("--overhead-budget needs a percentage over 0 and at most 100 (one decimal at most) "
		          "or 'off', not '%s'",
		          arg);
		return -1;
	}
	a->launch.overhead_budget = arg;
	return 0;
}

/* ---- triggers (live mode, record, attach, run) ---- */

static int cli_opt_trigger(struct cli_args *a, const char *verb, const char *arg)
{
	struct trigger_spec spec;
	const char *why = NULL;
	if (trigger_parse(arg, &spec, &why) != 0) {
		log_error("%s%s--trigger '%s': %s; use %s", verb, *verb ? ": " : "", arg, why,
		          TRIGGER_GRAMMAR);
		return -1;
	}
	if (a->triggers.count >= CLI_TRIGGERS_MAX) {
		log_error("%s%sat most %d --trigger options", verb, *verb ? ": " : "", CLI_TRIGGERS_MAX);
		return -1;
	}
	a->triggers.exprs[a->triggers.count++] = arg;
	return 0;
}

/* --pre and --post: a duration with its unit (5s, 500ms). */
static int cli_opt_window_side(struct cli_args *a, const char *verb, const char *arg, int post)
{
	uint64_t ns;
	if (trigger_parse_duration(arg, &ns) != 0 || ns > 3600ull * 1000000000ull) {
		log_error("%s%s--%s needs a duration up to 1 hour with its unit (500ms, 5s), not '%s'", verb,
		          *verb ? ": " : "", post ? "post" : "pre", arg);
		return -1;
	}
	if (post) {
		a->triggers.post_ns = ns;
		a->triggers.post_set = 1;
	} else {
		a->triggers.pre_ns = ns;
		a->triggers.pre_set = 1;
	}
	return 0;
}

static int cli_opt_pre(struct cli_args *a, const char *verb, const char *arg)
{
	return cli_opt_window_side(a, verb, arg, 0);
}

static int cli_opt_post(struct cli_args *a, const char *verb, const char *arg)
{
	return cli_opt_window_side(a, verb, arg, 1);
}

static int cli_opt_dump_dir(struct cli_args *a, const char *verb, const char *arg)
{
	if (!*arg) {
		log_error("%s%s--dump-dir needs a directory", verb, *verb ? ": " : "");
		return -1;
	}
	a->triggers.dump_dir = arg;
	return 0;
}

static int cli_opt_dump_max(struct cli_args *a, const char *verb, const char *arg)
{
	if (cli_parse_uint(arg, 1, 100000, &a->triggers.dump_max) == 0)
		return 0;
	log_error("%s%s--dump-max needs a number of dumps (1-100000), not '%s'", verb, *verb ? ": " : "",
	          arg);
	return -1;
}

static int cli_opt_dump_max_mb(struct cli_args *a, const char *verb, const char *arg)
{
	if (cli_parse_uint(arg, 1, 1048576, &a->triggers.dump_max_mb) == 0)
		return 0;
	log_error("%s%s--dump-max-mb needs a size in MiB (1-1048576), not '%s'", verb, *verb ? ": " : "",
	          arg);
	return -1;
}

static int cli_opt_dump_keep(struct cli_args *a, const char *verb, const char *arg)
{
	if (strcmp(arg, "oldest") == 0 || strcmp(arg, "newest") == 0) {
		a->triggers.keep_newest = arg[0] == 'n';
		return 0;
	}
	log_error("%s%s--dump-keep needs oldest or newest, not '%s'", verb, *verb ? ": " : "", arg);
	return -1;
}

/* ---- the capture readers (stats, diff, export) ---- */

static int cli_opt_stats_format(struct cli_args *a, const char *verb, const char *arg)
{
	(void)verb;
	if (stats_format_parse(arg, &a->stats_format) == 0)
		return 0;
	log_error("stats: unknown format '%s' (use table, csv or json)", arg);
	return -1;
}

static int cli_opt_stats_report(struct cli_args *a, const char *verb, const char *arg)
{
	(void)verb;
	const char *bad = NULL;
	size_t bad_len = 0;
	if (stats_report_parse(arg, &a->stats_mask, &bad, &bad_len) == 0)
		return 0;
	log_error("stats: unknown report '%.*s' (use a comma list of: %s)", (int)bad_len, bad,
	          stats_section_names());
	return -1;
}

static int cli_opt_step_range(struct cli_args *a, const char *verb, const char *arg)
{
	(void)verb;
	if (arg[0]) {
		a->step_range = arg;
		return 0;
	}
	log_error("stats: --step-range needs the name of an NVTX range");
	return -1;
}

static int cli_opt_diff_format(struct cli_args *a, const char *verb, const char *arg)
{
	(void)verb;
	if (diff_format_parse(arg, &a->diff_format) == 0)
		return 0;
	log_error("diff: unknown format '%s' (use table or json)", arg);
	return -1;
}

static int cli_opt_export_format(struct cli_args *a, const char *verb, const char *arg)
{
	(void)verb;
	a->export_format = export_format_find(arg);
	if (a->export_format)
		return 0;
	log_error("export: unknown format '%s' (%s)", arg, export_format_names());
	return -1;
}

static int cli_opt_json(struct cli_args *a, const char *verb, const char *arg)
{
	(void)verb;
	(void)arg;
	a->json = 1;
	return 0;
}

static int cli_opt_from(struct cli_args *a, const char *verb, const char *arg)
{
	(void)verb;
	if (cli_parse_offset(arg, &a->from_s) == 0)
		return 0;
	log_error("export: --from wants seconds from the capture start, not '%s'", arg);
	return -1;
}

static int cli_opt_to(struct cli_args *a, const char *verb, const char *arg)
{
	(void)verb;
	if (cli_parse_offset(arg, &a->to_s) == 0)
		return 0;
	log_error("export: --to wants seconds from the capture start, not '%s'", arg);
	return -1;
}

/* Every option. A long name may appear twice for different verbs (each its own checks). */
static const struct cli_option cli_options[] = {
    {"help", 'h', no_argument, CLI_ALL_VERBS, cli_opt_help},
    {"version", 'V', no_argument, CLI_LIVE, cli_opt_version},
    {"output", 'o', required_argument, CLI_RECORD | CLI_ATTACH | CLI_EXPORT, cli_opt_output},
    {"duration", 'd', required_argument, CLI_RECORD | CLI_ATTACH, cli_opt_duration},
    {"record", 'r', no_argument, CLI_ATTACH, cli_opt_record},
    {"detached", 0, no_argument, CLI_RUN, cli_opt_detached},
    {"ssh", 0, required_argument, CLI_ATTACH, cli_opt_ssh},
    {"hosts", 0, required_argument, CLI_ATTACH, cli_opt_hosts},
    {"slurm-nodes", 0, no_argument, CLI_ATTACH, cli_opt_slurm_nodes},
    {"via", 0, required_argument, CLI_ATTACH, cli_opt_via},
    {"remote-cuscope", 0, required_argument, CLI_ATTACH, cli_opt_remote_cuscope},
    {"job", 0, required_argument, CLI_ATTACH | CLI_RELAY, cli_opt_job},
    {"buffer-mb", 0, required_argument, CLI_COLLECTOR_VERBS, cli_opt_buffer_mb},
    {"ascii", 0, no_argument, CLI_UI_VERBS, cli_opt_ascii},
    {"window", 0, required_argument, CLI_UI_VERBS, cli_opt_window},
    {"theme", 0, required_argument, CLI_UI_VERBS, cli_opt_theme},
    {"gap-ms", 0, required_argument, CLI_UI_VERBS | CLI_RECORD | CLI_RUN, cli_opt_gap_ms},
    {"no-mouse", 0, no_argument, CLI_UI_VERBS, cli_opt_no_mouse},
    {"memory-mb", 0, required_argument, CLI_UI_VERBS, cli_opt_memory_mb},
    {"disk-mb", 0, required_argument, CLI_UI_VERBS, cli_opt_disk_mb},
    {"sample-hz", 0, required_argument, CLI_COLLECTOR_VERBS, cli_opt_sample_hz},
    {"osrt-threshold-us", 0, required_argument, CLI_COLLECTOR_VERBS, cli_opt_osrt_threshold},
    {"counters", 0, required_argument, CLI_COLLECTOR_VERBS, cli_opt_counters},
    {"gpu-metrics", 0, required_argument, CLI_COLLECTOR_VERBS, cli_opt_gpu_metrics},
    {"gpu-metrics-hz", 0, required_argument, CLI_COLLECTOR_VERBS, cli_opt_gpu_metrics_hz},
    {"python-perf", 0, no_argument, CLI_COLLECTOR_VERBS, cli_opt_python_perf},
    {"torch", 0, no_argument, CLI_LIVE | CLI_RECORD | CLI_RUN, cli_opt_torch},
    {"torch", 0, no_argument, CLI_ATTACH, cli_opt_torch_attach},
    {"no-gpu", 0, no_argument, CLI_COLLECTOR_VERBS, cli_opt_no_gpu},
    {"log-mb", 0, required_argument, CLI_COLLECTOR_VERBS, cli_opt_log_mb},
    {"follow", 0, required_argument, CLI_COLLECTOR_VERBS, cli_opt_follow},
    {"overhead-budget", 0, required_argument, CLI_COLLECTOR_VERBS, cli_opt_overhead_budget},
    {"trigger", 0, required_argument, CLI_COLLECTOR_VERBS, cli_opt_trigger},
    {"pre", 0, required_argument, CLI_COLLECTOR_VERBS, cli_opt_pre},
    {"post", 0, required_argument, CLI_COLLECTOR_VERBS, cli_opt_post},
    {"dump-dir", 0, required_argument, CLI_COLLECTOR_VERBS, cli_opt_dump_dir},
    {"dump-max", 0, required_argument, CLI_COLLECTOR_VERBS, cli_opt_dump_max},
    {"dump-max-mb", 0, required_argument, CLI_COLLECTOR_VERBS, cli_opt_dump_max_mb},
    {"dump-keep", 0, required_argument, CLI_COLLECTOR_VERBS, cli_opt_dump_keep},
    {"format", 'f', required_argument, CLI_STATS, cli_opt_stats_format},
    {"report", 'r', required_argument, CLI_STATS, cli_opt_stats_report},
    {"step-range", 0, required_argument, CLI_STATS, cli_opt_step_range},
    {"format", 'f', required_argument, CLI_DIFF, cli_opt_diff_format},
    {"format", 'f', required_argument, CLI_EXPORT, cli_opt_export_format},
    {"from", 0, required_argument, CLI_EXPORT, cli_opt_from},
    {"to", 0, required_argument, CLI_EXPORT, cli_opt_to},
    {"json", 0, no_argument, CLI_DOCTOR, cli_opt_json},
};

#define CLI_OPTION_COUNT  (sizeof cli_options / sizeof cli_options[0])
#define CLI_OPTION_VAL(i) (256 + (int)(i)) /* getopt_long's val for table entry i: never a letter */

static int cli_bad_option(const char *verb, char **argv)
{
	const char *arg = optind > 0 ? argv[optind - 1] : "";
	log_error("%s%sunknown option or missing value: '%s' (see cuscope %s%s--help)", verb,
	          *verb ? ": " : "", arg, verb, *verb ? " " : "");
	return CLI_EXIT_USAGE;
}

int cli_parse_options(unsigned verb, int argc, char **argv, struct cli_args *args)
{
	struct option longs[CLI_OPTION_COUNT + 1];
	char letters[2 * CLI_OPTION_COUNT + 2] = "+"; /* options end at the first operand (the command) */
	size_t n = 0, l = 1;
	for (size_t i = 0; i < CLI_OPTION_COUNT; i++) {
		const struct cli_option *o = &cli_options[i];
		if (!(o->verbs & verb))
			continue;
		longs[n++] = (struct option){o->name, o->has_arg, NULL, CLI_OPTION_VAL(i)};
		if (o->letter) {
			letters[l++] = (char)o->letter;
			if (o->has_arg == required_argument)
				letters[l++] = ':';
		}
	}
	longs[n] = (struct option){0};
	letters[l] = '\0';
	const char *name = cli_verb_name(verb);
	/* Option errors are said by cli_bad_option, in one line. */
	opterr = 0;
	optind = 1;
	optopt = 0;
	int opt;
	while ((opt = getopt_long(argc, argv, letters, longs, NULL)) != -1) {
		size_t i = CLI_OPTION_COUNT;
		if (opt >= CLI_OPTION_VAL(0) && opt < CLI_OPTION_VAL(CLI_OPTION_COUNT))
			i = (size_t)(opt - CLI_OPTION_VAL(0));
		else if (opt != '?' && opt != ':')
			for (i = 0; i < CLI_OPTION_COUNT; i++)
				if (cli_options[i].letter == opt && (cli_options[i].verbs & verb))
					break;
		if (i == CLI_OPTION_COUNT)
			return cli_bad_option(name, argv);
		int rc = cli_options[i].apply(args, name, optarg);
		if (rc < 0)
			return CLI_EXIT_USAGE;
		if (rc > 0)
			return output_finish(stdout);
	}
	args->first = optind;
	return -1;
}
