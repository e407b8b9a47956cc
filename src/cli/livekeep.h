/*
 * The live capture file of a live view (live mode, attach, attach --ssh): everything received is
 * also written to a capture file of our own, bounded by --disk-mb, so that `d` can dump any part of
 * it later without stopping the view. Private to cli/.
 */
#ifndef CUSCOPE_CLI_LIVEKEEP_H
#define CUSCOPE_CLI_LIVEKEEP_H

#include <stdint.h>

struct capture_writer;
struct capture_snapshot;
struct store;
struct ui;

struct live_keep {
	struct capture_writer *writer; /* NULL: no file (dumps say so) */
	char path[700];
	char own_dir[512]; /* our own session directory holding the file, removed with it */
	struct capture_snapshot *dump;
	char dump_path[512];
	uint64_t dump_said_ns;
	uint64_t cap;       /* bytes (--disk-mb) */
	unsigned rotations; /* times it was full and restarted */
};

/* Opens the file in dir (a session directory of ours), or with dir NULL in a new session
 * directory of our own (never in another user's: its owner could plant links there). */
void live_keep_open(struct live_keep *k, const char *dir, unsigned disk_mb);
/* Writes one frame of store source `source`. */
void live_keep_frame(struct live_keep *k, int source, uint32_t type, const void *payload, uint32_t length);
/* Flushes, and restarts the file (with every connected process's identity from st) once full. */
void live_keep_flush(struct live_keep *k, struct store *st, struct ui *ui);
/* Starts the dump the UI asked for, if any, and moves a running one forward a step. */
void live_keep_dump(struct live_keep *k, struct ui *ui, uint64_t now_ns);
/* Finishes a dump still running (the user is leaving: nothing captured is lost). */
void live_keep_finish(struct live_keep *k);
/* Removes the file (and our own session directory). */
void live_keep_close(struct live_keep *k);

#endif
