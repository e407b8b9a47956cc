/*
 * The tables `cuscope stats` prints: typed columns, rows of cells, and the three ways to write one
 * (aligned text, CSV, JSON). Private to src/dump.
 */
#ifndef CUSCOPE_STATS_TABLE_H
#define CUSCOPE_STATS_TABLE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cuscope/stats.h"

enum cell_type { CELL_STR, CELL_INT, CELL_BOOL, CELL_REAL };

struct column {
	const char *key;
	enum cell_type type;
};

struct cell {
	const char *str; /* CELL_STR, owned by the table */
	int64_t num;
	double real; /* CELL_REAL */
};

struct table {
	const char *name;
	const struct column *cols;
	size_t col_count;
	struct cell *cells; /* row-major */
	size_t rows, cap_cells;
};

/* Appends a row: one argument per column, const char * (CELL_STR), int (CELL_BOOL), double (CELL_REAL)
 * or int64_t. */
void stats_table_row(struct table *t, ...);
void stats_table_fini(struct table *t);
/* Writes t in format; first says whether it is the first table of the output. */
void stats_table_write(FILE *out, const struct table *t, enum stats_format format, int first);

/* stats_metrics.c: the gpu_metrics section (per GPU and metric: samples, min, median, max). */
#define STATS_METRIC_COLS 10
extern const struct column stats_metric_cols[STATS_METRIC_COLS];
void stats_metrics_section(const struct store *st, struct table *t);

/* stats_gpu.c: the GPU sections. */
#define STATS_KERNEL_COLS 8
extern const struct column stats_kernel_cols[STATS_KERNEL_COLS];
void stats_section_kernels(const struct store *st, struct table *t);
#define STATS_MEMCPY_COLS 7
extern const struct column stats_memcpy_cols[STATS_MEMCPY_COLS];
void stats_section_memcpy(const struct store *st, struct table *t);
#define STATS_MEMSET_COLS 3
extern const struct column stats_memset_cols[STATS_MEMSET_COLS];
void stats_section_memset(const struct store *st, struct table *t);
#define STATS_SYNC_COLS 3
extern const struct column stats_sync_cols[STATS_SYNC_COLS];
void stats_section_sync(const struct store *st, struct table *t);
#define STATS_GPU_COLS 3
extern const struct column stats_gpu_cols[STATS_GPU_COLS];
void stats_section_gpus(const struct store *st, struct table *t);
#define STATS_STREAM_COLS 7
extern const struct column stats_stream_cols[STATS_STREAM_COLS];
void stats_section_streams(const struct store *st, struct table *t);
#define STATS_API_COLS 4
extern const struct column stats_api_cols[STATS_API_COLS];
void stats_section_api(const struct store *st, struct table *t);

#endif
