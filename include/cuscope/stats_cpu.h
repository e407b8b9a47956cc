/*
 * CPU stats sections ("hot", "osrt", "counters") built row by row into a caller's table through a
 * callback, so stats.c can hold them in its generic tables without sharing its cell types.
 *
 *   hot:      pid, tid, thread, function, module, samples, share
 *             one row per (thread, leaf function; a Python frame as FILE:QUALNAME): self samples
 *             over the whole capture; share =
 *             samples / the thread's samples (0..1); threads by process then tid, rows by samples
 *             descending, at most STATS_CPU_HOT_TOP per thread
 *   osrt:     pid, tid, thread, call, count, total_ns, p50_ns, p99_ns, max_ns
 *             one row per (thread, blocking libc call); Python GC ranges of the thread are one more
 *             row with call "python_gc" (all generations); nearest-rank percentiles; rows of a
 *             thread by total_ns descending
 *   counters: pid, tid, thread, event, value  (newest cumulative value; by process, tid, event)
 *   hot-inclusive: pid, tid, thread, function, module, inclusive, self, share
 *             one row per (thread, function): inclusive = samples whose stack holds the function
 *             (once per stack), self = samples where it is the leaf, share = inclusive / the
 *             thread's samples; on a thread with Python frames only those are listed, as
 *             "FILE:QUALNAME"; rows by inclusive descending, at most STATS_CPU_HOT_TOP per thread
 */
#ifndef CUSCOPE_STATS_CPU_H
#define CUSCOPE_STATS_CPU_H

#include <stddef.h>
#include <stdint.h>

struct store;

#define STATS_CPU_HOT_TOP 50
#define STATS_CPU_GC_CALL "python_gc"

enum stats_cpu_type {
	STATS_CPU_STR,
	STATS_CPU_INT,
	STATS_CPU_FLOAT, /* a fraction: real, and str = the same value with 4 decimals ("0.9731") */
};

struct stats_cpu_column {
	const char *key;
	enum stats_cpu_type type;
};

/* One cell: str for STR (and FLOAT, as text), num for INT, real for FLOAT. */
struct stats_cpu_cell {
	const char *str; /* valid only during the callback: copy it */
	int64_t num;
	double real;
};

/* Receives one row: count cells, in column order. */
typedef void (*stats_cpu_row_fn)(void *ctx, const struct stats_cpu_cell *cells, size_t count);

struct stats_cpu_section {
	const char *name; /* the JSON key / heading */
	const struct stats_cpu_column *cols;
	size_t col_count;
	void (*build)(const struct store *store, stats_cpu_row_fn row, void *ctx);
};

void stats_cpu_hot(const struct store *store, stats_cpu_row_fn row, void *ctx);
void stats_cpu_osrt(const struct store *store, stats_cpu_row_fn row, void *ctx);
void stats_cpu_counters(const struct store *store, stats_cpu_row_fn row, void *ctx);
void stats_cpu_hot_inclusive(const struct store *store, stats_cpu_row_fn row, void *ctx);

/* The four sections in order (hot, osrt, counters, hot-inclusive); *count = 4. */
const struct stats_cpu_section *stats_cpu_sections(size_t *count);

#endif
