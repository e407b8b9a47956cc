/*
 * What the sampler's parts share (private to them): sampler.c (the signal, its handler, start and
 * stop, cost), sampler_unwind.c (the fault guard, our libunwind address space) and
 * sampler_interpose.c (exec, the program's sigaction family and signal waits).
 */
#ifndef CUSCOPE_COLLECTOR_SAMPLER_IMPL_H
#define CUSCOPE_COLLECTOR_SAMPLER_IMPL_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

/* ---- sampler.c ---- */
/* libc's sigaction, never the interposed one; -1 (ENOSYS) until it is found. Async-signal-safe. */
int sampler_real_sigaction(int sig, const struct sigaction *act, struct sigaction *old);
/* Finds libc's sigaction if not yet found (dlsym: never from a signal handler). */
void sampler_sigaction_resolve(void);
/* 1 if this signal was sent by one of our timers or perf events (not by the program). */
int sampler_signal_is_ours(const siginfo_t *info);
/* 1 if our handler holds sig: one of ours may be pending there (not for the handler itself). */
int sampler_holds(int sig);
/* The program's sigaction on a signal we hold: its wish is recorded, our handler stays. 0. */
int sampler_program_sigaction(int sig, const struct sigaction *act, struct sigaction *old);
/* A signal of ours taken by the program's sigwait family: a sample not taken. */
void sampler_drop_pending(const siginfo_t *info);
/* 1 if the timers and perf fds are this process's (not the one a vfork child shares memory with). */
int sampler_threads_ours(void);
/* An application thread about to exec: disarms everything until sampler_threads_exec_rearm. */
void sampler_threads_exec_disarm(void);
/* The exec failed: once no other is under way, every thread that may be is armed again. */
void sampler_threads_exec_rearm(void);

/* ---- sampler_unwind.c ---- */
/* Creates our address space (once, outside any signal handler); 0 or -1. */
int sampler_unwind_init(void);
/* Signal handler: unwinds a context into pcs (leaf first); a fault ends the walk early. */
size_t sampler_unwind(void *context, uint64_t *pcs, size_t max);

#endif
