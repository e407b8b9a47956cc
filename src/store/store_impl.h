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
#define CORR_MAP_MAX       (1u << 20) /* correlation ids remembered per process (the newest) */
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

/* One row of GPU operations (stream lanes) or CUDA API calls and syncs (thread lanes). */
struct gpu_row {
	struct store_gpu_op *v; /* sorted by start, never overlapping */
	size_t n, cap;
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
	/* GPU: ops on a stream lane, API calls and syncs on a thread lane */
	struct gpu_row *gpu_rows;
	size_t gpu_row_count, gpu_row_cap;
	uint64_t gpu_ops;
	/* stream lanes only */
	uint32_t device, stream;
	uint64_t kernels, copies; /* kernels; memcpy + memset */
	int is_default;
	char label[48];
	/* CPU (store_cpu.c): samples, blocking calls, GC; NULL until the thread has any */
	struct cpu_lane *cpu;
};

struct pending_end {
	uint64_t range_id;
	uint64_t end_ns;
};

/* The API call behind a correlation id. */
struct corr_entry {
	uint32_t correlation_id; /* 0 = empty slot */
	uint32_t tid;
	uint32_t name_id; /* global */
	uint16_t kind;    /* WIRE_GPU_API_RUNTIME or _DRIVER */
	uint16_t pad;
	uint64_t start_ns, end_ns;
};

/* A sync placed on a stream lane while its API record (and so its thread) was unknown. */
struct pending_sync {
	uint32_t correlation_id; /* 0 = empty */
	uint32_t lane;
	uint64_t start_ns;
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
	uint32_t level;
	char *text;
	uint64_t seq; /* store-wide order of arrival, from 1 */
};

struct process {
	struct wire_hello hello;
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
	/* GPU */
	uint64_t gpu_events;
	struct hashmap stream_map; /* stream lanes by (device, stream): lane index + 1 */
	struct corr_entry *corr;   /* direct-mapped by correlation id, grows to CORR_MAP_MAX */
	size_t corr_cap;
	struct pending_sync *psync; /* PENDING_SYNC_SLOTS, direct-mapped */
	struct gpu_context *ctx;
	size_t ctx_count, ctx_cap;
	struct store_kernel_config *kcfg;
	size_t kcfg_count, kcfg_cap;
	struct hashmap kcfg_map; /* kcfg by value: index + 1 */
	uint64_t *big_bytes;     /* byte counts that do not fit an op's aux field */
	size_t big_count, big_cap;
	struct gpu_device *devices;
	size_t device_count, device_cap;
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
	struct hashmap pid_map; /* the newest process of each pid: index + 1 */
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
};

/* store.c */
uint32_t store_intern(struct store *st, const char *text, size_t len);
struct lane *store_thread_lane(struct process *pr, pid_t tid, uint64_t t);
struct lane *store_lane_append(struct process *pr, enum store_lane_kind kind, pid_t tid, uint64_t t);
void store_note_time(struct store *st, uint64_t t);

/* store_names.c */
/* Global id of the demangled text of kernel name id (once per distinct id), its short label cached. */
uint32_t store_kernel_name(struct store *st, uint32_t id);

/* store_gpu.c */
int store_gpu_ingest(struct store *st, struct process *pr, struct source *src, uint32_t type,
                     const void *payload, uint32_t length);
void store_gpu_process_fini(struct process *pr);
void store_gpu_lane_fini(struct lane *l);
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
