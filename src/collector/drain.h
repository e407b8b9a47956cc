/*
 * Draining the rings (private to the sender): every thread's records converted to wire events in
 * MONOTONIC ns, paced while a viewer is behind; rings of ended threads freed once empty.
 */
#ifndef CUSCOPE_COLLECTOR_DRAIN_H
#define CUSCOPE_COLLECTOR_DRAIN_H

#include "sender_impl.h"

int drain_viewer_behind(struct sender *s);
size_t drain_rings_paced(struct sender *s, int paced);
size_t drain_rings(struct sender *s);
int drain_rings_pending(void);
int drain_period_ms(size_t drained);

#endif
