/*
 * Capture reader: walks a capture file's chunks within bounded buffers and budgets (window,
 * decompressed total, records), resynchronises past damage, and feeds each source's frames to a store.
 */
#include "cuscope/capture.h"
#include "cuscope/crc32.h"
#include "cuscope/hashmap.h"
#include "cuscope/store.h"
#include "cuscope/wire.h"
#include "cuscope/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

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
	uint32_t wire_version; /* protocol version of the file's frames (the header's) */
	uint8_t *upgraded;     /* a frame of an older version in today's layout */
	size_t upgraded_cap;
	const struct capture_read_options *opts;
	uint8_t *shifted; /* a frame with its times moved by opts->shift_ns */
	size_t shifted_cap;
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
	case WIRE_FRAME_GPU_METRICS:
		return length / sizeof(struct wire_gpu_metric);
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

/* The move capture_read_options give a time t (a shift, and a drift about its origin). */
static uint64_t reader_opts_move(void *ctx, uint64_t t)
{
	const struct capture_read_options *opts = ctx;
	uint64_t delta = (uint64_t)opts->shift_ns;
	if (opts->drift != 0) /* the caller keeps the sum >= 0 over the file's span */
		delta += (uint64_t)llround(opts->drift * (double)(int64_t)(t - opts->drift_origin_ns));
	return t + delta;
}

struct reader_mover {
	capture_move_fn move;
	void *ctx;
};

/* Moves the CLOCK_MONOTONIC time at p through m (0 stays 0: "none"). */
static void reader_shift_at(uint8_t *p, const struct reader_mover *m)
{
	uint64_t t;
	memcpy(&t, p, sizeof t);
	if (t) {
		t = m->move(m->ctx, t);
		memcpy(p, &t, sizeof t);
	}
}

/* Moves every CLOCK_MONOTONIC time of a frame (today's layout, checked) through o, in place. */
static void reader_shift(uint32_t type, uint8_t *p, uint32_t length, const struct reader_mover *o)
{
	switch (type) {
	case WIRE_FRAME_HELLO:
		reader_shift_at(p + offsetof(struct wire_hello, start_mono_ns), o);
		reader_shift_at(p + offsetof(struct wire_hello, anchor_mono_ns), o);
		break;
	case WIRE_FRAME_EVENTS:
		for (size_t off = 0; length - off >= sizeof(struct wire_event);
		     off += sizeof(struct wire_event)) {
			uint16_t kind;
			memcpy(&kind, p + off + offsetof(struct wire_event, kind), sizeof kind);
			reader_shift_at(p + off + offsetof(struct wire_event, time_ns), o);
			if (kind == WIRE_EV_OSRT || kind == WIRE_EV_GC) /* value is the end time */
				reader_shift_at(p + off + offsetof(struct wire_event, value), o);
		}
		break;
	case WIRE_FRAME_GPU:
		for (size_t off = 0; length - off >= sizeof(struct wire_gpu_event);
		     off += sizeof(struct wire_gpu_event)) {
			reader_shift_at(p + off + offsetof(struct wire_gpu_event, start_ns), o);
			reader_shift_at(p + off + offsetof(struct wire_gpu_event, end_ns), o);
		}
		break;
	case WIRE_FRAME_STACKS:
		for (size_t off = 0; off <= length && length - off >= sizeof(struct wire_stack);) {
			struct wire_stack st;
			memcpy(&st, p + off, sizeof st);
			reader_shift_at(p + off + offsetof(struct wire_stack, time_ns), o);
			off += sizeof st + (size_t)st.depth * 4u;
		}
		break;
	case WIRE_FRAME_COUNTERS:
		for (size_t off = 0; length - off >= sizeof(struct wire_counter);
		     off += sizeof(struct wire_counter))
			reader_shift_at(p + off + offsetof(struct wire_counter, time_ns), o);
		break;
	case WIRE_FRAME_COST:
		for (size_t off = 0; length - off >= sizeof(struct wire_cost);
		     off += sizeof(struct wire_cost))
			reader_shift_at(p + off + offsetof(struct wire_cost, time_ns), o);
		break;
	case WIRE_FRAME_GPU_METRICS:
		for (size_t off = 0; length - off >= sizeof(struct wire_gpu_metric);
		     off += sizeof(struct wire_gpu_metric)) {
			reader_shift_at(p + off + offsetof(struct wire_gpu_metric, start_ns), o);
			reader_shift_at(p + off + offsetof(struct wire_gpu_metric, end_ns), o);
		}
		break;
	case WIRE_FRAME_BYE:
		if (length >= sizeof(struct wire_bye))
			reader_shift_at(p + offsetof(struct wire_bye, time_ns), o);
		break;
	default: /* no times: strings, losses, devices, notices, exits */
		break;
	}
}

void capture_frame_shift(uint32_t type, void *frame, uint32_t length, int64_t shift_ns)
{
	struct capture_read_options o = {.shift_ns = shift_ns};
	struct reader_mover m = {reader_opts_move, &o};
	if (shift_ns)
		reader_shift(type, frame, length, &m);
}

void capture_frame_move(uint32_t type, void *frame, uint32_t length, capture_move_fn move, void *ctx)
{
	struct reader_mover m = {move, ctx};
	reader_shift(type, frame, length, &m);
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
			const uint8_t *frame = p + off;
			uint32_t frame_len = fh.length;
			if (r->wire_version != WIRE_VERSION) {
				/* Frames written by an older protocol version: the store reads today's only.
				 */
				xgrow((void **)&r->upgraded, &r->upgraded_cap,
				      (size_t)fh.length + WIRE_UPGRADE_GROWTH, 1);
				int up = wire_frame_upgrade(r->wire_version, fh.type, frame, fh.length,
				                            r->upgraded, &frame_len, cause);
				if (up < 0)
					return up;
				if (up)
					frame = r->upgraded;
				else
					frame_len = fh.length;
			}
			if ((r->opts->shift_ns || r->opts->drift != 0) && frame_len) {
				/* Checked first, so the shift reads only fields the frame holds. */
				int bad = wire_frame_check(fh.type, frame, frame_len, cause);
				if (bad)
					return bad;
				xgrow((void **)&r->shifted, &r->shifted_cap, frame_len, 1);
				memcpy(r->shifted, frame, frame_len);
				struct reader_mover m = {reader_opts_move, (void *)r->opts};
				reader_shift(fh.type, r->shifted, frame_len, &m);
				frame = r->shifted;
			}
			int rc = store_feed(store, r->opts->source_base + (int)dense, fh.type, frame,
			                    frame_len, cause);
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
	free(r->upgraded);
	free(r->shifted);
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
	static const struct capture_read_options plain;
	return capture_read_with(path, store, &plain, res, msg_buf, msg_size, cause);
}

int capture_read_with(const char *path, struct store *store, const struct capture_read_options *opts,
                      struct capture_read_result *res, char *msg_buf, size_t msg_size, const char **cause)
{
	memset(res, 0, sizeof *res);
	struct reader r;
	memset(&r, 0, sizeof r);
	r.opts = opts;
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
	if (h.header_size != sizeof h || h.byte_order != 0x01020304u || h.version == 0 ||
	    h.wire_version == 0) {
		reader_fini(&r);
		snprintf(msg_buf, msg_size, "%s has an unsupported capture header", path);
		*cause = msg_buf;
		return -EPROTO;
	}
	res->version = h.version;
	r.wire_version = h.wire_version;
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
		if (opts->stop_at_hello && store_process_count(store))
			break;
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
		store_source_closed(store, opts->source_base + (int)i);
	res->sources = (unsigned)r.src_count;
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
