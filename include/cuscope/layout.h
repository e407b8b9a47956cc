/*
 * The list of timeline rows (process headers, thread rows, NVTX nesting rows, CUDA API rows,
 * blocking-call and GC rows, async rows, GPU device headers and stream rows) built from
 * the store, plus the scroll offset and the selected row. Pure geometry: no curses.
 */
#ifndef CUSCOPE_LAYOUT_H
#define CUSCOPE_LAYOUT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct store;
struct store_lane_info;
struct store_lane_cpu_info;

enum layout_row_kind {
	LAYOUT_ROW_PROCESS = 1,     /* "cmdline-basename pid" header of a lane group */
	LAYOUT_ROW_THREAD = 2,      /* "name tid": marks and thread lifetime */
	LAYOUT_ROW_NVTX = 3,        /* push/pop ranges at one nesting depth of a thread */
	LAYOUT_ROW_ASYNC = 4,       /* one packed row of the process's start/end ranges */
	LAYOUT_ROW_CUDA_API = 5,    /* one gpu row of a thread: CUDA API calls and host syncs */
	LAYOUT_ROW_GPU_DEVICE = 6,  /* "GPU0 H200" header over a device's stream rows */
	LAYOUT_ROW_GPU_STREAM = 7,  /* one gpu row of a stream lane: kernels, copies, memsets */
	LAYOUT_ROW_OSRT = 8,        /* one osrt row of a thread: blocking calls (read, nanosleep, ...) */
	LAYOUT_ROW_GC = 9,          /* one gc row of a thread: Python garbage collections */
	LAYOUT_ROW_COST = 10,       /* the collector's own cost: row 0 added time %, row 1 its CPU */
	LAYOUT_ROW_IDLE = 11,       /* "15 idle threads": a process's threads that produced nothing yet */
	LAYOUT_ROW_STEPS = 12,      /* "step (inferred)": steps found in its kernel stream (steps.h) */
	LAYOUT_ROW_GPU_METRIC = 13, /* a GPU hardware metric's counter lane under its device: row = series */
};

/* Idle threads fold into one row from this many on (a single one shows as itself: same rows). */
#define LAYOUT_IDLE_FOLD_MIN 2

struct layout_row {
	enum layout_row_kind kind;
	size_t process; /* store process index */
	size_t lane;    /* store lane index (unused for PROCESS) */
	size_t row;     /* store row within the lane (NVTX, ASYNC) */
	pid_t pid;
	pid_t tid;       /* THREAD and NVTX rows */
	uint32_t device; /* GPU_DEVICE and GPU_STREAM rows: CUDA device ordinal */
	int folded;      /* PROCESS, THREAD, GPU_DEVICE, IDLE: the group's rows are hidden */
	size_t count;    /* IDLE: threads in the group; PROCESS: ranks it launched (0: not a launcher) */
	int idle_member; /* THREAD: listed under its process's open idle row */
};

enum layout_fold_kind {
	LAYOUT_FOLD_PROCESS = 1,   /* a process's rows are hidden */
	LAYOUT_FOLD_THREAD = 2,    /* a thread's rows below its own are hidden */
	LAYOUT_FOLD_DEVICE = 3,    /* a GPU device's stream rows are hidden */
	LAYOUT_FOLD_IDLE_OPEN = 4, /* a process's idle threads are listed (folded by default) */
};

/* A group whose folding differs from its default, by identity (pid, tid, device). */
struct layout_fold {
	pid_t pid, tid;
	uint32_t device;
	enum layout_fold_kind kind;
};

/* What a rebuild takes from a lane of the store, kept so that a frozen layout cannot move. */
struct layout_lane {
	int kind; /* enum store_lane_kind */
	pid_t pid, tid;
	uint32_t device, stream; /* stream lanes */
	int is_default;          /* stream lanes */
	int active;              /* thread lanes: produced an event at some point (it stays so) */
	size_t rows, gpu_rows, osrt_rows, gc_rows;
};

/* A GPU metric series shown under a process's device header (its GPU by UUID). */
struct layout_metric {
	size_t process;
	uint32_t device;
	size_t series; /* store_gpu_metric_get index */
};

/* A process of the store as the last unfrozen rebuild saw it. */
struct layout_process {
	pid_t pid, ppid;
	uint32_t capture;
	char host[64];         /* its HELLO's (several hosts share one capture live: attach --ssh) */
	int32_t rank;          /* -1 when unknown */
	size_t launcher_ranks; /* ranks under it when it has none (rankgroup_launchers), else 0 */
	int fold_decided;      /* its default fold was applied, or the user chose: never applied again */
	int cost;              /* its collector reports its cost: cost rows */
	struct layout_lane *lanes;
	size_t lane_count, lane_cap;
};

struct layout {
	struct layout_row *rows;
	size_t count;
	size_t cap;
	size_t top;      /* first row on screen */
	size_t selected; /* highlighted row, < count when count > 0 */
	struct layout_fold *folds;
	size_t fold_count, fold_cap;
	struct layout_process *procs; /* what rows are built from */
	size_t proc_count, proc_cap;
	unsigned char *steps; /* by store process index: it has inferred steps (layout_set_steps) */
	size_t steps_cap;
	struct layout_metric *metrics; /* by process and device, in store order */
	size_t metric_count, metric_cap;
	int frozen;          /* rebuilds reuse procs: the view is paused */
	int launchers_stale; /* a process came or changed since launcher_ranks were worked out */
};

