/* `cuscope diff [--format=table|json] A B`: NVTX ranges and kernels of two captures compared. */
#include "cuscope/cli.h"
#include "cuscope/diff.h"
#include "cuscope/log.h"
#include "cuscope/store.h"

#include <getopt.h>
#include <stdio.h>

int cli_diff(int argc, char **argv)
{
	static const struct option options[] = {
	    {"format", required_argument, NULL, 'f'},
	    {"help", no_argument, NULL, 'h'},
	    {0},
	};
	enum diff_format format = DIFF_FORMAT_TABLE;
	int opt;
	optind = 1;
	optopt = 0;
	while ((opt = getopt_long(argc, argv, "+f:h", options, NULL)) != -1) {
		switch (opt) {
		case 'f':
			if (diff_format_parse(optarg, &format) != 0) {
				log_error("diff: unknown format '%s' (use table or json)", optarg);
				return CLI_EXIT_USAGE;
			}
			break;
		case 'h':
			cli_usage("diff");
			return output_finish(stdout);
		default:
			return cli_bad_option("diff", argv);
		}
	}
	if (optind != argc - 2) {
		log_error("diff: expected two capture files A B (see cuscope diff --help)");
		return CLI_EXIT_USAGE;
	}
	struct store *a = store_new(), *b = store_new();
	int rc = cli_load_capture(argv[optind], a);
	if (rc == 0)
		rc = cli_load_capture(argv[optind + 1], b);
	if (rc == 0) {
		diff_write(stdout, a, argv[optind], b, argv[optind + 1], format);
		rc = output_finish(stdout);
	}
	store_free(a);
	store_free(b);
	return rc;
}
