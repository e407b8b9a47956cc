/*
 * The event store: ingests wire frames from any number of sources (live connections or capture
 * file chunks, one source per traced process), pairs NVTX push/pop and start/end into ranges, and
 * answers time-range queries. Opaque: the UI, stats and dump read it only through these calls.
 *
 * Layout the store builds:
 *   process (pid)  -> lanes: one per OS thread (push/pop ranges on rows by nesting depth, marks)
 *                            + one "nvtx async" lane per process for start/end ranges (rows packed)
 *                            + one GPU stream lane per (device, stream): kernels, copies, memsets
 *                            (struct store_gpu_op rows; a thread lane's GPU rows hold its CUDA API
 *                            calls and host syncs)
 * Ranges on one row never overlap and are kept sorted by start time, so a query is a binary search.
 * Strings are global ids (store_string); 0 is the empty string.
 */
#ifndef CUSCOPE_STORE_H
#define CUSCOPE_STORE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct store;

enum store_lane_kind {
	STORE_LANE_THREAD = 1,     /* an OS thread: push/pop ranges and marks */
	STORE_LANE_NVTX_ASYNC = 2, /* start/end ranges of a process, rows packed greedily */
	STORE_LANE_GPU_STREAM = 3, /* one CUDA stream of one device: GPU ops on gpu rows */
};

enum store_range_style {
	STORE_STYLE_PUSHPOP = 0,
	STORE_STYLE_STARTEND = 1,
	STORE_STYLE_MARK = 2,
};

/* A completed range (or a mark, start == end). */
struct store_range {
	uint64_t start_ns;  /* CLOCK_MONOTONIC */
	uint64_t end_ns;    /* CLOCK_MONOTONIC */
	uint32_t name_id;   /* global string id */
	uint32_t domain_id; /* global string id, 0 = default domain */
};
_Static_assert(sizeof(struct store_range) == 24, "store_range layout");

struct store_process_info {
	pid_t pid;
	pid_t ppid;
	const char *cmdline; /* argv joined by spaces */
	const char *host;
	uint64_t start_ns;       /* collector start, CLOCK_MONOTONIC */
	uint64_t anchor_mono_ns; /* clock anchor */
	uint64_t anchor_real_ns;
	uint64_t features; /* WIRE_FEATURE_* */
	int connected;     /* a live source is attached now */
	int exited;        /* BYE received */
	int exit_code;     /* from BYE, -1 if unknown */
	int final_counts;  /* its collector's final counts (LOSSES then BYE) arrived */
	int end_recorded;  /* its launcher recorded how it ended (exit_code or exit_signal) */
	int exit_signal;   /* terminating signal, 0 if none or unknown */
	uint64_t events;   /* events ingested for this process */
	size_t lane_count;
	/* The viewer detached and the process ran on: its counts are final up to detached_ns. */
	int detached;
	uint64_t detached_ns; /* CLOCK_MONOTONIC */
	/* The launcher's labels from the process's environment (wire_hello), -1 when unknown. */
	int32_t rank;
	int32_t local_rank;
	int32_t world_size;
	int32_t restart_count;
	uint32_t capture; /* which capture file it came from (store_capture_begin), 0 for the first */
};

struct store_lane_info {
	enum store_lane_kind kind;
	pid_t pid;
	pid_t tid;         /* 0 for the async lane */
	const char *name;  /* current thread name ("" if unknown) */
	uint64_t first_ns; /* first time seen */
	uint64_t end_ns;   /* thread exit time, 0 while alive */
	size_t row_count;  /* rows of ranges (nesting depth seen so far) */
	size_t open_count; /* ranges begun but not ended yet */
	size_t mark_count;
	/* GPU (added): rows of struct store_gpu_op; thread lanes: CUDA API calls and syncs */
	size_t gpu_row_count;
	uint64_t gpu_ops; /* ops on this lane */
	uint32_t device;  /* stream lanes: CUDA device ordinal */
	uint32_t stream;  /* stream lanes: CUPTI stream id */
	int is_default;   /* stream lanes: the context's legacy default (NULL) stream */
	uint64_t kernels; /* stream lanes: kernels on it */
};

