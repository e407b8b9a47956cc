/*
 * Test and benchmark helper: prints every WIRE_FRAME_COST entry of a capture, one line each, in
 * file order (the viewer's store does not keep them yet):
 *   cost pid=P source=NAME time_ns=T own_cpu_ns=C added_ns=A events=E backoffs=B level=L reduced=0|1
 *   cost_frames FILE
 * Trusted input only (captures the tests just recorded): chunk lengths are bounded, nothing more.
 */
#include "cuscope/capture.h"
#include "cuscope/wire.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#define MAX_SOURCES 4096

static int pids[MAX_SOURCES]; /* pid of each capture source (stream), from its HELLO */

static void cost_frames_walk(uint32_t source, const uint8_t *p, size_t len)
{
	size_t off = 0;
	while (len - off >= sizeof(struct wire_frame_header)) {
		struct wire_frame_header h;
		memcpy(&h, p + off, sizeof h);
		off += sizeof h;
		if (h.length > len - off)
			return;
		const uint8_t *payload = p + off;
		off += h.length;
		if (h.type == WIRE_FRAME_HELLO && h.length >= sizeof(struct wire_hello) &&
		    source < MAX_SOURCES) {
			struct wire_hello hello;
			memcpy(&hello, payload, sizeof hello);
			pids[source] = hello.pid;
		}
		if (h.type != WIRE_FRAME_COST)
			continue;
		for (size_t i = 0; i + sizeof(struct wire_cost) <= h.length; i += sizeof(struct wire_cost)) {
			struct wire_cost c;
			memcpy(&c, payload + i, sizeof c);
			const char *name = wire_cost_source_name(c.source);
			printf("cost pid=%d source=%s time_ns=%llu own_cpu_ns=%llu added_ns=%llu events=%llu "
			       "backoffs=%u level=%u reduced=%d\n",
			       source < MAX_SOURCES ? pids[source] : -1, name ? name : "?",
			       (unsigned long long)c.time_ns, (unsigned long long)c.own_cpu_ns,
			       (unsigned long long)c.added_ns, (unsigned long long)c.events, c.backoffs,
			       c.level, (c.flags & WIRE_COST_REDUCED) ? 1 : 0);
		}
	}
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: cost_frames FILE\n");
		return 2;
	}
	FILE *f = fopen(argv[1], "rb");
	if (!f) {
		perror(argv[1]);
		return 2;
	}
	struct capture_file_header fh;
	if (fread(&fh, sizeof fh, 1, f) != 1 || memcmp(fh.magic, CAPTURE_MAGIC, 8) != 0) {
		fprintf(stderr, "cost_frames: %s is not a capture\n", argv[1]);
		return 2;
	}
	struct capture_chunk_header ch;
	uint8_t *buf = NULL, *raw = NULL;
	while (fread(&ch, sizeof ch, 1, f) == 1 && ch.magic == CAPTURE_CHUNK_MAGIC) {
		if (ch.length > CAPTURE_CHUNK_MAX)
			break;
		buf = realloc(buf, ch.length ? ch.length : 1);
		if (!buf || fread(buf, 1, ch.length, f) != ch.length)
			break;
		const uint8_t *frames = buf;
		size_t len = ch.length;
		if (ch.type == CAPTURE_CHUNK_FRAMES_ZSTD) {
			uint32_t n;
			if (len < sizeof n)
				break;
			memcpy(&n, buf, sizeof n);
			if (n > CAPTURE_FRAMES_MAX)
				break;
			raw = realloc(raw, n ? n : 1);
			if (!raw || ZSTD_decompress(raw, n, buf + sizeof n, len - sizeof n) != n)
				break;
			frames = raw;
			len = n;
		} else if (ch.type != CAPTURE_CHUNK_FRAMES) {
			continue;
		}
		/* Version 2: the chunk's context (HELLO, strings) comes first; it repeats earlier frames. */
		struct capture_context cx;
		if (fh.version >= 2) {
			if (len < sizeof cx)
				break;
			memcpy(&cx, frames, sizeof cx);
			if (cx.context_bytes > len - sizeof cx)
				break;
			/* The context holds the HELLO (the pid) and strings, never a cost frame. */
			cost_frames_walk(ch.source, frames + sizeof cx, cx.context_bytes);
			frames += sizeof cx + cx.context_bytes;
			len -= sizeof cx + cx.context_bytes;
		}
		cost_frames_walk(ch.source, frames, len);
	}
	free(buf);
	free(raw);
	fclose(f);
	return 0;
}
