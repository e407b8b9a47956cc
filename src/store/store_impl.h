/*
 * Private layout of the event store, shared by store.c (processes, strings, NVTX) and
 * store_gpu.c (GPU activity). Nothing outside src/store includes this.
 */
#ifndef CUSCOPE_STORE_IMPL_H
#define CUSCOPE_STORE_IMPL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#include "cuscope/hashmap.h"
#include "cuscope/store.h"
#include "cuscope/timerow.h"
#include "cuscope/wire.h"

#define PENDING_END_MAX    4096  /* ends waiting for their start, per process (each start scans them) */
#define ASYNC_OPEN_MAX     4096  /* open start/end ranges per process (each end scans them) */
#define GPU_ROWS_MAX       256   /* overlapping GPU ops or API calls on one lane (beyond: unmatched) */
#define ASYNC_ROWS_MAX     1024  /* rows of overlapping start/end ranges per process (beyond: unmatched) */
#define GPU_CONTEXTS_MAX   256   /* CUDA contexts per process (each GPU op looks its context up) */
#define THREAD_LANES_MAX   32768 /* lanes per process; threads beyond share one lane (tid -1) */
#define CORR_MAP_MAX       (1u << 20) /* correlation table slots per process, both generations */
#define PENDING_SYNC_SLOTS 4096u      /* syncs waiting for their API record, per process */

struct range_row {
	struct store_range *v;
	size_t n, cap;
	uint64_t busy_until; /* async rows: end of the last range, UINT64_MAX while one is open */
	uint64_t dropped;    /* ranges evicted from the front (store_evict.c): v[0] is range `dropped` */
};

struct open_range {
	struct store_range range; /* end_ns = 0 */
	size_t row;
	uint64_t range_id; /* start/end only */
};

struct lane {
	enum store_lane_kind kind;
	pid_t tid;
	uint32_t name_id;
	uint64_t first_ns;
	uint64_t end_ns;
	struct range_row *rows;
	size_t row_count, row_cap;
	struct open_range *open;
	size_t open_count, open_cap;
	struct store_range *marks;
	size_t mark_count, mark_cap;
	/* GPU (store_gpu.c): ops on a stream lane, API calls and syncs on a thread lane; NULL until any */
	struct gpu_lane *gpu;
	/* CPU (store_cpu.c): samples, blocking calls, GC; NULL until the thread has any */
	struct cpu_lane *cpu;
	/* NVTX payload fields (store_args.c), thread lanes: the range this thread began last, which
	 * the WIRE_EV_NVTX_ARG events right after it belong to */
	int arg_open;       /* a push, start or mark came last (no pop or end since) */
	uint32_t arg_entry; /* its entry in the side table + 1, 0 before its first field */
	uint32_t arg_lane;  /* the lane holding the range (this one, or the async lane 0) */
	uint32_t arg_name;  /* its global name id */
	uint64_t arg_start; /* its start, CLOCK_MONOTONIC */
};

struct pending_end {
	uint64_t range_id;
	uint64_t end_ns;
};

struct gpu_context {
	uint32_t context, device, null_stream;
};

struct gpu_device {
	uint32_t device;
	uint32_t name_id; /* global */
	uint8_t uuid[16];
	uint64_t global_memory_bytes;
	uint32_t sm_count, cc_major, cc_minor;
};

struct notice {
	uint32_t level; /* enum wire_notice_level */
	uint32_t topic; /* enum wire_notice_topic */
	char *text;
	uint64_t seq; /* store-wide order of arrival, from 1 */
};

struct process {
	struct wire_hello hello;
	uint32_t capture; /* the capture file it came from (store_capture_begin), 0 for the first */
	char *cmdline;
	int connected;
	int exited;
	int exit_code;
	int final_counts; /* BYE of the current stream arrived */
	int end_recorded; /* an EXIT frame from the launcher */
	int exit_signal;
	/* Its BYE answered a detach: the process ran on, counts final up to detached_ns. */
	int detached;
	uint64_t detached_ns; /* CLOCK_MONOTONIC */
	uint64_t events;
	struct lane *lanes; /* lanes[0] is the process's NVTX async lane */
	size_t lane_count, lane_cap;
	struct hashmap tid_map; /* thread lanes by tid: lane index + 1 */
	uint64_t losses[WIRE_LOSS_CAUSE_MAX];
	uint64_t unmatched;
	struct pending_end *pending;
	size_t pending_count, pending_cap;
	/* GPU (store_gpu.c): streams, correlations, contexts, devices; NULL until the first GPU frame */
	struct gpu_process *gpu;
	struct notice *notices;
	size_t notice_count, notice_cap;
	/* CPU (store_cpu.c): counters */
	struct cpu_process *cpu;
	/* The collector's own cost (store_cost.c); NULL until the first reading */
	struct cost_process *cost;
};