/*
 * One GPU operation, API call or host sync (32 bytes: the hot record). Ops on one gpu row never
 * overlap and are sorted by start, like store_range rows (and start with the same two fields).
 */
struct store_gpu_op {
	uint64_t start_ns;       /* CLOCK_MONOTONIC */
	uint64_t end_ns;         /* CLOCK_MONOTONIC */
	uint32_t name_id;        /* global string: demangled kernel name, API function; 0 otherwise */
	uint32_t correlation_id; /* joins to the API call (store_gpu_op_get_launch); 0 = none */
	uint8_t kind;            /* enum wire_gpu_kind */
	uint8_t subkind;         /* memcpy: enum wire_memcpy_kind; sync: enum wire_sync_type */
	uint8_t mem;             /* memcpy: src_mem << 4 | dst_mem; memset: dst_mem */
	uint8_t flags;           /* WIRE_GPU_FLAG_* */
	uint32_t aux;            /* private: use store_gpu_op_bytes / store_gpu_op_kernel */
};
_Static_assert(sizeof(struct store_gpu_op) == 32, "store_gpu_op layout");

/* Launch configuration of a kernel (kept once per distinct configuration). */
struct store_kernel_config {
	int32_t grid[3];
	int32_t block[3];
	uint32_t registers;      /* per thread */
	uint32_t shared_static;  /* bytes */
	uint32_t shared_dynamic; /* bytes */
	uint32_t graph_id;       /* 0 = not from a CUDA graph */
};

/* The CUDA API call that issued a GPU op. */
struct store_gpu_launch {
	pid_t tid;         /* calling thread */
	uint32_t name_id;  /* global string: API function name */
	uint32_t kind;     /* WIRE_GPU_API_RUNTIME or WIRE_GPU_API_DRIVER */
	uint64_t start_ns; /* CLOCK_MONOTONIC */
	uint64_t end_ns;
};

struct store_gpu_device_info {
	uint32_t device;  /* CUDA ordinal */
	const char *name; /* e.g. "NVIDIA H200" */
	char uuid[48];    /* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" */
	uint64_t global_memory_bytes;
	uint32_t sm_count, cc_major, cc_minor;
	const char *short_name; /* name without the vendor's "NVIDIA " prefix, for labels ("H200") */
};

/* Creates an empty store. */
struct store *store_new(void);
void store_free(struct store *store);

/*
 * Feeds one frame from a source. Sources are small integers chosen by the caller, one per
 * connection or per process in a file; the first frame of a source must be HELLO. Returns 0, or
 * -EPROTO with *cause (static) for a malformed or mismatched frame; the source is then unusable.
 */
int store_feed(struct store *store, int source, uint32_t type, const void *payload, uint32_t length,
               const char **cause);
/* Marks a source's connection as gone (process exited or collector unreachable). */
void store_source_closed(struct store *store, int source);
/*
 * Starts the next capture file read into this store (several captures on one time axis): sources
 * are closed, and processes announced from now on are told apart from earlier ones with the same
 * pid (captures of other hosts reuse pids). Returns its number, 0 for the first.
 */
uint32_t store_capture_begin(struct store *store);
/* Captures begun: 0 for a live store or one read without store_capture_begin. */
uint32_t store_capture_count(const struct store *store);

