/*
 * Capture files: the lasting native format. A 64-byte file header, then chunks, each a 40-byte
 * header (type, source stream, time range, CRC-32 of payload and of the header) and a payload.
 * FRAMES chunks hold whole wire frames of one source (a traced process connection) in order, so
 * reading a capture replays exactly what a live viewer received. A MANIFEST chunk holds
 * "key=value" lines; an END chunk marks a clean close. A reader needs nothing but the chunks it
 * can verify: a truncated or partly corrupt file still yields its intact chunks.
 *
 * Version 2: every FRAMES chunk decodes on its own. Its (decompressed) payload starts with a
 * struct capture_context and the context frames: the source's HELLO and a STRING frame for each
 * name its records use (up to CAPTURE_CONTEXT_MAX bytes; the HELLO's command line cut to
 * CAPTURE_CONTEXT_ARGV_MAX), then the chunk's own frames. A reader
 * takes the context only where earlier chunks of the source are missing or damaged, so a damaged
 * chunk costs only its own records; after a damaged chunk header it scans for the next valid one.
 * Version 1 files (no context) still read.
 */
#ifndef CUSCOPE_CAPTURE_H
#define CUSCOPE_CAPTURE_H

#include <stddef.h>
#include <stdint.h>

#define CAPTURE_MAGIC                                                                                        \
	"\x89"                                                                                               \
	"CUSCAP\n" /* 8 bytes, no NUL; catches text-mode mangling */
#define CAPTURE_VERSION          2u
#define CAPTURE_CHUNK_MAGIC      0x4b4e4843u /* "CHNK" */
#define CAPTURE_CHUNK_MAX        (64u << 20)
#define CAPTURE_CONTEXT_MAX      (256u << 10) /* string bytes a writer repeats per chunk (beyond: not) */
#define CAPTURE_CONTEXT_ARGV_MAX 4096u        /* command line bytes of the HELLO repeated per chunk */
/* Largest decoded FRAMES payload: context (a HELLO, strings) plus a chunk's frames (writers fill
 * 256 KiB, a frame is at most WIRE_MAX_FRAME). */
#define CAPTURE_FRAMES_MAX (4u << 20)
/*
 * Readers decode at most CAPTURE_EXPAND_RATIO bytes of frames per file byte (plus a base) and take
 * at most CAPTURE_EVENTS_PER_BYTE records per file byte (plus a base): a zstd bomb stops there, in
 * time and memory linear in the file. Real captures: 2-12x and 0.05-0.3 records per byte; deep
 * stacks sampled at a high rate compress up to ~100x but are few records per byte.
 */
#define CAPTURE_EXPAND_RATIO    256u
#define CAPTURE_EXPAND_BASE     (64ull << 20)
#define CAPTURE_EVENTS_PER_BYTE 2u
#define CAPTURE_EVENTS_BASE     (2ull << 20)
#define CAPTURE_MANIFEST_MAX    (4u << 20) /* manifest text kept, bytes (further MANIFEST chunks: skipped) */
#define CAPTURE_SOURCES_MAX     16384u     /* process streams a reader takes from one file */

enum capture_chunk_type {
	CAPTURE_CHUNK_FRAMES = 1,      /* wire frames, stored as they are */
	CAPTURE_CHUNK_MANIFEST = 2,    /* key=value lines */
	CAPTURE_CHUNK_END = 3,         /* struct capture_end: clean close */
	CAPTURE_CHUNK_FRAMES_ZSTD = 4, /* uint32 raw length, then one zstd frame holding wire frames */
	CAPTURE_CHUNK_INDEX = 5,       /* array of struct capture_index_entry: every chunk before it */
};

/* One entry of the time index written at close, so a reader can seek by time. */
struct capture_index_entry {
	uint64_t offset;   /* file offset of the chunk header */
	uint64_t first_ns; /* time range of the chunk's events (0 when none) */
	uint64_t last_ns;
	uint32_t type;
	uint32_t source;
	uint32_t length; /* stored payload bytes */
	uint32_t events; /* wire events and GPU records inside */
};
_Static_assert(sizeof(struct capture_index_entry) == 40, "capture_index_entry layout");

struct capture_end {
	uint32_t chunk_count; /* chunks before END, INDEX included */
	uint32_t reserved;
	uint64_t index_offset; /* file offset of the INDEX chunk header, 0 if none */
};
_Static_assert(sizeof(struct capture_end) == 16, "capture_end layout");

/* Feature bits a reader must understand to read the file (none defined yet). */
#define CAPTURE_FEATURES_KNOWN 0ull

struct capture_file_header {
	char magic[8];
	uint32_t version;     /* CAPTURE_VERSION */
	uint32_t header_size; /* sizeof(struct capture_file_header) */
	uint64_t features;    /* required feature bits */
	uint64_t created_real_ns;
	uint32_t wire_version; /* WIRE_VERSION of the frames inside */
	uint32_t byte_order;   /* 0x01020304 as written by the producer */
	uint8_t reserved[24];
};
_Static_assert(sizeof(struct capture_file_header) == 64, "capture_file_header layout");

/* Start of a version 2 FRAMES payload: context_bytes of context frames follow, then the chunk's own. */
struct capture_context {
	uint32_t context_bytes;
	uint32_t reserved;
};
_Static_assert(sizeof(struct capture_context) == 8, "capture_context layout");

struct capture_chunk_header {
	uint32_t magic;       /* CAPTURE_CHUNK_MAGIC */
	uint32_t type;        /* enum capture_chunk_type */
	uint32_t source;      /* stream number of the frames (one per process connection) */
	uint32_t length;      /* payload bytes */
	uint64_t first_ns;    /* earliest event time in the chunk, CLOCK_MONOTONIC (0 if none) */
	uint64_t last_ns;     /* latest event time in the chunk */
	uint32_t payload_crc; /* CRC-32 of the payload */
	uint32_t header_crc;  /* CRC-32 of this header with header_crc = 0 */
};
_Static_assert(sizeof(struct capture_chunk_header) == 40, "capture_chunk_header layout");

