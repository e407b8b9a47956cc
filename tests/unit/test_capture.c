/* Capture file unit tests: write and read back, truncation, corruption, foreign and newer files. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "cuscope/capture.h"
#include "cuscope/store.h"
#include "cuscope/wire.h"

#define BATCHES 10
#define PAIRS   20 /* push/pop pairs per batch */

static const char manifest_text[] = "cuscope_version=test\ncommand=app --flag\ncwd=/tmp\n";

struct fixture {
	char dir[64];
	char path[128];  /* the good capture */
	char other[128]; /* scratch file for damaged copies */
	uint8_t *bytes;  /* contents of path */
	size_t size;
};

/* ---- writing ---- */

static void write_hello(struct capture_writer *w, uint32_t source, int32_t pid)
{
	uint8_t buf[sizeof(struct wire_hello) + 16];
	static const char argv[] = "app\0--flag";
	struct wire_hello h;
	memset(&h, 0, sizeof h);
	memcpy(h.magic, WIRE_MAGIC, 8);
	h.version = WIRE_VERSION;
	h.hello_size = sizeof h;
	h.pid = pid;
	h.ppid = 1;
	strcpy(h.host, "cap-host");
	h.cmdline_len = sizeof argv;
	memcpy(buf, &h, sizeof h);
	memcpy(buf + sizeof h, argv, sizeof argv);
	assert_int_equal(
	    capture_writer_frame(w, source, WIRE_FRAME_HELLO, buf, (uint32_t)(sizeof h + sizeof argv)), 0);
}

static void write_string(struct capture_writer *w, uint32_t source, uint32_t id, const char *text)
{
	uint8_t buf[sizeof(struct wire_string) + 64];
	struct wire_string s = {id, (uint32_t)strlen(text)};
	memcpy(buf, &s, sizeof s);
	memcpy(buf + sizeof s, text, s.length);
	assert_int_equal(
	    capture_writer_frame(w, source, WIRE_FRAME_STRING, buf, (uint32_t)(sizeof s + s.length)), 0);
}

static struct wire_event ev(uint16_t kind, uint64_t t, uint32_t tid, uint32_t name, uint64_t value)
{
	struct wire_event e;
	memset(&e, 0, sizeof e);
	e.kind = kind;
	e.time_ns = t;
	e.tid = tid;
	e.name_id = name;
	e.value = value;
	return e;
}

/* Event time of batch b, pair i, edge (0 push, 1 pop) for a source. */
static uint64_t event_time(uint32_t source, int b, int i, int edge)
{
	return 1000000ull + (uint64_t)b * 100000 + (uint64_t)i * 100 + (uint64_t)edge * 50 + source;
}

/* Writes the standard capture: manifest, then BATCHES flushes of two sources, losses, BYE, END. */
static void write_capture(const char *path)
{
	int err = 0;
	const char *cause = NULL;
	struct capture_writer *w = capture_writer_open(path, &err, &cause);
	assert_non_null(w);
	assert_int_equal(capture_writer_manifest(w, manifest_text, strlen(manifest_text)), 0);
	for (uint32_t s = 0; s < 2; s++) {
		write_hello(w, s, 100 + (int32_t)s);
		write_string(w, s, 2, s ? "work-one" : "work-zero");
	}
	for (int b = 0; b < BATCHES; b++) {
		for (uint32_t s = 0; s < 2; s++) {
			struct wire_event e[2 * PAIRS + 2];
			size_t n = 0;
			for (int i = 0; i < PAIRS; i++) {
				e[n++] = ev(WIRE_EV_NVTX_PUSH, event_time(s, b, i, 0), 1000 + s, 2, 0);
				e[n++] = ev(WIRE_EV_NVTX_POP, event_time(s, b, i, 1), 1000 + s, 0, 0);
			}
			/* One async range per batch, started and ended on different threads. */
			e[n++] =
			    ev(WIRE_EV_NVTX_START, event_time(s, b, 0, 0) + 1, 1000 + s, 2, (uint64_t)b + 1);
			e[n++] =
			    ev(WIRE_EV_NVTX_END, event_time(s, b, PAIRS, 0), 2000 + s, 0, (uint64_t)b + 1);
			assert_int_equal(
			    capture_writer_frame(w, s, WIRE_FRAME_EVENTS, e, (uint32_t)(n * sizeof *e)), 0);
		}
		assert_int_equal(capture_writer_flush(w), 0);
	}
	struct wire_loss loss = {WIRE_LOSS_RING_FULL, 0, 42};
	assert_int_equal(capture_writer_frame(w, 1, WIRE_FRAME_LOSSES, &loss, sizeof loss), 0);
	struct wire_bye bye = {.time_ns = 9000000, .exit_code = 0};
	assert_int_equal(capture_writer_frame(w, 0, WIRE_FRAME_BYE, &bye, sizeof bye), 0);
	assert_int_equal(capture_writer_close(w), 0);
}

static uint8_t *read_all(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*size = (size_t)n;
	return buf;
}

