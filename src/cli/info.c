/* `cuscope info FILE`: what a capture holds — its manifest, size, events, losses and the collector's cost. */
#include "cuscope/capture.h"
#include "cuscope/cli.h"
#include "cuscope/costview.h"
#include "cuscope/escape.h"
#include "cuscope/log.h"
#include "cuscope/store.h"
#include "cuscope/wire.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "gpu metrics 330 samples" and per GPU its metrics, who sampled them and how (only when any). */
static void info_gpu_metrics(const struct store *store)
{
	static const char *const sources[] = {"?", "CUPTI PM sampling", "NVML GPM", "NVML utilisation"};
	size_t n = store_gpu_metric_count(store);
	if (!n)
		return;
	printf("gpu metrics %" PRIu64 " samples\n", store_gpu_metric_samples(store));
	for (size_t i = 0; i < n; i++) {
		struct store_gpu_metric_info mi, prev;
		store_gpu_metric_get(store, i, &mi);
		size_t same = 0; /* the GPU's metrics are listed under its first one */
		for (size_t j = 0; j < i && !same; j++) {
			store_gpu_metric_get(store, j, &prev);
			same = strcmp(prev.uuid, mi.uuid) == 0;
		}
		if (same)
			continue;
		size_t metrics = 0;
		for (size_t j = i; j < n; j++) {
			store_gpu_metric_get(store, j, &prev);
			metrics += strcmp(prev.uuid, mi.uuid) == 0;
		}
		struct store_process_info pi;
		store_process_get(store, mi.process, &pi);
		printf("  %s  GPU%u", mi.uuid, mi.device);
		if (*mi.device_name) {
			fputc(' ', stdout);
			escape_term_fputs(stdout, mi.device_name);
		}
		printf(": %zu metric%s from pid %d, %s\n", metrics, metrics == 1 ? "" : "s", (int)pi.pid,
		       mi.source < 4 ? sources[mi.source] : "?");
	}
}

int cli_info(int argc, char **argv)
{
	struct cli_args args = {0};
	int rc = cli_parse_options(CLI_INFO, argc, argv, &args);
	if (rc >= 0)
		return rc;
	if (args.first != argc - 1) {
		log_error("info: expected one capture file (see cuscope info --help)");
		return CLI_EXIT_USAGE;
	}
	const char *path = argv[args.first];
	struct store *store = store_new();
	struct capture_read_result res;
	rc = cli_load_capture(path, store, &res);
	if (rc) {
		store_free(store);
		return rc;
	}
	fputs("file        ", stdout);
	escape_term_fputs(stdout, path);
	fputc('\n', stdout);
	printf("size        %" PRIu64 " bytes (%" PRIu64 " bytes of frames, %.2fx compression)\n",
	       res.file_bytes, res.frame_bytes,
	       res.file_bytes ? (double)res.frame_bytes / (double)res.file_bytes : 0.0);
	printf("chunks      %u read, %" PRIu64 " compressed, %u corrupt, %s, %s\n", res.chunks_ok,
	       res.compressed_chunks, res.chunks_corrupt, res.truncated ? "truncated" : "complete",
	       res.has_index ? "time index present" : "no time index");
	printf("events      %" PRIu64 " (%.1f bytes/event on disk)\n", res.events,
	       res.events ? (double)res.file_bytes / (double)res.events : 0.0);
	uint64_t first = store_first_ns(store), last = store_last_ns(store);
	printf("time span   %.3f s\n", last > first ? (double)(last - first) / 1e9 : 0.0);
	printf("processes   %zu\n", store_process_count(store));
	for (size_t p = 0; p < store_process_count(store); p++) {
		struct store_process_info pi;
		store_process_get(store, p, &pi);
		/* Command line and host come from the capture: escaped before the terminal sees them. */
		printf("  pid %-7d ppid %-7d ", (int)pi.pid, (int)pi.ppid);
		escape_term_fputs(stdout, pi.cmdline);
		printf("  (%" PRIu64 " events, host ", pi.events);
		escape_term_fputs(stdout, pi.host);
		fputs(")\n", stdout);
		if (pi.rank >= 0 || pi.world_size >= 0) {
			printf("    rank %d", (int)pi.rank);
			if (pi.world_size >= 0)
				printf(" of %d", (int)pi.world_size);
			if (pi.local_rank >= 0)
				printf(", local rank %d", (int)pi.local_rank);
			if (pi.restart_count >= 0)
				printf(", restart %d", (int)pi.restart_count);
			fputc('\n', stdout);
		}
		char end[128];
		if (*store_process_end_text(&pi, end, sizeof end))
			printf("    %s\n", end);
		char cost[512];
		if (*costview_info_line(store, p, cost, sizeof cost))
			printf("    cost: %s\n", cost);
	}
	info_gpu_metrics(store);
	printf("losses      %" PRIu64 " events\n", store_loss_total(store));
	for (uint32_t c = 1; c < WIRE_LOSS_CAUSE_MAX; c++) {
		uint64_t n = store_loss_count(store, c);
		if (n)
			printf("  %-20s %" PRIu64 "\n", wire_loss_cause_name(c), n);
	}
	printf("manifest\n");
	if (res.manifest) {
		/* Indent every line; the package list can be long but it is what was asked for. */
		for (char *line = strtok(res.manifest, "\n"); line; line = strtok(NULL, "\n")) {
			fputs("  ", stdout);
			escape_term_fputs(stdout, line);
			fputc('\n', stdout);
		}
	} else {
		printf("  (none)\n");
	}
	free(res.manifest);
	store_free(store);
	return output_finish(stdout);
}
