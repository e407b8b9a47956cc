/*
 * The relay (`cuscope relay`, what `attach --ssh` runs on each node): this user's armed sessions
 * on one node multiplexed onto one byte stream (the SSH channel's stdout), and the decoder the
 * viewer side reads it with.
 *
 * Stream: one text line "cuscope-relay PROTO VERSION HOST\n", then records of a struct
 * relay_header and length payload bytes. Integers are little-endian host order (as wire.h).
 * Sources are numbered by the relay from 0 in the order it first saw them; one is never reused.
 */
#ifndef CUSCOPE_RELAY_H
#define CUSCOPE_RELAY_H

#include <stddef.h>
#include <stdint.h>

#define RELAY_PROTO       1
#define RELAY_LINE_PREFIX "cuscope-relay "
#define RELAY_LINE_MAX    512
/* Bytes a relay holds for a slow stdout; past it, frames are dropped and counted per source. */
#define RELAY_BUFFER_BYTES (8u << 20)

enum relay_kind {
	RELAY_FRAME = 1,  /* a collector's frame: type is its wire frame type, payload its payload */
	RELAY_LOSS = 2,   /* struct relay_loss: totals this source lost in the relay (newest wins) */
	RELAY_CLOSED = 3, /* the source's connection ended */
	RELAY_ERROR = 4,  /* one line of text about source (a protocol error, a refusal) */
	RELAY_KIND_MAX
};

struct relay_header {
	uint32_t kind;   /* enum relay_kind */
	uint32_t source; /* the relay's source number */
	uint32_t type;   /* RELAY_FRAME: the wire frame type, else 0 */
	uint32_t length; /* payload bytes that follow, <= WIRE_MAX_FRAME */
};
_Static_assert(sizeof(struct relay_header) == 16, "relay_header layout");

struct relay_loss {
	uint64_t frames; /* frames dropped since the source was first seen */
	uint64_t bytes;  /* their payload bytes */
};
_Static_assert(sizeof(struct relay_loss) == 16, "relay_loss layout");

struct relay_options {
	const char *job;  /* only processes whose environment has SLURM_JOB_ID=job; NULL = all */
	const char *host; /* the name to announce; NULL = gethostname() */
};

/*
 * Runs the relay on stdin/stdout until stdin closes (or stdout fails); a slow stdout never stops
 * the collectors being read. Returns the exit status.
 */
int relay_run(const struct relay_options *opts);

/* This cuscope's version, as a relay announces it (the two ends must be equal). */
const char *relay_version(void);

/* Reading a relay's stream (the viewer side). */
struct relay_decoder {
	char line[RELAY_LINE_MAX]; /* the first line, until complete */
	size_t line_len;
	int have_line;
	char host[256];   /* as the relay announced it */
	char version[64]; /* the relay's cuscope version */
	uint8_t *buf;     /* record bytes not dispatched yet */
	size_t len, cap;
};

struct relay_sink {
	void *ctx;
	/* One record; payload holds length bytes. A non-zero return stops decoding. */
	int (*record)(void *ctx, const struct relay_header *h, const void *payload);
};

void relay_decoder_init(struct relay_decoder *d);
void relay_decoder_fini(struct relay_decoder *d);
/*
 * Feeds n bytes read from a relay. 0, the sink's non-zero return, or -EPROTO with one line in
 * cause (a foreign first line, a version mismatch against ours, a record out of bounds).
 */
int relay_decoder_feed(struct relay_decoder *d, const void *data, size_t n, const struct relay_sink *sink,
                       char *cause, size_t cause_size);

#endif