static void write_bytes(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	if (len)
		assert_int_equal(write(fd, data, len), (ssize_t)len);
	close(fd);
}

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof *fx);
	if (!fx)
		return -1;
	const char *tmp = getenv("TMPDIR");
	snprintf(fx->dir, sizeof fx->dir, "%s/cuscope-cap-XXXXXX", tmp && strlen(tmp) < 32 ? tmp : "/tmp");
	if (!mkdtemp(fx->dir))
		return -1;
	snprintf(fx->path, sizeof fx->path, "%s/good.cuscope", fx->dir);
	snprintf(fx->other, sizeof fx->other, "%s/damaged.cuscope", fx->dir);
	write_capture(fx->path);
	fx->bytes = read_all(fx->path, &fx->size);
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;
	unlink(fx->path);
	unlink(fx->other);
	rmdir(fx->dir);
	free(fx->bytes);
	free(fx);
	return 0;
}

/* ---- reading helpers ---- */

struct chunk_pos {
	size_t offset; /* of the chunk header */
	size_t end;    /* one past the payload */
	struct capture_chunk_header h;
};

/* Splits the file into chunks by their headers; returns the count. */
static size_t parse_chunks(const uint8_t *bytes, size_t size, struct chunk_pos *out, size_t max)
{
	size_t n = 0, off = sizeof(struct capture_file_header);
	while (off + sizeof(struct capture_chunk_header) <= size && n < max) {
		memcpy(&out[n].h, bytes + off, sizeof out[n].h);
		out[n].offset = off;
		out[n].end = off + sizeof out[n].h + out[n].h.length;
		assert_true(out[n].end <= size);
		off = out[n].end;
		n++;
	}
	assert_int_equal(off, size);
	return n;
}

struct summary {
	size_t processes;
	size_t lanes;
	size_t ranges[2]; /* push/pop ranges of each process */
	size_t async[2];  /* start/end ranges of each process */
};

static void summarize(const struct store *st, struct summary *sum)
{
	memset(sum, 0, sizeof *sum);
	sum->processes = store_process_count(st);
	for (size_t p = 0; p < sum->processes; p++) {
		struct store_process_info pi;
		store_process_get(st, p, &pi);
		sum->lanes += pi.lane_count;
		for (size_t l = 0; l < pi.lane_count; l++) {
			struct store_lane_info li;
			store_lane_get(st, p, l, &li);
			for (size_t r = 0; r < li.row_count; r++) {
				const struct store_range *v;
				size_t n = store_lane_row_all(st, p, l, r, &v);
				size_t idx = pi.pid == 101 ? 1 : 0;
				if (li.kind == STORE_LANE_NVTX_ASYNC)
					sum->async[idx] += n;
				else
					sum->ranges[idx] += n;
			}
		}
	}
}

static int read_file(const char *path, struct store **out, struct capture_read_result *res, char *msg,
                     size_t msg_size, const char **cause)
{
	*out = store_new();
	*cause = NULL;
	return capture_read(path, *out, res, msg, msg_size, cause);
}

/* ---- tests ---- */

