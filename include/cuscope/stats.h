/* Summary statistics over a store, as one table per section, printed as table, CSV or JSON. */
#ifndef CUSCOPE_STATS_H
#define CUSCOPE_STATS_H

#include <stddef.h>
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
 * (kernels, memcpy, memset, sync, gpus, streams, api), the CPU ones (hot, osrt, counters) and the
 * collector's own cost (cost), GPU hardware metrics (gpu_metrics), the straggler table (ranks) and, for
 * several captures read together, how they were aligned (clock_alignment); 0 or -errno.
 */
int stats_write(FILE *out, const struct store *store, enum stats_format format);

#define STATS_SECTIONS_ALL (~0u)
/*
 * Parses a comma list of section names ("nvtx,kernels,api") into a bit mask (bit i = section i in
 * the order above). Returns 0, or -EINVAL with *bad pointing at the unknown name inside list and
 * *bad_len its length.
 */
int stats_report_parse(const char *list, unsigned *mask, const char **bad, size_t *bad_len);
/* Comma-separated names of every section, for messages and help. */
const char *stats_section_names(void);
/* Like stats_write, but only the sections in mask (JSON then holds only those). */
int stats_write_sections(FILE *out, const struct store *store, enum stats_format format, unsigned mask);
/* Like stats_write_sections; step_range names the ranks section's step range (NULL: found per rank). */
int stats_write_sections_steps(FILE *out, const struct store *store, enum stats_format format, unsigned mask,
                               const char *step_range);

#endif
