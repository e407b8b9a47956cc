/*
 * The sender's state, shared by its parts (sender.c, frames.c, threads.c, drain.c, viewer.c) through
 * a pointer they are passed: one struct sender, owned by sender.c, used by the sender thread only
 * (and by an exiting thread that took the sender's place, see sender_exit_early).
 */
#ifndef CUSCOPE_COLLECTOR_SENDER_IMPL_H
#define CUSCOPE_COLLECTOR_SENDER_IMPL_H

#include "collector.h"
#include "cuscope/strtab.h"
#include "cuscope/wire.h"
#include "sendq.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define GPU_EVENTS_PER_FRAME 512
#define MAX_GPU_DEVICES      64
#define MAX_GPU_CONTEXTS     256
#define EVENTS_PER_FRAME     2048

struct known_thread {
	pid_t tid;
	char comm[32];      /* kernel thread name */
	char nvtx_name[64]; /* name given through nvtxNameOsThread, wins over comm */
	uint64_t first_ns;
	int seen;    /* found in the latest scan */
	int exited;  /* its exit was reported by the thread itself; forget it once /proc does */
	int sampled; /* the sampler and counters know this thread */
};

struct sender {
	pthread_t thread;
	int started;
	pid_t tid;
	int listen_fd;
	int viewer_fd;
	int ever_connected;
	unsigned listen_failures; /* re-creations of a lost listening socket that failed */
	uint64_t listen_retry_ns; /* next attempt to re-create it */
	_Atomic int stop;
	char socket_path[4096 + 32]; /* a session path may exceed sun_path: bound through a dir fd */

	struct strtab strings;
	uint32_t generation;

	struct sendq q;

	struct wire_event events[EVENTS_PER_FRAME];
	size_t event_count;
	struct wire_gpu_event gpu_events[GPU_EVENTS_PER_FRAME];
	size_t gpu_event_count;
	uint8_t stacks[64 * 1024]; /* pending STACKS frame payload */
	size_t stacks_len;
	uint64_t stacks_count;
	/* Kept for viewers that connect later: they need these to label GPU lanes. */
	struct wire_gpu_device devices[MAX_GPU_DEVICES];
	size_t device_count;
	struct wire_gpu_event contexts[MAX_GPU_CONTEXTS];
	size_t context_count;
	unsigned notices_sent; /* notices already queued for the current viewer */

	struct known_thread *threads;
	size_t thread_count, thread_cap;

	uint64_t lost[WIRE_LOSS_CAUSE_MAX];
	uint64_t ring_drops_freed; /* drops of rings already freed */
	uint64_t last_loss_total;
	uint64_t last_scan_ns, last_loss_ns, last_cost_ns;
	uint64_t start_mono_ns;
	int tracking; /* the sampler and counters follow the threads scans find */
};

#endif
