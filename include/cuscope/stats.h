/* Summary statistics over a store, as one table per section, printed as table, CSV or JSON. */
#ifndef CUSCOPE_STATS_H
#define CUSCOPE_STATS_H

#include <stdio.h>

struct store;

enum stats_format {
	STATS_FORMAT_TABLE,
	STATS_FORMAT_CSV,
	STATS_FORMAT_JSON,
};

/* Parses "table", "csv" or "json"; returns 0 or -EINVAL. */
int stats_format_parse(const char *text, enum stats_format *out);
/*
 * Writes every section in the given format: nvtx, threads, processes, losses, then the GPU ones
 * (kernels, memcpy, memset, sync, gpus, streams, api); 0 or -errno.
 */
int stats_write(FILE *out, const struct store *store, enum stats_format format);

#endif
