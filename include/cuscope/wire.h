/*
 * The cuscope protocol: the one definition of the bytes that travel from the collector to a
 * viewer over the Unix socket, and that capture files keep (chunks hold the same frames).
 *
 * A connection is a byte stream of frames: struct wire_frame_header then `length` payload bytes.
 * The first frame is always WIRE_FRAME_HELLO. All integers are little-endian host order (the
 * collector and viewer run on one host; capture files record the byte order in their header).
 */
#ifndef CUSCOPE_WIRE_H
#define CUSCOPE_WIRE_H

#include <stddef.h>
#include <stdint.h>

#define WIRE_MAGIC "CUSCOPE" /* 8 bytes with the NUL */
/* 2: notices carry a topic; 3: the hello carries rank labels; 4: GPU metric samples
 * (wire_frame_upgrade reads 1, 2 and 3) */
#define WIRE_VERSION       4u
#define WIRE_MAX_FRAME     (1u << 20) /* largest payload a peer may send, bytes */
#define WIRE_MAX_STRING    4096u      /* longest interned string, bytes (longer ones are cut) */
#define WIRE_MAX_STRING_ID (1u << 24) /* interned ids are dense and never exceed this */

enum wire_frame_type {
	WIRE_FRAME_HELLO = 1,      /* struct wire_hello, then cmdline_len bytes of NUL-separated argv */
	WIRE_FRAME_STRING = 2,     /* struct wire_string, then length bytes (no NUL) */
	WIRE_FRAME_EVENTS = 3,     /* an array of struct wire_event */
	WIRE_FRAME_LOSSES = 4,     /* an array of struct wire_loss: cumulative totals, newest wins */
	WIRE_FRAME_BYE = 5,        /* struct wire_bye: the process is exiting normally */
	WIRE_FRAME_GPU = 6,        /* an array of struct wire_gpu_event (CUPTI activity, decoded) */
	WIRE_FRAME_GPU_DEVICE = 7, /* struct wire_gpu_device */
	WIRE_FRAME_NOTICE = 8,     /* struct wire_notice, then length bytes of one-line text for the user */
	WIRE_FRAME_STACKS = 9, /* a sequence of struct wire_stack, each followed by depth uint32 frame ids */
	WIRE_FRAME_COUNTERS = 10,    /* an array of struct wire_counter (cumulative values, newest wins) */
	WIRE_FRAME_EXIT = 11,        /* struct wire_exit: how the process ended, as its launcher saw it */
	WIRE_FRAME_COST = 12,        /* an array of struct wire_cost: the collector's own cost per source */
	WIRE_FRAME_GPU_METRICS = 13, /* an array of struct wire_gpu_metric (GPU hardware metrics) */
	WIRE_FRAME_TYPE_MAX
};

struct wire_frame_header {
	uint32_t type;   /* enum wire_frame_type */
	uint32_t length; /* payload bytes that follow, <= WIRE_MAX_FRAME */
};
_Static_assert(sizeof(struct wire_frame_header) == 8, "wire_frame_header layout");

/* Process identity and clock anchor, sent first on every connection. */
struct wire_hello {
	char magic[8];       /* WIRE_MAGIC */
	uint32_t version;    /* WIRE_VERSION of the sender */
	uint32_t hello_size; /* sizeof(struct wire_hello) of the sender */
	int32_t pid;
	int32_t ppid;
	uint64_t start_mono_ns;  /* when the collector started in this process, CLOCK_MONOTONIC */
	uint64_t anchor_mono_ns; /* CLOCK_MONOTONIC half of the clock anchor */
	uint64_t anchor_real_ns; /* CLOCK_REALTIME read at anchor_mono_ns */
	uint64_t features;       /* WIRE_FEATURE_* bits the collector runs with */
	char host[64];           /* NUL-terminated host name */
	uint32_t cmdline_len;    /* bytes of argv that follow, NUL-separated */
	uint32_t ids;            /* WIRE_ID_* bits: which of the launcher's labels below are known */
	/* Labels the launcher put in the process's own environment (RANK, LOCAL_RANK, WORLD_SIZE,
	 * TORCHELASTIC_RESTART_COUNT and their MPI/Slurm forms), read by its collector at start:
	 * labels only, 0..2^31-1, meaningful where their WIRE_ID_* bit is set. */
	int32_t rank;
	int32_t local_rank;
	int32_t world_size;
	int32_t restart_count;
};
_Static_assert(sizeof(struct wire_hello) == 144, "wire_hello layout");
#define WIRE_HELLO_V2_SIZE 128u /* versions 1 and 2: the same fields up to cmdline_len, then 0 */