/* How one capture was put on the common time axis (cli_load_captures), for stats. */
struct store_capture_clock {
	const char *method;      /* "reference", "collectives", "anchor" or "none": static text */
	int64_t offset_ns;       /* the move of its times (at its median matched collective) */
	int64_t correction_ns;   /* of which beyond its clock anchor's */
	int64_t drift_ppb;       /* its clock's rate against the reference's, parts per billion */
	uint64_t matched;        /* collectives matched with the reference capture's */
	uint64_t unmatched;      /* collectives beyond the common prefix (the counts differ) */
	uint64_t outliers;       /* matched but left out of the fit */
	int64_t residual_p50_ns; /* |reference's end - its end| after the move, -1 with none matched */
	int64_t residual_max_ns;
	char host[64]; /* a live view's host (attach --ssh, one capture of several hosts); "" = the capture's
	                */
};
/* Keeps capture's alignment (a copy; method must be static). */
void store_capture_set_clock(struct store *store, uint32_t capture, const struct store_capture_clock *clock);
/* capture's alignment: 0, or -ENOENT when none was kept. */
int store_capture_get_clock(const struct store *store, uint32_t capture, struct store_capture_clock *out);

/* Records the exit status of a process the caller launched (the collector cannot know it). */
void store_process_set_exit(struct store *store, pid_t pid, int exit_code);
/*
 * How a process's stream ended, for info/stats/UI: "" when complete; "detached at +S.SSSs, still
 * running" (seconds since its collector started) when the viewer left it running with its counts
 * final up to then; otherwise "incomplete: final counts missing" followed by how it ended ("killed
 * by signal 9", "exited (code 3)") or "ended abruptly" when nobody knows. Returns buf.
 */
const char *store_process_end_text(const struct store_process_info *pi, char *buf, size_t size);

/* Latest event time seen from any source (CLOCK_MONOTONIC), 0 if none. */
uint64_t store_last_ns(const struct store *store);
/* Earliest event time seen, 0 if none. */
uint64_t store_first_ns(const struct store *store);
/* Events ingested in total. */
uint64_t store_event_count(const struct store *store);
/* Sum over processes of all loss counters (collector-reported and store-detected). */
uint64_t store_loss_total(const struct store *store);
/* Loss total for one cause (enum wire_loss_cause) summed over processes. */
uint64_t store_loss_count(const struct store *store, uint32_t cause);
/* Bytes of memory the store holds for events, strings and indexes (capacity, not just use). */
size_t store_memory_bytes(const struct store *store);
/* Bumped on every change, so a UI can redraw only when something changed. */
uint64_t store_generation(const struct store *store);

/* Global string by id ("" for 0 or an unknown id). */
const char *store_string(const struct store *store, uint32_t id);

size_t store_process_count(const struct store *store);
/* Processes in order of first appearance. */
void store_process_get(const struct store *store, size_t index, struct store_process_info *out);
/* Lanes of a process: the async lane (if any) first, then threads in order of appearance. */
void store_lane_get(const struct store *store, size_t process, size_t lane, struct store_lane_info *out);

/*
 * Completed ranges on one row of a lane overlapping [from_ns, to_ns): sets *out to the first and
 * returns how many follow contiguously (sorted by start). The pointer stays valid until the next
 * store_feed.
 */
size_t store_lane_row_query(const struct store *store, size_t process, size_t lane, size_t row,
                            uint64_t from_ns, uint64_t to_ns, const struct store_range **out);
/* All completed ranges of a row (sorted by start). */
size_t store_lane_row_all(const struct store *store, size_t process, size_t lane, size_t row,
                          const struct store_range **out);
/* Open (begun, not ended) range i of a lane: start, name, domain, row; end_ns is 0. */
void store_lane_open_get(const struct store *store, size_t process, size_t lane, size_t index,
                         struct store_range *out, size_t *row);
/* Marks of a thread lane in [from_ns, to_ns) (start_ns == end_ns); returns count, *out first. */
size_t store_lane_mark_query(const struct store *store, size_t process, size_t lane, uint64_t from_ns,
                             uint64_t to_ns, const struct store_range **out);

