/*
 * The sender's thread table (private to the sender): threads found in /proc/self/task or named by
 * their own records, renames followed, ends reported, event sources told of each.
 */
#ifndef CUSCOPE_COLLECTOR_THREADS_H
#define CUSCOPE_COLLECTOR_THREADS_H

#include "sender_impl.h"

struct known_thread *threads_add(struct sender *s, pid_t tid, uint64_t now);
const char *threads_display_name(const struct known_thread *t);
void threads_emit_name(struct sender *s, const struct known_thread *t);
void threads_scan(struct sender *s, uint64_t now);
void threads_record_name(struct sender *s, const struct ring_record *rec);
void threads_record_exit(struct sender *s, pid_t tid);

#endif
