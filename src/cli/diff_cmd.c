/*
 * `cuscope diff [--format=table|json] A B` and `cuscope diff A... -- B...`: NVTX ranges and kernels
 * of two captures, or of two sets of captures (e.g. every rank of two runs), compared. A set is read
 * as `stats` reads many files: onto one time axis, its rows summed over its captures.
 */
#include "cuscope/cli.h"
#include "cuscope/diff.h"
#include "cuscope/log.h"
#include "cuscope/store.h"

#include <stdio.h>
#include <string.h>

/* A side's name in the output: the file, or "FIRST +N more" for a set. */
static void diff_side_name(char *buf, size_t size, char **paths, int count)
{
	if (count == 1)
		snprintf(buf, size, "%s", paths[0]);
	else
		snprintf(buf, size, "%s +%d more", paths[0], count - 1);
}

int cli_diff(int argc, char **argv)
{
	struct cli_args args = {.diff_format = DIFF_FORMAT_TABLE};
	int rc = cli_parse_options(CLI_DIFF, argc, argv, &args);
	if (rc >= 0)
		return rc;
	int first = args.first, operands = argc - first, split = -1;
	for (int i = first; i < argc; i++)
		if (strcmp(argv[i], "--") == 0) {
			if (split >= 0) {
				log_error(
				    "diff: '--' given twice; use A... -- B... (see cuscope diff --help)");
				return CLI_EXIT_USAGE;
			}
			split = i;
		}
	int count_a, count_b;
	char **paths_a = argv + first, **paths_b;
	if (split < 0) {
		if (operands != 2) {
			log_error(
			    "diff: expected two capture files A B, or two sets A... -- B... (see cuscope "
			    "diff --help)");
			return CLI_EXIT_USAGE;
		}
		count_a = count_b = 1;
		paths_b = argv + first + 1;
	} else {
		count_a = split - first;
		count_b = argc - split - 1;
		paths_b = argv + split + 1;
		if (count_a < 1 || count_b < 1) {
			log_error("diff: a set is empty: give captures on both sides of '--' (A... -- B...)");
			return CLI_EXIT_USAGE;
		}
	}
	struct store *a = store_new(), *b = store_new();
	rc = cli_load_captures(count_a, paths_a, a);
	if (rc == 0)
		rc = cli_load_captures(count_b, paths_b, b);
	if (rc == 0) {
		char name_a[4096], name_b[4096];
		diff_side_name(name_a, sizeof name_a, paths_a, count_a);
		diff_side_name(name_b, sizeof name_b, paths_b, count_b);
		diff_write(stdout, a, name_a, b, name_b, args.diff_format);
		rc = output_finish(stdout);
	}
	store_free(a);
	store_free(b);
	return rc;
}
