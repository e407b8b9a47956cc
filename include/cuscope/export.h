/*
 * Export of a store as Chrome Trace Event JSON (opened by Perfetto UI and chrome://tracing).
 * Streaming: events are written while the lanes are walked, so the writer's memory does not grow
 * with the capture. Timestamps are microseconds (three decimals, i.e. exact nanoseconds) relative
 * to the time base (the earliest event, see export_time_base); the base is written to
 * otherData.time_base_ns as CLOCK_MONOTONIC nanoseconds.
 */
#ifndef CUSCOPE_EXPORT_H
#define CUSCOPE_EXPORT_H

#include <stdint.h>
#include <stdio.h>

struct store;

struct export_options {
	uint64_t from_ns; /* window start, CLOCK_MONOTONIC (0 = from the beginning) */
	uint64_t to_ns;   /* window end, CLOCK_MONOTONIC (UINT64_MAX = to the end) */
};

/* What the writer emitted, for messages and tests. */
struct export_counts {
	uint64_t complete; /* "X" events: NVTX ranges, GPU ops, API calls */
	uint64_t open;     /* "B" events: ranges begun but never ended */
	uint64_t instant;  /* "i" events: NVTX marks */
	uint64_t flows;    /* "s"/"f" pairs: launch call to GPU op */
	uint64_t counters; /* "C" events: a thread's counter (newest value) */
	uint64_t bytes;    /* uncompressed bytes written */
};

/* The time zero of an export: the earliest event, or the earliest process start (CLOCK_MONOTONIC). */
uint64_t export_time_base(const struct store *store);
/*
 * The pid an export gives a process: its own, except where a process of an earlier capture
 * (another host) has the same pid: then pid + capture x EXPORT_PID_CAPTURE_STEP (above any
 * Linux pid), so the trace keeps the two apart.
 */
#define EXPORT_PID_CAPTURE_STEP (1 << 22)
int export_process_pid(const struct store *store, size_t process);
/* A process's name in an export: its command line ("pid N" when none), with " (HOST)" when the
 * store holds several captures; may be written into buf. */
const char *export_process_name(const struct store *store, size_t process, char *buf, size_t size);

/*
 * Writes the store as Chrome JSON to path ("-" or NULL: stdout; a name ending in ".gz": gzip).
 * Returns 0, or -errno with a one-line *cause (static or in msg_buf).
 */
int export_chrome_json(const struct store *store, const char *path, const struct export_options *opt,
                       struct export_counts *counts, char *msg_buf, size_t msg_size, const char **cause);

/*
 * Writes the store as a Perfetto protobuf trace (perfetto.protos.Trace) with the same tracks, names,
 * args, flows and counters as the JSON; timestamps are CLOCK_MONOTONIC ns. Path and result as above.
 */
int export_perfetto(const struct store *store, const char *path, const struct export_options *opt,
                    struct export_counts *counts, char *msg_buf, size_t msg_size, const char **cause);

/*
 * The name and category both exports give a GPU op, API call or host sync ("Memcpy HtoD", "memcpy");
 * the name may be written into name (name_size bytes) or be a string of the store.
 */
struct store_gpu_op;
const char *export_gpu_op_label(const struct store *st, const struct store_gpu_op *op, char *name,
                                size_t name_size, const char **category);

/* An export format: the names `export --format` takes for it and its writer. */
struct export_format {
	const char *name;
	const char *alias; /* another name for it, or NULL */
	int (*write)(const struct store *store, const char *path, const struct export_options *opt,
	             struct export_counts *counts, char *msg_buf, size_t msg_size, const char **cause);
};
/* The format called name (or its alias), or NULL; the first format is the default. */
const struct export_format *export_format_find(const char *name);
/* The default format (Chrome JSON). */
const struct export_format *export_format_default(void);
/* "chrome, json or perfetto": every name, for messages and help. */
const char *export_format_names(void);

#endif
