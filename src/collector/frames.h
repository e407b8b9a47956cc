/*
 * The sender's frames (private to the sender): events, GPU records and stacks batched into frames
 * under the queue's bound, strings interned and announced, notices, losses and costs.
 */
#ifndef CUSCOPE_COLLECTOR_FRAMES_H
#define CUSCOPE_COLLECTOR_FRAMES_H

#include "sender_impl.h"

void frames_flush_events(struct sender *s);
void frames_flush_gpu(struct sender *s);
void frames_flush_stacks(struct sender *s);
void frames_push_stack(struct sender *s, uint16_t kind, uint64_t time_ns, uint32_t tid, const uint64_t *pcs,
                       size_t depth);
void frames_push_event(struct sender *s, const struct wire_event *ev);
uint32_t frames_intern(struct sender *s, const char *text, size_t len);
uint32_t frames_intern_ref(struct sender *s, const struct collector_string *ref);
void frames_queue_notices(struct sender *s);
void frames_collect_losses(struct sender *s);
uint64_t frames_loss_total(struct sender *s);
size_t frames_build_losses(struct sender *s, struct wire_loss *out);
void frames_queue_cost(struct sender *s, uint64_t now);
void frames_queue_losses(struct sender *s);

#endif
