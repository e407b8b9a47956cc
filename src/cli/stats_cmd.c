#include "cuscope/cli.h"
#include "cuscope/log.h"
#include "cuscope/stats.h"
#include "cuscope/store.h"

#include <stdio.h>
#include <string.h>

int cli_stats(int argc, char **argv)
{
	struct cli_args args = {.stats_format = STATS_FORMAT_TABLE, .stats_mask = STATS_SECTIONS_ALL};
	int rc = cli_parse_options(CLI_STATS, argc, argv, &args);
	if (rc >= 0)
		return rc;
	if (args.first >= argc) {
		log_error("stats: expected one or more capture files (see cuscope stats --help)");
		return CLI_EXIT_USAGE;
	}
	struct store *store = store_new();
	rc = cli_load_captures(argc - args.first, argv + args.first, store);
	if (rc == 0) {
		int err = stats_write_sections_steps(stdout, store, args.stats_format, args.stats_mask,
		                                     args.step_range);
		if (err < 0) {
			/* Said here: output_finish no longer knows why an earlier write failed. */
			log_error("writing output: %s", strerror(-err));
			rc = 1;
		} else {
			rc = output_finish(stdout);
		}
	}
	store_free(store);
	return rc;
}