static void test_round_trip(void **state)
{
	struct fixture *fx = *state;
	struct store *st;
	struct capture_read_result res;
	char msg[256];
	const char *cause;
	assert_int_equal(read_file(fx->path, &st, &res, msg, sizeof msg, &cause), 0);
	struct chunk_pos chunks[64];
	size_t nchunks = parse_chunks(fx->bytes, fx->size, chunks, 64);
	/* manifest + BATCHES x 2 sources + final flush (losses, bye: 2 chunks) + INDEX + END */
	assert_int_equal(nchunks, 1 + BATCHES * 2 + 2 + 1 + 1);
	assert_int_equal(res.chunks_total, nchunks);
	assert_int_equal(res.chunks_ok, nchunks);
	assert_int_equal(res.chunks_corrupt, 0);
	assert_int_equal(res.truncated, 0);
	assert_non_null(res.manifest);
	assert_string_equal(res.manifest, manifest_text);

	struct summary sum;
	summarize(st, &sum);
	assert_int_equal(sum.processes, 2);
	/* Each process: async lane, thread 100x, thread 200x (the ending thread). */
	assert_int_equal(sum.lanes, 6);
	assert_int_equal(sum.ranges[0], BATCHES * PAIRS);
	assert_int_equal(sum.ranges[1], BATCHES * PAIRS);
	assert_int_equal(sum.async[0], BATCHES);
	assert_int_equal(sum.async[1], BATCHES);
	assert_int_equal(store_event_count(st), 2 * BATCHES * (2 * PAIRS + 2));
	assert_int_equal(store_loss_count(st, WIRE_LOSS_RING_FULL), 42);
	assert_int_equal(store_loss_total(st), 42);
	struct store_process_info pi;
	store_process_get(st, 0, &pi);
	assert_int_equal(pi.pid, 100);
	assert_string_equal(pi.cmdline, "app --flag");
	assert_string_equal(pi.host, "cap-host");
	assert_int_equal(pi.exited, 1);
	assert_int_equal(pi.exit_code, 0);
	/* A capture is history: nothing is connected. */
	assert_int_equal(pi.connected, 0);
	store_process_get(st, 1, &pi);
	assert_int_equal(pi.pid, 101);
	assert_int_equal(pi.connected, 0);
	assert_int_equal(pi.exited, 0);
	/* Names made it through the per-source string maps. */
	const struct store_range *r;
	assert_int_equal(store_lane_row_all(st, 1, 1, 0, &r), BATCHES * PAIRS);
	assert_string_equal(store_string(st, r[0].name_id), "work-one");
	assert_int_equal(r[0].start_ns, event_time(1, 0, 0, 0));
	assert_int_equal(r[0].end_ns, event_time(1, 0, 0, 1));
	assert_int_equal(store_first_ns(st), event_time(0, 0, 0, 0));
	assert_int_equal(store_last_ns(st), 9000000);

	/* Chunk headers carry the source and the time range of their events. */
	assert_int_equal(chunks[0].h.type, CAPTURE_CHUNK_MANIFEST);
	assert_int_equal(chunks[nchunks - 1].h.type, CAPTURE_CHUNK_END);
	assert_int_equal(chunks[nchunks - 2].h.type, CAPTURE_CHUNK_INDEX);
	assert_int_equal(res.has_index, 1);
	/* The index lists every chunk before it, with the offsets and time ranges of the headers. */
	assert_int_equal(chunks[nchunks - 2].h.length, (nchunks - 2) * sizeof(struct capture_index_entry));
	for (size_t i = 0; i < nchunks - 2; i++) {
		struct capture_index_entry e;
		memcpy(&e,
		       fx->bytes + chunks[nchunks - 2].offset + sizeof(struct capture_chunk_header) +
		           i * sizeof e,
		       sizeof e);
		assert_int_equal(e.offset, chunks[i].offset);
		assert_int_equal(e.type, chunks[i].h.type);
		assert_int_equal(e.first_ns, chunks[i].h.first_ns);
		assert_int_equal(e.last_ns, chunks[i].h.last_ns);
	}
	for (size_t i = 1; i <= BATCHES * 2; i++) {
		uint32_t s = (uint32_t)((i - 1) % 2);
		int b = (int)((i - 1) / 2);
		assert_int_equal(chunks[i].h.magic, CAPTURE_CHUNK_MAGIC);
		/* Event batches compress well: the writer stores them as zstd. */
		assert_int_equal(chunks[i].h.type, CAPTURE_CHUNK_FRAMES_ZSTD);
		assert_int_equal(chunks[i].h.source, s);
		assert_int_equal(chunks[i].h.first_ns, event_time(s, b, 0, 0));
		assert_int_equal(chunks[i].h.last_ns, event_time(s, b, PAIRS, 0));
	}
	struct capture_file_header fh;
	memcpy(&fh, fx->bytes, sizeof fh);
	assert_memory_equal(fh.magic, CAPTURE_MAGIC, 8);
	assert_int_equal(fh.version, CAPTURE_VERSION);
	assert_int_equal(fh.header_size, sizeof fh);
	assert_int_equal(fh.wire_version, WIRE_VERSION);
	free(res.manifest);
	store_free(st);
}

static void test_truncation_everywhere(void **state)
{
	struct fixture *fx = *state;
	struct chunk_pos chunks[64];
	size_t nchunks = parse_chunks(fx->bytes, fx->size, chunks, 64);
	struct summary full;
	{
		struct store *st;
		struct capture_read_result res;
		char msg[256];
		const char *cause;
		assert_int_equal(read_file(fx->path, &st, &res, msg, sizeof msg, &cause), 0);
		summarize(st, &full);
		free(res.manifest);
		store_free(st);
	}
	size_t tried = 0;
	for (size_t cut = 0; cut < fx->size; cut += 7) {
		write_bytes(fx->other, fx->bytes, cut);
		/* What survives: whole chunks before the cut, and whether a part of one follows. */
		size_t whole = 0;
		while (whole < nchunks && chunks[whole].end <= cut)
			whole++;
		size_t partial =
		    cut > (whole ? chunks[whole - 1].end : sizeof(struct capture_file_header)) ? 1 : 0;
		struct store *st;
		struct capture_read_result res;
		char msg[256];
		const char *cause;
		int rc = read_file(fx->other, &st, &res, msg, sizeof msg, &cause);
		if (cut < sizeof(struct capture_file_header) || whole == 0) {
			if (rc != -EPROTO)
				fail_msg("cut at %zu: rc %d, want -EPROTO", cut, rc);
			assert_non_null(cause);
			assert_true(strlen(cause) > 0);
			assert_non_null(strstr(cause, fx->other));
		} else {
			if (rc != 0)
				fail_msg("cut at %zu (%zu whole chunks): rc %d (%s)", cut, whole, rc,
				         cause ? cause : "");
			assert_int_equal(res.truncated, 1);
			assert_int_equal(res.chunks_ok, whole);
			assert_int_equal(res.chunks_total, whole + partial);
			assert_true(res.chunks_ok <= res.chunks_total);
			assert_int_equal(res.chunks_corrupt, 0);
			/* The manifest is the first chunk, so it always survives here. */
			assert_non_null(res.manifest);
			assert_string_equal(res.manifest, manifest_text);
			struct summary sum;
			summarize(st, &sum);
			assert_true(sum.processes <= full.processes);
			/* Exactly the ranges of the whole FRAMES chunks of each source. */
			size_t want[2] = {0, 0};
			for (size_t i = 1; i < whole && i <= BATCHES * 2; i++)
				want[(i - 1) % 2] += PAIRS;
			assert_int_equal(sum.ranges[0], want[0]);
			assert_int_equal(sum.ranges[1], want[1]);
		}
		free(res.manifest);
		store_free(st);
		tried++;
	}
	assert_true(tried > 100);
}

