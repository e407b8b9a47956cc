#include "cuscope/capture.h"
#include "cuscope/clock.h"
#include "cuscope/crc32.h"
#include "cuscope/hashmap.h"
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

/* What the writer knows of one string id of a source, to repeat it in later chunks. */
struct pending_string {
	uint64_t offset; /* in the source's text */
	uint32_t length;
	uint32_t hello;  /* the source's hello count when defined (0 = never defined) */
	uint32_t serial; /* the last chunk that carries it */
};

struct pending_chunk {
	uint32_t source;
	uint8_t *buf; /* the chunk's own frames */
	size_t len, cap;
	uint64_t first_ns, last_ns;
	uint32_t events;
	int essential; /* holds identity, names or devices: a window copy always keeps it */
	/* Version 2 context: a struct capture_context, then the frames a reader needs to decode this
	 * chunk alone (the HELLO in effect when it began, the strings its records use); the own
	 * frames are appended behind it when the chunk is written. */
	uint8_t *ctx;
	size_t ctx_len, ctx_cap;
	size_t ctx_limit; /* ctx_len may grow to this */
	uint8_t *hello;   /* payload of the source's last HELLO */
	size_t hello_len, hello_cap;
	uint32_t hellos; /* HELLO frames seen: strings of an older one are stale */
	char *text;      /* every string of the source, back to back */
	size_t text_len, text_cap;
	struct pending_string *strings; /* by id */
	size_t string_cap;
	uint32_t serial; /* of the chunk being filled */
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
	c->serial = 1;
	return c;
}

static void pending_fini(struct pending_chunk *c)
{
	free(c->buf);
	free(c->ctx);
	free(c->hello);
	free(c->text);
	free(c->strings);
}

/* Appends one frame to the context. */
static void pending_ctx_frame(struct pending_chunk *c, uint32_t type, const void *a, size_t alen,
                              const void *b, size_t blen)
{
	struct wire_frame_header fh = {type, (uint32_t)(alen + blen)};
	xgrow((void **)&c->ctx, &c->ctx_cap, c->ctx_len + sizeof fh + alen + blen, 1);
	memcpy(c->ctx + c->ctx_len, &fh, sizeof fh);
	memcpy(c->ctx + c->ctx_len + sizeof fh, a, alen);
	if (blen)
		memcpy(c->ctx + c->ctx_len + sizeof fh + alen, b, blen);
	c->ctx_len += sizeof fh + alen + blen;
}

/* Starts the context of a new chunk: the header, then the HELLO in effect. */
static void pending_ctx_begin(struct pending_chunk *c)
{
	struct capture_context cx = {0, 0};
	c->ctx_len = 0;
	xgrow((void **)&c->ctx, &c->ctx_cap, sizeof cx, 1);
	memcpy(c->ctx, &cx, sizeof cx);
	c->ctx_len = sizeof cx;
	if (c->hello_len)
		pending_ctx_frame(c, WIRE_FRAME_HELLO, c->hello, c->hello_len, NULL, 0);
	c->ctx_limit = c->ctx_len + CAPTURE_CONTEXT_MAX;
}

/* A record of the chunk uses string id: the context carries its text once, while there is room. */
static void pending_ctx_use(struct pending_chunk *c, uint32_t id)
{
	if (!id || id >= c->string_cap)
		return;
	struct pending_string *s = &c->strings[id];
	if (s->hello != c->hellos || !s->hello || s->serial == c->serial)
		return;
	struct wire_string ws = {id, s->length};
	if (c->ctx_len + sizeof(struct wire_frame_header) + sizeof ws + s->length > c->ctx_limit)
		return; /* context full: read after its earlier chunks, the name still resolves */
	s->serial = c->serial;
	pending_ctx_frame(c, WIRE_FRAME_STRING, &ws, sizeof ws, c->text + s->offset, s->length);
}

