/* cuscope's entry point: a verb by its name, else live mode. */
#include "cuscope/cli.h"

#include <stdio.h>
#include <string.h>

#ifndef CUSCOPE_VERSION
#define CUSCOPE_VERSION "0.0.0"
#endif

int main(int argc, char **argv)
{
	if (argc >= 2) {
		const struct cli_verb_entry *v = cli_verb_find(argv[1]);
		if (v)
			return v->run(argc - 1, argv + 1);
		/* Help and version are output like any verb's: a failed write is an error. */
		if (strcmp(argv[1], "help") == 0) {
			cli_usage(argc >= 3 ? argv[2] : "");
			return output_finish(stdout);
		}
		if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0) {
			printf("cuscope %s\n", CUSCOPE_VERSION);
			return output_finish(stdout);
		}
	}
	return cli_live(argc, argv);
}
