/*
 * Writes a capture with the collector's own cost through the project's capture writer, with known
 * truth (t098_cost_stats, t138_cost_row):
 *   cost_capture OUT [FILLER]
 * Process 4343 ("costprog", start T0 = 1000 s): thread "main" (tid 4343) from T0 + 1 ms, one COST
 * frame a second from T0 + 1 s to T0 + 20 s with two sources:
 *   sender    cpu i*3 ms, added 0, events i*100, level 0
 *   sampling  cpu i*2 ms, added i*1 ms, events i*1000; level 1000 until i = 7, reduced to 250 from
 *             i = 8 (1 back-off), reduced to 100 from i = 14 (2 back-offs) to the end
 * with INFO notices "overhead budget 3 %: sampling 1000/s -> 250/s" at i = 8 and "... 250/s ->
 * 100/s" at i = 14, FILLER NVTX marks (default 0) between readings (12000 spread the readings over
 * several chunks), and BYE at T0 + 20.5 s. Process 4344 ("nocost") sends no cost at all.
 */
#include "cuscope/capture.h"
#include "cuscope/wire.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MS 1000000ull
#define S  1000000000ull
#define T0 (1000 * S)

static struct capture_writer *w;

static void die(const char *what)
{
	fprintf(stderr, "cost_capture: %s failed\n", what);
	exit(1);
}

static void frame(uint32_t src, uint32_t type, const void *p, uint32_t len)
{
	if (capture_writer_frame(w, src, type, p, len) != 0)
		die("capture_writer_frame");
}

static void hello(uint32_t src, int pid, const char *argv0)
{
	unsigned char buf[sizeof(struct wire_hello) + 64];
	struct wire_hello h;
	memset(&h, 0, sizeof h);
	memcpy(h.magic, WIRE_MAGIC, 8);
	h.version = WIRE_VERSION;
	h.hello_size = sizeof h;
	h.pid = pid;
	h.ppid = 1;
	h.start_mono_ns = T0;
	h.anchor_mono_ns = T0;
	h.anchor_real_ns = 1700000000ull * S;
	snprintf(h.host, sizeof h.host, "testhost");
	h.cmdline_len = (uint32_t)strlen(argv0) + 1;
	memcpy(buf, &h, sizeof h);
	memcpy(buf + sizeof h, argv0, h.cmdline_len);
	frame(src, WIRE_FRAME_HELLO, buf, (uint32_t)(sizeof h + h.cmdline_len));
}

static void string(uint32_t src, uint32_t id, const char *text)
{
	unsigned char buf[sizeof(struct wire_string) + 64];
	struct wire_string s = {id, (uint32_t)strlen(text)};
	memcpy(buf, &s, sizeof s);
	memcpy(buf + sizeof s, text, s.length);
	frame(src, WIRE_FRAME_STRING, buf, (uint32_t)(sizeof s + s.length));
}

static void event(uint32_t src, uint16_t kind, uint64_t t, uint32_t tid, uint32_t name)
{
	struct wire_event e;
	memset(&e, 0, sizeof e);
	e.kind = kind;
	e.time_ns = t;
	e.tid = tid;
	e.name_id = name;
	frame(src, WIRE_FRAME_EVENTS, &e, sizeof e);
}

static void notice(uint32_t src, const char *text)
{
	unsigned char buf[sizeof(struct wire_notice) + 128];
	struct wire_notice n = {
	    .level = WIRE_NOTICE_INFO, .topic = WIRE_NOTICE_TOPIC_BUDGET, .length = (uint32_t)strlen(text)};
	memcpy(buf, &n, sizeof n);
	memcpy(buf + sizeof n, text, n.length);
	frame(src, WIRE_FRAME_NOTICE, buf, (uint32_t)(sizeof n + n.length));
}

static void bye(uint32_t src, uint64_t t)
{
	struct wire_bye b = {t, 0, 0};
	frame(src, WIRE_FRAME_BYE, &b, sizeof b);
}

int main(int argc, char **argv)
{
	if (argc < 2)
		die("usage: cost_capture OUT [FILLER]; argument check");
	unsigned long filler = argc > 2 ? strtoul(argv[2], NULL, 10) : 0;
	int err = 0;
	const char *cause = NULL;
	w = capture_writer_open(argv[1], &err, &cause);
	if (!w)
		die("capture_writer_open");
	hello(0, 4343, "costprog");
	string(0, 1, "main");
	string(0, 2, "tick");
	event(0, WIRE_EV_THREAD_NAME, T0 + 1 * MS, 4343, 1);
	for (uint64_t i = 1; i <= 20; i++) {
		uint64_t t = T0 + i * S;
		for (unsigned long k = 0; k < filler; k++)
			event(0, WIRE_EV_NVTX_MARK, t - S + 1 + k * (S / (filler + 1)), 4343, 2);
		if (i == 8)
			notice(0, "overhead budget 3 %: sampling 1000/s -> 250/s");
		if (i == 14)
			notice(0, "overhead budget 3 %: sampling 250/s -> 100/s");
		struct wire_cost c[2];
		memset(c, 0, sizeof c);
		c[0] = (struct wire_cost){
		    .time_ns = t, .own_cpu_ns = i * 3 * MS, .events = i * 100, .source = WIRE_COST_SENDER};
		c[1] = (struct wire_cost){.time_ns = t,
		                          .own_cpu_ns = i * 2 * MS,
		                          .added_ns = i * MS,
		                          .events = i * 1000,
		                          .source = WIRE_COST_SAMPLING,
		                          .backoffs = i >= 14  ? 2
		                                      : i >= 8 ? 1
		                                               : 0,
		                          .level = i >= 14  ? 100
		                                   : i >= 8 ? 250
		                                            : 1000,
		                          .flags = i >= 8 ? WIRE_COST_REDUCED : 0};
		frame(0, WIRE_FRAME_COST, c, sizeof c);
	}
	bye(0, T0 + 20 * S + S / 2);
	hello(1, 4344, "nocost");
	string(1, 1, "other");
	event(1, WIRE_EV_THREAD_NAME, T0 + 2 * MS, 4344, 1);
	bye(1, T0 + 3 * S);
	if (capture_writer_close(w) != 0)
		die("capture_writer_close");
	return 0;
}
