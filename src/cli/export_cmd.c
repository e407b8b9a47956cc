/* `cuscope export [-o OUT] [--from S] [--to S] [--format F] FILE`: Chrome JSON or Perfetto protobuf. */
#include "cuscope/cli.h"
#include "cuscope/export.h"
#include "cuscope/log.h"
#include "cuscope/store.h"

#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Parses a time in seconds from the capture start (0 allowed); 0 or -1. */
static int parse_offset(const char *text, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(text, &end);
	if (errno || end == text || *end || !(v >= 0) || v > 1e7)
		return -1;
	*out = v;
	return 0;
}

int cli_export(int argc, char **argv)
{
	static const struct option options[] = {
	    {"output", required_argument, NULL, 'o'}, {"from", required_argument, NULL, 'F'},
	    {"to", required_argument, NULL, 'T'},     {"format", required_argument, NULL, 'f'},
	    {"help", no_argument, NULL, 'h'},         {0},
	};
	const char *out_path = NULL;
	int (*write)(const struct store *, const char *, const struct export_options *,
	             struct export_counts *, char *, size_t, const char **) = export_chrome_json;
	double from = 0, to = -1;
	int opt;
	optind = 1;
	optopt = 0;
	while ((opt = getopt_long(argc, argv, "+o:f:h", options, NULL)) != -1) {
		switch (opt) {
		case 'o':
			out_path = optarg;
			break;
		case 'F':
			if (parse_offset(optarg, &from) != 0) {
				log_error("export: --from wants seconds from the capture start, not '%s'",
				          optarg);
				return CLI_EXIT_USAGE;
			}
			break;
		case 'T':
			if (parse_offset(optarg, &to) != 0) {
				log_error("export: --to wants seconds from the capture start, not '%s'",
				          optarg);
				return CLI_EXIT_USAGE;
			}
			break;
		case 'f':
			if (strcmp(optarg, "perfetto") == 0) {
				write = export_perfetto;
			} else if (strcmp(optarg, "chrome") == 0 || strcmp(optarg, "json") == 0) {
				write = export_chrome_json;
			} else {
				log_error("export: unknown format '%s' (chrome, json or perfetto)", optarg);
				return CLI_EXIT_USAGE;
			}
			break;
		case 'h':
			cli_usage("export");
			return output_finish(stdout);
		default:
			return cli_bad_option("export", argv);
		}
	}
	if (optind != argc - 1) {
		log_error("export: expected one capture file (see cuscope export --help)");
		return CLI_EXIT_USAGE;
	}
	if (to >= 0 && to <= from) {
		log_error("export: --to (%g s) must be after --from (%g s)", to, from);
		return CLI_EXIT_USAGE;
	}
	struct store *store = store_new();
	int rc = cli_load_capture(argv[optind], store);
	if (rc == 0) {
		uint64_t base = export_time_base(store);
		struct export_options eo = {base + (uint64_t)(from * 1e9 + 0.5),
		                            to < 0 ? UINT64_MAX : base + (uint64_t)(to * 1e9 + 0.5)};
		if (from == 0)
			eo.from_ns = 0;
		struct export_counts counts;
		char msg[512];
		const char *cause = NULL;
		int err = write(store, out_path, &eo, &counts, msg, sizeof msg, &cause);
		if (err) {
			log_error("export: %s", cause);
			rc = err == -ENOENT || err == -EACCES || err == -EISDIR || err == -ENOTDIR
			         ? CLI_EXIT_USAGE
			         : 1;
		}
	}
	store_free(store);
	return rc;
}