enum wire_id {
	WIRE_ID_RANK = 1u << 0,
	WIRE_ID_LOCAL_RANK = 1u << 1,
	WIRE_ID_WORLD_SIZE = 1u << 2,
	WIRE_ID_RESTART_COUNT = 1u << 3,
	WIRE_ID_ALL = 0xfu,
};

enum wire_feature {
	WIRE_FEATURE_NVTX = 1u << 0,     /* NVTX injection initialised */
	WIRE_FEATURE_CUPTI = 1u << 1,    /* GPU activity tracing running */
	WIRE_FEATURE_THREADS = 1u << 2,  /* thread list scanning */
	WIRE_FEATURE_ATTACHED = 1u << 3, /* loaded by attach: no Python hook (thread names, GC) */
};

/* Interned string: ids are per process, 0 is reserved for "no string". */
struct wire_string {
	uint32_t id;
	uint32_t length; /* bytes that follow */
};
_Static_assert(sizeof(struct wire_string) == 8, "wire_string layout");

enum wire_event_kind {
	WIRE_EV_NVTX_PUSH = 1,     /* name_id, domain_id, value = category */
	WIRE_EV_NVTX_POP = 2,      /* domain_id */
	WIRE_EV_NVTX_START = 3,    /* name_id, domain_id, value = range id (unique per process) */
	WIRE_EV_NVTX_END = 4,      /* value = range id; tid is the ending thread */
	WIRE_EV_NVTX_MARK = 5,     /* name_id, domain_id, value = category */
	WIRE_EV_NVTX_CATEGORY = 6, /* name_id names category `value` in domain_id */
	WIRE_EV_THREAD_NAME = 16,  /* thread tid is (now) called name_id; first one = thread seen */
	WIRE_EV_THREAD_EXIT = 17,  /* thread tid has ended (time is when it was found gone) */
	WIRE_EV_OSRT =
	    18,          /* a blocking call: time_ns..value (end ns), name_id = libc function name;
	                  * its stack is the STACKS record of kind WIRE_STACK_OSRT with the same tid and time */
	WIRE_EV_GC = 19, /* a Python garbage collection: time_ns..value (end ns), name_id = "gc gen N" */
	/* One field of an NVTX extended payload (NVTX_PAYLOAD_TYPE_EXT) of the push, start or mark
	 * that the same thread sent just before: name_id = field name, value = the value, flags =
	 * enum wire_arg_type (WIRE_ARG_ENUM: domain_id = the value's name). At most WIRE_ARGS_MAX
	 * follow one range; older viewers ignore them. */
	WIRE_EV_NVTX_ARG = 20,
	WIRE_EV_KIND_MAX
};

/* One fixed-size event record. */
struct wire_event {
	uint64_t time_ns;   /* CLOCK_MONOTONIC */
	uint64_t value;     /* kind-specific, see enum wire_event_kind */
	uint32_t tid;       /* OS thread id that produced the event */
	uint32_t name_id;   /* interned string id, 0 = none */
	uint32_t domain_id; /* interned NVTX domain name, 0 = the default domain */
	uint16_t kind;      /* enum wire_event_kind */
	uint16_t flags;     /* WIRE_EV_NVTX_ARG: enum wire_arg_type; otherwise reserved, 0 */
};
_Static_assert(sizeof(struct wire_event) == 32, "wire_event layout");

/* How a WIRE_EV_NVTX_ARG's value reads. */
enum wire_arg_type {
	WIRE_ARG_UINT = 0,   /* unsigned integer */
	WIRE_ARG_INT = 1,    /* signed integer, two's complement in 64 bits */
	WIRE_ARG_DOUBLE = 2, /* IEEE 754 double, its bit pattern */
	WIRE_ARG_ENUM = 3,   /* unsigned integer of a registered enum; domain_id = its value's name */
	WIRE_ARG_TYPE_MAX
};
#define WIRE_ARGS_MAX 8 /* fields kept per range; the rest of a payload is counted, not sent */

