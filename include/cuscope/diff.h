/*
 * Comparison of two captures: per NVTX range (name, domain, style) and per kernel (name, device),
 * count, p50 and total duration in A and in B and their change, sorted by impact on total time
 * (|total_B - total_A| descending). Rows present on one side only are included.
 */
#ifndef CUSCOPE_DIFF_H
#define CUSCOPE_DIFF_H

#include <stdio.h>

struct store;

enum diff_format {
	DIFF_FORMAT_TABLE,
	DIFF_FORMAT_JSON,
};

/* Parses "table" or "json"; 0 or -EINVAL. */
int diff_format_parse(const char *text, enum diff_format *out);
/* Writes the comparison of a (labelled name_a) with b; 0 or -EIO. */
int diff_write(FILE *out, const struct store *a, const char *name_a, const struct store *b,
               const char *name_b, enum diff_format format);

#endif
