/*
 * The viewer side of `attach --ssh`: one relay per host started through the user's own ssh (or a
 * --via template), its stream demultiplexed into sources tagged with the host, its stderr kept
 * as one line per host, a relay that ends restarted with a backoff.
 */
#ifndef CUSCOPE_SSH_H
#define CUSCOPE_SSH_H

#include <stddef.h>
#include <stdint.h>

struct ssh_hosts;

struct ssh_callbacks {
	void *ctx;
	/* One collector frame of host's source (numbered per host from 0, never reused). */
	void (*frame)(void *ctx, int host, uint32_t source, uint32_t type, const void *payload,
	              uint32_t length);
	/* host's source ended. */
	void (*closed)(void *ctx, int host, uint32_t source);
	/* The relay's totals of frames/bytes it dropped for host's source (newest wins). */
	void (*loss)(void *ctx, int host, uint32_t source, uint64_t frames, uint64_t bytes);
	/* Something to show about host, one line (its stderr, a disconnect, a mismatch). */
	void (*note)(void *ctx, int host, const char *line);
};

struct ssh_config {
	const char *remote_cuscope; /* the binary on the hosts (absolute path) */
	const char *via;            /* command template with {host} instead of ssh, NULL = ssh */
	const char *job;            /* relay --job, NULL = none */
};

/*
 * Checks a comma-separated host list (names a shell or ssh could take for anything else are
 * refused); returns the count, or -1 with one line in cause.
 */
int ssh_parse_hosts(const char *list, char ***hosts, char *cause, size_t cause_size);
/*
 * Host names from a file (one per line; blank lines and '#' comments skipped; a regular file of at
 * most 64 KiB) as a comma-separated list for ssh_parse_hosts (malloc'd); NULL with one line in cause.
 */
char *ssh_hosts_file(const char *path, char *cause, size_t cause_size);
/*
 * A Slurm node list (SLURM_JOB_NODELIST: "gpu[01-03,07],login1", zero padding kept) expanded into a
 * comma-separated list (malloc'd, at most 4096 hosts); NULL with one line in cause.
 */
char *ssh_slurm_nodelist(const char *list, char *cause, size_t cause_size);
/* Starts a relay on each of count hosts (names copied); NULL with cause if a template is bad. */
struct ssh_hosts *ssh_hosts_new(char *const *hosts, int count, const struct ssh_config *config,
                                const struct ssh_callbacks *cb, char *cause, size_t cause_size);
/*
 * The same hosts with no relay started (tests, the fuzz harness): bytes come from ssh_hosts_feed.
 * ssh_hosts_pump and ssh_hosts_finish are not for these.
 */
struct ssh_hosts *ssh_hosts_new_idle(char *const *hosts, int count, const struct ssh_callbacks *cb);
/*
 * Decodes n bytes as if read from host's relay (idle hosts only): 0; -EPROTO when they broke the
 * stream (the host went down, as a real one would; the next feed is a new run of its relay, unless
 * retrying was futile); -EPIPE for a host given up on.
 */
int ssh_hosts_feed(struct ssh_hosts *s, int host, const void *data, size_t n);
/* Ends the current run of an idle host's relay, as if its stream had ended. */
void ssh_hosts_end_run(struct ssh_hosts *s, int host);
/* Waits up to timeout_ms for data from the relays or extra_fd, dispatches it, restarts relays
 * whose backoff ran out. Returns 1 if extra_fd is readable. */
int ssh_hosts_pump(struct ssh_hosts *s, int timeout_ms, int extra_fd);
/*
 * Asks every relay to end (its stdin closed: it detaches its collectors and sends their final
 * counts) and reads them until they end or timeout_ms passes; none is restarted after this.
 */
void ssh_hosts_finish(struct ssh_hosts *s, int timeout_ms);
/* Ends every relay (stdin closed, then SIGTERM, then SIGKILL) and frees. */
void ssh_hosts_free(struct ssh_hosts *s);
/* host's name as given. */
const char *ssh_host_name(const struct ssh_hosts *s, int host);
/* Whether host's relay is connected (its first line arrived and it runs). */
int ssh_host_connected(const struct ssh_hosts *s, int host);
/* host's last line (stderr, state), "" for none. */
const char *ssh_host_line(const struct ssh_hosts *s, int host);
/* What host's relay announced: its host name and cuscope version ("" before). */
const char *ssh_host_remote_name(const struct ssh_hosts *s, int host);
/* Whether host was given up on (its relay is not cuscope's, or another version): said in its line. */
int ssh_host_failed(const struct ssh_hosts *s, int host);
/* How many times host's relay was started. */
unsigned ssh_host_starts(const struct ssh_hosts *s, int host);

#endif
