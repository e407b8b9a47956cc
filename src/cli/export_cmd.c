/* `cuscope export [-o OUT] [--from S] [--to S] [--format F] FILE`: Chrome Trace Event JSON or a
 * Perfetto protobuf trace of a capture. */
#include "cuscope/cli.h"
#include "cuscope/export.h"
#include "cuscope/log.h"
#include "cuscope/store.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cli_export(int argc, char **argv)
{
	struct cli_args args = {.from_s = 0, .to_s = -1};
	int rc = cli_parse_options(CLI_EXPORT, argc, argv, &args);
	if (rc >= 0)
		return rc;
	if (args.first >= argc) {
		log_error("export: expected one or more capture files (see cuscope export --help)");
		return CLI_EXIT_USAGE;
	}
	double from = args.from_s, to = args.to_s;
	const char *out_path = args.output;
	if (to >= 0 && to <= from) {
		log_error("export: --to (%g s) must be after --from (%g s)", to, from);
		return CLI_EXIT_USAGE;
	}
	struct store *store = store_new();
	rc = cli_load_captures(argc - args.first, argv + args.first, store);
	if (rc == 0) {
		uint64_t base = export_time_base(store);
		struct export_options eo = {base + (uint64_t)(from * 1e9 + 0.5),
		                            to < 0 ? UINT64_MAX : base + (uint64_t)(to * 1e9 + 0.5)};
		if (from == 0)
			eo.from_ns = 0;
		struct export_counts counts;
		char msg[512];
		const char *cause = NULL;
		const struct export_format *format =
		    args.export_format ? args.export_format : export_format_default();
		int err = format->write(store, out_path, &eo, &counts, msg, sizeof msg, &cause);
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