/* One field of a range's NVTX extended payload (WIRE_EV_NVTX_ARG). */
struct store_arg {
	uint32_t name_id; /* global string: the field's name in its schema */
	uint32_t type;    /* enum wire_arg_type: how value reads */
	uint64_t value;
	uint32_t text_id; /* WIRE_ARG_ENUM: global string, the value's name */
	uint32_t reserved;
};
/*
 * The payload fields of a range or mark r (as a query of lane `lane` returned it, open or not), in
 * the order sent, at most max into out; returns how many (0 for a range without).
 */
size_t store_range_args(const struct store *store, size_t process, size_t lane, const struct store_range *r,
                        struct store_arg *out, size_t max);
/* Payload fields the store did not keep (its bound, no range before them). */
uint64_t store_args_dropped(const struct store *store);

/* Loss counters of one process, by cause (enum wire_loss_cause); 0 for causes never reported. */
uint64_t store_process_loss(const struct store *store, size_t process, uint32_t cause);

/* ---- Memory bound (live viewer) ----
 *
 * With a limit set, the store drops its oldest completed events (by time, every kind) whenever the
 * rows holding them (store_event_bytes) near the limit (4/5 of it), down to 3/5 of it, so they stay
 * within the limit. Strings, stacks and indexes are not counted: the collector bounds them. Open ranges,
 * lanes, processes, strings, stacks, counters and loss counters stay. Queries then cover
 * [store_memory_from_ns, now]; totals such as store_event_count and the loss counters still count everything
 * received.
 */

/* Sets the bound in bytes (0 = none, the default) and trims to it at once. */
void store_set_memory_limit(struct store *store, size_t bytes);
size_t store_memory_limit(const struct store *store);
/* Bytes of the rows holding events (ranges, marks, GPU ops, samples, calls): what the limit bounds. */
size_t store_event_bytes(const struct store *store);
/* Evicts down to the limit now (store_feed does it as it goes); returns events dropped. */
uint64_t store_trim(struct store *store);
/* Drops every completed event that ended before t_ns (marks and samples: at); returns how many. */
uint64_t store_evict_before(struct store *store, uint64_t t_ns);
/* Oldest time still complete in memory: nothing that ended before it is kept; 0 = nothing evicted. */
uint64_t store_memory_from_ns(const struct store *store);
/* Events dropped from memory so far. */
uint64_t store_evicted_count(const struct store *store);
/* Ranges evicted from the front of a row: row index i is range number dropped + i of that row. */
uint64_t store_lane_row_dropped(const struct store *store, size_t process, size_t lane, size_t row);

/* A wire frame of a source, for store_replay_identity: 0, or -errno to stop. */
typedef int (*store_emit_fn)(void *ctx, int source, uint32_t type, const void *payload, uint32_t length);
/*
 * Emits, for every source that said HELLO (connected or gone), the frames a new capture segment needs before
 * that source's next frame to read on its own: HELLO, its strings under their own ids, thread names, push/pop
 * ranges still open, GPU devices and contexts, loss counters, and BYE for processes that ended. Returns 0 or
 * the first emit error.
 */
int store_replay_identity(const struct store *store, store_emit_fn emit, void *ctx);

/* ---- GPU activity (added) ---- */

/* GPU records ingested in total (all kinds; also counted in store_event_count). */
uint64_t store_gpu_event_count(const struct store *store);
/* GPU records ingested for one process. */
uint64_t store_process_gpu_events(const struct store *store, size_t process);
/*
 * GPU ops on gpu row `row` of a lane (stream lanes: kernels/copies/memsets/unmatched syncs; thread
 * lanes: API calls and syncs) overlapping [from_ns, to_ns): *out = first, returns the count.
 * Valid until the next store_feed.
 */
size_t store_lane_gpu_query(const struct store *store, size_t process, size_t lane, size_t row,
                            uint64_t from_ns, uint64_t to_ns, const struct store_gpu_op **out);
/* All ops of a gpu row, sorted by start. */
size_t store_lane_gpu_all(const struct store *store, size_t process, size_t lane, size_t row,
                          const struct store_gpu_op **out);
