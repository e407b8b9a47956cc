#include "cuscope/cli.h"
#include "cuscope/log.h"
#include "cuscope/stats.h"
#include "cuscope/store.h"

#include <getopt.h>
#include <stdio.h>

int cli_stats(int argc, char **argv)
{
	static const struct option options[] = {
	    {"format", required_argument, NULL, 'f'},
	    {"report", required_argument, NULL, 'r'},
	    {"help", no_argument, NULL, 'h'},
	    {0},
	};
	enum stats_format format = STATS_FORMAT_TABLE;
	unsigned mask = STATS_SECTIONS_ALL;
	int opt;
	optind = 1;
	optopt = 0;
	while ((opt = getopt_long(argc, argv, "+f:r:h", options, NULL)) != -1) {
		switch (opt) {
		case 'f':
			if (stats_format_parse(optarg, &format) != 0) {
				log_error("stats: unknown format '%s' (use table, csv or json)", optarg);
				return CLI_EXIT_USAGE;
			}
			break;
		case 'r': {
			const char *bad = NULL;
			size_t bad_len = 0;
			if (stats_report_parse(optarg, &mask, &bad, &bad_len) != 0) {
				log_error("stats: unknown report '%.*s' (use a comma list of: %s)",
				          (int)bad_len, bad, stats_section_names());
				return CLI_EXIT_USAGE;
			}
			break;
		}
		case 'h':
			cli_usage("stats");
			return output_finish(stdout);
		default:
			return cli_bad_option("stats", argv);
		}
	}
	if (optind != argc - 1) {
		log_error("stats: expected one capture file (see cuscope stats --help)");
		return CLI_EXIT_USAGE;
	}
	struct store *store = store_new();
	int rc = cli_load_capture(argv[optind], store);
	if (rc == 0) {
		stats_write_sections(stdout, store, format, mask);
		rc = output_finish(stdout);
	}
	store_free(store);
	return rc;
}