/* Remembers what later chunks repeat (HELLO, strings) and notes the strings this frame uses. */
static void pending_ctx_note(struct pending_chunk *c, uint32_t type, const uint8_t *p, uint32_t length)
{
	switch (type) {
	case WIRE_FRAME_HELLO: {
		/* Repeated in every chunk: a long command line is cut there (the original keeps it). */
		struct wire_hello h;
		size_t keep = length;
		if (length >= sizeof h) {
			memcpy(&h, p, sizeof h);
			if (length - sizeof h > CAPTURE_CONTEXT_ARGV_MAX &&
			    h.cmdline_len == length - sizeof h) {
				keep = sizeof h + CAPTURE_CONTEXT_ARGV_MAX;
				h.cmdline_len = CAPTURE_CONTEXT_ARGV_MAX;
			}
		}
		xgrow((void **)&c->hello, &c->hello_cap, keep ? keep : 1, 1);
		memcpy(c->hello, p, keep);
		if (keep != length)
			memcpy(c->hello, &h, sizeof h);
		c->hello_len = keep;
		c->hellos++; /* a new connection: its ids name other strings */
		break;
	}
	case WIRE_FRAME_STRING: {
		struct wire_string ws;
		if (length < sizeof ws)
			break;
		memcpy(&ws, p, sizeof ws);
		if (ws.length > length - sizeof ws || !ws.id || ws.id > WIRE_MAX_STRING_ID)
			break;
		if (ws.id >= c->string_cap) {
			size_t old = c->string_cap;
			xgrow((void **)&c->strings, &c->string_cap, (size_t)ws.id + 1, sizeof *c->strings);
			memset(c->strings + old, 0, (c->string_cap - old) * sizeof *c->strings);
		}
		xgrow((void **)&c->text, &c->text_cap, c->text_len + ws.length + 1, 1);
		memcpy(c->text + c->text_len, p + sizeof ws, ws.length);
		/* Defined in this chunk: the chunk carries it already. */
		c->strings[ws.id] = (struct pending_string){c->text_len, ws.length, c->hellos, c->serial};
		c->text_len += ws.length;
		break;
	}
	case WIRE_FRAME_EVENTS:
		for (size_t off = 0; off + sizeof(struct wire_event) <= length;
		     off += sizeof(struct wire_event)) {
			struct wire_event ev;
			memcpy(&ev, p + off, sizeof ev);
			pending_ctx_use(c, ev.name_id);
			pending_ctx_use(c, ev.domain_id);
		}
		break;
	case WIRE_FRAME_GPU:
		for (size_t off = 0; off + sizeof(struct wire_gpu_event) <= length;
		     off += sizeof(struct wire_gpu_event)) {
			uint32_t id;
			memcpy(&id, p + off + offsetof(struct wire_gpu_event, name_id), sizeof id);
			pending_ctx_use(c, id);
		}
		break;
	case WIRE_FRAME_GPU_DEVICE:
		if (length >= sizeof(struct wire_gpu_device)) {
			uint32_t id;
			memcpy(&id, p + offsetof(struct wire_gpu_device, name_id), sizeof id);
			pending_ctx_use(c, id);
		}
		break;
	case WIRE_FRAME_STACKS: {
		size_t off = 0;
		while (length - off >= sizeof(struct wire_stack)) {
			struct wire_stack st;
			memcpy(&st, p + off, sizeof st);
			off += sizeof st;
			for (uint32_t i = 0; i < st.depth && length - off >= sizeof(uint32_t); i++) {
				uint32_t id;
				memcpy(&id, p + off, sizeof id);
				pending_ctx_use(c, id);
				off += sizeof id;
			}
		}
		break;
	}
	case WIRE_FRAME_COUNTERS:
		for (size_t off = 0; off + sizeof(struct wire_counter) <= length;
		     off += sizeof(struct wire_counter)) {
			uint32_t id;
			memcpy(&id, p + off + offsetof(struct wire_counter, event_id), sizeof id);
			pending_ctx_use(c, id);
		}
		break;
	}
}

