/* `cuscope run --detached -- CMD`: an armed launch with no viewer (attach to it later). */
#include "cuscope/cli.h"
#include "cuscope/launch.h"
#include "cuscope/log.h"
#include "cuscope/session.h"

#include <getopt.h>
#include <stdio.h>

int cli_run(int argc, char **argv)
{
	static const struct option options[] = {
	    {"detached", no_argument, NULL, 'D'},
	    {"buffer-mb", required_argument, NULL, 'b'},
	    {"help", no_argument, NULL, 'h'},
	    LAUNCH_LONG_OPTIONS,
	    {0},
	};
	struct launch_options lopts = {.log_output = 1, .wait_viewer_ms = 0};
	int detached = 0, opt;
	optind = 1;
	optopt = 0;
	while ((opt = getopt_long(argc, argv, "+h", options, NULL)) != -1) {
		switch (opt) {
		case 'D':
			detached = 1;
			break;
		case 'b':
			if (cli_parse_buffer_mb(optarg, &lopts.buffer_mb) != 0)
				return CLI_EXIT_USAGE;
			break;
		case 'h':
			cli_usage("run");
			return 0;
		default: {
			int lrc = launch_parse_option(&lopts, opt, optarg);
			if (lrc < 0)
				return CLI_EXIT_USAGE;
			if (lrc == 0)
				return cli_bad_option("run", argv);
		}
		}
	}
	if (!detached) {
		log_error("run: only --detached is supported (for a live view use `cuscope -- COMMAND`)");
		return CLI_EXIT_USAGE;
	}
	if (optind >= argc) {
		log_error("run: no command given (cuscope run --detached -- COMMAND ...)");
		return CLI_EXIT_USAGE;
	}
	struct launch launch;
	char msg[1024];
	session_sweep();
	int rc = launch_start(&launch, argv + optind, &lopts, msg, sizeof msg);
	if (rc) {
		log_error("%s", msg);
		return rc;
	}
	printf("pid %d armed; output in %s\nwatch it with: cuscope attach %d\n", (int)launch.pid,
	       launch.log_path, (int)launch.pid);
	return 0;
}
