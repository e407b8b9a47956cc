/*
 * libFuzzer harness for the wire decoder and store_feed: the input is pushed through a
 * wire_decoder in pieces and every whole frame is fed to a store (a new source after a rejected
 * frame, as a viewer would drop that connection); the store is then summarised and freed. An input
 * whose first byte is odd gets a valid HELLO in front, so most inputs reach the frame handlers.
 */
#include "cuscope/export.h"
#include "cuscope/stats.h"
#include "cuscope/store.h"
#include "cuscope/wire.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static FILE *devnull;

static void push_hello(struct wire_decoder *dec)
{
	uint8_t buf[sizeof(struct wire_frame_header) + sizeof(struct wire_hello) + 8];
	struct wire_frame_header fh = {WIRE_FRAME_HELLO, sizeof(struct wire_hello) + 8};
	struct wire_hello h;
	memset(&h, 0, sizeof h);
	memcpy(h.magic, WIRE_MAGIC, 8);
	h.version = WIRE_VERSION;
	h.hello_size = sizeof h;
	h.pid = 77;
	h.ppid = 1;
	h.start_mono_ns = 1000000000ull;
	h.features = WIRE_FEATURE_NVTX | WIRE_FEATURE_CUPTI;
	strcpy(h.host, "fuzz");
	h.cmdline_len = 8;
	memcpy(buf, &fh, sizeof fh);
	memcpy(buf + sizeof fh, &h, sizeof h);
	memcpy(buf + sizeof fh + sizeof h, "fuzz\0arg", 8);
	wire_decoder_push(dec, buf, sizeof buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!devnull)
		devnull = fopen("/dev/null", "w");
	struct wire_decoder dec;
	wire_decoder_init(&dec);
	struct store *st = store_new();
	if (size && (data[0] & 1))
		push_hello(&dec);
	int source = 0;
	size_t off = size ? 1 : 0;
	while (off < size) {
		/* pieces of varying size, as a socket would deliver them */
		size_t piece = 1 + (data[off] % 251) * 64;
		if (piece > size - off)
			piece = size - off;
		if (wire_decoder_push(&dec, data + off, piece) != 0)
			break;
		off += piece;
		for (;;) {
			uint32_t type, length;
			const void *payload;
			const char *cause = NULL;
			int rc = wire_decoder_next(&dec, &type, &payload, &length, &cause);
			if (rc <= 0) {
				if (rc < 0)
					off = size; /* a malformed stream ends the connection */
				break;
			}
			if (store_feed(st, source, type, payload, length, &cause) != 0) {
				store_source_closed(st, source);
				source++;
			}
		}
	}
	store_source_closed(st, source);
	stats_write(devnull, st, STATS_FORMAT_JSON);
	struct export_options eo = {0, UINT64_MAX};
	struct export_counts counts;
	char msg[256];
	const char *cause = NULL;
	export_chrome_json(st, "/dev/null", &eo, &counts, msg, sizeof msg, &cause);
	store_free(st);
	wire_decoder_fini(&dec);
	return 0;
}