enum wire_loss_cause {
	WIRE_LOSS_RING_FULL = 1,     /* a thread's buffer was full: the sender fell behind */
	WIRE_LOSS_NO_VIEWER = 2,     /* evicted from the flight recorder while no viewer read */
	WIRE_LOSS_VIEWER_SLOW = 3,   /* the viewer did not read fast enough */
	WIRE_LOSS_STRING_CAP = 4,    /* a name arrived after the string table was full */
	WIRE_LOSS_NO_MEMORY = 5,     /* the collector could not allocate a buffer */
	WIRE_LOSS_UNMATCHED_POP = 6, /* a pop/end without its push/start (counted by the viewer) */
	WIRE_LOSS_CUPTI_DROPPED = 7, /* GPU records CUPTI dropped (cuptiActivityGetNumDroppedRecords) */
	WIRE_LOSS_GPU_BUFFER = 8, /* CUPTI buffers refused because the collector's buffer bound was reached */
	WIRE_LOSS_SAMPLE_BUSY =
	    9, /* CPU samples skipped: the thread was inside the collector or had no buffer */
	/* NVTX extended payloads (or fields of them) not decoded: unknown schema, NULL or short data,
	 * schema table full, fields beyond WIRE_ARGS_MAX */
	WIRE_LOSS_PAYLOAD_UNDECODED = 10,
	WIRE_LOSS_CAUSE_MAX
};

struct wire_loss {
	uint32_t cause; /* enum wire_loss_cause */
	uint32_t reserved;
	uint64_t count; /* events lost for this cause since the process started */
};
_Static_assert(sizeof(struct wire_loss) == 16, "wire_loss layout");

struct wire_bye {
	uint64_t time_ns;  /* CLOCK_MONOTONIC at exit (or at the detach, see WIRE_BYE_DETACHED) */
	int32_t exit_code; /* status passed to exit(), or -1 when unknown */
	uint32_t flags;    /* WIRE_BYE_* (0 in captures written before the flag existed) */
};
/* The viewer asked to detach and the process runs on: the counts are final up to time_ns. */
#define WIRE_BYE_DETACHED 1u
_Static_assert(sizeof(struct wire_bye) == 16, "wire_bye layout");

/*
 * ---- Viewer to collector ----
 * The only bytes a viewer sends: a sequence of these 8-byte requests. The collector reads them
 * whole (assembling short reads) and ignores any with another magic, type or size; nothing else a
 * peer writes has any effect.
 *
 * WIRE_REQUEST_DETACH: the viewer is leaving while the process runs on. The collector answers on
 * its sender thread: what its rings hold, notices, LOSSES and a BYE with WIRE_BYE_DETACHED, then
 * it closes the connection as after a hang-up. A collector whose process is exiting ignores it
 * (its final BYE follows anyway).
 */
#define WIRE_REQUEST_MAGIC 0x51524353u /* "SCRQ" in memory order */
enum wire_request_type {
	WIRE_REQUEST_DETACH = 1,
};

struct wire_request {
	uint32_t magic; /* WIRE_REQUEST_MAGIC */
	uint32_t type;  /* enum wire_request_type */
};
_Static_assert(sizeof(struct wire_request) == 8, "wire_request layout");

/* Written by the viewer that launched the process (the collector cannot know its own end). */
struct wire_exit {
	int32_t pid;
	int32_t exit_code; /* exit status, or -1 when killed by a signal */
	int32_t signal;    /* terminating signal, 0 if it exited */
	uint32_t reserved;
};
_Static_assert(sizeof(struct wire_exit) == 16, "wire_exit layout");

/* ---- GPU activity (CUPTI), decoded by the collector into one fixed-size record ---- */

enum wire_gpu_kind {
	WIRE_GPU_KERNEL = 1, /* a kernel on a stream; name_id = mangled kernel name (the viewer demangles) */
	WIRE_GPU_MEMCPY = 2, /* subkind = enum wire_memcpy_kind, src_mem/dst_mem = enum wire_mem_kind */
	WIRE_GPU_MEMSET = 3, /* dst_mem = memory kind, bytes */
	WIRE_GPU_SYNC = 4,   /* a host wait: subkind = enum wire_sync_type; stream valid for stream syncs */
	WIRE_GPU_API_RUNTIME =
	    5, /* CUDA runtime call on thread tid: subkind = cbid, name_id = function name */
	WIRE_GPU_API_DRIVER = 6, /* CUDA driver call on thread tid: subkind = cbid, name_id = function name */
	WIRE_GPU_CONTEXT =
	    7, /* context `context` lives on `device`; stream = its legacy default (NULL) stream */
	WIRE_GPU_STREAM =
	    8, /* stream `stream` of `context` exists; subkind 1 = non-blocking, 2 = NULL stream */
	WIRE_GPU_OVERHEAD = 9, /* CUPTI/driver overhead interval; subkind = CUPTI overhead kind */
	WIRE_GPU_KIND_MAX
};