/* Flips one byte at offset in a copy of the good file and reads it. */
static int read_flipped(struct fixture *fx, size_t offset, struct store **st, struct capture_read_result *res)
{
	uint8_t *copy = malloc(fx->size);
	assert_non_null(copy);
	memcpy(copy, fx->bytes, fx->size);
	copy[offset] ^= 0x5a;
	write_bytes(fx->other, copy, fx->size);
	free(copy);
	char msg[256];
	const char *cause;
	return read_file(fx->other, st, res, msg, sizeof msg, &cause);
}

static void test_corrupt_payload(void **state)
{
	struct fixture *fx = *state;
	struct chunk_pos chunks[64];
	size_t nchunks = parse_chunks(fx->bytes, fx->size, chunks, 64);
	struct store *st;
	struct capture_read_result res;
	struct summary sum;

	/* The last FRAMES chunk of source 0 from the batches (chunk 19): only it is lost. */
	size_t k = 1 + (BATCHES - 1) * 2;
	assert_int_equal(chunks[k].h.source, 0);
	assert_int_equal(
	    read_flipped(fx, chunks[k].offset + sizeof(struct capture_chunk_header) + chunks[k].h.length / 2,
	                 &st, &res),
	    0);
	assert_int_equal(res.chunks_total, nchunks);
	/* Chunks decode on their own: the later chunk of source 0 (the BYE) is still read. */
	assert_int_equal(res.chunks_corrupt, 1);
	assert_int_equal(res.chunks_ok, nchunks - 1);
	assert_int_equal(res.truncated, 0);
	summarize(st, &sum);
	assert_int_equal(sum.processes, 2);
	assert_int_equal(sum.ranges[0], (BATCHES - 1) * PAIRS);
	assert_int_equal(sum.ranges[1], BATCHES * PAIRS);
	assert_int_equal(sum.async[1], BATCHES);
	assert_int_equal(store_loss_count(st, WIRE_LOSS_RING_FULL), 42);
	struct store_process_info pi;
	store_process_get(st, 0, &pi);
	assert_int_equal(pi.exited, 1);
	free(res.manifest);
	store_free(st);

	/* The first chunk of source 0 (its HELLO and names): every later chunk still reads, named. */
	k = 1;
	assert_int_equal(chunks[k].h.source, 0);
	assert_int_equal(
	    read_flipped(fx, chunks[k].offset + sizeof(struct capture_chunk_header) + chunks[k].h.length / 2,
	                 &st, &res),
	    0);
	assert_int_equal(res.chunks_corrupt, 1);
	assert_int_equal(res.chunks_ok, nchunks - 1);
	summarize(st, &sum);
	assert_int_equal(sum.processes, 2);
	assert_int_equal(sum.ranges[0], (BATCHES - 1) * PAIRS);
	assert_int_equal(sum.ranges[1], BATCHES * PAIRS);
	for (size_t p = 0; p < store_process_count(st); p++) {
		store_process_get(st, p, &pi);
		if (pi.pid != 100)
			continue;
		assert_string_equal(pi.cmdline, "app --flag");
		assert_int_equal(pi.exited, 1);
		for (size_t l = 0; l < pi.lane_count; l++) {
			const struct store_range *v;
			size_t n = store_lane_row_all(st, p, l, 0, &v);
			for (size_t i = 0; i < n; i++)
				assert_string_equal(store_string(st, v[i].name_id), "work-zero");
		}
	}
	free(res.manifest);
	store_free(st);

	/* A damaged chunk header: the reader finds the next valid header and goes on. */
	k = 1 + 3 * 2;
	assert_int_equal(read_flipped(fx, chunks[k].offset + 12, &st, &res), 0);
	assert_int_equal(res.chunks_corrupt, 1);
	assert_int_equal(res.chunks_ok, nchunks - 1);
	assert_int_equal(res.truncated, 0);
	assert_int_equal(res.resync_bytes, chunks[k].end - chunks[k].offset);
	summarize(st, &sum);
	assert_int_equal(sum.ranges[0] + sum.ranges[1], (2 * BATCHES - 1) * PAIRS);
	free(res.manifest);
	store_free(st);

	/* The last chunk of source 1 (its LOSSES, after source 0's BYE): source 0 is read entirely. */
	k = nchunks - 3;
	assert_int_equal(chunks[k].h.source, 1);
	assert_int_equal(read_flipped(fx, chunks[k].end - 1, &st, &res), 0);
	assert_int_equal(res.chunks_corrupt, 1);
	assert_int_equal(res.chunks_ok, nchunks - 1);
	summarize(st, &sum);
	assert_int_equal(sum.ranges[0], BATCHES * PAIRS);
	assert_int_equal(sum.ranges[1], BATCHES * PAIRS);
	assert_int_equal(store_loss_count(st, WIRE_LOSS_RING_FULL), 0);
	store_process_get(st, 0, &pi);
	assert_int_equal(pi.exited, 1);
	free(res.manifest);
	store_free(st);

	/* A middle chunk of source 1: only it is lost, source 0 is whole. */
	k = 1 + 4 * 2 + 1; /* batch 4, source 1 */
	assert_int_equal(chunks[k].h.source, 1);
	assert_int_equal(read_flipped(fx, chunks[k].offset + sizeof(struct capture_chunk_header), &st, &res),
	                 0);
	assert_int_equal(res.chunks_corrupt, 1);
	assert_int_equal(res.chunks_ok + res.chunks_corrupt, nchunks);
	summarize(st, &sum);
	assert_int_equal(sum.ranges[0], BATCHES * PAIRS);
	assert_int_equal(sum.ranges[1], (BATCHES - 1) * PAIRS);
	free(res.manifest);
	store_free(st);

	/* The manifest: lost, everything else read. */
	assert_int_equal(
	    read_flipped(fx, chunks[0].offset + sizeof(struct capture_chunk_header) + 3, &st, &res), 0);
	assert_null(res.manifest);
	assert_int_equal(res.chunks_corrupt, 1);
	assert_int_equal(res.chunks_ok, nchunks - 1);
	summarize(st, &sum);
	assert_int_equal(sum.ranges[0], BATCHES * PAIRS);
	assert_int_equal(sum.ranges[1], BATCHES * PAIRS);
	store_free(st);
}

