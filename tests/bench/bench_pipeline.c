/*
 * Pipeline benchmark: collector -> Unix socket -> tap -> store, all in one run. Launches
 * nvtx_producer under the collector (like `cuscope record`), feeds every frame into an in-process
 * store, and reports events/s from the first frame to the last connection closing, wire bytes
 * per event and store bytes per event. Run it under `taskset -c 0` to measure on one core.
 *   bench_pipeline PRODUCER PAIRS BATCH THREADS
 */
#include "cuscope/clock.h"
#include "cuscope/launch.h"
#include "cuscope/store.h"
#include "cuscope/tap.h"
#include "cuscope/wire.h"

#include <stdio.h>
#include <stdlib.h>

struct bench {
	struct store *store;
	uint64_t first_frame_ns;
};

static int bench_frame(void *ctx, int source, uint32_t type, const void *payload, uint32_t length)
{
	struct bench *b = ctx;
	const char *cause;
	if (!b->first_frame_ns)
		b->first_frame_ns = clock_mono_ns();
	return store_feed(b->store, source, type, payload, length, &cause);
}

static void bench_closed(void *ctx, int source)
{
	struct bench *b = ctx;
	store_source_closed(b->store, source);
}

int main(int argc, char **argv)
{
	if (argc < 5) {
		fprintf(stderr, "usage: bench_pipeline PRODUCER PAIRS BATCH THREADS\n");
		return 2;
	}
	struct bench b = {store_new(), 0};
	struct launch launch;
	struct launch_options opts = {.log_output = 0, .wait_viewer_ms = 3000};
	char msg[512];
	char *cmd[] = {argv[1], argv[2], argv[3], argv[4], NULL};
	if (launch_start(&launch, cmd, &opts, msg, sizeof msg) != 0) {
		fprintf(stderr, "bench_pipeline: %s\n", msg);
		return 1;
	}
	struct tap_callbacks cb = {.ctx = &b, .frame = bench_frame, .closed = bench_closed};
	struct tap *tap = tap_new(launch.session_dir, &cb);
	uint64_t exited_at = 0;
	for (;;) {
		tap_pump(tap, 10, -1);
		if (!launch_poll(&launch) && !exited_at)
			exited_at = clock_mono_ns();
		if (exited_at &&
		    (tap_connection_count(tap) == 0 || clock_mono_ns() - exited_at > 5000000000ull))
			break;
	}
	uint64_t end = clock_mono_ns();
	uint64_t events = store_event_count(b.store);
	double secs = (double)(end - b.first_frame_ns) / 1e9;
	printf("events %llu  lost %llu  seconds %.3f  events_per_s %.0f  wire_bytes_per_event %.1f  "
	       "store_bytes_per_event %.1f\n",
	       (unsigned long long)events, (unsigned long long)store_loss_total(b.store), secs,
	       (double)events / secs, (double)tap_bytes(tap) / (double)events,
	       (double)store_memory_bytes(b.store) / (double)events);
	tap_free(tap);
	launch_cleanup(&launch);
	store_free(b.store);
	return launch_exit_code(&launch);
}