enum wire_memcpy_kind {
	WIRE_MEMCPY_UNKNOWN = 0,
	WIRE_MEMCPY_HTOD = 1,
	WIRE_MEMCPY_DTOH = 2,
	WIRE_MEMCPY_HTOA = 3,
	WIRE_MEMCPY_ATOH = 4,
	WIRE_MEMCPY_ATOA = 5,
	WIRE_MEMCPY_ATOD = 6,
	WIRE_MEMCPY_DTOA = 7,
	WIRE_MEMCPY_DTOD = 8,
	WIRE_MEMCPY_HTOH = 9,
	WIRE_MEMCPY_PTOP = 10,
	WIRE_MEMCPY_KIND_MAX
};

enum wire_mem_kind {
	WIRE_MEM_UNKNOWN = 0,
	WIRE_MEM_PAGEABLE = 1,
	WIRE_MEM_PINNED = 2,
	WIRE_MEM_DEVICE = 3,
	WIRE_MEM_ARRAY = 4,
	WIRE_MEM_MANAGED = 5,
	WIRE_MEM_DEVICE_STATIC = 6,
	WIRE_MEM_MANAGED_STATIC = 7,
	WIRE_MEM_KIND_MAX
};

enum wire_sync_type {
	WIRE_SYNC_UNKNOWN = 0,
	WIRE_SYNC_EVENT = 1, /* cudaEventSynchronize */
	WIRE_SYNC_STREAM_WAIT_EVENT = 2,
	WIRE_SYNC_STREAM = 3,  /* cudaStreamSynchronize */
	WIRE_SYNC_CONTEXT = 4, /* cudaDeviceSynchronize / context sync */
	WIRE_SYNC_TYPE_MAX
};

#define WIRE_GPU_FLAG_ASYNC         1u /* memcpy/memset issued asynchronously */
#define WIRE_GPU_FLAG_DEVICE_LAUNCH 2u /* launched from the device (CDP) */

struct wire_gpu_event {
	uint64_t start_ns; /* CLOCK_MONOTONIC (CUPTI timestamp callback) */
	uint64_t end_ns;   /* CLOCK_MONOTONIC */
	uint64_t bytes;    /* memcpy / memset size */
	uint32_t
	    correlation_id; /* joins a kernel/copy to the API call that issued it (0 = none, e.g. graphs) */
	uint32_t name_id;   /* interned: kernel name or API function name */
	uint32_t device;
	uint32_t context;
	uint32_t stream;
	uint16_t kind;           /* enum wire_gpu_kind */
	uint16_t subkind;        /* see enum wire_gpu_kind */
	uint32_t tid;            /* API records: calling OS thread */
	int32_t grid[3];         /* kernel launch grid */
	int32_t block[3];        /* kernel block */
	uint32_t registers;      /* per thread */
	uint32_t shared_static;  /* bytes */
	uint32_t shared_dynamic; /* bytes */
	uint8_t src_mem;         /* enum wire_mem_kind */
	uint8_t dst_mem;         /* enum wire_mem_kind */
	uint8_t flags;           /* WIRE_GPU_FLAG_* */
	uint8_t reserved;
	uint32_t graph_id; /* CUDA graph the work belongs to, 0 = none */
};
_Static_assert(sizeof(struct wire_gpu_event) == 96, "wire_gpu_event layout");

struct wire_gpu_device {
	uint32_t device;  /* CUDA device ordinal as CUPTI reports it */
	uint32_t name_id; /* interned device name */
	uint8_t uuid[16];
	uint64_t global_memory_bytes;
	uint32_t sm_count;
	uint32_t cc_major;
	uint32_t cc_minor;
	uint32_t reserved;
};
_Static_assert(sizeof(struct wire_gpu_device) == 48, "wire_gpu_device layout");

enum wire_notice_level {
	WIRE_NOTICE_INFO = 0,
	WIRE_NOTICE_WARNING = 1, /* part of the job cannot be done (e.g. GPU tracing unavailable) */
};

