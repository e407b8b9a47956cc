/*
 * What the sampler's parts share (private to them): sampler.c (the signal, its handler, start and
 * stop, cost), sampler_threads.c (each thread's timer or perf event), sampler_unwind.c (the fault
 * guard, our libunwind address space) and sampler_interpose.c (exec, the program's sigaction
 * family and signal waits). The signal handler reads the state it shares with them without a
 * call or a lock: the few atomics declared here.
 */
#ifndef CUSCOPE_COLLECTOR_SAMPLER_IMPL_H
#define CUSCOPE_COLLECTOR_SAMPLER_IMPL_H

#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* Perf fds the handler may re-arm are those below this number (a larger one is not used). */
#define SAMPLER_FD_MAX 65536

/* ---- sampler.c ---- */
/* The signal our timers and perf events send now (set at start, and by sampler_retarget). */
extern _Atomic int sampler_signal;
/* Its address is the cookie our timers carry in si_value. */
extern const char sampler_cookie;
/* Tells the handler that fd (below SAMPLER_FD_MAX) is our perf event with that id (0: not ours). */
void sampler_perf_fd_publish(int fd, uint64_t id);
/*
 * Before we close our perf fd of thread owner, or when the program took its number: its signals
 * still pending in that thread (a sample queued as it was disarmed) keep being recognised as ours,
 * there only, and dropped, instead of reaching the program's default action for the signal, which
 * ends the process. The mark stays until the number is published again; the handler never re-arms
 * a retired fd.
 */
void sampler_perf_fd_retire(int fd, pid_t owner);
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

/* ---- sampler_threads.c ---- */
/* Sampling runs (sampler_begin to sampler_stop); read by the handler. */
extern _Atomic int sampler_on;
/* Execs under way (changed under the threads' lock): while non-zero nothing is armed, and the
 * handler does not re-arm a perf event. */
extern _Atomic int sampler_exec_pending;
/* sampler_init: perf events or CPU-time timers, and the process the sampler's timers belong to. */
void sampler_threads_init(int perf);
/* sampler_begin: sampling runs at period_ns; threads found from now on are armed. */
void sampler_threads_begin(long period_ns);
/* The rate set now in samples per thread CPU-second (also once stopped); 0 while paused. */
unsigned sampler_threads_level(void);
/* Sender, each poll: perf fds the program took over are opened again, and threads arm or disarm
 * as their masks start or stop blocking the signal. */
void sampler_threads_check(void);
/* Sends every sampled thread's signals to sig instead. */
void sampler_retarget(int sig);
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
