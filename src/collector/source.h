/*
 * The collector's event sources as one table (private to the collector): the sender and the
 * injector call every source through it at the same few points (start-up, thread found or gone,
 * drain, poll, exit, detach, fork) instead of naming each one. Adding a source is one table entry.
 */
#ifndef CUSCOPE_COLLECTOR_SOURCE_H
#define CUSCOPE_COLLECTOR_SOURCE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct collector_config;
struct wire_cost;

/* One event source; every hook may be NULL. */
struct source {
	const char *name;
	uint32_t cost_id; /* enum wire_cost_source */
	/* At start-up, on the thread that starts the collector: claims what must be claimed before
	 * the program can take it (a signal) and reads the source's settings. */
	int (*init)(const struct collector_config *config);
	/* Sender thread, once the lazy start is over, before the first thread scan. */
	void (*begin)(void);
	/* Sender thread, attach mode (the program ran before the collector came): starts what the
	 * program's first call would have started (GPU tracing of a CUDA program). */
	void (*start_late)(void);
	/* Sender thread: a thread found in / gone from /proc/self/task. */
	void (*thread_added)(pid_t tid);
	void (*thread_removed)(pid_t tid);
	/* 1 while the source runs (NULL: always): the sender's hooks are timed only then. */
	int (*running)(void);
	/* Sender thread: decodes what the source buffered outside the rings; returns records. */
	size_t (*drain)(void);
	/* Sender thread, every pass (the source keeps its own period); now_ns = 0: final, at once. */
	void (*poll)(uint64_t now_ns);
	/* Sender thread, final flush, before the last thread scan and poll(0): stops producing. */
	void (*stop)(void);
	/* The exiting application thread, before the sender's final drain (hands over what the
	 * source still holds). */
	void (*exit)(void);
	/* Sender thread, answering a viewer's detach request: hands what the source holds outside the
	 * rings to the sender now; ending = 1 when the collector stops after the answer (attach
	 * mode), so the source may stop for good. */
	void (*flush)(int ending);
	/* The exiting application thread in _exit, where nothing may block, flush or lock: says in
	 * a notice what the source loses. */
	void (*quick_exit)(void);
	/* Sender thread, attach mode with the viewer gone: lets go of everything it holds. */
	void (*detach)(void);
	/* Application thread, before an exec replaces the process image: makes the image safe to
	 * replace; returns 1 when after_exec must undo that if the exec fails. */
	int (*before_exec)(void);
	/* Application thread, after an exec that failed (before_exec returned 1). */
	void (*after_exec)(void);
	/* Forked child: forgets the parent's state (its threads do not exist here). */
	void (*after_fork)(void);
	/* Records of the given wire loss cause the source lost itself. */
	uint64_t (*lost)(uint32_t cause);

	/* ---- cost and the overhead budget ---- */
	/* Sender thread: the source's cumulative added_ns and events, and its level now (what the
	 * table does not measure itself: own_cpu_ns is the sender-side time of the hooks above). */
	void (*cost)(struct wire_cost *cost);
	/* 1..3: the order in which the overhead budget lowers the source; 0: never (GPU activity,
	 * launch records, NVTX). */
	int budget_rank;
	/* The level the source runs at `step` steps below what the user asked (step 0); 0 = off
	 * (also for every step beyond the last). */
	uint32_t (*level_at)(unsigned step);
	/* Sender thread: runs the source at a level given by level_at. */
	void (*apply)(uint32_t level);
	const char *what; /* for notices: "CPU sampling" */
	const char *unit; /* of the level: "samples/s" */
};

/* Start-up (collector_start): every source's init; the first failure's code, or 0. */
int source_each_init(const struct collector_config *config);
void source_each_begin(void);
void source_each_start_late(void);
void source_each_thread_added(pid_t tid);
void source_each_thread_removed(pid_t tid);
size_t source_each_drain(void);
void source_each_poll(uint64_t now_ns);
void source_each_stop(void);
void source_each_exit(void);
void source_each_flush(int ending);
void source_each_quick_exit(void);
void source_each_detach(void);
/* Around an exec (application thread): a mask of the sources that must hear of a failed exec,
 * for source_each_after_exec. */
unsigned source_each_before_exec(void);
void source_each_after_exec(unsigned held);
/* 1 when a running source holds records outside the rings (a drain hook): only the sender's
 * whole drain hands them over. */
int source_any_buffering(void);
void source_each_after_fork(void);
uint64_t source_each_lost(uint32_t cause);

/*
 * The overhead budget (sender thread): every window it estimates what sampling, blocking-call
 * wrappers and counters add to the program's threads, as a share of their own CPU time, and
 * steps one source down or up (one notice each). Called from the sender's periodic work.
 */
void source_budget_poll(uint64_t now_ns);
/* Fills out[] with one cost entry per active source (at most WIRE_COST_SOURCE_MAX); returns the
 * count. Sender thread. */
size_t source_cost_build(struct wire_cost *out, uint64_t now_ns);
/* Sender thread: records the sender drained (its own cost entry's events) and NVTX events
 * (the NVTX entry's events, priced at a per-call cost calibrated once on the sender). */
void source_count_sender(uint64_t records);
void source_count_nvtx(uint64_t events);
/* Forked child, or a detach (a later attach starts over): costs, steps and the budget window
 * start again. */
void source_cost_reset(void);

/* ---- What each source offers the table for cost and budget (defined in the source's file) ---- */
/* Sampling: samples/s now (0 = paused), the rate asked, and cost (handlers' self-timing plus
 * the measured signal delivery per signal). sampler_set_rate(0) disarms every timer. */
void sampler_set_rate(unsigned hz);
unsigned sampler_rate(void);
unsigned sampler_requested_rate(void);
void sampler_cost(struct wire_cost *cost);
/* What one sample is assumed to cost before any is measured (ns). */
uint64_t sampler_prior_cost_ns(void);
/* Blocking-call wrappers: threshold (ns) and on/off now; cost from 1-in-N self-timed calls. */
void osrt_set_threshold(uint64_t threshold_ns, int enabled);
void osrt_cost(struct wire_cost *cost);
/* Counters: read period (ns; 0 = off: no reads, perf events disabled); cost. */
void counters_set_period(uint64_t period_ns);
int counters_active(void);
void counters_cost(struct wire_cost *cost);
/* GPU hardware metrics (pmsample.c): the source's hooks. */
int pmsample_init(const struct collector_config *config);
void pmsample_poll(uint64_t now_ns);
void pmsample_stop(void);
void pmsample_detach(void);
void pmsample_after_fork(void);
int pmsample_running(void);
void pmsample_cost(struct wire_cost *cost);
/* CPU time of its start thread (looking at the GPUs, building the configs), ns. */
uint64_t pmsample_start_cpu_ns(void);
/* GPU: CPU time of the CUPTI flush thread so far (ns). */
uint64_t cupti_flush_cpu_ns(void);

#endif
