/*
 * Writes crafted capture files for the reader-bound tests (t061), byte by byte, without the
 * project's writer:
 *   crafted_capture bomb OUT SIZE_KB [VERSION]       zstd chunks that each decode to ~4 MiB of
 *                                                     NVTX ranges (ratio in the thousands)
 *   crafted_capture bombpad OUT SIZE_KB [VERSION]    fewer bomb chunks (NVTX marks, decoding to 200
 *                                                     times the file), padded with chunks to skip
 *   crafted_capture manifests OUT SIZE_KB [VERSION]   one small MANIFEST chunk after another
 *   crafted_capture sources OUT SIZE_KB [VERSION]     one process stream (HELLO + an event) per chunk
 *   crafted_capture strids OUT SIZE_KB [VERSION]      the same, each naming its string with the
 *                                                     largest id (WIRE_MAX_STRING_ID) and making a
 *                                                     CUDA call with a large correlation id
 *   crafted_capture async OUT SIZE_KB [VERSION]       all-overlapping NVTX start/end ranges
 *   crafted_capture threads OUT SIZE_KB [VERSION]     a new thread in every record
 *   crafted_capture gpu OUT SIZE_KB [VERSION]         a new CUDA context or stream in every record
 *   crafted_capture rows OUT SIZE_KB [VERSION]        start/end ranges one after another, each
 *                                                     ending far in the future (all overlap)
 *   crafted_capture gpurows OUT SIZE_KB [VERSION]     kernels on one stream that all overlap
 * VERSION (default 2) is the capture format; 1 writes the old layout (no chunk context), so the
 * same files can be fed to an older reader. Every checksum is valid: only sizes and counts are
 * hostile. Prints the number of chunks written.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#include "cuscope/capture.h"
#include "cuscope/wire.h"

static FILE *out;
static unsigned version = CAPTURE_VERSION;
static unsigned long chunks;
static unsigned long long written;

static void die(const char *what)
{
	fprintf(stderr, "crafted_capture: %s\n", what);
	exit(1);
}

static void put(const void *p, size_t n)
{
	if (fwrite(p, 1, n, out) != n)
		die("write failed");
	written += n;
}

static void file_header(void)
{
	struct capture_file_header h;
	memset(&h, 0, sizeof h);
	memcpy(h.magic, CAPTURE_MAGIC, 8);
	h.version = version;
	h.header_size = sizeof h;
	h.wire_version = WIRE_VERSION;
	h.byte_order = 0x01020304u;
	put(&h, sizeof h);
}

static void chunk(uint32_t type, uint32_t source, const void *payload, size_t len)
{
	struct capture_chunk_header h = {.magic = CAPTURE_CHUNK_MAGIC,
	                                 .type = type,
	                                 .source = source,
	                                 .length = (uint32_t)len,
	                                 .first_ns = 1,
	                                 .last_ns = 2};
	h.payload_crc = (uint32_t)crc32(0, payload, (uInt)len);
	h.header_crc = 0;
	h.header_crc = (uint32_t)crc32(0, (const Bytef *)&h, sizeof h);
	put(&h, sizeof h);
	put(payload, len);
	chunks++;
}

/* A growing byte buffer for a chunk payload. */
struct buf {
	uint8_t *p;
	size_t len, cap;
};

static void buf_add(struct buf *b, const void *p, size_t n)
{
	if (b->len + n > b->cap) {
		b->cap = (b->len + n) * 2;
		b->p = realloc(b->p, b->cap);
		if (!b->p)
			die("out of memory");
	}
	memcpy(b->p + b->len, p, n);
	b->len += n;
}

static void frame(struct buf *b, uint32_t type, const void *p, size_t n)
{
	struct wire_frame_header fh = {type, (uint32_t)n};
	buf_add(b, &fh, sizeof fh);
	buf_add(b, p, n);
}

/* Starts a FRAMES payload: an empty context in version 2. */
static void frames_begin(struct buf *b)
{
	b->len = 0;
	if (version >= 2) {
		struct capture_context cx = {0, 0};
		buf_add(b, &cx, sizeof cx);
	}
}

static void hello(struct buf *b, int32_t pid)
{
	static const char argv[] = "crafted\0--x";
	uint8_t tmp[sizeof(struct wire_hello) + sizeof argv];
	struct wire_hello h;
	memset(&h, 0, sizeof h);
	memcpy(h.magic, WIRE_MAGIC, 8);
	h.version = WIRE_VERSION;
	h.hello_size = sizeof h;
	h.pid = pid;
	h.ppid = 1;
	h.start_mono_ns = 1000;
	strcpy(h.host, "crafted");
	h.cmdline_len = sizeof argv;
	memcpy(tmp, &h, sizeof h);
	memcpy(tmp + sizeof h, argv, sizeof argv);
	frame(b, WIRE_FRAME_HELLO, tmp, sizeof tmp);
}

