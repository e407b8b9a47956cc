#include "cuscope/capture.h"
#include "cuscope/clock.h"
#include "cuscope/crc32.h"
#include "cuscope/safefs.h"
#include "cuscope/store.h"
#include "cuscope/wire.h"
#include "cuscope/xalloc.h"

#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#define CHUNK_TARGET (256u * 1024)

#define ZSTD_LEVEL 3

struct pending_chunk {
	uint32_t source;
	uint8_t *buf;
	size_t len, cap;
	uint64_t first_ns, last_ns;
	uint32_t events;
	int essential; /* holds identity, names or devices: a window copy always keeps it */
};

struct capture_writer {
	int fd;
	struct safefs_output out; /* FILE.partial until a clean close renames it onto FILE */
	uint64_t offset;          /* bytes written so far */
	struct pending_chunk *chunks;
	size_t chunk_count, chunk_cap;
	struct capture_index_entry *index;
	size_t index_count, index_cap;
	uint8_t *essential; /* per index entry */
	size_t essential_cap;
	int next_essential; /* the chunk being written now is essential */
	ZSTD_CCtx *zstd;
	uint8_t *zbuf;
	size_t zcap;
	unsigned written;
	int error;
};

static int write_all(int fd, const void *data, size_t len)
{
	const char *p = data;
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int write_chunk(struct capture_writer *w, uint32_t type, uint32_t source, const void *payload,
                       size_t len, uint64_t first_ns, uint64_t last_ns, uint32_t events)
{
	if (w->error)
		return w->error;
	xgrow((void **)&w->index, &w->index_cap, w->index_count + 1, sizeof *w->index);
	xgrow((void **)&w->essential, &w->essential_cap, w->index_count + 1, 1);
	w->essential[w->index_count] = (uint8_t)(w->next_essential || type == CAPTURE_CHUNK_MANIFEST);
	w->next_essential = 0;
	w->index[w->index_count] =
	    (struct capture_index_entry){w->offset, first_ns, last_ns, type, source, (uint32_t)len, events};
	struct capture_chunk_header h = {
	    .magic = CAPTURE_CHUNK_MAGIC,
	    .type = type,
	    .source = source,
	    .length = (uint32_t)len,
	    .first_ns = first_ns,
	    .last_ns = last_ns,
	    .payload_crc = crc32_update(0, payload, len),
	};
	h.header_crc = crc32_update(0, &h, sizeof h);
	int rc = write_all(w->fd, &h, sizeof h);
	if (!rc)
		rc = write_all(w->fd, payload, len);
	if (rc) {
		w->error = rc;
	} else {
		w->written++;
		w->index_count++;
		w->offset += sizeof h + len;
	}
	return rc;
}

/* The file header every capture (and every copy of one) starts with. */
static void capture_file_header_init(struct capture_file_header *h)
{
	memset(h, 0, sizeof *h);
	memcpy(h->magic, CAPTURE_MAGIC, 8);
	h->version = CAPTURE_VERSION;
	h->header_size = sizeof *h;
	h->features = 0;
	h->created_real_ns = clock_real_ns();
	h->wire_version = WIRE_VERSION;
	h->byte_order = 0x01020304u;
}

struct capture_writer *capture_writer_open(const char *path, int *err, const char **cause)
{
	struct safefs_output out;
	/* Readable too: a live view copies windows of its own capture while writing it. */
	int rc = safefs_output_open(&out, path, 1, cause);
	if (rc) {
		*err = rc;
		return NULL;
	}
	struct capture_file_header h;
	capture_file_header_init(&h);
	rc = write_all(out.fd, &h, sizeof h);
	if (rc) {
		close(out.fd);
		safefs_output_discard(&out);
		*err = rc;
		*cause = "cannot write capture file";
		return NULL;
	}
	struct capture_writer *w = xcalloc(1, sizeof *w);
	w->fd = out.fd;
	w->out = out;
	w->offset = sizeof h;
	w->zstd = ZSTD_createCCtx();
	return w;
}

const char *capture_writer_partial_path(const struct capture_writer *w)
{
	return w->out.in_place ? NULL : w->out.partial_path;
}

static struct pending_chunk *pending_for(struct capture_writer *w, uint32_t source)
{
	for (size_t i = 0; i < w->chunk_count; i++)
		if (w->chunks[i].source == source)
			return &w->chunks[i];
	xgrow((void **)&w->chunks, &w->chunk_cap, w->chunk_count + 1, sizeof *w->chunks);
	struct pending_chunk *c = &w->chunks[w->chunk_count++];
	memset(c, 0, sizeof *c);
	c->source = source;
	return c;
}

/* Writes a source's pending frames as one chunk, zstd-compressed when that is smaller. */
static int pending_write(struct capture_writer *w, struct pending_chunk *c)
{
	if (!c->len)
		return 0;
	int rc = -1;
	w->next_essential = c->essential;
	c->essential = 0;
	size_t bound = ZSTD_compressBound(c->len) + sizeof(uint32_t);
	if (w->zstd) {
		xgrow((void **)&w->zbuf, &w->zcap, bound, 1);
		size_t z = ZSTD_compressCCtx(w->zstd, w->zbuf + sizeof(uint32_t), w->zcap - sizeof(uint32_t),
		                             c->buf, c->len, ZSTD_LEVEL);
		if (!ZSTD_isError(z) && z + sizeof(uint32_t) < c->len) {
			uint32_t raw = (uint32_t)c->len;
			memcpy(w->zbuf, &raw, sizeof raw);
			rc = write_chunk(w, CAPTURE_CHUNK_FRAMES_ZSTD, c->source, w->zbuf, z + sizeof raw,
			                 c->first_ns, c->last_ns, c->events);
		}
	}
	if (rc == -1)
		rc = write_chunk(w, CAPTURE_CHUNK_FRAMES, c->source, c->buf, c->len, c->first_ns, c->last_ns,
		                 c->events);
	c->len = 0;
	c->first_ns = c->last_ns = 0;
	c->events = 0;
	return rc;
}

/* Notes the time range of the events of one frame into the pending chunk. */
static void pending_note_times(struct pending_chunk *c, uint32_t type, const void *payload, uint32_t length)
{
	size_t stride, offset;
	if (type == WIRE_FRAME_EVENTS) {
		stride = sizeof(struct wire_event);
		offset = offsetof(struct wire_event, time_ns);
	} else if (type == WIRE_FRAME_GPU) {
		stride = sizeof(struct wire_gpu_event);
		offset = offsetof(struct wire_gpu_event, start_ns);
	} else {
		return;
	}
	/* Frames inside a socket stream or chunk are not 8-byte aligned: copy, never dereference. */
	const char *bytes = payload;
	for (size_t i = 0; i < length / stride; i++) {
		uint64_t t;
		memcpy(&t, bytes + i * stride + offset, sizeof t);
		c->events++;
		if (!t)
			continue;
		if (!c->first_ns || t < c->first_ns)
			c->first_ns = t;
		if (t > c->last_ns)
			c->last_ns = t;
	}
}

int capture_writer_frame(struct capture_writer *w, uint32_t source, uint32_t type, const void *payload,
                         uint32_t length)
{
	struct pending_chunk *c = pending_for(w, source);
	struct wire_frame_header fh = {type, length};
	size_t need = sizeof fh + length;
	if (c->len && c->len + need > CHUNK_TARGET) {
		int rc = pending_write(w, c);
		if (rc)
			return rc;
	}
	xgrow((void **)&c->buf, &c->cap, c->len + need, 1);
	memcpy(c->buf + c->len, &fh, sizeof fh);
	memcpy(c->buf + c->len + sizeof fh, payload, length);
	c->len += need;
	pending_note_times(c, type, payload, length);
	if (type != WIRE_FRAME_EVENTS && type != WIRE_FRAME_GPU && type != WIRE_FRAME_STACKS &&
	    type != WIRE_FRAME_COUNTERS && type != WIRE_FRAME_LOSSES)
		c->essential = 1;
	return 0;
}

int capture_writer_manifest(struct capture_writer *w, const char *text, size_t length)
{
	return write_chunk(w, CAPTURE_CHUNK_MANIFEST, 0, text, length, 0, 0, 0);
}

int capture_writer_flush(struct capture_writer *w)
{
	for (size_t i = 0; i < w->chunk_count; i++) {
		int rc = pending_write(w, &w->chunks[i]);
		if (rc)
			return rc;
	}
	return w->error;
}

/* Frees everything but the file. */
static void capture_writer_free(struct capture_writer *w)
{
	for (size_t i = 0; i < w->chunk_count; i++)
		free(w->chunks[i].buf);
	free(w->chunks);
	free(w->index);
	free(w->essential);
	free(w->zbuf);
	ZSTD_freeCCtx(w->zstd);
	free(w);
}

int capture_writer_close(struct capture_writer *w)
{
	int rc = capture_writer_flush(w);
	if (!rc) {
		uint64_t index_offset = w->offset;
		size_t entries = w->index_count;
		rc = write_chunk(w, CAPTURE_CHUNK_INDEX, 0, w->index, entries * sizeof *w->index, 0, 0, 0);
		struct capture_end end = {w->written, 0, rc ? 0 : index_offset};
		if (!rc)
			rc = write_chunk(w, CAPTURE_CHUNK_END, 0, &end, sizeof end, 0, 0, 0);
	}
	/* On disk before it replaces what FILE was. */
	if (!rc && !w->out.in_place && fsync(w->fd) != 0)
		rc = -errno;
	if (close(w->fd) != 0 && !rc)
		rc = -errno;
	if (!rc)
		rc = safefs_output_commit(&w->out);
	else
		safefs_output_keep_partial(&w->out);
	capture_writer_free(w);
	return rc;
}

void capture_writer_abandon(struct capture_writer *w)
{
	close(w->fd);
	safefs_output_discard(&w->out);
	capture_writer_free(w);
}

struct capture_snapshot {
	int src, dst;
	struct safefs_output out;         /* the dump, renamed into place when complete */
	struct capture_index_entry *copy; /* chunks to copy, in file order */
	size_t count, next;
	uint64_t next_offset_in_chunk;     /* bytes of copy[next] already copied */
	struct capture_index_entry *index; /* the new file's index */
	uint64_t out_offset;
	uint64_t done, total;
};

struct capture_snapshot *capture_snapshot_start(struct capture_writer *w, const char *dest, uint64_t from_ns,
                                                uint64_t to_ns, const char **cause)
{
	if (capture_writer_flush(w) != 0) {
		*cause = "cannot flush the live capture";
		return NULL;
	}
	/* The live file through the writer's own fd: its name is never looked up again. */
	int src = w->out.in_place ? -1 : fcntl(w->fd, F_DUPFD_CLOEXEC, 3);
	if (src < 0) {
		*cause = "cannot read the live capture";
		return NULL;
	}
	struct safefs_output out;
	const char *why = NULL;
	if (safefs_output_open(&out, dest, 0, &why) != 0) {
		close(src);
		*cause = why;
		return NULL;
	}
	struct capture_snapshot *snap = xcalloc(1, sizeof *snap);
	snap->src = src;
	snap->dst = out.fd;
	snap->out = out;
	snap->copy = xcalloc(w->index_count + 1, sizeof *snap->copy);
	snap->index = xcalloc(w->index_count + 1, sizeof *snap->index);
	for (size_t i = 0; i < w->index_count; i++) {
		const struct capture_index_entry *e = &w->index[i];
		if (e->type == CAPTURE_CHUNK_INDEX || e->type == CAPTURE_CHUNK_END)
			continue;
		int overlaps = e->first_ns && e->first_ns <= to_ns && e->last_ns >= from_ns;
		if (overlaps || w->essential[i]) {
			snap->copy[snap->count++] = *e;
			snap->total += sizeof(struct capture_chunk_header) + e->length;
		}
	}
	/* The same file header, written fresh. */
	struct capture_file_header h;
	capture_file_header_init(&h);
	if (write_all(snap->dst, &h, sizeof h) != 0) {
		*cause = "cannot write the dump file";
		capture_snapshot_free(snap);
		return NULL;
	}
	snap->out_offset = sizeof h;
	return snap;
}

/* Writes one chunk (INDEX or END) of the copy. */
static int snapshot_write_chunk(struct capture_snapshot *snap, uint32_t type, const void *payload, size_t len)
{
	struct capture_chunk_header h = {
	    .magic = CAPTURE_CHUNK_MAGIC,
	    .type = type,
	    .length = (uint32_t)len,
	    .payload_crc = crc32_update(0, payload, len),
	};
	h.header_crc = crc32_update(0, &h, sizeof h);
	int rc = write_all(snap->dst, &h, sizeof h);
	if (!rc)
		rc = write_all(snap->dst, payload, len);
	snap->out_offset += sizeof h + len;
	return rc;
}

int capture_snapshot_step(struct capture_snapshot *snap, size_t budget)
{
	char buf[1 << 16];
	while (snap->next < snap->count && budget) {
		struct capture_index_entry *e = &snap->copy[snap->next];
		uint64_t chunk_bytes = sizeof(struct capture_chunk_header) + e->length;
		if (snap->next_offset_in_chunk == 0) {
			snap->index[snap->next] = *e;
			snap->index[snap->next].offset = snap->out_offset;
		}
		uint64_t left = chunk_bytes - snap->next_offset_in_chunk;
		size_t n = left < sizeof buf ? (size_t)left : sizeof buf;
		if (n > budget)
			n = budget;
		ssize_t got = pread(snap->src, buf, n, (off_t)(e->offset + snap->next_offset_in_chunk));
		if (got <= 0)
			return -EIO;
		int rc = write_all(snap->dst, buf, (size_t)got);
		if (rc)
			return rc;
		snap->next_offset_in_chunk += (uint64_t)got;
		snap->out_offset += (uint64_t)got;
		snap->done += (uint64_t)got;
		budget -= (size_t)got < budget ? (size_t)got : budget;
		if (snap->next_offset_in_chunk == chunk_bytes) {
			snap->next++;
			snap->next_offset_in_chunk = 0;
		}
	}
	if (snap->next < snap->count)
		return 0;
	uint64_t index_offset = snap->out_offset;
	int rc =
	    snapshot_write_chunk(snap, CAPTURE_CHUNK_INDEX, snap->index, snap->count * sizeof *snap->index);
	struct capture_end end = {(uint32_t)snap->count + 1, 0, index_offset};
	if (!rc)
		rc = snapshot_write_chunk(snap, CAPTURE_CHUNK_END, &end, sizeof end);
	if (!rc && !snap->out.in_place && fsync(snap->dst) != 0)
		rc = -errno;
	if (close(snap->dst) != 0 && !rc)
		rc = -errno;
	snap->dst = -1;
	/* Complete: the dump replaces FILE; failed: FILE stays as it was and the partial goes. */
	if (!rc)
		rc = safefs_output_commit(&snap->out);
	else
		safefs_output_discard(&snap->out);
	return rc ? rc : 1;
}

void capture_snapshot_progress(const struct capture_snapshot *snap, uint64_t *done, uint64_t *total)
{
	*done = snap->done;
	*total = snap->total;
}

void capture_snapshot_free(struct capture_snapshot *snap)
{
	if (!snap)
		return;
	if (snap->src >= 0)
		close(snap->src);
	if (snap->dst >= 0) {
		/* Given up before the end: nothing half-written is left, FILE stays as it was. */
		close(snap->dst);
		safefs_output_discard(&snap->out);
	}
	free(snap->copy);
	free(snap->index);
	free(snap);
}

/* Ingests the frames of one verified chunk; returns 0 or -EPROTO. */
static int ingest_chunk(struct store *store, uint32_t source, const uint8_t *p, size_t len,
                        const char **cause)
{
	size_t off = 0;
	while (off < len) {
		struct wire_frame_header fh;
		if (len - off < sizeof fh) {
			*cause = "partial frame in chunk";
			return -EPROTO;
		}
		memcpy(&fh, p + off, sizeof fh);
		off += sizeof fh;
		if (fh.length > len - off) {
			*cause = "frame overruns chunk";
			return -EPROTO;
		}
		int rc = store_feed(store, (int)source, fh.type, p + off, fh.length, cause);
		if (rc)
			return rc;
		off += fh.length;
	}
	return 0;
}

int capture_read(const char *path, struct store *store, struct capture_read_result *res, char *msg_buf,
                 size_t msg_size, const char **cause)
{
	memset(res, 0, sizeof *res);
	FILE *f = fopen(path, "rb");
	if (!f) {
		int err = errno;
		snprintf(msg_buf, msg_size, "cannot open %s: %s", path, strerror(err));
		*cause = msg_buf;
		return -err;
	}
	struct stat st;
	if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
		fclose(f);
		snprintf(msg_buf, msg_size, "%s is a directory, not a capture file", path);
		*cause = msg_buf;
		return -EISDIR;
	}
	struct capture_file_header h;
	if (fread(&h, 1, sizeof h, f) != sizeof h || memcmp(h.magic, CAPTURE_MAGIC, 8) != 0) {
		fclose(f);
		snprintf(msg_buf, msg_size, "%s is not a cuscope capture file", path);
		*cause = msg_buf;
		return -EPROTO;
	}
	if (h.version > CAPTURE_VERSION || (h.features & ~CAPTURE_FEATURES_KNOWN) ||
	    h.wire_version > WIRE_VERSION) {
		fclose(f);
		snprintf(msg_buf, msg_size,
		         "%s was written by a newer cuscope (capture format %u, wire %u, features 0x%llx; "
		         "this one reads "
		         "format %u, wire %u, features 0x%llx)",
		         path, h.version, h.wire_version, (unsigned long long)h.features, CAPTURE_VERSION,
		         WIRE_VERSION, (unsigned long long)CAPTURE_FEATURES_KNOWN);
		*cause = msg_buf;
		return -EPROTO;
	}
	if (h.header_size != sizeof h || h.byte_order != 0x01020304u) {
		fclose(f);
		snprintf(msg_buf, msg_size, "%s has an unsupported capture header", path);
		*cause = msg_buf;
		return -EPROTO;
	}
	uint8_t *buf = NULL, *raw_buf = NULL;
	size_t cap = 0, raw_cap = 0;
	int ended = 0;
	/* Sources whose chunk failed are skipped from then on: later frames would lack context. */
	uint32_t *bad_sources = NULL;
	size_t bad_count = 0, bad_cap = 0;
	uint32_t *sources = NULL; /* every source seen, to close them at the end */
	size_t source_count = 0, source_cap = 0;
	for (;;) {
		struct capture_chunk_header ch;
		size_t n = fread(&ch, 1, sizeof ch, f);
		if (n == 0)
			break;
		res->chunks_total++;
		if (n != sizeof ch) {
			res->truncated = 1;
			break;
		}
		uint32_t crc = ch.header_crc;
		ch.header_crc = 0;
		if (ch.magic != CAPTURE_CHUNK_MAGIC || crc32_update(0, &ch, sizeof ch) != crc ||
		    ch.length > CAPTURE_CHUNK_MAX) {
			/* Without a trustworthy length nothing after this point can be located. */
			res->chunks_corrupt++;
			res->truncated = 1;
			break;
		}
		xgrow((void **)&buf, &cap, ch.length ? ch.length : 1, 1);
		if (fread(buf, 1, ch.length, f) != ch.length) {
			res->truncated = 1;
			break;
		}
		if (crc32_update(0, buf, ch.length) != ch.payload_crc) {
			res->chunks_corrupt++;
			if (ch.type == CAPTURE_CHUNK_FRAMES || ch.type == CAPTURE_CHUNK_FRAMES_ZSTD) {
				xgrow((void **)&bad_sources, &bad_cap, bad_count + 1, sizeof *bad_sources);
				bad_sources[bad_count++] = ch.source;
			}
			continue;
		}
		if (ch.type == CAPTURE_CHUNK_END) {
			res->chunks_ok++;
			ended = 1;
			break;
		}
		if (ch.type == CAPTURE_CHUNK_MANIFEST) {
			char *joined = xasprintf("%s%.*s", res->manifest ? res->manifest : "", (int)ch.length,
			                         (const char *)buf);
			free(res->manifest);
			res->manifest = joined;
			res->chunks_ok++;
			continue;
		}
		if (ch.type == CAPTURE_CHUNK_INDEX)
			res->has_index = 1;
		if (ch.type != CAPTURE_CHUNK_FRAMES && ch.type != CAPTURE_CHUNK_FRAMES_ZSTD) {
			res->chunks_ok++; /* index, or an optional chunk from a newer writer */
			continue;
		}
		const uint8_t *frames = buf;
		size_t frames_len = ch.length;
		if (ch.type == CAPTURE_CHUNK_FRAMES_ZSTD) {
			uint32_t raw = 0;
			if (ch.length >= sizeof raw)
				memcpy(&raw, buf, sizeof raw);
			size_t got = 0;
			if (ch.length >= sizeof raw && raw <= CAPTURE_CHUNK_MAX) {
				xgrow((void **)&raw_buf, &raw_cap, raw ? raw : 1, 1);
				got = ZSTD_decompress(raw_buf, raw, buf + sizeof raw, ch.length - sizeof raw);
			}
			if (ch.length < sizeof raw || raw > CAPTURE_CHUNK_MAX || ZSTD_isError(got) ||
			    got != raw) {
				/* The checksum matched but the content does not decode: a writer bug or
				 * forgery. */
				res->chunks_corrupt++;
				xgrow((void **)&bad_sources, &bad_cap, bad_count + 1, sizeof *bad_sources);
				bad_sources[bad_count++] = ch.source;
				continue;
			}
			frames = raw_buf;
			frames_len = raw;
			res->compressed_chunks++;
		}
		/* File source numbers are only labels: the store gets dense small ones, so a hostile
		 * number cannot make it allocate a huge source table. */
		size_t dense = source_count;
		for (size_t i = 0; i < source_count; i++)
			if (sources[i] == ch.source)
				dense = i;
		if (dense == source_count) {
			xgrow((void **)&sources, &source_cap, source_count + 1, sizeof *sources);
			sources[source_count++] = ch.source;
		}
		int skip = 0;
		for (size_t i = 0; i < bad_count; i++)
			skip |= bad_sources[i] == ch.source;
		const char *why = NULL;
		uint64_t events_before = store_event_count(store);
		if (skip || ingest_chunk(store, (uint32_t)dense, frames, frames_len, &why) != 0) {
			res->chunks_corrupt++;
			if (!skip) {
				xgrow((void **)&bad_sources, &bad_cap, bad_count + 1, sizeof *bad_sources);
				bad_sources[bad_count++] = ch.source;
			}
			continue;
		}
		res->frame_bytes += frames_len;
		res->events += store_event_count(store) - events_before;
		res->chunks_ok++;
	}
	res->file_bytes = (uint64_t)ftell(f);
	free(raw_buf);
	free(buf);
	free(bad_sources);
	fclose(f);
	if (!ended)
		res->truncated = 1;
	/* A capture is history: no process in it is connected. */
	for (size_t i = 0; i < source_count; i++)
		store_source_closed(store, (int)i);
	free(sources);
	if (res->chunks_ok == 0 && store_process_count(store) == 0) {
		snprintf(msg_buf, msg_size, "%s holds no readable chunk (%u damaged)", path,
		         res->chunks_total);
		*cause = msg_buf;
		return -EPROTO;
	}
	return 0;
}
