/* `cuscope diff [--format=table|json] A B`: NVTX ranges and kernels of two captures compared. */
#include "cuscope/cli.h"
#include "cuscope/diff.h"
#include "cuscope/log.h"
#include "cuscope/store.h"

#include <stdio.h>

int cli_diff(int argc, char **argv)
{
	struct cli_args args = {.diff_format = DIFF_FORMAT_TABLE};
	int rc = cli_parse_options(CLI_DIFF, argc, argv, &args);
	if (rc >= 0)
		return rc;
	int first = args.first;
	if (first != argc - 2) {
		log_error("diff: expected two capture files A B (see cuscope diff --help)");
		return CLI_EXIT_USAGE;
	}
	struct store *a = store_new(), *b = store_new();
	rc = cli_load_capture(argv[first], a, NULL);
	if (rc == 0)
		rc = cli_load_capture(argv[first + 1], b, NULL);
	if (rc == 0) {
		diff_write(stdout, a, argv[first], b, argv[first + 1], args.diff_format);
		rc = output_finish(stdout);
	}
	store_free(a);
	store_free(b);
	return rc;
}
