/*
 * Lane groups of a job's processes: which process is a launcher (no rank of its own, ranked
 * processes under it) and how many ranks it started, the label of a rank's group (a restarted
 * worker is a group of its own), and which kernels are communication (NCCL). Pure: shared by the
 * timeline layout, the ranks pane, `stats` and the UI's colours.
 */
#ifndef CUSCOPE_RANKGROUP_H
#define CUSCOPE_RANKGROUP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* What the rules look at of a process. */
struct rankgroup_proc {
	uint32_t capture; /* pids are only compared within one capture */
	pid_t pid, ppid;
	int32_t rank;     /* -1 when unknown */
	const char *host; /* and one host (a live view of several: attach --ssh); NULL = "" */
};

/*
 * For each process, the number of distinct ranks among the processes under it (children, their
 * children, ...) when it has no rank itself, else 0: out[i] > 0 marks a launcher (torchrun's agent,
 * srun's step, mpirun, a shell starting ranks). A parent is the first process of the same capture
 * (and host) with that pid; walks are bounded by n, so a cycle of reused pids cannot loop.
 */
void rankgroup_launchers(const struct rankgroup_proc *procs, size_t n, size_t *out);

/* Processes by (capture, host, pid), to find a parent: sort the keys once, then look up. Hosts of one
 * capture reuse each other's pids (containers), so a parent is looked for on the child's host. */
struct rankgroup_key {
	uint32_t capture;
	pid_t pid;
	size_t index;     /* the caller's index of the process */
	const char *host; /* NULL = "" (the caller keeps it alive while the keys are used) */
};
void rankgroup_keys_sort(struct rankgroup_key *keys, size_t n);
/* The index of the process pid of a capture and host (its first one when the pid was reused), or
 * SIZE_MAX. */
size_t rankgroup_keys_find(const struct rankgroup_key *keys, size_t n, uint32_t capture, const char *host,
                           pid_t pid);
/* The restart a process belongs to: TORCHELASTIC_RESTART_COUNT, unknown (-1) counted as 0. */
int32_t rankgroup_restart(int32_t restart_count);
/*
 * The label of a process's group: "rank N", "rank N (restart K)" for a restarted worker,
 * "launcher: N ranks" for a launcher (launcher_ranks > 0), "" otherwise.
 */
void rankgroup_label(int32_t rank, int32_t restart_count, size_t launcher_ranks, char *buf, size_t size);
/* Whether a kernel (its short or full name) is NCCL's, i.e. communication: "nccl...", "oneRankReduce<...>" */
int rankgroup_is_nccl_kernel(const char *name);

#endif