/* Writes a source's pending frames as one chunk, zstd-compressed when that is smaller. */
static int pending_write(struct capture_writer *w, struct pending_chunk *c)
{
	if (!c->len)
		return 0;
	int rc = -1;
	w->next_essential = c->essential;
	c->essential = 0;
	/* The payload: context header, context frames, own frames (see capture.h, version 2). */
	struct capture_context cx = {(uint32_t)(c->ctx_len - sizeof cx), 0};
	memcpy(c->ctx, &cx, sizeof cx);
	xgrow((void **)&c->ctx, &c->ctx_cap, c->ctx_len + c->len, 1);
	memcpy(c->ctx + c->ctx_len, c->buf, c->len);
	const uint8_t *payload = c->ctx;
	size_t payload_len = c->ctx_len + c->len;
	size_t bound = ZSTD_compressBound(payload_len) + sizeof(uint32_t);
	if (w->zstd) {
		xgrow((void **)&w->zbuf, &w->zcap, bound, 1);
		size_t z = ZSTD_compressCCtx(w->zstd, w->zbuf + sizeof(uint32_t), w->zcap - sizeof(uint32_t),
		                             payload, payload_len, ZSTD_LEVEL);
		if (!ZSTD_isError(z) && z + sizeof(uint32_t) < payload_len) {
			uint32_t raw = (uint32_t)payload_len;
			memcpy(w->zbuf, &raw, sizeof raw);
			rc = write_chunk(w, CAPTURE_CHUNK_FRAMES_ZSTD, c->source, w->zbuf, z + sizeof raw,
			                 c->first_ns, c->last_ns, c->events);
		}
	}
	if (rc == -1)
		rc = write_chunk(w, CAPTURE_CHUNK_FRAMES, c->source, payload, payload_len, c->first_ns,
		                 c->last_ns, c->events);
	c->ctx_len = 0;
	c->serial++;
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
	} else if (type == WIRE_FRAME_COST) {
		/* Readings are no events, but their times place the chunk, so a window dump keeps them. */
		stride = sizeof(struct wire_cost);
		offset = offsetof(struct wire_cost, time_ns);
	} else {
		return;
	}
	/* Frames inside a socket stream or chunk are not 8-byte aligned: copy, never dereference. */
	const char *bytes = payload;
	for (size_t i = 0; i < length / stride; i++) {
		uint64_t t;
		memcpy(&t, bytes + i * stride + offset, sizeof t);
		c->events += type != WIRE_FRAME_COST;
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
	if (!c->len)
		pending_ctx_begin(c);
	pending_ctx_note(c, type, payload, length);
	xgrow((void **)&c->buf, &c->cap, c->len + need, 1);
	memcpy(c->buf + c->len, &fh, sizeof fh);
	memcpy(c->buf + c->len + sizeof fh, payload, length);
	c->len += need;
	pending_note_times(c, type, payload, length);
	if (type != WIRE_FRAME_EVENTS && type != WIRE_FRAME_GPU && type != WIRE_FRAME_STACKS &&
	    type != WIRE_FRAME_COUNTERS && type != WIRE_FRAME_LOSSES && type != WIRE_FRAME_COST)
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
		pending_fini(&w->chunks[i]);
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

/* ---- reading ---- */

#define READ_WINDOW (256u << 10)

enum { SOURCE_HELLO = 1, SOURCE_BAD = 2 };

/* One capture being read: bounded buffers, the file's sources and the decoding budget. */
struct reader {
	int fd;
	uint64_t size; /* file size when opened: bytes appended later are not read */
	uint8_t *win;  /* file bytes [win_off, win_off + win_len) */
	uint64_t win_off;
	size_t win_len;
	uint8_t *big; /* a payload larger than the window */
	size_t big_cap;
	uint8_t *raw; /* a decompressed payload */
	size_t raw_cap;
	ZSTD_DCtx *zstd;
	uint64_t expand_left;          /* decompressed bytes still allowed */
	uint64_t records, records_max; /* records read so far, and what the file may hold */
	/* file source numbers -> dense store sources (index + 1) */
	struct hashmap src_map;
	uint32_t *src_number; /* dense source -> file source number */
	size_t src_count, src_number_cap;
	uint8_t *src_state; /* SOURCE_* per dense source */
	size_t src_state_cap;
};

/* Reads up to len bytes at off; returns how many were read (short only at the end or on error). */
static size_t reader_pread(int fd, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;
	while (done < len) {
		ssize_t n = pread(fd, (char *)buf + done, len - done, (off_t)(off + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		done += (size_t)n;
	}
	return done;
}

/* The n file bytes at off (valid until the next call), or NULL when the file does not hold them. */
static const uint8_t *reader_at(struct reader *r, uint64_t off, size_t n)
{
	if (n > r->size || off > r->size - n)
		return NULL;
	if (off >= r->win_off && off - r->win_off + n <= r->win_len)
		return r->win + (off - r->win_off);
	if (n > READ_WINDOW) {
		/* Bounded by the file size, checked above: a length field cannot ask for more. */
		xgrow((void **)&r->big, &r->big_cap, n, 1);
		return reader_pread(r->fd, r->big, n, off) == n ? r->big : NULL;
	}
	size_t want = r->size - off < READ_WINDOW ? (size_t)(r->size - off) : READ_WINDOW;
	r->win_off = off;
	r->win_len = reader_pread(r->fd, r->win, want, off);
	return r->win_len >= n ? r->win : NULL;
}

/* 1 when h is a chunk header with a valid checksum and a plausible length. */
static int reader_header_ok(const struct capture_chunk_header *h)
{
	struct capture_chunk_header c = *h;
	c.header_crc = 0;
	return c.magic == CAPTURE_CHUNK_MAGIC && crc32_update(0, &c, sizeof c) == h->header_crc &&
	       c.length <= CAPTURE_CHUNK_MAX;
}

/* Offset of the next valid chunk header at or after from, or the file size when there is none. */
static uint64_t reader_resync(struct reader *r, uint64_t from)
{
	static const uint8_t magic[4] = {0x43, 0x48, 0x4e, 0x4b}; /* CAPTURE_CHUNK_MAGIC, little-endian */
	uint64_t off = from;
	while (off < r->size && r->size - off >= sizeof(struct capture_chunk_header)) {
		size_t avail = r->size - off < READ_WINDOW ? (size_t)(r->size - off) : READ_WINDOW;
		const uint8_t *p = reader_at(r, off, avail);
		if (!p)
			break;
		const uint8_t *hit = memmem(p, avail, magic, sizeof magic);
		if (!hit) {
			off += avail - (sizeof magic - 1); /* a magic may straddle the window's end */
			continue;
		}
		uint64_t cand = off + (uint64_t)(hit - p);
		const uint8_t *hp = reader_at(r, cand, sizeof(struct capture_chunk_header));
		if (hp) {
			struct capture_chunk_header h;
			memcpy(&h, hp, sizeof h);
			if (reader_header_ok(&h))
				return cand;
		}
		off = cand + 1;
	}
	return r->size;
}

static uint32_t reader_source_hash(uint32_t source)
{
	return source * 2654435761u;
}

struct source_key {
	const struct reader *r;
	uint32_t source;
};

static int reader_source_eq(const void *key, uint32_t ref)
{
	const struct source_key *k = key;
	return k->r->src_number[ref - 1] == k->source;
}

static uint64_t reader_source_rehash(const void *ctx, uint32_t ref)
{
	const struct reader *r = ctx;
	return reader_source_hash(r->src_number[ref - 1]);
}

/* Dense store source of a file source number, added when new; -1 past CAPTURE_SOURCES_MAX. */
static long reader_source(struct reader *r, uint32_t source)
{
	hashmap_reserve(&r->src_map, 64, reader_source_rehash, r, xcalloc);
	struct source_key key = {r, source};
	uint32_t *slot = hashmap_slot(&r->src_map, reader_source_hash(source), reader_source_eq, &key);
	if (*slot)
		return (long)*slot - 1;
	if (r->src_count >= CAPTURE_SOURCES_MAX)
		return -1;
	xgrow((void **)&r->src_number, &r->src_number_cap, r->src_count + 1, sizeof *r->src_number);
	r->src_number[r->src_count] = source;
	hashmap_fill(&r->src_map, slot, (uint32_t)++r->src_count);
	xgrow((void **)&r->src_state, &r->src_state_cap, r->src_count, 1);
	r->src_state[r->src_count - 1] = 0;
	return (long)r->src_count - 1;
}

/* Records in one frame (what the store may keep one of each): events, GPU ops, stacks, counters. */
static uint64_t reader_records(uint32_t type, const uint8_t *p, uint32_t length)
{
	switch (type) {
	case WIRE_FRAME_EVENTS:
		return length / sizeof(struct wire_event);
	case WIRE_FRAME_GPU:
		return length / sizeof(struct wire_gpu_event);
	case WIRE_FRAME_COUNTERS:
		return length / sizeof(struct wire_counter);
	case WIRE_FRAME_COST:
		return length / sizeof(struct wire_cost);
	case WIRE_FRAME_STACKS: {
		uint64_t n = 0;
		size_t off = 0;
		while (length - off >= sizeof(struct wire_stack)) {
			struct wire_stack st;
			memcpy(&st, p + off, sizeof st);
			off += sizeof st + (size_t)st.depth * 4u;
			n++;
			if (off > length)
				break;
		}
		return n;
	}
	default:
		return 1;
	}
}

/*
 * Ingests the frames of one verified chunk region. In a context region only a HELLO the source
 * lacks and STRING frames are taken (both are repeats of what earlier chunks carried). 0 or -EPROTO.
 */
static int reader_ingest(struct reader *r, struct store *store, size_t dense, uint8_t *state,
                         const uint8_t *p, size_t len, int context, const char **cause)
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
		int take = 1;
		if (context)
			take = fh.type == WIRE_FRAME_STRING ||
			       (fh.type == WIRE_FRAME_HELLO && !(*state & SOURCE_HELLO));
		if (take) {
			r->records += reader_records(fh.type, p + off, fh.length);
			int rc = store_feed(store, (int)dense, fh.type, p + off, fh.length, cause);
			if (rc)
				return rc;
			if (fh.type == WIRE_FRAME_HELLO)
				*state |= SOURCE_HELLO;
		}
		off += fh.length;
	}
	return 0;
}

/* Decodes and ingests one FRAMES chunk; 0, -EPROTO (the chunk is damaged) or -EFBIG (over budget). */
static int reader_frames(struct reader *r, struct store *store, uint32_t version,
                         const struct capture_chunk_header *ch, const uint8_t *payload, size_t dense,
                         struct capture_read_result *res)
{
	const uint8_t *frames = payload;
	size_t frames_len = ch->length;
	uint8_t *state = &r->src_state[dense];
	if (version < 2 && (*state & SOURCE_BAD))
		return -EPROTO; /* version 1: later frames lack the names and identity the lost ones held */
	if (ch->type == CAPTURE_CHUNK_FRAMES_ZSTD) {
		uint32_t raw;
		if (ch->length < sizeof raw)
			return -EPROTO;
		memcpy(&raw, payload, sizeof raw);
		unsigned long long declared =
		    ZSTD_getFrameContentSize(payload + sizeof raw, ch->length - sizeof raw);
		/* Every bound is checked before the buffer is sized. */
		if (raw > CAPTURE_FRAMES_MAX || declared != raw)
			return -EPROTO;
		if (raw > r->expand_left)
			return -EFBIG;
		if (!r->zstd && !(r->zstd = ZSTD_createDCtx()))
			return -ENOMEM;
		xgrow((void **)&r->raw, &r->raw_cap, raw ? raw : 1, 1);
		size_t got =
		    ZSTD_decompressDCtx(r->zstd, r->raw, raw, payload + sizeof raw, ch->length - sizeof raw);
		if (ZSTD_isError(got) || got != raw)
			return -EPROTO;
		r->expand_left -= raw;
		frames = r->raw;
		frames_len = raw;
		res->compressed_chunks++;
	} else if (ch->length > CAPTURE_FRAMES_MAX) {
		return -EPROTO;
	}
	const char *why = NULL;
	uint64_t events_before = store_event_count(store);
	int rc;
	if (version >= 2) {
		struct capture_context cx;
		if (frames_len < sizeof cx)
			return -EPROTO;
		memcpy(&cx, frames, sizeof cx);
		if (cx.context_bytes > frames_len - sizeof cx)
			return -EPROTO;
		rc = reader_ingest(r, store, dense, state, frames + sizeof cx, cx.context_bytes, 1, &why);
		if (!rc)
			rc = reader_ingest(r, store, dense, state, frames + sizeof cx + cx.context_bytes,
			                   frames_len - sizeof cx - cx.context_bytes, 0, &why);
	} else {
		rc = reader_ingest(r, store, dense, state, frames, frames_len, 0, &why);
		if (rc)
			*state |= SOURCE_BAD;
	}
	if (rc)
		return -EPROTO;
	res->frame_bytes += frames_len;
	res->events += store_event_count(store) - events_before;
	return 0;
}

/*
 * The decoded bytes the file's zstd chunks declare, from chunk headers alone (up to the first
 * damaged one): a bomb is refused before anything is decoded or allocated for it.
 */
static uint64_t reader_declared_raw(struct reader *r)
{
	uint64_t off = sizeof(struct capture_file_header), total = 0;
	struct capture_chunk_header h;
	while (r->size - off >= sizeof h) {
		const uint8_t *hp = reader_at(r, off, sizeof h);
		if (!hp)
			break;
		memcpy(&h, hp, sizeof h);
		if (!reader_header_ok(&h) || h.length > r->size - off - sizeof h ||
		    h.type == CAPTURE_CHUNK_END)
			break;
		uint32_t raw;
		const uint8_t *rp = h.type == CAPTURE_CHUNK_FRAMES_ZSTD && h.length >= sizeof raw
		                        ? reader_at(r, off + sizeof h, sizeof raw)
		                        : NULL;
		if (rp) {
			memcpy(&raw, rp, sizeof raw);
			if (raw <= CAPTURE_FRAMES_MAX) /* larger ones are refused chunk by chunk */
				total += raw;
		}
		off += sizeof h + h.length;
	}
	return total;
}

static void reader_fini(struct reader *r)
{
	if (r->fd >= 0)
		close(r->fd);
	free(r->win);
	free(r->big);
	free(r->raw);
	ZSTD_freeDCtx(r->zstd);
	hashmap_fini(&r->src_map);
	free(r->src_number);
	free(r->src_state);
}

/* Appends a MANIFEST chunk's text (up to CAPTURE_MANIFEST_MAX in all), in time linear in its size. */
static void reader_manifest(struct capture_read_result *res, size_t *len, size_t *cap, const uint8_t *text,
                            size_t n)
{
	if (*len + n > CAPTURE_MANIFEST_MAX) {
		res->manifest_skipped++;
		return;
	}
	xgrow((void **)&res->manifest, cap, *len + n + 1, 1);
	memcpy(res->manifest + *len, text, n);
	*len += n;
	res->manifest[*len] = '\0';
}

/* Opens path for reading: a regular file only (a FIFO would block, a device never end). */
static int reader_open(struct reader *r, const char *path, char *msg_buf, size_t msg_size, const char **cause)
{
	r->fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (r->fd < 0) {
		int err = errno;
		snprintf(msg_buf, msg_size, "cannot open %s: %s", path, strerror(err));
		*cause = msg_buf;
		return -err;
	}
	struct stat st;
	if (fstat(r->fd, &st) != 0) {
		int err = errno;
		snprintf(msg_buf, msg_size, "cannot read %s: %s", path, strerror(err));
		*cause = msg_buf;
		return -err;
	}
	if (S_ISDIR(st.st_mode)) {
		snprintf(msg_buf, msg_size, "%s is a directory, not a capture file", path);
		*cause = msg_buf;
		return -EISDIR;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(msg_buf, msg_size, "%s is not a regular file (captures are read from files only)",
		         path);
		*cause = msg_buf;
		return -EINVAL;
	}
	r->size = (uint64_t)st.st_size;
	r->win = xmalloc(READ_WINDOW);
	uint64_t allowed = CAPTURE_EXPAND_BASE + (uint64_t)CAPTURE_EXPAND_RATIO * r->size;
	r->expand_left = allowed;
	r->records_max = CAPTURE_EVENTS_BASE + (uint64_t)CAPTURE_EVENTS_PER_BYTE * r->size;
	return 0;
}

int capture_read(const char *path, struct store *store, struct capture_read_result *res, char *msg_buf,
                 size_t msg_size, const char **cause)
{
	memset(res, 0, sizeof *res);
	struct reader r;
	memset(&r, 0, sizeof r);
	int rc = reader_open(&r, path, msg_buf, msg_size, cause);
	if (rc) {
		reader_fini(&r);
		return rc;
	}
	struct capture_file_header h;
	const uint8_t *hp = reader_at(&r, 0, sizeof h);
	if (hp)
		memcpy(&h, hp, sizeof h);
	if (!hp || memcmp(h.magic, CAPTURE_MAGIC, 8) != 0) {
		reader_fini(&r);
		snprintf(msg_buf, msg_size, "%s is not a cuscope capture file", path);
		*cause = msg_buf;
		return -EPROTO;
	}
	if (h.version > CAPTURE_VERSION || (h.features & ~CAPTURE_FEATURES_KNOWN) ||
	    h.wire_version > WIRE_VERSION) {
		reader_fini(&r);
		snprintf(msg_buf, msg_size,
		         "%s was written by a newer cuscope (capture format %u, wire %u, features 0x%llx; "
		         "this one reads "
		         "format %u, wire %u, features 0x%llx)",
		         path, h.version, h.wire_version, (unsigned long long)h.features, CAPTURE_VERSION,
		         WIRE_VERSION, (unsigned long long)CAPTURE_FEATURES_KNOWN);
		*cause = msg_buf;
		return -EPROTO;
	}
	if (h.header_size != sizeof h || h.byte_order != 0x01020304u || h.version == 0) {
		reader_fini(&r);
		snprintf(msg_buf, msg_size, "%s has an unsupported capture header", path);
		*cause = msg_buf;
		return -EPROTO;
	}
	res->version = h.version;
	if (reader_declared_raw(&r) > r.expand_left) {
		reader_fini(&r);
		snprintf(msg_buf, msg_size,
		         "%s decodes to more than %u times its size: refusing it (damaged or crafted)", path,
		         CAPTURE_EXPAND_RATIO);
		*cause = msg_buf;
		return -EFBIG;
	}
	int ended = 0;
	size_t manifest_len = 0, manifest_cap = 0;
	uint64_t off = sizeof h;
	while (off < r.size) {
		struct capture_chunk_header ch;
		res->chunks_total++;
		hp = reader_at(&r, off, sizeof ch);
		if (!hp) {
			res->truncated = 1;
			break;
		}
		memcpy(&ch, hp, sizeof ch);
		if (!reader_header_ok(&ch)) {
			/* Its length cannot be trusted: look for the next chunk that proves itself. */
			res->chunks_corrupt++;
			uint64_t next = reader_resync(&r, off + 1);
			res->resync_bytes += next - off;
			off = next;
			continue;
		}
		if (ch.length > r.size - off - sizeof ch) {
			res->truncated = 1;
			break;
		}
		const uint8_t *payload = reader_at(&r, off + sizeof ch, ch.length);
		off += sizeof ch + ch.length;
		if (!payload) {
			res->truncated = 1;
			break;
		}
		int is_frames = ch.type == CAPTURE_CHUNK_FRAMES || ch.type == CAPTURE_CHUNK_FRAMES_ZSTD;
		long dense = is_frames ? reader_source(&r, ch.source) : 0;
		if (dense < 0) {
			rc = -E2BIG;
			snprintf(msg_buf, msg_size, "%s holds more than %u process streams: refusing it",
			         path, CAPTURE_SOURCES_MAX);
			break;
		}
		if (crc32_update(0, payload, ch.length) != ch.payload_crc) {
			res->chunks_corrupt++;
			if (is_frames)
				r.src_state[dense] |= SOURCE_BAD;
			continue;
		}
		if (ch.type == CAPTURE_CHUNK_END) {
			res->chunks_ok++;
			ended = 1;
			break;
		}
		if (ch.type == CAPTURE_CHUNK_MANIFEST) {
			reader_manifest(res, &manifest_len, &manifest_cap, payload, ch.length);
			res->chunks_ok++;
			continue;
		}
		if (ch.type == CAPTURE_CHUNK_INDEX)
			res->has_index = 1;
		if (!is_frames) {
			res->chunks_ok++; /* index, or an optional chunk from a newer writer */
			continue;
		}
		int frc = reader_frames(&r, store, h.version, &ch, payload, (size_t)dense, res);
		if (frc == -EFBIG || frc == -ENOMEM) {
			rc = frc;
			snprintf(
			    msg_buf, msg_size,
			    "%s decodes to more than %u times its size: refusing it (damaged or crafted)",
			    path, CAPTURE_EXPAND_RATIO);
			break;
		}
		if (frc)
			res->chunks_corrupt++;
		else
			res->chunks_ok++;
		/* Records cost the store memory: checked after each chunk, so one chunk is the overshoot. */
		if (r.records > r.records_max) {
			rc = -EFBIG;
			snprintf(msg_buf, msg_size,
			         "%s holds more than %u records per byte: refusing it (damaged or crafted)",
			         path, CAPTURE_EVENTS_PER_BYTE);
			break;
		}
	}
	res->file_bytes = r.size;
	if (!ended)
		res->truncated = 1;
	/* A capture is history: no process in it is connected. */
	for (size_t i = 0; i < r.src_count; i++)
		store_source_closed(store, (int)i);
	reader_fini(&r);
	if (rc) {
		free(res->manifest);
		res->manifest = NULL;
		*cause = msg_buf;
		return rc;
	}
	if (res->chunks_ok == 0 && store_process_count(store) == 0) {
		snprintf(msg_buf, msg_size, "%s holds no readable chunk (%u damaged)", path,
		         res->chunks_total);
		*cause = msg_buf;
		return -EPROTO;
	}
	return 0;
}
