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

enum layout_row_kind {
	LAYOUT_ROW_PROCESS = 1,    /* "cmdline-basename pid" header of a lane group */
	LAYOUT_ROW_THREAD = 2,     /* "name tid": marks and thread lifetime */
	LAYOUT_ROW_NVTX = 3,       /* push/pop ranges at one nesting depth of a thread */
	LAYOUT_ROW_ASYNC = 4,      /* one packed row of the process's start/end ranges */
	LAYOUT_ROW_CUDA_API = 5,   /* one gpu row of a thread: CUDA API calls and host syncs */
	LAYOUT_ROW_GPU_DEVICE = 6, /* "GPU0 H200" header over a device's stream rows */
	LAYOUT_ROW_GPU_STREAM = 7, /* one gpu row of a stream lane: kernels, copies, memsets */
	LAYOUT_ROW_OSRT = 8,       /* one osrt row of a thread: blocking calls (read, nanosleep, ...) */
	LAYOUT_ROW_GC = 9,         /* one gc row of a thread: Python garbage collections */
	LAYOUT_ROW_COST = 10,      /* the collector's own cost: row 0 added time %, row 1 its CPU */
};

struct layout_row {
	enum layout_row_kind kind;
	size_t process; /* store process index */
	size_t lane;    /* store lane index (unused for PROCESS) */
	size_t row;     /* store row within the lane (NVTX, ASYNC) */
	pid_t pid;
	pid_t tid;       /* THREAD and NVTX rows */
	uint32_t device; /* GPU_DEVICE and GPU_STREAM rows: CUDA device ordinal */
	int folded;      /* PROCESS, THREAD, GPU_DEVICE: the group's rows are hidden */
};

/* A folded group: a process (tid 0), a thread (tid) or a GPU device of a process (is_device). */
struct layout_fold {
	pid_t pid, tid;
	uint32_t device;
	int is_device;
};

struct layout {
	struct layout_row *rows;
	size_t count;
	size_t cap;
	size_t top;      /* first row on screen */
	size_t selected; /* highlighted row, < count when count > 0 */
	struct layout_fold *folds;
	size_t fold_count, fold_cap;
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
/* Whether a row belongs to a thread lane (thread, NVTX, CUDA API, blocking-call and GC rows). */
int layout_is_thread_row(const struct layout_row *row);
/* Appends a GPU device header. */
void layout_add_gpu_device(struct layout *layout, size_t process, pid_t pid, uint32_t device);
/* Appends the rows of a GPU stream lane. */
void layout_add_gpu_stream(struct layout *layout, size_t process, size_t lane, pid_t pid, uint32_t device,
                           size_t rows);
/*
 * Rebuilds the rows from the store: per process a header, its cost rows (when its collector reports
 * its cost), its threads in order of appearance with
 * their NVTX rows, CUDA API rows, blocking-call rows and GC rows, then its async rows, then per GPU device
 * (by ordinal) a header and its stream lanes (default stream first, then by stream id). The selection follows
 * the same row across rebuilds.
 */
void layout_build(struct layout *layout, const struct store *store);
/* Moves the selection by delta rows (clamped) and scrolls so that it stays among height rows. */
void layout_select(struct layout *layout, long delta, size_t height);
/* Clamps top and selected after a rebuild or a resize, keeping the selection visible. */
void layout_clamp(struct layout *layout, size_t height);
/* Whether a row heads a group that can fold (process, thread, GPU device). */
int layout_is_group(const struct layout_row *row);
/* Folds or unfolds the group headed by row index; 0, or -EINVAL when it heads none. Rebuild after. */
int layout_toggle_fold(struct layout *layout, size_t index);
/* Unfolds whatever hides rows of process pid (its header and, if tid, that thread). */
void layout_reveal(struct layout *layout, pid_t pid, pid_t tid, int device_row, uint32_t device);
/* Index of the row with the same identity as key, or count if gone. */
size_t layout_find(const struct layout *layout, const struct layout_row *key);

#endif
