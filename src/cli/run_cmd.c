/* `cuscope run --detached -- CMD`: an armed launch with no viewer (attach to it later). */
#include "cuscope/cli.h"
#include "cuscope/launch.h"
#include "cuscope/log.h"
#include "cuscope/session.h"

#include <stdio.h>

int cli_run(int argc, char **argv)
{
	struct cli_args args = {.launch = {.log_output = 1, .wait_viewer_ms = 0}};
	int rc = cli_parse_options(CLI_RUN, argc, argv, &args);
	if (rc >= 0)
		return rc;
	if (!args.detached) {
		log_error("run: only --detached is supported (for a live view use `cuscope -- COMMAND`)");
		return CLI_EXIT_USAGE;
	}
	if (args.first >= argc) {
		log_error("run: no command given (cuscope run --detached -- COMMAND ...)");
		return CLI_EXIT_USAGE;
	}
	struct launch launch;
	char msg[1024];
	session_sweep();
	rc = launch_start(&launch, argv + args.first, &args.launch, msg, sizeof msg);
	if (rc) {
		log_error("%s", msg);
		return rc;
	}
	printf("pid %d armed; output in %s\nwatch it with: cuscope attach %d\n", (int)launch.pid,
	       launch.log_path, (int)launch.pid);
	return 0;
}
