/*
 * Several captures (of several hosts, or several record runs) read into one store on one time
 * axis. Each host's events are in its own CLOCK_MONOTONIC; every process's HELLO carries a
 * (MONOTONIC, REALTIME) pair read together, so a capture's offset to wall time is real - mono of
 * its first process, and each file is moved by its offset's difference to the smallest one (all
 * moves are >= 0, so no time wraps). Precision: that of the hosts' REALTIME clocks (NTP, PTP) plus
 * the anchor's read, a few microseconds.
 */
#include "cuscope/capture.h"
#include "cuscope/cli.h"
#include "cuscope/log.h"
#include "cuscope/store.h"
#include "cuscope/xalloc.h"

#include <stdint.h>
#include <stdlib.h>

/* One file's clock anchor, from its first process's HELLO. */
struct capture_clock {
	int anchored;      /* it has a (MONOTONIC, REALTIME) pair */
	int64_t offset_ns; /* REALTIME - MONOTONIC */
};

/* Reads path's first process's anchor (only the chunks up to it); 0 or CLI_EXIT_USAGE after one line. */
static int captures_anchor(const char *path, struct capture_clock *clk)
{
	struct store *tmp = store_new();
	struct capture_read_result res;
	struct capture_read_options opts = {.stop_at_hello = 1};
	char msg[1024];
	const char *cause = NULL;
	int rc = capture_read_with(path, tmp, &opts, &res, msg, sizeof msg, &cause);
	free(res.manifest);
	if (rc) {
		log_error("%s", cause);
		store_free(tmp);
		return CLI_EXIT_USAGE;
	}
	clk->anchored = 0;
	if (store_process_count(tmp)) {
		struct store_process_info pi;
		store_process_get(tmp, 0, &pi);
		/* Both halves are read by the collector at start; either 0 means none was recorded. */
		if (pi.anchor_mono_ns && pi.anchor_real_ns) {
			clk->anchored = 1;
			clk->offset_ns = (int64_t)(pi.anchor_real_ns - pi.anchor_mono_ns);
		}
	}
	store_free(tmp);
	return 0;
}

int cli_load_captures(int count, char **paths, struct store *store)
{
	if (count == 1)
		return cli_load_capture(paths[0], store, NULL);
	struct capture_clock *clk = xcalloc((size_t)count, sizeof *clk);
	int rc = 0, have_ref = 0;
	int64_t ref = 0;
	for (int i = 0; i < count && !rc; i++) {
		rc = captures_anchor(paths[i], &clk[i]);
		if (!rc && clk[i].anchored && (!have_ref || clk[i].offset_ns < ref)) {
			ref = clk[i].offset_ns;
			have_ref = 1;
		}
	}
	int base = 0;
	for (int i = 0; i < count && !rc; i++) {
		struct capture_read_options opts = {.source_base = base};
		if (clk[i].anchored) /* unsigned: a crafted anchor wraps rather than overflows */
			opts.shift_ns = (int64_t)((uint64_t)clk[i].offset_ns - (uint64_t)ref);
		else
			log_warn("%s has no clock anchor: its times are taken as they are, not aligned with "
			         "the other captures",
			         paths[i]);
		store_capture_begin(store);
		unsigned sources = 0;
		rc = cli_load_capture_with(paths[i], store, &opts, &sources);
		base += (int)sources;
	}
	free(clk);
	return rc;
}
