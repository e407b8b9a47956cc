/*
 * What the sampler's parts share (private to them): sampler.c (the signal, its handler, start and
 * stop, cost) and sampler_unwind.c (the fault guard, our libunwind address space).
 */
#ifndef CUSCOPE_COLLECTOR_SAMPLER_IMPL_H
#define CUSCOPE_COLLECTOR_SAMPLER_IMPL_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

/* ---- sampler.c ---- */
/* libc's sigaction, never the interposed one; -1 (ENOSYS) until it is found. Async-signal-safe. */
int sampler_real_sigaction(int sig, const struct sigaction *act, struct sigaction *old);

/* ---- sampler_unwind.c ---- */
/* Creates our address space (once, outside any signal handler); 0 or -1. */
int sampler_unwind_init(void);
/* Signal handler: unwinds a context into pcs (leaf first); a fault ends the walk early. */
size_t sampler_unwind(void *context, uint64_t *pcs, size_t max);

#endif