struct store;
struct capture_writer;

/*
 * Creates a capture at path as path.partial (0600, never through a link; see safefs.h), renamed
 * onto path by a clean close; "-", a device or a FIFO is written in place. Returns NULL with
 * errno-style *err and a static *cause.
 */
struct capture_writer *capture_writer_open(const char *path, int *err, const char **cause);
/* The file being written (path.partial), or NULL when written in place. */
const char *capture_writer_partial_path(const struct capture_writer *w);
/* Appends one wire frame of a source; chunks are written as they fill. 0 or -errno. */
int capture_writer_frame(struct capture_writer *w, uint32_t source, uint32_t type, const void *payload,
                         uint32_t length);
/* Writes a MANIFEST chunk (key=value lines). */
int capture_writer_manifest(struct capture_writer *w, const char *text, size_t length);
/* Writes out every partly filled chunk (call periodically so a killed recorder loses little). */
int capture_writer_flush(struct capture_writer *w);
/*
 * Flushes, writes END, closes, renames path.partial onto path and frees; 0 or -errno (then
 * path.partial stays, readable up to the error, and path is untouched).
 */
int capture_writer_close(struct capture_writer *w);
/* Closes and frees, removing path.partial: nothing was recorded; path stays as it was. */
void capture_writer_abandon(struct capture_writer *w);

/*
 * A copy of what a live writer has written so far, made step by step so the live view keeps
 * drawing: the chunks overlapping [from_ns, to_ns] plus every chunk holding process identity or
 * names (so the copy reads on its own), then a fresh INDEX and END.
 */
struct capture_snapshot;
/* Starts copying w's file to dest (as dest.partial, see capture_writer_open); NULL with *cause. */
struct capture_snapshot *capture_snapshot_start(struct capture_writer *w, const char *dest, uint64_t from_ns,
                                                uint64_t to_ns, const char **cause);
/* Copies up to budget bytes; returns 1 when finished, 0 to call again, -errno on failure. */
int capture_snapshot_step(struct capture_snapshot *snap, size_t budget);
/* Progress: bytes copied and total; frees with capture_snapshot_free. */
void capture_snapshot_progress(const struct capture_snapshot *snap, uint64_t *done, uint64_t *total);
void capture_snapshot_free(struct capture_snapshot *snap);

struct capture_read_result {
	unsigned chunks_total;   /* chunk headers found (including damaged ones) */
	unsigned chunks_ok;      /* chunks verified and ingested */
	unsigned chunks_corrupt; /* chunks skipped because a checksum or frame failed */
	int truncated;           /* the file ends without an END chunk */
	char *manifest;          /* malloc'd manifest text (all MANIFEST chunks joined) or NULL */
	uint64_t file_bytes;     /* size of the file */
	uint64_t frame_bytes;    /* wire frame bytes after decompression */
	uint64_t events;         /* wire events + GPU records read */
	uint64_t compressed_chunks;
	int has_index;             /* an INDEX chunk was found */
	uint32_t version;          /* capture format of the file */
	unsigned manifest_skipped; /* MANIFEST chunks beyond CAPTURE_MANIFEST_MAX */
	uint64_t resync_bytes;     /* bytes skipped looking for a valid chunk header */
	unsigned sources;          /* process streams of the file (store sources it used) */
};

/* How capture_read_with reads a file (all zero: as capture_read). */
struct capture_read_options {
	int64_t shift_ns; /* added to every CLOCK_MONOTONIC time of the file (one axis for many) */
	/* A clock running at another rate: a time t also moves by drift * (t - drift_origin_ns). */
	double drift;
	uint64_t drift_origin_ns;
	int source_base;   /* store source of the file's first process stream (after earlier files') */
	int stop_at_hello; /* stop after the first chunk that announced a process (to read its anchor) */
};

/*
 * Reads a capture into store. Returns 0 when at least the header and one chunk were usable
 * (warnings for truncation/corruption are printed by the caller from *result), or -EPROTO /
 * -errno with a one-line *cause (static or in msg_buf) for a foreign, newer, unreadable or
 * not regular file (a FIFO or device is refused, never read), or one whose frames decode to
 * more than CAPTURE_EXPAND_RATIO times its size or hold more than CAPTURE_EVENTS_PER_BYTE records per
 * byte (-EFBIG). Time and memory are linear in the file.
 */
int capture_read(const char *path, struct store *store, struct capture_read_result *result, char *msg_buf,
                 size_t msg_size, const char **cause);
/* capture_read with options (several captures into one store, see cli_load_captures). */
int capture_read_with(const char *path, struct store *store, const struct capture_read_options *opts,
                      struct capture_read_result *result, char *msg_buf, size_t msg_size, const char **cause);

/*
 * Moves every CLOCK_MONOTONIC time of one frame by shift_ns, in place (0, "none", stays 0): the
 * reader's own shift, for frames that arrive live from another host (attach --ssh). The frame must
 * be of today's layout and have passed wire_frame_check.
 */
void capture_frame_shift(uint32_t type, void *frame, uint32_t length, int64_t shift_ns);
/* A time's new value (a monotonic map: later times stay later). */
typedef uint64_t (*capture_move_fn)(void *ctx, uint64_t t);
/* As capture_frame_shift, each time t becoming move(ctx, t): a move that varies with time. */
void capture_frame_move(uint32_t type, void *frame, uint32_t length, capture_move_fn move, void *ctx);

#endif