/*
 * Every chunk repeats its source's identity, with a long command line cut: a 100 KB argv costs
 * each later chunk about 4 KiB, and a reader that lost the first chunk still names the process.
 */
static void test_context_bounds(void **state)
{
	struct fixture *fx = *state;
	enum { ARGV = 100000, FLUSHES = 40 };
	int err = 0;
	const char *cause = NULL;
	struct capture_writer *w = capture_writer_open(fx->other, &err, &cause);
	assert_non_null(w);
	uint8_t *buf = malloc(sizeof(struct wire_hello) + ARGV);
	assert_non_null(buf);
	struct wire_hello h;
	memset(&h, 0, sizeof h);
	memcpy(h.magic, WIRE_MAGIC, 8);
	h.version = WIRE_VERSION;
	h.hello_size = sizeof h;
	h.pid = 77;
	h.cmdline_len = ARGV;
	memcpy(buf, &h, sizeof h);
	memset(buf + sizeof h, 'a', ARGV);
	assert_int_equal(capture_writer_frame(w, 0, WIRE_FRAME_HELLO, buf, sizeof h + ARGV), 0);
	free(buf);
	write_string(w, 0, 3, "named");
	for (int b = 0; b < FLUSHES; b++) {
		struct wire_event e[2] = {ev(WIRE_EV_NVTX_PUSH, 1000 + 10 * (uint64_t)b, 5, 3, 0),
		                          ev(WIRE_EV_NVTX_POP, 1005 + 10 * (uint64_t)b, 5, 0, 0)};
		assert_int_equal(capture_writer_frame(w, 0, WIRE_FRAME_EVENTS, e, sizeof e), 0);
		assert_int_equal(capture_writer_flush(w), 0);
	}
	assert_int_equal(capture_writer_close(w), 0);
	size_t size;
	uint8_t *bytes = read_all(fx->other, &size);
	assert_true(size < ARGV + FLUSHES * (CAPTURE_CONTEXT_ARGV_MAX + 1024));
	/* Damage the first FRAMES chunk (the one with the whole HELLO). */
	struct chunk_pos chunks[FLUSHES + 8];
	size_t n = parse_chunks(bytes, size, chunks, FLUSHES + 8);
	assert_true(n >= FLUSHES);
	assert_int_equal(
	    chunks[0].h.type == CAPTURE_CHUNK_FRAMES || chunks[0].h.type == CAPTURE_CHUNK_FRAMES_ZSTD, 1);
	bytes[chunks[0].end - 1] ^= 0x01;
	write_bytes(fx->other, bytes, size);
	free(bytes);
	struct store *st;
	struct capture_read_result res;
	char msg[256];
	assert_int_equal(read_file(fx->other, &st, &res, msg, sizeof msg, &cause), 0);
	assert_int_equal(res.chunks_corrupt, 1);
	assert_int_equal(store_process_count(st), 1);
	struct store_process_info pi;
	store_process_get(st, 0, &pi);
	assert_int_equal(pi.pid, 77);
	assert_int_equal(strlen(pi.cmdline), CAPTURE_CONTEXT_ARGV_MAX);
	struct summary sum;
	summarize(st, &sum);
	assert_int_equal(sum.ranges[0], FLUSHES - 1);
	for (size_t l = 0; l < pi.lane_count; l++) {
		const struct store_range *v;
		size_t k = store_lane_row_all(st, 0, l, 0, &v);
		for (size_t i = 0; i < k; i++)
			assert_string_equal(store_string(st, v[i].name_id), "named");
	}
	free(res.manifest);
	store_free(st);
}

