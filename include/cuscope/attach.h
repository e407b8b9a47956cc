/*
 * Reaching a running process (`cuscope attach PID`): the checks that refuse it in one line, an
 * armed session found or the collector injected with ptrace, and a deadline on the whole
 * handshake so that nothing the target does keeps cuscope waiting.
 */
#ifndef CUSCOPE_ATTACH_H
#define CUSCOPE_ATTACH_H

#include <sys/types.h>

struct launch;
struct launch_options;

/*
 * Starts the handshake's deadline (past it: one line, nothing of ours left, exit 1) and refuses
 * a process that cannot be attached (a zombie, stopped, traced, another user's, another
 * container's). 0, or the exit status after one line.
 */
int attach_begin(pid_t pid);
/* A file (a capture's FILE.partial) that the deadline removes if it expires; NULL for none. */
void attach_remove_on_deadline(const char *path);
/*
 * Finds pid's armed session or injects the collector (configured by opts), waits for its socket
 * and fills target to follow it. 0, or the exit status after one line.
 */
int attach_connect(pid_t pid, const struct launch_options *opts, struct launch *target);
/* The attach handshake is complete (the collector's HELLO arrived): its deadline stops. */
void attach_handshake_done(void);
/* The target's command line (read from /proc, for the status line and the manifest); freed by the caller. */
char *attach_cmdline(pid_t pid);
/* Removes the session attach_connect made for pid, once the collector has left it. */
void attach_end(pid_t pid);

#endif