void layout_init(struct layout *layout);
void layout_fini(struct layout *layout);
/* Empties the row list, keeping scroll and selection for the rebuild. */
void layout_clear(struct layout *layout);
/* Appends a process header row. */
void layout_add_process(struct layout *layout, size_t process, pid_t pid);
/* Appends a thread row and its nvtx_rows nesting rows beneath. */
void layout_add_thread(struct layout *layout, size_t process, size_t lane, pid_t pid, pid_t tid,
                       size_t nvtx_rows);
/* Appends the async lane's rows (none if rows == 0). */
void layout_add_async(struct layout *layout, size_t process, size_t lane, pid_t pid, size_t rows);
/* Appends a thread's CUDA API rows (gpu rows 0..rows-1 of its lane). */
void layout_add_cuda_api(struct layout *layout, size_t process, size_t lane, pid_t pid, pid_t tid,
                         size_t rows);
/* Appends a thread's blocking-call rows (osrt rows 0..rows-1 of its lane). */
void layout_add_osrt(struct layout *layout, size_t process, size_t lane, pid_t pid, pid_t tid, size_t rows);
/* Appends a thread's Python GC rows (gc rows 0..rows-1 of its lane). */
void layout_add_gc(struct layout *layout, size_t process, size_t lane, pid_t pid, pid_t tid, size_t rows);
/* Appends a process's cost rows (estimated added time, collector CPU) under its header. */
void layout_add_cost(struct layout *layout, size_t process, pid_t pid);
/* Says whether process has inferred steps: a "step (inferred)" row under its header from the next rebuild. */
void layout_set_steps(struct layout *layout, size_t process, int on);
/* Whether a row belongs to a thread lane (thread, NVTX, CUDA API, blocking-call and GC rows). */
int layout_is_thread_row(const struct layout_row *row);
/* Appends a GPU device header. */
void layout_add_gpu_device(struct layout *layout, size_t process, pid_t pid, uint32_t device);
/* Appends a GPU metric's counter lane (series: store_gpu_metric_get index). */
void layout_add_gpu_metric(struct layout *layout, size_t process, pid_t pid, uint32_t device, size_t series);
/* Appends the rows of a GPU stream lane. */
void layout_add_gpu_stream(struct layout *layout, size_t process, size_t lane, pid_t pid, uint32_t device,
                           size_t rows);
/* Appends a process's "N idle threads" row (folded unless open). */
void layout_add_idle(struct layout *layout, size_t process, pid_t pid, size_t count, int open);
/* Whether a thread lane has produced nothing a row shows: no range, mark, API call, sample, call, GC. */
int layout_lane_idle(const struct store_lane_info *li, const struct store_lane_cpu_info *ci);
/*
 * Rebuilds the rows from the store: per process a header, its cost rows (when its collector reports
 * its cost), its inferred steps row (layout_set_steps), its threads in order of appearance with
 * their NVTX rows, CUDA API rows, blocking-call rows and GC rows, then its async rows, then the threads
 * that never produced an event folded into one "idle threads" row (when there are LAYOUT_IDLE_FOLD_MIN of
 * them; open, it lists them beneath), then per GPU device (by ordinal) a header, the counter lanes of
 * its GPU's hardware metrics (by UUID) and its stream lanes (default stream first, then by stream id). The
 * selection follows the same row across rebuilds. A launcher (a process without a rank with ranked processes
 * under it) starts folded: once, when it is first seen as one, and not if the user folded or unfolded it
 * before. Frozen, it rebuilds from what the store held at the freeze: only folding changes rows.
 */
void layout_build(struct layout *layout, const struct store *store);
/*
 * Freezes (on) or thaws the rows: while frozen (a paused view) no lane appears, grows a row or leaves
 * the idle fold, whatever the store receives; a thread's first event waits for the thaw.
 */
void layout_freeze(struct layout *layout, int on);
/* Moves the selection by delta rows (clamped) and scrolls so that it stays among height rows. */
void layout_select(struct layout *layout, long delta, size_t height);
/* Clamps top and selected after a rebuild or a resize, keeping the selection visible. */
void layout_clamp(struct layout *layout, size_t height);
/* Whether a row heads a group that can fold (process, thread, GPU device, idle threads). */
int layout_is_group(const struct layout_row *row);
/*
 * The header f folds from row index: the nearest group header at or above it, except that an idle thread
 * listed under the open idle row (it has no rows of its own to fold) gives that idle row. count if none.
 */
size_t layout_group_index(const struct layout *layout, size_t index);
/* Folds or unfolds the group headed by row index; 0, or -EINVAL when it heads none. Rebuild after. */
int layout_toggle_fold(struct layout *layout, size_t index);
/* Unfolds whatever hides rows of process pid (its header and, if tid, that thread or its idle fold). */
void layout_reveal(struct layout *layout, pid_t pid, pid_t tid, int device_row, uint32_t device);
/* Index of the row with the same identity as key, or count if gone. */
size_t layout_find(const struct layout *layout, const struct layout_row *key);

#endif
