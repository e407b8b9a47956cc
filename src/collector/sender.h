/*
 * The sender thread's life (private to the collector): started by the injector at each start,
 * stopped at exit (bounded), woken early by the first event, moved by an attach, forgotten in a
 * forked child. Its services for event sources (strings, GPU records, counters) are in collector.h.
 */
#ifndef CUSCOPE_COLLECTOR_SENDER_H
#define CUSCOPE_COLLECTOR_SENDER_H

#include <stdint.h>

/* Starts the sender thread and listening socket; 0 or -errno. */
int sender_start(void);
/* Final drain, BYE, flush to a viewer (waiting for a first one if configured); bounded time. */
void sender_stop(void);
/* The same from _exit (a signal handler, a dying shell): waits at most max_ns for the sender to
 * finish, without a join or lock; what the viewer has not taken by half of it goes to PID.final. */
void sender_stop_within(uint64_t max_ns);
/* At exit, before sender_stop: a process that ends while the sender still waits lazily and made
 * no event writes its final record (to PID.final) on the calling thread: no socket, no thread
 * scan, no join. Returns 1 if it did (sender_stop must not follow). */
int sender_exit_early(void);
/* The process made its first event (a ring, GPU tracing): a lazy sender starts now. Signal-safe. */
void sender_first_event(void);
/* Attach to a running collector whose socket the viewer could not find: the sender re-listens in
 * dir (any thread; it happens on the sender within a period). 0, or -EBUSY while a viewer is
 * connected, -ENAMETOOLONG. */
int sender_move_session(const char *dir);
/* In a forked child: forget the parent's sender state (its threads do not exist here). */
void sender_forget_after_fork(void);

#endif