static void name(struct buf *b, uint32_t id, const char *text)
{
	uint8_t tmp[64];
	struct wire_string s = {id, (uint32_t)strlen(text)};
	memcpy(tmp, &s, sizeof s);
	memcpy(tmp + sizeof s, text, s.length);
	frame(b, WIRE_FRAME_STRING, tmp, sizeof s + s.length);
}

static void bomb(unsigned long long size, int padded)
{
	struct buf b = {0};
	frames_begin(&b);
	hello(&b, 4242);
	name(&b, 1, "bomb");
	chunk(CAPTURE_CHUNK_FRAMES, 0, b.p, b.len);
	/* Push/pop pairs at one time: the most compressible records that still cost the store memory. */
	static struct wire_event ev[WIRE_MAX_FRAME / sizeof(struct wire_event)];
	size_t n = sizeof ev / sizeof ev[0];
	for (size_t i = 0; i < n; i++) {
		memset(&ev[i], 0, sizeof ev[i]);
		ev[i].time_ns = 5000;
		ev[i].tid = 4242;
		ev[i].name_id = 1;
		ev[i].kind = padded ? WIRE_EV_NVTX_MARK : i % 2 ? WIRE_EV_NVTX_POP : WIRE_EV_NVTX_PUSH;
	}
	frames_begin(&b);
	while (b.len + sizeof(struct wire_frame_header) + sizeof ev < CAPTURE_FRAMES_MAX - 4096)
		frame(&b, WIRE_FRAME_EVENTS, ev, sizeof ev);
	size_t zcap = ZSTD_compressBound(b.len) + 4;
	uint8_t *z = malloc(zcap);
	if (!z)
		die("out of memory");
	size_t zn = ZSTD_compress(z + 4, zcap - 4, b.p, b.len, 19);
	if (ZSTD_isError(zn))
		die("zstd failed");
	uint32_t raw = (uint32_t)b.len;
	memcpy(z, &raw, 4);
	/* Padded: only as many bomb chunks as decode to 200 times the file (under a byte budget), the
	 * rest of the file an optional chunk type readers skip; so the records are what must stop it. */
	unsigned long long bombs = padded ? 200 * size / b.len : ~0ull;
	for (unsigned long long i = 0; i < bombs && written + zn + 4 + 40 <= size; i++)
		chunk(CAPTURE_CHUNK_FRAMES_ZSTD, 0, z, zn + 4);
	free(z);
	static uint8_t pad[1 << 16];
	while (padded && written + 40 + sizeof pad <= size)
		chunk(99, 0, pad, sizeof pad);
	free(b.p);
}

/*
 * Plain (uncompressed) chunks of one process whose records are hostile in count, not size:
 * "async" (0): NVTX start/end ranges that all overlap (each end matches the oldest open one);
 * "threads" (1): every record names a new thread; "rows" (2): see main.
 */
static void events(unsigned long long size, int threads)
{
	struct buf b = {0};
	frames_begin(&b);
	hello(&b, 4243);
	name(&b, 1, "crafted");
	chunk(CAPTURE_CHUNK_FRAMES, 0, b.p, b.len);
	static struct wire_event ev[(256u << 10) / sizeof(struct wire_event)];
	size_t per = sizeof ev / sizeof ev[0];
	unsigned long long total = size / (sizeof ev + 64), half = total * per / 2, k = 0;
	for (unsigned long long c = 0; c < total; c++) {
		for (size_t i = 0; i < per; i++, k++) {
			memset(&ev[i], 0, sizeof ev[i]);
			ev[i].time_ns = 1000 + k;
			ev[i].name_id = 1;
			if (threads == 2) {
				/* One range after another in the stream, each ending far in the future. */
				ev[i].kind = k % 2 ? WIRE_EV_NVTX_END : WIRE_EV_NVTX_START;
				ev[i].value = k / 2 + 1;
				ev[i].time_ns = k % 2 ? 1000000000000000ull : 1000 + k;
				ev[i].tid = 4243;
			} else if (threads) {
				ev[i].kind = WIRE_EV_THREAD_NAME;
				ev[i].tid = (uint32_t)(1000 + k);
			} else {
				ev[i].kind = k < half ? WIRE_EV_NVTX_START : WIRE_EV_NVTX_END;
				ev[i].value = k < half ? k + 1 : k - half + 1;
				ev[i].tid = 4243;
			}
		}
		frames_begin(&b);
		frame(&b, WIRE_FRAME_EVENTS, ev, sizeof ev);
		chunk(CAPTURE_CHUNK_FRAMES, 0, b.p, b.len);
	}
	free(b.p);
}