/* What a notice is about, so that a viewer acts on it without reading its words. */
enum wire_notice_topic {
	WIRE_NOTICE_TOPIC_GENERAL = 0,         /* for the user to read; nothing acts on it */
	WIRE_NOTICE_TOPIC_GPU_UNAVAILABLE = 1, /* why there are no GPU lanes (a warning) */
	WIRE_NOTICE_TOPIC_BUDGET = 2,          /* the overhead budget changed a source's level */
	WIRE_NOTICE_TOPIC_RUNTIME = 3,         /* key=value lines about the GPU runtime (info) */
	WIRE_NOTICE_TOPIC_TRIGGER =
	    4, /* a trigger fired (info; written by the viewer, trigger_notice_parse) */
	WIRE_NOTICE_TOPIC_MAX
};

struct wire_notice {
	uint32_t level;  /* enum wire_notice_level */
	uint32_t topic;  /* enum wire_notice_topic */
	uint32_t length; /* bytes of text that follow */
};
_Static_assert(sizeof(struct wire_notice) == 12, "wire_notice layout");

/* Names for stats and the UI ("HtoD", "pageable", "stream", ...); never NULL. */
const char *wire_memcpy_kind_name(uint32_t kind);
const char *wire_mem_kind_name(uint32_t kind);
const char *wire_sync_type_name(uint32_t type);

/* ---- CPU side: stack samples, blocking-call stacks, counters ---- */

enum wire_stack_kind {
	WIRE_STACK_SAMPLE = 1, /* a CPU-time sample of thread tid */
	WIRE_STACK_OSRT = 2,   /* the stack of the blocking call (WIRE_EV_OSRT) that started at time_ns */
};

/*
 * One stack. Frame ids are interned strings "function\x1fmodule" (function may be a mangled C++
 * name, the viewer demangles; "module+0xOFFSET" when the module has no symbol), leaf first.
 */
struct wire_stack {
	uint64_t time_ns; /* CLOCK_MONOTONIC */
	uint32_t tid;
	uint16_t kind;  /* enum wire_stack_kind */
	uint16_t depth; /* frame ids that follow (uint32 each) */
};
_Static_assert(sizeof(struct wire_stack) == 16, "wire_stack layout");

#define WIRE_STACK_MAX_DEPTH 128
#define WIRE_FRAME_SEPARATOR '\x1f' /* between function and module in a frame id's text */

struct wire_counter {
	uint64_t time_ns; /* when read, CLOCK_MONOTONIC */
	uint64_t value;   /* cumulative since the thread (or counting) started */
	uint32_t tid;
	uint32_t event_id; /* interned event name ("task-clock", "cycles", ...) */
};
_Static_assert(sizeof(struct wire_counter) == 24, "wire_counter layout");

/*
 * ---- GPU hardware metrics ----
 * One sampler per physical GPU (by UUID) across the processes of a user: the process that holds
 * the GPU's lock samples it for everyone. A sample is the metric's value over [start_ns, end_ns);
 * metric_id names the metric (a PM-sampling metric such as "sm__cycles_active.avg", or NVML's
 * "nvml:gpm_sm_util" and "nvml:gpu_util" when PM sampling is refused), its unit follows from the
 * name (".pct..." and NVML's are percent, "...bytes..." bytes over the interval).
 */
enum wire_gpu_metric_source {
	WIRE_GPU_METRIC_PM = 1,   /* CUPTI PM sampling */
	WIRE_GPU_METRIC_GPM = 2,  /* NVML GPM (Hopper and later) */
	WIRE_GPU_METRIC_NVML = 3, /* plain NVML utilisation */
	WIRE_GPU_METRIC_SOURCE_MAX
};

struct wire_gpu_metric {
	uint64_t start_ns;  /* CLOCK_MONOTONIC */
	uint64_t end_ns;    /* CLOCK_MONOTONIC, >= start_ns */
	double value;       /* over the interval, in the metric's unit */
	uint8_t uuid[16];   /* the physical GPU */
	uint32_t metric_id; /* interned metric name */
	uint16_t device;    /* CUDA ordinal in the sampling process */
	uint16_t source;    /* enum wire_gpu_metric_source */
};
_Static_assert(sizeof(struct wire_gpu_metric) == 48, "wire_gpu_metric layout");