/* Label of a stream lane: "GPU0 s7", "GPU0 default", "GPU0 s13 cpy" (only copies on it). */
const char *store_lane_gpu_label(const struct store *store, size_t process, size_t lane);
/* Byte count of a memcpy/memset op (0 for other kinds). */
uint64_t store_gpu_op_bytes(const struct store *store, size_t process, const struct store_gpu_op *op);
/* Launch configuration of a kernel op: 0, or -EINVAL for an op that is not a kernel. */
int store_gpu_op_kernel(const struct store *store, size_t process, const struct store_gpu_op *op,
                        struct store_kernel_config *out);
/*
 * The API call that issued op (joined on the correlation id, whichever arrived first): 0, or
 * -ENOENT when it is unknown (graph kernels, API tracing off, or older than the last ~1M calls).
 */
int store_gpu_op_get_launch(const struct store *store, size_t process, const struct store_gpu_op *op,
                            struct store_gpu_launch *out);
/* Short label of a (demangled) kernel name: no return type, template arguments or parameters. */
const char *store_short_name(const struct store *store, uint32_t name_id);
/* Demangles a C++ symbol into buf (returns buf), or returns NULL when it is not a mangled name. */
char *store_demangle(const char *mangled, char *buf, size_t size);

/* GPU devices a process reported (in order of arrival). */
size_t store_gpu_device_count(const struct store *store, size_t process);
void store_gpu_device_get(const struct store *store, size_t process, size_t index,
                          struct store_gpu_device_info *out);
/* Device by ordinal: 0, or -ENOENT when the process did not describe it. */
int store_gpu_device_find(const struct store *store, size_t process, uint32_t device,
                          struct store_gpu_device_info *out);

/* Notices (one-line messages from a collector, e.g. "GPU tracing unavailable: ..."). */
size_t store_notice_count(const struct store *store, size_t process);
/* One notice of a process. */
struct store_notice_info {
	const char *text; /* one line; valid while the store lives */
	uint32_t level;   /* enum wire_notice_level */
	uint32_t topic;   /* enum wire_notice_topic: what a viewer matches on, never the words */
	uint64_t seq;     /* store-wide order of arrival, from 1 */
};
/* Notice index (< store_notice_count) of a process. */
void store_notice_get(const struct store *store, size_t process, size_t index, struct store_notice_info *out);
/* Notices received in total: a UI shows the ones with seq above what it has shown. */
uint64_t store_notice_total(const struct store *store);

/* ---- CPU side (added): stack samples, blocking calls (OS runtime), Python GC, counters ----
 *
 * Frames are store-wide ids (0 = none) of distinct "function\x1fmodule" texts, with the function
 * demangled once. Stacks are store-wide ids (0 = no stack) of distinct frame sequences, leaf first.
 * A thread lane holds its samples (sorted by time), its blocking calls on osrt rows and its GC
 * ranges on gc rows (calls on one row never overlap and are sorted by start, like range rows).
 */

/* One CPU-time sample of a thread. */
struct store_sample {
	uint64_t time_ns;  /* CLOCK_MONOTONIC */
	uint32_t stack_id; /* store_stack_frames; 0 = no stack */
	uint32_t reserved;
};
_Static_assert(sizeof(struct store_sample) == 16, "store_sample layout");

/* A blocking call (OSRT) or a Python GC range on a thread (starts with the fields of store_range). */
struct store_call {
	uint64_t start_ns; /* CLOCK_MONOTONIC */
	uint64_t end_ns;
	uint32_t name_id;  /* global string: libc function ("read", "nanosleep", ...) or "gc gen N" */
	uint32_t stack_id; /* the caller's stack (blocking calls), 0 = none (yet) */
};
_Static_assert(sizeof(struct store_call) == 24, "store_call layout");

struct store_frame {
	uint32_t function_id; /* global string: demangled function, "module+0xOFF", "0xADDR", a Python name */
	uint32_t module_id;   /* global string: module base name, "[perf-map]" (JIT code, Python trampolines),
	                         "[unknown]", "" */
	uint32_t text_id;     /* global string: the frame's text as sent ("function\x1fmodule") */
};

