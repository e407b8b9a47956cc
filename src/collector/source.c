/*
 * The table of event sources. Each entry adapts one source (CUPTI, NVTX, the CPU sampler,
 * counters, blocking-call wrappers) to the few points where the sender and the injector call
 * every source; the order of the table is the order of the calls.
 */
#include "source.h"

#include "cuscope/collector.h"
#include "cuscope/wire.h"

static int sampling_init(const struct collector_config *config)
{
	return sampler_init(config->sample_hz);
}

static void sampling_begin(void)
{
	sampler_begin(); /* a failure was said in a notice; the other sources go on */
}

/* The last rate report before the timers go (sampler_poll(0) reports at once). */
static void sampling_stop(void)
{
	sampler_poll(0);
	sampler_stop();
}

static uint64_t sampling_lost(uint32_t cause)
{
	return cause == WIRE_LOSS_SAMPLE_BUSY ? sampler_skipped() : 0;
}

static int counters_source_init(const struct collector_config *config)
{
	return counters_init(config->counters);
}

static int osrt_source_init(const struct collector_config *config)
{
	osrt_init(config->osrt_threshold_ns, config->osrt_enabled);
	return 0;
}

static const struct source sources[] = {
    {
        .name = "gpu",
        .cost_id = WIRE_COST_GPU,
        /* CUPTI starts at the program's first CUDA call (InitializeInjection), not here. */
        .drain = cupti_drain,
        .exit = cupti_stop,
        .detach = cupti_detach,
        .after_fork = cupti_forget_after_fork,
        .lost = cupti_loss,
    },
    {
        .name = "nvtx", .cost_id = WIRE_COST_NVTX,
        /* Filled by the program's first NVTX call (nvtx_inject); records arrive in the rings. */
    },
    {
        .name = "sampling",
        .cost_id = WIRE_COST_SAMPLING,
        .init = sampling_init,
        .begin = sampling_begin,
        .thread_added = sampler_thread_added,
        .thread_removed = sampler_thread_removed,
        .poll = sampler_poll,
        .stop = sampling_stop,
        .detach = sampler_stop,
        .after_fork = sampler_forget_after_fork,
        .lost = sampling_lost,
    },
    {
        .name = "osrt",
        .cost_id = WIRE_COST_OSRT,
        .init = osrt_source_init,
    },
    {
        .name = "counters",
        .cost_id = WIRE_COST_COUNTERS,
        .init = counters_source_init,
        .thread_added = counters_thread_added,
        .thread_removed = counters_thread_removed,
        .poll = counters_poll,
        /* Closes this process's counter fds (the same as a forked child must). */
        .detach = counters_forget_after_fork,
        .after_fork = counters_forget_after_fork,
    },
};

#define SOURCE_COUNT (sizeof sources / sizeof sources[0])

int source_each_init(const struct collector_config *config)
{
	int rc = 0;
	for (size_t i = 0; i < SOURCE_COUNT; i++)
		if (sources[i].init) {
			int r = sources[i].init(config);
			if (r && !rc)
				rc = r;
		}
	return rc;
}

void source_each_begin(void)
{
	for (size_t i = 0; i < SOURCE_COUNT; i++)
		if (sources[i].begin)
			sources[i].begin();
}

void source_each_thread_added(pid_t tid)
{
	for (size_t i = 0; i < SOURCE_COUNT; i++)
		if (sources[i].thread_added)
			sources[i].thread_added(tid);
}

void source_each_thread_removed(pid_t tid)
{
	for (size_t i = 0; i < SOURCE_COUNT; i++)
		if (sources[i].thread_removed)
			sources[i].thread_removed(tid);
}

size_t source_each_drain(void)
{
	size_t n = 0;
	for (size_t i = 0; i < SOURCE_COUNT; i++)
		if (sources[i].drain)
			n += sources[i].drain();
	return n;
}

void source_each_poll(uint64_t now_ns)
{
	for (size_t i = 0; i < SOURCE_COUNT; i++)
		if (sources[i].poll)
			sources[i].poll(now_ns);
}

void source_each_stop(void)
{
	for (size_t i = 0; i < SOURCE_COUNT; i++)
		if (sources[i].stop)
			sources[i].stop();
}

void source_each_exit(void)
{
	for (size_t i = 0; i < SOURCE_COUNT; i++)
		if (sources[i].exit)
			sources[i].exit();
}

void source_each_detach(void)
{
	for (size_t i = 0; i < SOURCE_COUNT; i++)
		if (sources[i].detach)
			sources[i].detach();
}

void source_each_after_fork(void)
{
	for (size_t i = 0; i < SOURCE_COUNT; i++)
		if (sources[i].after_fork)
			sources[i].after_fork();
}

uint64_t source_each_lost(uint32_t cause)
{
	uint64_t n = 0;
	for (size_t i = 0; i < SOURCE_COUNT; i++)
		if (sources[i].lost)
			n += sources[i].lost(cause);
	return n;
}