struct source {
	int active;
	int had_hello; /* process is valid (it may have disconnected since) */
	size_t process;
	uint32_t *strmap; /* per-process string id -> global id */
	size_t strmap_cap;
	size_t strings; /* STRING frames taken: ids are dense, so the map grows with them */
};

struct store {
	struct process *procs;
	size_t proc_count, proc_cap;
	struct hashmap pid_map; /* the newest process of each (capture, pid): index + 1 */
	uint32_t capture_count; /* captures begun (store_capture_begin); processes join the last */
	struct store_capture_clock *capture_clocks; /* by capture (store_capture_set_clock) */
	size_t capture_clock_cap;
	struct source *sources;
	size_t source_cap;
	/* global strings */
	char **strings;
	uint32_t *string_len;
	size_t string_count, string_cap;
	struct hashmap string_map; /* string ids by text */
	uint64_t first_ns, last_ns;
	uint64_t events;
	uint64_t generation;
	/* GPU */
	uint64_t gpu_events;
	uint64_t notice_seq;
	uint32_t *demangled;  /* global id -> global id of its demangled text, 0 = not done */
	uint32_t *short_name; /* global id -> global id of its short label, 0 = not done */
	size_t name_cache_cap;
	/* CPU (store_cpu.c): frames and interned stacks, shared by all processes */
	struct cpu_store *cpu;
	size_t string_bytes; /* text bytes of all strings, NULs included */
	/* Memory bound (store_evict.c) */
	size_t memory_limit;     /* bytes, 0 = none */
	size_t fed_since_check;  /* payload bytes fed since the last check against the limit */
	uint64_t memory_from_ns; /* nothing that ended before this is in memory any more, 0 = all is */
	uint64_t evicted;        /* events dropped from memory */
	/* NVTX payload fields by range (store_args.c); NULL until the first */
	struct store_args *args;
	/* GPU hardware metrics by (GPU, metric) (store_metrics.c); NULL until the first sample */
	struct store_metrics *metrics;
};

/* store.c */
uint32_t store_intern(struct store *st, const char *text, size_t len);
struct lane *store_thread_lane(struct process *pr, pid_t tid, uint64_t t);
struct lane *store_lane_append(struct process *pr, enum store_lane_kind kind, pid_t tid, uint64_t t);
void store_note_time(struct store *st, uint64_t t);

/* store_metrics.c */
int store_metrics_ingest(struct store *st, struct process *pr, struct source *src, const void *payload,
                         uint32_t length);
/* Drops metric points that ended before t; returns how many. */
uint64_t store_metrics_evict(struct store *st, uint64_t t);
size_t store_metrics_event_bytes(const struct store *st);
void store_metrics_free(struct store *st);

/* store_names.c */
/* Global id of the demangled text of kernel name id (once per distinct id), its short label cached. */
uint32_t store_kernel_name(struct store *st, uint32_t id);

/* store_gpu.c */
int store_gpu_ingest(struct store *st, struct process *pr, struct source *src, uint32_t type,
                     const void *payload, uint32_t length);
void store_gpu_process_fini(struct process *pr);
void store_gpu_lane_fini(struct lane *l);
/* The GPU facts of a lane for store_lane_get: rows, ops and, on a stream lane, device, stream, label. */
void store_gpu_lane_info(const struct lane *l, struct store_lane_info *out);
/* Bytes of a lane's GPU rows (capacity). */
size_t store_gpu_lane_event_bytes(const struct lane *l);
/* Drops GPU ops and API calls that ended before t from a lane; returns how many. */
uint64_t store_gpu_lane_evict(struct lane *l, uint64_t t);
/* A process's devices and CUDA contexts (store_replay.c repeats them); NULL and 0 before any. */
const struct gpu_device *store_gpu_devices(const struct process *pr, size_t *n);
const struct gpu_context *store_gpu_contexts(const struct process *pr, size_t *n);
size_t store_gpu_memory_bytes(const struct store *st);