/* CPU data of one lane. */
struct store_lane_cpu_info {
	uint64_t samples;      /* CPU samples on this thread */
	size_t osrt_row_count; /* rows of blocking calls */
	uint64_t osrt_calls;   /* blocking calls in all rows */
	size_t gc_row_count;   /* rows of GC ranges */
	uint64_t gc_count;     /* GC ranges */
	size_t osrt_pending;   /* call stacks waiting for their call event (normally 0 at rest) */
};

/* Counter of one thread: the newest cumulative value received. */
struct store_counter {
	pid_t tid;
	uint32_t event_id; /* global string: "task-clock", "cycles", ... */
	uint64_t value;    /* cumulative since the thread (or counting) started */
	uint64_t time_ns;  /* when it was read */
};

/* A function's samples in a window of a lane. */
struct store_hot_function {
	uint32_t frame_id; /* store_frame_get */
	uint32_t reserved;
	uint64_t self;  /* samples with this frame as the leaf */
	uint64_t total; /* samples with this frame anywhere in the stack (counted once per sample) */
};

/* What a thread did in a time interval (the "why was the GPU idle" answer). */
struct store_thread_activity {
	size_t lane;          /* the thread's lane, SIZE_MAX when the tid is unknown */
	uint64_t samples;     /* CPU samples in the interval (0: the thread was off CPU or unsampled) */
	uint32_t top_frame;   /* leaf frame of the most samples, 0 = none */
	uint32_t top_stack;   /* most frequent whole stack, 0 = none */
	uint64_t top_samples; /* samples with top_frame as their leaf */
	int has_blocking;     /* blocking is the call overlapping the interval the longest */
	struct store_call blocking;
	uint64_t blocking_overlap_ns;
	int has_nvtx;            /* nvtx is the innermost push/pop range overlapping the interval */
	struct store_range nvtx; /* end_ns = 0 when still open */
	size_t nvtx_depth;       /* its row (nesting depth) */
	int has_gc;              /* gc is the GC range overlapping the interval the longest */
	struct store_call gc;
	uint64_t gc_overlap_ns; /* GC time inside the interval, all ranges */
};

/* CPU samples ingested in total. */
uint64_t store_sample_count(const struct store *store);
/* CPU data of a lane (all zero for lanes without any). */
void store_lane_cpu_get(const struct store *store, size_t process, size_t lane,
                        struct store_lane_cpu_info *out);
/* Lane index of thread tid in a process, or SIZE_MAX. */
size_t store_thread_lane_find(const struct store *store, size_t process, pid_t tid);
/*
 * Samples of a lane in [from_ns, to_ns), sorted by time: *out = first, returns the count. Valid
 * until the next store_feed.
 */
size_t store_lane_samples(const struct store *store, size_t process, size_t lane, uint64_t from_ns,
                          uint64_t to_ns, const struct store_sample **out);
/*
 * Sample counts of a lane in `buckets` equal slices of [from_ns, to_ns) into out_counts[buckets]
 * (one binary search per slice boundary, never a walk over the samples); returns the total.
 */
uint64_t store_lane_sample_density(const struct store *store, size_t process, size_t lane, uint64_t from_ns,
                                   uint64_t to_ns, size_t buckets, uint32_t *out_counts);
/* Blocking calls on osrt row `row` of a lane overlapping [from_ns, to_ns): *out = first, returns count. */
size_t store_lane_osrt_query(const struct store *store, size_t process, size_t lane, size_t row,
                             uint64_t from_ns, uint64_t to_ns, const struct store_call **out);
/* Python GC ranges on gc row `row` of a lane overlapping [from_ns, to_ns) (stack_id is 0). */
size_t store_lane_gc_query(const struct store *store, size_t process, size_t lane, size_t row,
                           uint64_t from_ns, uint64_t to_ns, const struct store_call **out);
