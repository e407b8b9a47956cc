/* `cuscope relay`: the node side of `attach --ssh` (relay.h); not meant to be run by hand. */
#include "cuscope/cli.h"
#include "cuscope/log.h"
#include "cuscope/relay.h"

int cli_relay(int argc, char **argv)
{
	struct cli_args args = {0};
	int rc = cli_parse_options(CLI_RELAY, argc, argv, &args);
	if (rc >= 0)
		return rc;
	if (args.first != argc) {
		log_error("relay: no operands expected (cuscope relay [--job ID])");
		return CLI_EXIT_USAGE;
	}
	struct relay_options opts = {.job = args.job};
	return relay_run(&opts);
}
