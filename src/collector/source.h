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

/* One event source; every hook may be NULL. */
struct source {
	const char *name;
	uint32_t cost_id; /* enum wire_cost_source */
	/* At start-up, on the thread that starts the collector: claims what must be claimed before
	 * the program can take it (a signal) and reads the source's settings. */
	int (*init)(const struct collector_config *config);
	/* Sender thread, once the lazy start is over, before the first thread scan. */
	void (*begin)(void);
	/* Sender thread: a thread found in / gone from /proc/self/task. */
	void (*thread_added)(pid_t tid);
	void (*thread_removed)(pid_t tid);
	/* Sender thread: decodes what the source buffered outside the rings; returns records. */
	size_t (*drain)(void);
	/* Sender thread, every pass (the source keeps its own period); now_ns = 0: final, at once. */
	void (*poll)(uint64_t now_ns);
	/* Sender thread, final flush, before the last thread scan and poll(0): stops producing. */
	void (*stop)(void);
	/* The exiting application thread, before the sender's final drain (hands over what the
	 * source still holds). */
	void (*exit)(void);
	/* Sender thread, attach mode with the viewer gone: lets go of everything it holds. */
	void (*detach)(void);
	/* Forked child: forgets the parent's state (its threads do not exist here). */
	void (*after_fork)(void);
	/* Records of the given wire loss cause the source lost itself. */
	uint64_t (*lost)(uint32_t cause);
};

/* Start-up (collector_start): every source's init; the first failure's code, or 0. */
int source_each_init(const struct collector_config *config);
void source_each_begin(void);
void source_each_thread_added(pid_t tid);
void source_each_thread_removed(pid_t tid);
size_t source_each_drain(void);
void source_each_poll(uint64_t now_ns);
void source_each_stop(void);
void source_each_exit(void);
void source_each_detach(void);
void source_each_after_fork(void);
uint64_t source_each_lost(uint32_t cause);

#endif