/* Frames of a stack, leaf first: *frames = first frame id, returns the depth (0 for stack 0). */
size_t store_stack_frames(const struct store *store, uint32_t stack_id, const uint32_t **frames);
/* A frame by id (all zero for 0 or an unknown id). */
void store_frame_get(const struct store *store, uint32_t frame_id, struct store_frame *out);
/* Function / module text of a frame ("" for 0). */
const char *store_frame_function(const struct store *store, uint32_t frame_id);
const char *store_frame_module(const struct store *store, uint32_t frame_id);
/*
 * Functions of a lane's samples in [from_ns, to_ns), most self samples first (then total, then
 * frame id): fills up to top_n of out, returns how many; *samples (if not NULL) = samples in the
 * window. Every frame seen in a stack is a candidate (self may be 0 for callers).
 */
size_t store_hot_functions(const struct store *store, size_t process, size_t lane, uint64_t from_ns,
                           uint64_t to_ns, size_t top_n, struct store_hot_function *out, uint64_t *samples);
/*
 * Functions of a lane's samples in [from_ns, to_ns) by inclusive samples (total: the stacks a
 * function is anywhere in, once per stack), most first (then self, then frame id). When a stack of
 * the window holds a Python frame, only Python frames are listed and *python (if not NULL) is 1.
 */
size_t store_hot_inclusive(const struct store *store, size_t process, size_t lane, uint64_t from_ns,
                           uint64_t to_ns, size_t top_n, struct store_hot_function *out, uint64_t *samples,
                           int *python);
/* Function names of CPython's perf trampolines (perf map): "py::QUALNAME:FILE". */
#define STORE_PY_FRAME_PREFIX "py::"
/* 1 if the frame is a Python function (named by CPython's perf map). */
int store_frame_is_python(const struct store *store, uint32_t frame_id);
/*
 * A frame's function as people read it: "FILE:QUALNAME" for a Python frame (in buf), else the
 * function text itself.
 */
const char *store_frame_label(const struct store *store, uint32_t frame_id, char *buf, size_t size);
/* What thread tid of a process was doing in [from_ns, to_ns); see struct store_thread_activity. */
void store_thread_activity(const struct store *store, size_t process, pid_t tid, uint64_t from_ns,
                           uint64_t to_ns, struct store_thread_activity *out);
/* Counters of a process (one per thread and event, newest value), in order of first arrival. */
size_t store_counter_count(const struct store *store, size_t process);
void store_counter_get(const struct store *store, size_t process, size_t index, struct store_counter *out);

/* ---- GPU hardware metrics (added) ----
 *
 * Samples of WIRE_FRAME_GPU_METRICS, one series per (physical GPU by UUID, metric name) across
 * processes (one sampler serves a GPU). Each series holds at most STORE_GPU_METRIC_POINTS_MAX
 * points (then its oldest half goes, counted in dropped); the memory window drops old ones.
 */
#define STORE_GPU_METRIC_SERIES_MAX 256u
#define STORE_GPU_METRIC_POINTS_MAX (1u << 20)

/* One sample: the metric's value over [start_ns, end_ns). */
struct store_gpu_metric_point {
	uint64_t start_ns; /* CLOCK_MONOTONIC */
	uint64_t end_ns;
	double value; /* percent, bytes over the interval, cycles, ... (see the name) */
};
_Static_assert(sizeof(struct store_gpu_metric_point) == 24, "store_gpu_metric_point layout");

struct store_gpu_metric_info {
	char uuid[48];           /* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" */
	uint32_t metric_id;      /* global string */
	const char *name;        /* its text: "sm__cycles_active.avg", "nvml:gpu_util", ... */
	uint32_t source;         /* enum wire_gpu_metric_source of the newest sample, 0 unknown */
	size_t process;          /* the sampling process (the first one) */
	uint32_t device;         /* its CUDA ordinal there */
	const char *device_name; /* short name ("H200"), "" when that process did not describe it */
	size_t points;           /* in memory */
	uint64_t dropped;        /* dropped by the series bound or arriving far out of order */
	/* The value's unit, from the name: "percent" (0..100), "bytes" (over the sample's interval),
	 * "cycles" (over the interval), "MiB/s" (NVML GPM rates) or "" (unknown). */
	const char *unit;
};