/* GPU records of one process: a new CUDA context in every other record, a new stream in the rest. */
static void gpu(unsigned long long size, int rows)
{
	struct buf b = {0};
	frames_begin(&b);
	hello(&b, 4244);
	name(&b, 1, "_Z6kernelv");
	chunk(CAPTURE_CHUNK_FRAMES, 0, b.p, b.len);
	static struct wire_gpu_event g[(256u << 10) / sizeof(struct wire_gpu_event)];
	size_t per = sizeof g / sizeof g[0];
	unsigned long long total = size / (sizeof g + 64), k = 0;
	for (unsigned long long c = 0; c < total; c++) {
		for (size_t i = 0; i < per; i++, k++) {
			memset(&g[i], 0, sizeof g[i]);
			g[i].start_ns = 1000 + k;
			g[i].end_ns = 1001 + k;
			g[i].name_id = 1;
			g[i].context = (uint32_t)(k / 2 + 1);
			g[i].stream = (uint32_t)(k + 1);
			g[i].kind = k % 2 ? WIRE_GPU_KERNEL : WIRE_GPU_CONTEXT;
			if (rows) {
				/* Kernels on one stream, each overlapping all before it. */
				g[i].end_ns = 1000000000000000ull;
				g[i].stream = 7;
				g[i].context = 1;
				g[i].kind = WIRE_GPU_KERNEL;
			}
		}
		frames_begin(&b);
		frame(&b, WIRE_FRAME_GPU, g, sizeof g);
		chunk(CAPTURE_CHUNK_FRAMES, 0, b.p, b.len);
	}
	free(b.p);
}

static void manifests(unsigned long long size)
{
	char line[128];
	for (unsigned long i = 0; written + 40 + sizeof line <= size; i++) {
		int n = snprintf(line, sizeof line,
		                 "package_%lu=1.%lu.0 (a manifest line repeated to fill)\n", i, i % 97);
		chunk(CAPTURE_CHUNK_MANIFEST, 0, line, (size_t)n);
	}
}

static void sources(unsigned long long size, int far_ids)
{
	struct buf b = {0};
	for (uint32_t s = 0; written + 300 <= size; s++) {
		frames_begin(&b);
		hello(&b, (int32_t)(100000 + s % 4000000));
		name(&b, far_ids ? WIRE_MAX_STRING_ID : 1, "r");
		struct wire_event ev[2];
		memset(ev, 0, sizeof ev);
		ev[0].time_ns = 1000 + s;
		ev[1].time_ns = 2000 + s;
		ev[0].tid = ev[1].tid = 7;
		ev[0].name_id = 1;
		ev[0].kind = WIRE_EV_NVTX_PUSH;
		ev[1].kind = WIRE_EV_NVTX_POP;
		frame(&b, WIRE_FRAME_EVENTS, ev, sizeof ev);
		if (far_ids) {
			/* And a CUDA call with the largest correlation id the store keeps a map for. */
			struct wire_gpu_event g;
			memset(&g, 0, sizeof g);
			g.kind = WIRE_GPU_API_RUNTIME;
			g.start_ns = 1000 + s;
			g.end_ns = 2000 + s;
			g.tid = 7;
			g.name_id = 1;
			g.correlation_id = (1u << 20) - 1;
			frame(&b, WIRE_FRAME_GPU, &g, sizeof g);
		}
		chunk(CAPTURE_CHUNK_FRAMES, s, b.p, b.len);
	}
	free(b.p);
}

int main(int argc, char **argv)
{
	if (argc < 4)
		die("usage: crafted_capture bomb|manifests|sources OUT SIZE_KB [VERSION]");
	unsigned long long size = strtoull(argv[3], NULL, 10) * 1024;
	if (argc > 4)
		version = (unsigned)atoi(argv[4]);
	out = fopen(argv[2], "wb");
	if (!out)
		die("cannot create the output");
	file_header();
	if (strcmp(argv[1], "bomb") == 0)
		bomb(size, 0);
	else if (strcmp(argv[1], "bombpad") == 0)
		bomb(size, 1);
	else if (strcmp(argv[1], "manifests") == 0)
		manifests(size);
	else if (strcmp(argv[1], "sources") == 0)
		sources(size, 0);
	else if (strcmp(argv[1], "strids") == 0)
		sources(size, 1);
	else if (strcmp(argv[1], "async") == 0)
		events(size, 0);
	else if (strcmp(argv[1], "threads") == 0)
		events(size, 1);
	else if (strcmp(argv[1], "gpu") == 0)
		gpu(size, 0);
	else if (strcmp(argv[1], "rows") == 0)
		events(size, 2);
	else if (strcmp(argv[1], "gpurows") == 0)
		gpu(size, 1);
	else
		die("unknown kind");
	struct capture_end end = {(uint32_t)chunks, 0, 0};
	chunk(CAPTURE_CHUNK_END, 0, &end, sizeof end);
	if (fclose(out) != 0)
		die("close failed");
	printf("%lu\n", chunks);
	return 0;
}
