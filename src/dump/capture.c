#include "cuscope/capture.h"
#include "cuscope/clock.h"
#include "cuscope/crc32.h"
#include "cuscope/safefs.h"
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
	case WIRE_FRAME_GPU_METRICS:
		for (size_t off = 0; off + sizeof(struct wire_gpu_metric) <= length;
		     off += sizeof(struct wire_gpu_metric)) {
			uint32_t id;
			memcpy(&id, p + off + offsetof(struct wire_gpu_metric, metric_id), sizeof id);
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
	} else if (type == WIRE_FRAME_GPU_METRICS) {
		stride = sizeof(struct wire_gpu_metric);
		offset = offsetof(struct wire_gpu_metric, start_ns);
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
	    type != WIRE_FRAME_COUNTERS && type != WIRE_FRAME_LOSSES && type != WIRE_FRAME_COST &&
	    type != WIRE_FRAME_GPU_METRICS)
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
		/* The INDEX payload is w->index itself: room for its own entry and END's first, so that
		 * write_chunk's growth never moves the array under the payload it is writing. */
		xgrow((void **)&w->index, &w->index_cap, entries + 2, sizeof *w->index);
		xgrow((void **)&w->essential, &w->essential_cap, entries + 2, 1);
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