/* Samples ingested in total. */
uint64_t store_gpu_metric_samples(const struct store *store);
/* The unit of a metric's values from its name (see store_gpu_metric_info.unit). */
const char *store_gpu_metric_unit(const char *name);
/* Series, in order of first sample. */
size_t store_gpu_metric_count(const struct store *store);
void store_gpu_metric_get(const struct store *store, size_t index, struct store_gpu_metric_info *out);
/* Points of a series overlapping [from_ns, to_ns), by start: *out = first, returns the count. */
size_t store_gpu_metric_query(const struct store *store, size_t index, uint64_t from_ns, uint64_t to_ns,
                              const struct store_gpu_metric_point **out);

/* ---- The collector's own cost (added) ----
 *
 * Per process and cost source (enum wire_cost_source), from WIRE_FRAME_COST frames: the newest
 * cumulative reading, the readings over time (rates per second come from their differences) and
 * the stretches where the overhead budget held the source below what was asked (WIRE_COST_REDUCED).
 * A reading older than the newest of its source is ignored. Totals continue across an exec (the
 * new collector in the same process counts from 0 again). History is bounded: at most
 * STORE_COST_POINTS_MAX readings per source (when full, every other older one is dropped, so old
 * time keeps coarser rates) and STORE_COST_REDUCED_MAX stretches (the oldest go); the memory
 * window (store_evict_before) drops both with the events.
 */
#define STORE_COST_POINTS_MAX  4096u
#define STORE_COST_REDUCED_MAX 1024u

/* The newest reading of one source, totals since the process started. */
struct store_cost {
	uint64_t time_ns;     /* of the newest reading, CLOCK_MONOTONIC */
	uint64_t cpu_ns;      /* CPU time of the collector's own threads for the source */
	uint64_t added_ns;    /* estimated time the source added to the program's threads */
	uint64_t events;      /* records, samples, calls timed */
	uint32_t backoffs;    /* times the budget lowered the source */
	uint32_t level;       /* setting now: samples/s, blocking threshold us, counter period ms; 0 = off */
	uint32_t asked_level; /* level of the newest reading that was not reduced, 0 = none seen */
	int reduced;          /* the budget holds the source below what was asked now */
};

/* One reading in the history (cumulative values). */
struct store_cost_point {
	uint64_t time_ns; /* CLOCK_MONOTONIC */
	uint64_t cpu_ns;
	uint64_t added_ns;
};
_Static_assert(sizeof(struct store_cost_point) == 24, "store_cost_point layout");

/* A stretch where the budget held a source at `level` (below what was asked). */
struct store_cost_reduced {
	uint64_t start_ns; /* first reading that was reduced at this level */
	uint64_t end_ns;   /* first reading that was not (or at another level), 0 while it lasts */
	uint32_t level;
	uint32_t reserved;
};

/* Whether a process sent any cost reading. */
int store_cost_any(const struct store *store, size_t process);
/* Newest reading of a source: 0, or -ENOENT when the process sent none for it. */
int store_cost_get(const struct store *store, size_t process, uint32_t source, struct store_cost *out);
/* Readings of a source in time order: *out = first, returns the count. Valid until the next store_feed. */
size_t store_cost_points(const struct store *store, size_t process, uint32_t source,
                         const struct store_cost_point **out);
/* Reduced stretches of a source in time order (never overlapping). Valid until the next store_feed. */
size_t store_cost_reduced(const struct store *store, size_t process, uint32_t source,
                          const struct store_cost_reduced **out);

#endif