/*
 * Deep stacks sampled fast compress ~80x (each sample repeats the last but for its time): such a
 * capture is read whole, however it compresses, while a bomb's record count still stops it.
 */
static void test_compressible_stacks_read(void **state)
{
	struct fixture *fx = *state;
	enum { SAMPLES = 400000, DEPTH = 128, PER_FRAME = 1000 };
	int err = 0;
	const char *cause = NULL;
	struct capture_writer *w = capture_writer_open(fx->other, &err, &cause);
	assert_non_null(w);
	write_hello(w, 0, 55);
	for (uint32_t id = 1; id <= DEPTH; id++) {
		char name[32];
		snprintf(name, sizeof name, "f%u\x1fmod", id);
		write_string(w, 0, id, name);
	}
	size_t rec = sizeof(struct wire_stack) + DEPTH * 4;
	uint8_t *buf = malloc(rec * PER_FRAME);
	assert_non_null(buf);
	for (int s = 0; s < SAMPLES; s += PER_FRAME) {
		for (int i = 0; i < PER_FRAME; i++) {
			struct wire_stack st = {1000000 + (uint64_t)(s + i) * 100003, 9, WIRE_STACK_SAMPLE,
			                        DEPTH};
			uint8_t *p = buf + (size_t)i * rec;
			memcpy(p, &st, sizeof st);
			for (uint32_t d = 0; d < DEPTH; d++) {
				uint32_t id = d + 1;
				memcpy(p + sizeof st + d * 4, &id, 4);
			}
		}
		assert_int_equal(
		    capture_writer_frame(w, 0, WIRE_FRAME_STACKS, buf, (uint32_t)(rec * PER_FRAME)), 0);
	}
	free(buf);
	assert_int_equal(capture_writer_close(w), 0);
	struct stat stt;
	assert_int_equal(stat(fx->other, &stt), 0);
	/* Beyond what a plain ratio bound of 32 would allow. */
	assert_true((uint64_t)SAMPLES * rec > (64ull << 20) + 32ull * (uint64_t)stt.st_size);
	struct store *st;
	struct capture_read_result res;
	char msg[256];
	assert_int_equal(read_file(fx->other, &st, &res, msg, sizeof msg, &cause), 0);
	assert_int_equal(res.chunks_corrupt, 0);
	assert_int_equal(res.events, SAMPLES);
	free(res.manifest);
	store_free(st);
}

static void test_every_byte_flipped_no_crash(void **state)
{
	/* Flip each byte of the file in turn: the reader must never crash or leak, whatever it returns. */
	struct fixture *fx = *state;
	for (size_t off = 0; off < fx->size; off += 13) {
		struct store *st;
		struct capture_read_result res;
		int rc = read_flipped(fx, off, &st, &res);
		if (off < sizeof(struct capture_file_header)) {
			/* Header bytes: magic, version, sizes are checked; created time and reserved are not.
			 */
			assert_true(rc == 0 || rc == -EPROTO);
		} else {
			/* Only a damaged first chunk header leaves nothing readable. */
			if (off < sizeof(struct capture_file_header) + sizeof(struct capture_chunk_header))
				assert_true(rc == 0 || rc == -EPROTO);
			else
				assert_int_equal(rc, 0);
			assert_true(res.chunks_ok + res.chunks_corrupt <= res.chunks_total);
			assert_true(res.chunks_corrupt >= 1);
		}
		free(res.manifest);
		store_free(st);
	}
}

