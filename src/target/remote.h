/*
 * Calling a function inside another process with ptrace (x86-64): stop one thread, point it at
 * the function with arguments in registers and a zero return address, let it run until the
 * return faults, take the result, and put every register and byte back exactly as it was.
 */
#ifndef CUSCOPE_REMOTE_H
#define CUSCOPE_REMOTE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* One mapping of a file in the target, as its maps line names it. */
struct remote_mapping {
	uint64_t start, end;           /* the mapping's addresses */
	unsigned dev_major, dev_minor; /* the mapped file's device and inode */
	uint64_t inode;
};

struct remote_module {
	char path[4096];           /* as the target's maps file names it (for messages only: never opened) */
	struct remote_mapping map; /* its executable mapping: how its file is reached */
	uint64_t bias;             /* load bias: absolute address = bias + st_value */
};

/*
 * Opens the file behind a mapping of pid: the very file mapped, through /proc/PID/map_files
 * (root), else through /proc/PID/root and the path, only when that names the same device and
 * inode; a regular file, never waiting (O_NONBLOCK), never a controlling terminal. fd or -errno.
 */
int remote_open_mapping(pid_t pid, const struct remote_mapping *m, const char *path);
/*
 * Finds a mapped module whose file name starts with prefix, read through remote_open_mapping
 * (a path the target names is never opened as such); 0, -ENOENT or -errno.
 */
int remote_find_module(pid_t pid, const char *prefix, struct remote_module *out);
/* Absolute address of a dynamic symbol of a module mapped in pid; 0 or -errno. */
int remote_symbol(pid_t pid, const char *module_prefix, const char *symbol, uint64_t *address);
/* Picks the thread to borrow: one asleep in a system call (holding no user-space locks) if any. */
pid_t remote_pick_thread(pid_t pid);

/*
 * Whether a remote_call has a thread running with our registers right now (async-signal-safe):
 * a deadline that would end this process waits until it returns (remote_call bounds that).
 */
int remote_busy(void);

#define REMOTE_ARG_DATA UINT64_MAX /* replaced by the address of the copied data */

/*
 * Calls func(a1, a2) in thread tid of pid; data (may be NULL) is copied onto that thread's stack
 * first. Returns 0 and the function's return value in *ret, or -errno with a one-line message in
 * err (-ESRCH: the process exited; -ETIMEDOUT: the call did not return in time).
 */
int remote_call(pid_t pid, pid_t tid, uint64_t func, uint64_t a1, uint64_t a2, const void *data,
                size_t data_len, uint64_t *ret, int timeout_ms, char *err, size_t err_size);

#endif
