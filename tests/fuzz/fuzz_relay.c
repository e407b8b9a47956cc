/*
 * libFuzzer harness for the local side of attach --ssh: arbitrary bytes as two hosts' relay streams,
 * through the same demultiplexer the viewer runs on what ssh hands it (ssh_hosts_feed: the relay
 * decoder, the source numbering across a relay's restarts, the bounds on sources), and every frame
 * it dispatches moved by a host's clock path (capture_frame_move, as the live view does) into a
 * store, as attach --ssh's live view does.
 *
 * Input: byte 0's bits 0 and 1 put a valid first line ("cuscope-relay 1 VERSION HOST") in front of
 * host 0's and host 1's streams (and of every later run), so most inputs reach the records. Then
 * pieces: a control byte (bit 0: the host; bit 1: its relay's run ends before the piece), two bytes
 * of length (little-endian, taken modulo 8192) and that many bytes (fewer at the end of the input).
 */
#include "cuscope/capture.h"
#include "cuscope/clock_align.h"
#include "cuscope/relay.h"
#include "cuscope/ssh.h"
#include "cuscope/store.h"
#include "cuscope/wire.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HOSTS 2

struct harness {
	struct store *store;
	int *ids[HOSTS]; /* store source + 1 by the host's local source */
	size_t id_caps[HOSTS];
	int next_id;
	struct clock_align_path path;
	uint8_t *moved;
	size_t moved_cap;
	int first_line[HOSTS];
};

static int harness_id(struct harness *h, int host, uint32_t source)
{
	if (source >= h->id_caps[host]) {
		size_t cap = (size_t)source + 1;
		h->ids[host] = realloc(h->ids[host], cap * sizeof *h->ids[host]);
		memset(h->ids[host] + h->id_caps[host], 0, (cap - h->id_caps[host]) * sizeof *h->ids[host]);
		h->id_caps[host] = cap;
	}
	if (!h->ids[host][source])
		h->ids[host][source] = ++h->next_id;
	return h->ids[host][source] - 1;
}

static uint64_t harness_move(void *ctx, uint64_t t)
{
	return t + (uint64_t)clock_align_path_move(ctx, t);
}

static void on_frame(void *ctx, int host, uint32_t source, uint32_t type, const void *payload,
                     uint32_t length)
{
	struct harness *h = ctx;
	const char *cause = NULL;
	if (length && wire_frame_check(type, payload, length, &cause) == 0) {
		if (length > h->moved_cap) {
			h->moved = realloc(h->moved, length);
			h->moved_cap = length;
		}
		memcpy(h->moved, payload, length);
		capture_frame_move(type, h->moved, length, harness_move, &h->path);
		payload = h->moved;
	}
	store_feed(h->store, harness_id(h, host, source), type, payload, length, &cause);
}

static void on_closed(void *ctx, int host, uint32_t source)
{
	struct harness *h = ctx;
	store_source_closed(h->store, harness_id(h, host, source));
}

static void on_loss(void *ctx, int host, uint32_t source, uint64_t frames, uint64_t bytes)
{
	(void)ctx;
	(void)host;
	(void)source;
	(void)frames;
	(void)bytes;
}

static void on_note(void *ctx, int host, const char *line)
{
	(void)ctx;
	(void)host;
	/* A note reaches a terminal: it must be one line of printable text. */
	for (const char *c = line; *c; c++)
		if ((unsigned char)*c < ' ' || *c == 0x7f)
			abort();
}

/* The first line of a run, when the input asks for one. */
static void harness_begin_run(struct harness *h, struct ssh_hosts *s, int host)
{
	if (!h->first_line[host])
		return;
	char line[200];
	int n = snprintf(line, sizeof line, RELAY_LINE_PREFIX "%d %s node%d\n", RELAY_PROTO, relay_version(),
	                 host);
	ssh_hosts_feed(s, host, line, (size_t)n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	static struct harness h;
	memset(&h, 0, sizeof h);
	h.store = store_new();
	clock_align_path_init(&h.path, 2000000000);
	struct clock_align_fit fit = {.offset_ns = -1000000, .drift = 1e-5, .origin_ns = 5000000000ull};
	clock_align_path_steer(&h.path, 3000000000ull, &fit, CLOCK_ALIGN_LIVE_SLEW);
	char name0[] = "nodeA", name1[] = "nodeB";
	char *names[HOSTS] = {name0, name1};
	struct ssh_callbacks cb = {&h, on_frame, on_closed, on_loss, on_note};
	struct ssh_hosts *s = ssh_hosts_new_idle(names, HOSTS, &cb);
	for (int i = 0; i < HOSTS; i++) {
		h.first_line[i] = (data[0] >> i) & 1;
		harness_begin_run(&h, s, i);
	}
	size_t off = 1;
	while (off < size) {
		if (size - off < 3)
			break;
		uint8_t ctl = data[off];
		size_t piece = (size_t)(data[off + 1] | data[off + 2] << 8) % 8192;
		off += 3;
		int host = ctl & 1;
		if (ctl & 2) {
			ssh_hosts_end_run(s, host);
			if (ssh_hosts_feed(s, host, "", 0) != -EPIPE) /* the next run starts */
				harness_begin_run(&h, s, host);
		}
		if (piece > size - off)
			piece = size - off;
		if (ssh_hosts_feed(s, host, data + off, piece) == -EPROTO && !ssh_host_failed(s, host))
			harness_begin_run(&h, s, host);
		off += piece;
	}
	for (int i = 0; i < HOSTS; i++) {
		(void)ssh_host_line(s, i);
		(void)ssh_host_remote_name(s, i);
	}
	ssh_hosts_free(s);
	store_free(h.store);
	for (int i = 0; i < HOSTS; i++)
		free(h.ids[i]);
	free(h.moved);
	clock_align_path_fini(&h.path);
	return 0;
}
