/*
 * The viewer side of a session: follows a session directory, connects to every <pid>.sock that
 * appears (fork/exec children included), decodes frames and hands them to a callback.
 */
#ifndef CUSCOPE_TAP_H
#define CUSCOPE_TAP_H

#include <stdint.h>
#include <sys/types.h>

struct tap;

struct tap_callbacks {
	void *ctx;
	/* One decoded frame from a source (a connection); a non-zero return drops the connection. */
	int (*frame)(void *ctx, int source, uint32_t type, const void *payload, uint32_t length);
	/* The connection of source ended (EOF, error or dropped). */
	void (*closed)(void *ctx, int source);
	/* A protocol error on a source (one line, e.g. a version mismatch). */
	void (*error)(void *ctx, int source, pid_t pid, const char *message);
	/* Optional: pid's collector closed before its handshake (it already has another viewer). */
	void (*refused)(void *ctx, pid_t pid);
	/*
	 * Optional: source's process goes on in a later stream (it exec'd: same pid and start
	 * time), so source's end is not the process's end. Called before that stream's frames.
	 */
	void (*continued)(void *ctx, int source);
};

/*
 * Follows dir, a private session directory owned by owner (checked along the whole path, see
 * safefs.h); callbacks are copied. NULL with *err (-errno) if dir is not such a directory.
 */
struct tap *tap_new_owned(const char *dir, uid_t owner, const struct tap_callbacks *callbacks, int *err);
/* tap_new_owned for a session of our own user; NULL if dir is not one. */
struct tap *tap_new(const char *dir, const struct tap_callbacks *callbacks);
/* Closes every connection (the collectors keep running: this is a detach). */
void tap_free(struct tap *tap);
/*
 * Waits up to timeout_ms for data on any connection or on extra_fd (-1 for none), scans the
 * directory for new sockets, reads and dispatches what arrived. Returns 1 if extra_fd is
 * readable, 0 otherwise.
 */
int tap_pump(struct tap *tap, int timeout_ms, int extra_fd);
/*
 * Leaves processes that run on: asks every connected collector to detach (struct wire_request)
 * and reads, for up to timeout_ms in all, until each has sent its final counts and a BYE marked
 * WIRE_BYE_DETACHED (or its connection ended). Call tap_free after it. Returns the connections
 * that did not answer in time (their counts are incomplete).
 */
int tap_detach(struct tap *tap, int timeout_ms);
/* One last look at the directory: streams that exiting collectors left in PID.final files. */
void tap_finish(struct tap *tap);
/*
 * Once a traced process has ended (its connection closed and the process gone), removes the
 * /tmp/perf-PID.map it wrote (see perfmap.h): for sessions cuscope started with --python-perf.
 */
void tap_remove_perf_maps(struct tap *tap);
/* Connections open now. */
int tap_connection_count(const struct tap *tap);
/* Bytes received in total (for rates). */
uint64_t tap_bytes(const struct tap *tap);

#endif