static void test_foreign_files(void **state)
{
	struct fixture *fx = *state;
	struct store *st;
	struct capture_read_result res;
	char msg[256];
	const char *cause;
	/* Random bytes. */
	uint8_t junk[4096];
	uint64_t x = 12345;
	for (size_t i = 0; i < sizeof junk; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		junk[i] = (uint8_t)(x >> 56);
	}
	write_bytes(fx->other, junk, sizeof junk);
	assert_int_equal(read_file(fx->other, &st, &res, msg, sizeof msg, &cause), -EPROTO);
	assert_non_null(cause);
	assert_non_null(strstr(cause, "not a cuscope capture"));
	assert_int_equal(store_process_count(st), 0);
	store_free(st);
	/* A text file, longer than the header. */
	const char *text = "This is a plain text file.\nIt has several lines of text in it,\n"
	                   "more than sixty-four bytes, so the whole header is read.\n";
	write_bytes(fx->other, text, strlen(text));
	assert_int_equal(read_file(fx->other, &st, &res, msg, sizeof msg, &cause), -EPROTO);
	assert_non_null(strstr(cause, "not a cuscope capture"));
	store_free(st);
	/* The capture mangled by text-mode conversion (\n -> \r\n in the magic). */
	uint8_t *mangled = malloc(fx->size + 1);
	assert_non_null(mangled);
	memcpy(mangled, fx->bytes, 7);
	mangled[7] = '\r';
	memcpy(mangled + 8, fx->bytes + 7, fx->size - 7);
	write_bytes(fx->other, mangled, fx->size + 1);
	free(mangled);
	assert_int_equal(read_file(fx->other, &st, &res, msg, sizeof msg, &cause), -EPROTO);
	assert_non_null(strstr(cause, "not a cuscope capture"));
	store_free(st);
	/* Empty file. */
	write_bytes(fx->other, "", 0);
	assert_int_equal(read_file(fx->other, &st, &res, msg, sizeof msg, &cause), -EPROTO);
	assert_non_null(cause);
	store_free(st);
	/* Missing file and a directory. */
	char missing[160];
	snprintf(missing, sizeof missing, "%s/missing.cuscope", fx->dir);
	assert_int_equal(read_file(missing, &st, &res, msg, sizeof msg, &cause), -ENOENT);
	assert_non_null(strstr(cause, "missing.cuscope"));
	store_free(st);
	assert_int_equal(read_file(fx->dir, &st, &res, msg, sizeof msg, &cause), -EISDIR);
	assert_non_null(cause);
	store_free(st);
	/* A header alone, valid: no chunk at all. */
	write_bytes(fx->other, fx->bytes, sizeof(struct capture_file_header));
	assert_int_equal(read_file(fx->other, &st, &res, msg, sizeof msg, &cause), -EPROTO);
	assert_non_null(cause);
	assert_int_equal(res.truncated, 1);
	store_free(st);
}

/* Writes the good file with its header replaced by h. */
static void write_with_header(struct fixture *fx, struct capture_file_header *h)
{
	uint8_t *copy = malloc(fx->size);
	assert_non_null(copy);
	memcpy(copy, fx->bytes, fx->size);
	memcpy(copy, h, sizeof *h);
	write_bytes(fx->other, copy, fx->size);
	free(copy);
}

static void test_newer_version(void **state)
{
	struct fixture *fx = *state;
	struct store *st;
	struct capture_read_result res;
	char msg[256];
	const char *cause;
	struct capture_file_header h;
	memcpy(&h, fx->bytes, sizeof h);
	h.version = CAPTURE_VERSION + 1;
	write_with_header(fx, &h);
	assert_int_equal(read_file(fx->other, &st, &res, msg, sizeof msg, &cause), -EPROTO);
	assert_non_null(cause);
	assert_non_null(strstr(cause, "newer"));
	char want[64];
	snprintf(want, sizeof want, "capture format %u", CAPTURE_VERSION + 1);
	assert_non_null(strstr(cause, want));
	assert_int_equal(store_process_count(st), 0);
	store_free(st);
	/* A required feature this reader does not know is also "newer". */
	memcpy(&h, fx->bytes, sizeof h);
	h.features = 1ull << 40;
	write_with_header(fx, &h);
	assert_int_equal(read_file(fx->other, &st, &res, msg, sizeof msg, &cause), -EPROTO);
	assert_non_null(strstr(cause, "newer"));
	store_free(st);
	/* Frames of a newer wire protocol. */
	memcpy(&h, fx->bytes, sizeof h);
	h.wire_version = WIRE_VERSION + 1;
	write_with_header(fx, &h);
	assert_int_equal(read_file(fx->other, &st, &res, msg, sizeof msg, &cause), -EPROTO);
	assert_non_null(strstr(cause, "newer"));
	store_free(st);
	/* Foreign byte order or header size. */
	memcpy(&h, fx->bytes, sizeof h);
	h.byte_order = 0x04030201u;
	write_with_header(fx, &h);
	assert_int_equal(read_file(fx->other, &st, &res, msg, sizeof msg, &cause), -EPROTO);
	assert_non_null(cause);
	store_free(st);
	memcpy(&h, fx->bytes, sizeof h);
	h.header_size = 128;
	write_with_header(fx, &h);
	assert_int_equal(read_file(fx->other, &st, &res, msg, sizeof msg, &cause), -EPROTO);
	assert_non_null(cause);
	store_free(st);
}

/*
 * Regression (fixed): a file refused for its wire version (or an unknown
 * feature bit) is reported as "capture format 1, this one reads 1", naming a version that is fine.
 */
static void test_newer_wire_version_message(void **state)
{
	struct fixture *fx = *state;
	struct store *st;
	struct capture_read_result res;
	char msg[256];
	const char *cause;
	struct capture_file_header h;
	memcpy(&h, fx->bytes, sizeof h);
	h.wire_version = WIRE_VERSION + 1;
	write_with_header(fx, &h);
	int rc = read_file(fx->other, &st, &res, msg, sizeof msg, &cause);
	store_free(st);
	assert_int_equal(rc, -EPROTO);
	char want[64];
	snprintf(want, sizeof want, "%u", WIRE_VERSION + 1);
	if (!strstr(cause, want))
		fail_msg("message does not name the wire version %u: %s", WIRE_VERSION + 1, cause);
}