/*
 * Growth of the event rows: doubling below 64 KiB, then by a quarter, so that a bounded store never
 * jumps to twice its size between two checks (large blocks are mmap'd: realloc moves no bytes).
 */
void store_grow(void **ptr, size_t *cap, size_t need, size_t elem_size);

/* store_evict.c */
/* Called after each fed frame: trims to the memory limit now and then. */
void store_evict_after_feed(struct store *st, uint32_t length);
/* Shrinks the capacity of an array of n elements after eviction, when it is mostly unused. */
void store_evict_shrink(void **v, size_t n, size_t *cap, size_t elem);
/* Drops the first k elements of an array of n (capacity *cap), giving memory back when it is mostly
 * empty; returns the new count. */
size_t store_evict_prefix(void **v, size_t n, size_t *cap, size_t k, size_t elem);
/* Leading elements of a row whose end (at offset) is before t: rows are sorted by start and, never
 * overlapping, by end too; a linear walk is safe even where that does not hold (async rows). */
size_t store_evict_count(const void *v, size_t n, size_t elem, size_t offset, uint64_t t);

/* store_cpu.c */
/* Bytes of a lane's samples and calls (capacity). */
size_t store_cpu_lane_event_bytes(const struct lane *l);
/* Drops samples and calls that ended before t from a lane; returns how many. */
uint64_t store_cpu_lane_evict(struct lane *l, uint64_t t);
int store_cpu_ingest(struct store *st, struct process *pr, struct source *src, uint32_t type,
                     const void *payload, uint32_t length);
/* A WIRE_EV_OSRT or WIRE_EV_GC event; name is its global string id. */
void store_cpu_event(struct store *st, struct process *pr, const struct wire_event *ev, uint32_t name);
void store_cpu_lane_fini(struct lane *l);
void store_cpu_process_fini(struct process *pr);
void store_cpu_fini(struct store *st);
size_t store_cpu_memory_bytes(const struct store *st);

/* store_cpu_hot.c */
struct stack_count {
	uint32_t stack_id;
	uint64_t count;
};
/* Distinct non-empty stacks of samples v[0..n) with their counts (the caller frees them). */
struct stack_count *store_cpu_count_stacks(const struct store_sample *v, size_t n, size_t *out_n);

/* store_args.c */
/* A push, start or mark on thread lane l: the fields that follow it belong to the range with
 * start_ns and name_id on lane range_lane of the same process. */
void store_args_range_begun(struct lane *thread_lane, size_t range_lane, uint64_t start_ns, uint32_t name_id);
/* A WIRE_EV_NVTX_ARG of thread lane l (of process index process); name_id is its global field name,
 * text_id that of an enum value's name (its domain_id). */
void store_args_event(struct store *st, size_t process, struct lane *l, const struct wire_event *ev,
                      uint32_t name_id, uint32_t text_id);
size_t store_args_memory_bytes(const struct store *st);
void store_args_free(struct store *st);

/* store_cost.c */
void store_cost_ingest(struct store *st, struct process *pr, const void *payload, uint32_t length);
/* Drops readings before t and reduced stretches that ended before t; returns readings dropped. */
uint64_t store_cost_evict(struct process *pr, uint64_t t);
void store_cost_process_fini(struct process *pr);
size_t store_cost_memory_bytes(const struct store *st);

/* Every sorted row of the store (ranges, GPU ops, blocking calls) is a time row (timerow.h). */
_Static_assert(offsetof(struct store_range, start_ns) == TIMEROW_START &&
                   offsetof(struct store_range, end_ns) == TIMEROW_END &&
                   offsetof(struct store_gpu_op, start_ns) == TIMEROW_START &&
                   offsetof(struct store_gpu_op, end_ns) == TIMEROW_END &&
                   offsetof(struct store_call, start_ns) == TIMEROW_START &&
                   offsetof(struct store_call, end_ns) == TIMEROW_END,
               "sorted store rows share the time layout");

#endif
