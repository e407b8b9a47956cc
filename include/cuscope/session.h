/*
 * Sessions: a 0700 directory holding one listening socket per traced process (<pid>.sock, 0600).
 * The collector listens, viewers connect. Used by both sides: what the collector calls never
 * allocates (removal and sweeping are the viewer's). Paths are reached through verified directory
 * fds (safefs.h), sockets through /proc/self/fd so a session path may exceed sun_path's 108 bytes.
 *
 * Environment contract between the CLI and the collector:
 *   CUSCOPE_SESSION      session directory the collector puts its socket in
 *   CUSCOPE_BUFFER_MB    flight-recorder bound per process (default 64)
 *   CUSCOPE_WAIT_VIEWER_MS  at exit, how long to wait for a first viewer (launch mode sets it)
 */
#ifndef CUSCOPE_SESSION_H
#define CUSCOPE_SESSION_H

#include <stddef.h>
#include <sys/types.h>

#define SESSION_ENV                "CUSCOPE_SESSION"
#define SESSION_ENV_BUFFER_MB      "CUSCOPE_BUFFER_MB"
#define SESSION_ENV_WAIT_VIEWER_MS "CUSCOPE_WAIT_VIEWER_MS"

/* Writes the per-user base directory ($XDG_RUNTIME_DIR/cuscope or /tmp/cuscope-UID). */
int session_base_dir(char *out, size_t size);
/* Writes the root sessions are made in: $CUSCOPE_SESSION_ROOT (made absolute) or the base. */
int session_root(char *out, size_t size);
/*
 * Creates (or reuses, if it is ours and 0700) the root directory and a fresh session directory
 * under it (an absolute path); returns 0 or -errno with *cause a static explanation.
 */
int session_create(char *out, size_t size, const char **cause);
/* Opens a session directory owned by uid, verified all the way (safefs_open_dir); fd or -errno. */
int session_open(const char *dir, uid_t uid);
/* Removes a session directory owned by uid and its files, keeping sockets of live processes. */
int session_remove(const char *dir, uid_t uid);
/* Removes this user's sessions whose processes are all gone (a recent output.log stays a day). */
void session_sweep(void);
/* Writes DIR/PID.sock; returns 0 or -ENAMETOOLONG. */
int session_socket_path(char *out, size_t size, const char *dir, pid_t pid);
/* Binds the caller's AF_UNIX stream socket fd as name (mode 0600) in the session directory dfd
 * (ours or root's, writable by nobody else) and listens; 0 or -errno. The caller keeps both fds:
 * the collector makes and registers them itself (a program may take their numbers). */
int session_listen_at(int dfd, const char *name, int fd);
/* Connects to the socket at path (blocking connect, then non-blocking); returns fd or -errno. */
int session_connect(const char *path);
/* Connects to the socket name in a verified directory fd (never through a link); fd or -errno. */
int session_connect_at(int dir, const char *name);
/* Returns 1 if the peer on fd runs as our uid or as root, 0 if not, -errno on error. */
int session_peer_allowed(int fd);
/* Parses "1234.sock" into a pid; returns 0 if name is not a socket name. */
pid_t session_socket_pid(const char *name);

#endif