static void test_writer_errors(void **state)
{
	struct fixture *fx = *state;
	int err = 0;
	const char *cause = NULL;
	char path[200];
	snprintf(path, sizeof path, "%s/no/such/dir/x.cuscope", fx->dir);
	assert_null(capture_writer_open(path, &err, &cause));
	assert_int_equal(err, -ENOENT);
	assert_non_null(cause);
	/* An empty capture (no frames) closes cleanly and reads back as empty... */
	struct capture_writer *w = capture_writer_open(fx->other, &err, &cause);
	assert_non_null(w);
	assert_int_equal(capture_writer_close(w), 0);
	struct store *st;
	struct capture_read_result res;
	char msg[256];
	assert_int_equal(read_file(fx->other, &st, &res, msg, sizeof msg, &cause), 0);
	/* ...because its (empty) INDEX and END chunks are verified chunks. */
	assert_int_equal(res.chunks_total, 2);
	assert_int_equal(res.chunks_ok, 2);
	assert_int_equal(res.truncated, 0);
	assert_int_equal(store_process_count(st), 0);
	store_free(st);
}

/* Closing writes the INDEX chunk from the writer's own index array: whatever the chunk count (the
 * array full or not when the INDEX entry itself is added), the file reads back whole. The array
 * was once grown under the payload being written (a use after free under ASan at 16, 32, ...). */
static void test_close_index_growth(void **state)
{
	struct fixture *fx = *state;
	for (unsigned k = 12; k <= 36; k++) {
		int err = 0;
		const char *cause = NULL;
		unlink(fx->other);
		struct capture_writer *w = capture_writer_open(fx->other, &err, &cause);
		assert_non_null(w);
		for (unsigned i = 0; i < k; i++)
			assert_int_equal(capture_writer_manifest(w, manifest_text, sizeof manifest_text - 1),
			                 0);
		assert_int_equal(capture_writer_close(w), 0);
		struct store *st;
		struct capture_read_result res;
		char msg[256];
		assert_int_equal(read_file(fx->other, &st, &res, msg, sizeof msg, &cause), 0);
		assert_int_equal(res.chunks_ok, k + 2);
		assert_int_equal(res.chunks_corrupt, 0);
		assert_int_equal(res.has_index, 1);
		assert_int_equal(res.truncated, 0);
		free(res.manifest);
		store_free(st);
	}
}

/* A live frame from another host moved onto this machine's axis: every time of the frame moves
 * (an OSRT event's end too), 0 ("none") stays 0, other fields do not change. */
static void test_frame_shift(void **state)
{
	(void)state;
	struct wire_event ev[3];
	memset(ev, 0, sizeof ev);
	ev[0] = (struct wire_event){.time_ns = 1000, .value = 7, .tid = 5, .kind = WIRE_EV_NVTX_PUSH};
	ev[1] = (struct wire_event){.time_ns = 2000, .value = 2500, .tid = 5, .kind = WIRE_EV_OSRT};
	ev[2] = (struct wire_event){.time_ns = 0, .value = 0, .tid = 5, .kind = WIRE_EV_NVTX_POP};
	const char *cause = NULL;
	assert_int_equal(wire_frame_check(WIRE_FRAME_EVENTS, ev, sizeof ev, &cause), 0);
	capture_frame_shift(WIRE_FRAME_EVENTS, ev, sizeof ev, -500);
	assert_true(ev[0].time_ns == 500 && ev[0].value == 7 && ev[0].tid == 5);
	assert_true(ev[1].time_ns == 1500 && ev[1].value == 2000);
	assert_true(ev[2].time_ns == 0);
	struct wire_gpu_event g;
	memset(&g, 0, sizeof g);
	g.start_ns = 10000;
	g.end_ns = 12000;
	g.correlation_id = 9;
	capture_frame_shift(WIRE_FRAME_GPU, &g, sizeof g, 2500000000ll);
	assert_true(g.start_ns == 2500010000ull && g.end_ns == 2500012000ull && g.correlation_id == 9);
	capture_frame_shift(WIRE_FRAME_GPU, &g, sizeof g, 0);
	assert_true(g.start_ns == 2500010000ull);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_round_trip),
	    cmocka_unit_test(test_truncation_everywhere),
	    cmocka_unit_test(test_corrupt_payload),
	    cmocka_unit_test(test_context_bounds),
	    cmocka_unit_test(test_compressible_stacks_read),
	    cmocka_unit_test(test_every_byte_flipped_no_crash),
	    cmocka_unit_test(test_foreign_files),
	    cmocka_unit_test(test_newer_version),
	    cmocka_unit_test(test_newer_wire_version_message),
	    cmocka_unit_test(test_writer_errors),
	    cmocka_unit_test(test_close_index_growth),
	    cmocka_unit_test(test_frame_shift),
	};
	return cmocka_run_group_tests_name("capture", tests, setup, teardown);
}
