/* The live capture file `d` dumps are cut from (livekeep.h). */
#include "livekeep.h"
#include "cuscope/capture.h"
#include "cuscope/log.h"
#include "cuscope/session.h"
#include "cuscope/store.h"
#include "cuscope/ui.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LIVE_KEEP_DUMP_STEP_BYTES (8u << 20) /* per loop pass: the view keeps drawing while a dump runs */

void live_keep_open(struct live_keep *k, const char *dir, unsigned disk_mb)
{
	memset(k, 0, sizeof *k);
	k->cap = (uint64_t)(disk_mb ? disk_mb : UI_DISK_MB_DEFAULT) << 20;
	if (!dir) {
		const char *why = NULL;
		if (session_create(k->own_dir, sizeof k->own_dir, &why) != 0)
			return;
		dir = k->own_dir;
	}
	int err = 0;
	const char *why = NULL;
	/* Created 0600 without following any link (capture_writer_open). */
	snprintf(k->path, sizeof k->path, "%s/live.cuscope", dir);
	k->writer = capture_writer_open(k->path, &err, &why);
}

void live_keep_frame(struct live_keep *k, int source, uint32_t type, const void *payload, uint32_t length)
{
	if (k->writer)
		capture_writer_frame(k->writer, (uint32_t)source, type, payload, length);
}

static int live_keep_emit(void *ctx, int source, uint32_t type, const void *payload, uint32_t length)
{
	struct live_keep *k = ctx;
	return capture_writer_frame(k->writer, (uint32_t)source, type, payload, length);
}

void live_keep_flush(struct live_keep *k, struct store *st, struct ui *ui)
{
	if (!k->writer)
		return;
	capture_writer_flush(k->writer);
	/* Once full (and no dump reads it), a new file starts, opened with the identity of every
	 * connected process so that it reads on its own. The writer fills FILE.partial until it is
	 * closed (see capture_writer_open). */
	struct stat sb;
	if (k->dump || !capture_writer_partial_path(k->writer) ||
	    stat(capture_writer_partial_path(k->writer), &sb) != 0 || (uint64_t)sb.st_size < k->cap)
		return;
	capture_writer_abandon(k->writer);
	int err = 0;
	const char *why = NULL;
	k->writer = capture_writer_open(k->path, &err, &why);
	if (k->writer && store_replay_identity(st, live_keep_emit, k) != 0) {
		capture_writer_abandon(k->writer);
		k->writer = NULL;
	}
	if (!k->writer)
		ui_message(ui, "live capture file reached --disk-mb and no new one could start: no dumps");
	else if (!k->rotations)
		ui_message(ui, "live capture file reached --disk-mb: it restarts whenever full (dumps cover "
		               "the current one)");
	k->rotations++;
}

void live_keep_dump(struct live_keep *k, struct ui *ui, uint64_t now_ns)
{
	uint64_t from, to;
	char path[512];
	if (!k->dump && ui_dump_request(ui, path, sizeof path, &from, &to)) {
		if (!k->writer) {
			ui_message(ui, "dump: the live capture file could not be created at start");
			return;
		}
		const char *cause = NULL;
		k->dump = capture_snapshot_start(k->writer, path, from, to, &cause);
		if (!k->dump) {
			char line[700];
			snprintf(line, sizeof line, "dump: %s: %s", cause, path);
			ui_message(ui, line);
			return;
		}
		snprintf(k->dump_path, sizeof k->dump_path, "%s", path);
	}
	if (!k->dump)
		return;
	int rc = capture_snapshot_step(k->dump, LIVE_KEEP_DUMP_STEP_BYTES);
	uint64_t done, total;
	capture_snapshot_progress(k->dump, &done, &total);
	char line[800];
	if (rc == 0) {
		if (now_ns - k->dump_said_ns > 200000000ull) {
			snprintf(line, sizeof line, "dump: %.0f%% of %.1f MB to %s (capture continues)",
			         total ? 100.0 * (double)done / (double)total : 100.0, (double)total / 1e6,
			         k->dump_path);
			ui_message(ui, line);
			k->dump_said_ns = now_ns;
		}
		return;
	}
	if (rc < 0)
		snprintf(line, sizeof line, "dump: writing %s failed: %s", k->dump_path, strerror(-rc));
	else
		snprintf(line, sizeof line, "dump: wrote %s (%.1f MB); open it with cuscope view",
		         k->dump_path, (double)total / 1e6);
	ui_message(ui, line);
	capture_snapshot_free(k->dump);
	k->dump = NULL;
}

void live_keep_finish(struct live_keep *k)
{
	while (k->dump) {
		int rc = capture_snapshot_step(k->dump, 64u << 20);
		if (rc != 0) {
			if (rc < 0)
				log_error("dump to %s failed: %s", k->dump_path, strerror(-rc));
			capture_snapshot_free(k->dump);
			k->dump = NULL;
		}
	}
}

void live_keep_close(struct live_keep *k)
{
	if (k->dump) {
		capture_snapshot_free(k->dump);
		k->dump = NULL;
	}
	if (k->writer) {
		capture_writer_abandon(k->writer);
		k->writer = NULL;
	}
	if (k->own_dir[0]) {
		session_remove(k->own_dir, getuid());
		k->own_dir[0] = '\0';
	}
}