/*
 * ---- The collector's own cost ----
 * Cumulative per source since the process started (newest wins), sent about once a second and
 * with the final counts. own_cpu_ns is CPU time of the collector's own threads spent for the
 * source; added_ns estimates what the source added to the program's threads (sampled
 * self-timing of the code that runs there: NVTX calls, sample handlers, blocking-call
 * wrappers); CUPTI's time inside the driver is in neither (say so where it is shown).
 */
enum wire_cost_source {
	WIRE_COST_SENDER = 1,      /* the sender thread: draining, encoding, sending, thread scans */
	WIRE_COST_GPU = 2,         /* CUPTI buffers: flush thread and decoding on ours */
	WIRE_COST_NVTX = 3,        /* NVTX calls on the program's threads */
	WIRE_COST_SAMPLING = 4,    /* CPU stack samples: signal delivery and unwinding */
	WIRE_COST_OSRT = 5,        /* blocking-call wrappers */
	WIRE_COST_COUNTERS = 6,    /* counter reads */
	WIRE_COST_GPU_METRICS = 7, /* GPU hardware metrics: PM sampling decode and evaluation, NVML reads */
	WIRE_COST_SOURCE_MAX
};

#define WIRE_COST_REDUCED 1u /* the overhead budget holds this source below what was asked */

struct wire_cost {
	uint64_t time_ns;    /* CLOCK_MONOTONIC of this reading */
	uint64_t own_cpu_ns; /* cumulative */
	uint64_t added_ns;   /* cumulative estimate */
	uint64_t events;     /* cumulative events (records, samples, calls timed) */
	uint32_t source;     /* enum wire_cost_source */
	uint32_t backoffs;   /* times the budget lowered this source so far */
	uint32_t level;      /* current setting: samples/s, blocking threshold in us, counter period
	                      * in ms; 0 = off */
	uint32_t flags;      /* WIRE_COST_* */
};
_Static_assert(sizeof(struct wire_cost) == 48, "wire_cost layout");

/* Stable machine-readable name of a cost source ("sampling", ...), or NULL. */
const char *wire_cost_source_name(uint32_t source);

/* Stable machine-readable name of a loss cause ("ring_full", ...), or NULL. */
const char *wire_loss_cause_name(uint32_t cause);
/* Name of a frame type for messages, never NULL. */
const char *wire_frame_type_name(uint32_t type);

/*
 * Checks that a HELLO payload is well formed and of our version; on failure returns -EPROTO (or
 * -EINVAL) and sets *cause to a static one-line explanation.
 */
int wire_hello_check(const void *payload, uint32_t length, const char **cause);
/* Checks a frame's payload length against its type (-EINVAL with *cause on failure). */
int wire_frame_check(uint32_t type, const void *payload, uint32_t length, const char **cause);
/* Bytes a frame may grow by in wire_frame_upgrade. */
#define WIRE_UPGRADE_GROWTH 16u
/*
 * Rewrites a frame that a peer of an older protocol version wrote (a capture file keeps the
 * version of its frames) in today's layout, into out (room for length + WIRE_UPGRADE_GROWTH bytes):
 * 1 when out holds the frame (*out_length bytes), 0 when the frame is the same today (use it as
 * is), -EPROTO with *cause for a version never spoken or a frame that does not fit its old layout.
 */
int wire_frame_upgrade(uint32_t version, uint32_t type, const void *payload, uint32_t length, void *out,
                       uint32_t *out_length, const char **cause);

/*
 * Incremental frame decoder for a byte stream (socket or file). Owned by the viewer side; uses
 * malloc. Feed bytes with wire_decoder_push, then take whole frames with wire_decoder_next.
 */
struct wire_decoder {
	uint8_t *buf;
	size_t len; /* bytes held */
	size_t off; /* bytes already consumed */
	size_t cap;
};

void wire_decoder_init(struct wire_decoder *dec);
void wire_decoder_fini(struct wire_decoder *dec);
/* Appends bytes; returns 0 or -ENOMEM. */
int wire_decoder_push(struct wire_decoder *dec, const void *data, size_t len);
/*
 * Returns 1 and sets type/payload/length for the next complete frame (valid until the next
 * push), 0 when more bytes are needed, or -EPROTO with *cause on a malformed stream.
 */
int wire_decoder_next(struct wire_decoder *dec, uint32_t *type, const void **payload, uint32_t *length,
                      const char **cause);

#endif
