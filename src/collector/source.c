/*
 * The table of event sources. Each entry adapts one source (CUPTI, NVTX, the CPU sampler,
 * counters, blocking-call wrappers) to the few points where the sender and the injector call
 * every source; the order of the table is the order of the calls.
 *
 * Cost: own_cpu_ns is the sender thread's CPU time inside each source's hooks (thread CPU clock
 * deltas around them; the CUPTI flush thread's own time is added to the GPU entry); added_ns is
 * each source's estimate of what it added to the program's threads (sampled self-timing, see
 * the sources); the sender's entry is the rest of its thread's time.
 *
 * The overhead budget (CUSCOPE_OVERHEAD_BUDGET, per mille; 0 = off): every window of at least
 * BUDGET_WINDOW_NS and BUDGET_MIN_CPU_NS of program CPU, overhead = the added_ns of sampling,
 * blocking-call wrappers and counters in the window / the program's own CPU time in it without
 * that added time. Program CPU = the process's CPU time minus the collector's own threads (the
 * sender and the CUPTI flush thread). CPU time rather than wall x busy threads: it needs no
 * guess of how many threads are busy, it is the unit the sampler's rate is in (samples per
 * thread CPU-second), and for threads that block it overstates the share of wall time (an
 * estimate that errs on the side of the program). Over budget, one source steps down per
 * window, in rank order (sampling, then counters, then the blocking-call threshold), skipping
 * sources that account for under a quarter of the added time. Under budget, the last lowered
 * rank whose estimate one step back up stays under BUDGET_UP_PERMILLE of the budget steps up,
 * once that held for `up_wait` windows in a row. The estimate one step up is what that level
 * measured before (for BUDGET_MEMORY_NS), else twice the source's share now; a source lowered
 * again soon after a step up waits twice as long before the next. GPU activity, launch records
 * and NVTX are never lowered. Each step: one notice (rate-limited) and the source's cost entry
 * shows WIRE_COST_REDUCED, backoffs and its level.
 */
#include "source.h"

#include "cuscope/clock.h"
#include "collector.h"
#include "cuscope/ring.h"
#include "cuscope/wire.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define BUDGET_WINDOW_NS      500000000ull
#define BUDGET_MIN_CPU_NS     20000000ull   /* program CPU a window needs to be judged */
#define BUDGET_IDLE_NS        5000000000ull /* a window without enough CPU starts again after */
#define BUDGET_UP_PERMILLE    750           /* of the budget: room needed for a step back up */
#define BUDGET_UP_WAIT        4             /* windows in a row, first; doubles up to the max */
#define BUDGET_UP_WAIT_MAX    64
#define BUDGET_MEMORY_NS      30000000000ull /* a level's measured cost is trusted this long */
#define BUDGET_NOTICE_GAP_NS  2000000000ull
#define BUDGET_NOTICES_MAX    5
#define BUDGET_STEPS_MAX      16
#define SAMPLING_FLOOR_HZ     50
#define OSRT_THRESHOLD_MAX_US 10000u /* 10 ms: past it the wrappers themselves are what costs */
#define COUNTERS_PERIOD_MS    500u
#define COUNTERS_STEPS        5 /* 500 ms doubled 4 times (8 s), then off */

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

/* Attached late: only a CUDA program (libcuda already loaded) is traced from here; the others start
 * GPU tracing at their first CUDA call (InitializeInjection). */
static void gpu_start_late(void)
{
	if (dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD) && !getenv("CUSCOPE_NO_GPU"))
		cupti_start_late();
}

/* An attached collector stops GPU tracing once the viewer is gone anyway: stopping it now delivers
 * the records CUPTI still holds into the detach answer. Otherwise tracing goes on: what CUPTI
 * completed so far belongs to the viewer that leaves. */
static void gpu_flush(int ending)
{
	if (ending)
		cupti_detach();
	else
		cupti_flush();
}

static void gpu_quick_exit(void)
{
	if (cupti_running())
		collector_notice(WIRE_NOTICE_WARNING,
		                 "the program ended through _exit: GPU activity CUPTI had not handed over "
		                 "yet is missing");
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

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- NVTX: events counted by the sender, priced at a cost calibrated once ---- */

static uint64_t nvtx_events, nvtx_call_ns, sender_records;

/*
 * What one NVTX call does on the application thread after the dispatch, done on the sender over a
 * ring of its own of the programs' size: a message's length and copy, errno kept, a timestamp, a
 * record reserved with the pushes' headroom, filled, committed, the half-full check. The ring is
 * cycled through several times (drained between timed batches, untimed) so that its memory is
 * as cold as a program's ring. Not in it: cache lines the sender takes from the writer's core.
 */
static uint64_t nvtx_calibrate(void)
{
	enum { BATCH = 512, HEADROOM = 16 * 1024 };
	size_t bytes = collector_config.ring_bytes;
	if (bytes < 64 * 1024 || bytes > (4u << 20))
		bytes = bytes < 64 * 1024 ? 64 * 1024 : 4u << 20;
	void *storage = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (storage == MAP_FAILED)
		return 0;
	memset(storage, 0, bytes); /* page faults are not what a call costs */
	struct ring ring;
	ring_init(&ring, storage, bytes);
	static const char *const message = "calibrate-range";
	uint64_t spent = 0, calls = 0;
	size_t total = 4 * bytes / (sizeof(struct ring_record) + 16);
	while (calls < total) {
		uint64_t t0 = clock_mono_ns();
		for (int i = 0; i < BATCH; i++) {
			int saved_errno = errno;
			size_t len = strlen(message);
			struct ring_record *rec = ring_reserve_headroom(&ring, len, HEADROOM);
			if (!rec)
				break;
			uint16_t flags = 0;
			rec->kind = WIRE_EV_NVTX_PUSH;
			rec->tid = 1;
			rec->reserved = 0;
			rec->time_ns = collector_stamp(&flags);
			rec->flags = flags;
			rec->value = 0;
			rec->name_ref = NULL;
			rec->domain_ref = NULL;
			memcpy(rec + 1, message, len);
			ring_commit(&ring, rec);
			if (ring_used_upper_bound(&ring) > bytes / 2)
				ring_refresh_used(&ring);
			errno = saved_errno;
		}
		spent += clock_mono_ns() - t0;
		calls += BATCH;
		const struct ring_record *rec;
		while ((rec = ring_peek(&ring)))
			ring_release(&ring, rec);
	}
	munmap(storage, bytes);
	return calls ? spent / calls : 0;
}

static void nvtx_cost(struct wire_cost *cost)
{
	if (nvtx_events && !nvtx_call_ns)
		nvtx_call_ns = nvtx_calibrate();
	cost->events = nvtx_events;
	cost->added_ns = nvtx_events * nvtx_call_ns;
}

void source_count_sender(uint64_t records)
{
	sender_records += records;
}

void source_count_nvtx(uint64_t events)
{
	nvtx_events += events;
}

/* ---- levels the overhead budget steps through ---- */

static uint32_t sampling_level_at(unsigned step)
{
	unsigned asked = sampler_requested_rate();
	if (step == 0 || step >= 32)
		return step == 0 ? asked : 0;
	unsigned hz = asked >> step;
	return hz >= SAMPLING_FLOOR_HZ ? hz : 0;
}

static void sampling_apply(uint32_t level)
{
	sampler_set_rate(level);
}

static uint32_t osrt_level_at(unsigned step)
{
	if (!collector_config.osrt_enabled)
		return 0;
	uint64_t us = collector_config.osrt_threshold_ns / 1000;
	if (us == 0)
		us = 1; /* level 0 means off */
	for (unsigned i = 0; i < step; i++) {
		if (us >= OSRT_THRESHOLD_MAX_US)
			return 0;
		us = us * 10 > OSRT_THRESHOLD_MAX_US ? OSRT_THRESHOLD_MAX_US : us * 10;
	}
	return (uint32_t)us;
}

static void osrt_apply(uint32_t level)
{
	/* Back at what was asked: exactly that (a threshold under 1 us shows as level 1). */
	uint64_t ns = level == osrt_level_at(0) ? collector_config.osrt_threshold_ns : (uint64_t)level * 1000;
	osrt_set_threshold(ns, level != 0);
}

static uint32_t counters_level_at(unsigned step)
{
	if (!counters_active() || step >= COUNTERS_STEPS)
		return 0;
	return COUNTERS_PERIOD_MS << step;
}

static void counters_apply(uint32_t level)
{
	counters_set_period((uint64_t)level * 1000000ull);
}

static const struct source sources[] = {
    {
        .name = "gpu_metrics",
        .cost_id = WIRE_COST_GPU_METRICS,
        /* Starts in poll once GPU tracing runs (the program initialised CUDA). First in the table:
         * its stop and detach run before GPU tracing's (PM sampling is CUPTI's too). */
        .init = pmsample_init,
        .running = pmsample_running,
        .poll = pmsample_poll,
        .stop = pmsample_stop,
        .detach = pmsample_detach,
        .after_fork = pmsample_after_fork,
        .cost = pmsample_cost,
    },
    {
        .name = "gpu",
        .cost_id = WIRE_COST_GPU,
        /* CUPTI starts at the program's first CUDA call (InitializeInjection), not here. */
        .start_late = gpu_start_late,
        .running = cupti_running,
        .drain = cupti_drain,
        .exit = cupti_stop,
        .flush = gpu_flush,
        .quick_exit = gpu_quick_exit,
        .detach = cupti_detach,
        .after_fork = cupti_forget_after_fork,
        .lost = cupti_loss,
    },
    {
        .name = "nvtx",
        .cost_id = WIRE_COST_NVTX,
        /* Filled by the program's first NVTX call (nvtx_inject); records arrive in the rings. */
        .cost = nvtx_cost,
        .lost = nvtx_payload_lost,
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
        .before_exec = sampler_exec_begin,
        .after_exec = sampler_exec_end,
        .after_fork = sampler_forget_after_fork,
        .lost = sampling_lost,
        .cost = sampler_cost,
        .budget_rank = 1,
        .level_at = sampling_level_at,
        .apply = sampling_apply,
        .what = "CPU sampling",
        .unit = "samples/s",
    },
    {
        .name = "osrt",
        .cost_id = WIRE_COST_OSRT,
        .init = osrt_source_init,
        .cost = osrt_cost,
        .budget_rank = 3,
        .level_at = osrt_level_at,
        .apply = osrt_apply,
        .what = "blocking calls over",
        .unit = "us",
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
        .cost = counters_cost,
        .budget_rank = 2,
        .level_at = counters_level_at,
        .apply = counters_apply,
        .what = "counters every",
        .unit = "ms",
    },
};

#define SOURCE_COUNT (sizeof sources / sizeof sources[0])
_Static_assert(SOURCE_COUNT <= 32, "source_each_before_exec's mask holds every source");

/* Per source, beside the constant table. Sender thread only. */
static struct source_state {
	uint64_t own_cpu_ns; /* sender CPU time inside the source's hooks */
	uint64_t events;     /* records its drain hook returned */
	unsigned step;       /* budget steps below what was asked (0: as asked) */
	uint32_t backoffs;
	unsigned up_wait;                       /* calm windows needed before a step up */
	uint64_t raised_ns;                     /* last step up (a back-off soon after doubles up_wait) */
	uint32_t permille_at[BUDGET_STEPS_MAX]; /* measured cost share at each step, +1 (0 = unknown) */
	uint64_t measured_ns[BUDGET_STEPS_MAX]; /* when */
	/* Notices: the level last said, whether a change is still to be said, and when. */
	uint32_t announced;
	int announced_set, pending;
	uint64_t pending_estimate, noticed_ns;
} state[SOURCE_COUNT];

/* Calls hook on every source that has it, charging each the sender CPU time it took. */
#define SOURCE_EACH_MEASURED(hook, ...)                                                                      \
	do {                                                                                                 \
		uint64_t t_ = 0;                                                                             \
		for (size_t i_ = 0; i_ < SOURCE_COUNT; i_++) {                                               \
			if (!sources[i_].hook)                                                               \
				continue;                                                                    \
			if (!t_)                                                                             \
				t_ = thread_cpu_ns();                                                        \
			sources[i_].hook(__VA_ARGS__);                                                       \
			uint64_t u_ = thread_cpu_ns();                                                       \
			state[i_].own_cpu_ns += u_ - t_;                                                     \
			t_ = u_;                                                                             \
		}                                                                                            \
	} while (0)

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

static void budget_prior(void);

void source_each_begin(void)
{
	SOURCE_EACH_MEASURED(begin);
	budget_prior();
}

void source_each_start_late(void)
{
	SOURCE_EACH_MEASURED(start_late);
}

void source_each_thread_added(pid_t tid)
{
	SOURCE_EACH_MEASURED(thread_added, tid);
}

void source_each_thread_removed(pid_t tid)
{
	SOURCE_EACH_MEASURED(thread_removed, tid);
}

size_t source_each_drain(void)
{
	size_t n = 0;
	uint64_t t = 0;
	for (size_t i = 0; i < SOURCE_COUNT; i++) {
		if (!sources[i].drain || (sources[i].running && !sources[i].running()))
			continue;
		if (!t)
			t = thread_cpu_ns();
		size_t got = sources[i].drain();
		uint64_t u = thread_cpu_ns();
		state[i].own_cpu_ns += u - t;
		state[i].events += got;
		n += got;
		t = u;
	}
	return n;
}

void source_each_poll(uint64_t now_ns)
{
	SOURCE_EACH_MEASURED(poll, now_ns);
}

void source_each_stop(void)
{
	SOURCE_EACH_MEASURED(stop);
}

void source_each_exit(void)
{
	for (size_t i = 0; i < SOURCE_COUNT; i++)
		if (sources[i].exit)
			sources[i].exit();
}

void source_each_flush(int ending)
{
	SOURCE_EACH_MEASURED(flush, ending);
}

/* Not measured: the application thread's time is the program's. */
void source_each_quick_exit(void)
{
	for (size_t i = 0; i < SOURCE_COUNT; i++)
		if (sources[i].quick_exit)
			sources[i].quick_exit();
}

unsigned source_each_before_exec(void)
{
	unsigned held = 0;
	for (size_t i = 0; i < SOURCE_COUNT; i++)
		if (sources[i].before_exec && sources[i].before_exec())
			held |= 1u << i;
	return held;
}

void source_each_after_exec(unsigned held)
{
	for (size_t i = 0; i < SOURCE_COUNT; i++)
		if ((held & (1u << i)) && sources[i].after_exec)
			sources[i].after_exec();
}

int source_any_buffering(void)
{
	for (size_t i = 0; i < SOURCE_COUNT; i++)
		if (sources[i].drain && (!sources[i].running || sources[i].running()))
			return 1;
	return 0;
}

void source_each_detach(void)
{
	SOURCE_EACH_MEASURED(detach);
	/* A later attach starts every source at what it asks for: the budget starts over too. */
	source_cost_reset();
}

void source_each_after_fork(void)
{
	for (size_t i = 0; i < SOURCE_COUNT; i++)
		if (sources[i].after_fork)
			sources[i].after_fork();
	source_cost_reset();
}

uint64_t source_each_lost(uint32_t cause)
{
	uint64_t n = 0;
	for (size_t i = 0; i < SOURCE_COUNT; i++)
		if (sources[i].lost)
			n += sources[i].lost(cause);
	return n;
}

/* ---- cost entries ---- */

size_t source_cost_build(struct wire_cost *out, uint64_t now_ns)
{
	size_t n = 0;
	uint64_t in_hooks = 0;
	struct wire_cost *sender = &out[n++];
	for (size_t i = 0; i < SOURCE_COUNT && n < WIRE_COST_SOURCE_MAX; i++) {
		struct wire_cost c;
		memset(&c, 0, sizeof c);
		if (sources[i].cost)
			sources[i].cost(&c);
		c.time_ns = now_ns;
		c.source = sources[i].cost_id;
		c.own_cpu_ns = state[i].own_cpu_ns;
		in_hooks += state[i].own_cpu_ns;
		if (c.source == WIRE_COST_GPU)
			c.own_cpu_ns += cupti_flush_cpu_ns();
		if (c.source == WIRE_COST_GPU_METRICS)
			c.own_cpu_ns += pmsample_start_cpu_ns();
		c.events += state[i].events;
		c.backoffs = state[i].backoffs;
		c.flags = state[i].step ? WIRE_COST_REDUCED : 0;
		/* One entry per active source: one that runs, costs or was ever lowered. */
		if (!c.own_cpu_ns && !c.added_ns && !c.events && !c.level && !c.backoffs)
			continue;
		out[n++] = c;
	}
	uint64_t cpu = thread_cpu_ns();
	memset(sender, 0, sizeof *sender);
	sender->time_ns = now_ns;
	sender->source = WIRE_COST_SENDER;
	sender->own_cpu_ns = cpu > in_hooks ? cpu - in_hooks : 0;
	sender->events = sender_records;
	return n;
}

/* ---- the overhead budget ---- */

static struct {
	uint64_t start_ns;  /* window start, 0 = none yet */
	uint64_t start_cpu; /* program CPU then */
	uint64_t start_added[SOURCE_COUNT];
	unsigned calm; /* windows in a row with room for a step up */
	unsigned notices;
} budget;

/* CPU time of the program's threads: the process's minus the collector's own threads'. Sender. */
static uint64_t budget_program_cpu_ns(void)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0)
		return 0;
	uint64_t all = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	uint64_t ours = thread_cpu_ns() + cupti_flush_cpu_ns() + pmsample_start_cpu_ns();
	return all > ours ? all - ours : 0;
}

static uint64_t budget_added(size_t i)
{
	struct wire_cost c;
	memset(&c, 0, sizeof c);
	sources[i].cost(&c);
	return c.added_ns;
}

static void budget_window_start(uint64_t now_ns)
{
	budget.start_ns = now_ns;
	budget.start_cpu = budget_program_cpu_ns();
	for (size_t i = 0; i < SOURCE_COUNT; i++)
		budget.start_added[i] = sources[i].budget_rank ? budget_added(i) : 0;
}

/* "3%" or "2.5%" from per mille. */
static void budget_percent(char *buf, size_t size, uint64_t permille)
{
	if (permille % 10)
		snprintf(buf, size, "%llu.%llu%%", (unsigned long long)(permille / 10),
		         (unsigned long long)(permille % 10));
	else
		snprintf(buf, size, "%llu%%", (unsigned long long)(permille / 10));
}

/*
 * Says what changed for source i since its last notice: at most one notice per source every
 * BUDGET_NOTICE_GAP_NS, BUDGET_NOTICES_MAX in all (the collector keeps only a few notices per
 * process); changes made meanwhile are said together in the next one (the cost records have each).
 */
static void budget_announce(size_t i, uint64_t now_ns)
{
	struct source_state *st = &state[i];
	const struct source *src = &sources[i];
	if (!st->pending || budget.notices >= BUDGET_NOTICES_MAX ||
	    (st->noticed_ns && now_ns - st->noticed_ns < BUDGET_NOTICE_GAP_NS))
		return;
	uint32_t from = st->announced_set ? st->announced : src->level_at(0), to = src->level_at(st->step);
	st->pending = 0;
	st->announced = to;
	st->announced_set = 1;
	if (from == to)
		return; /* down and back up meanwhile: nothing to say */
	budget.notices++;
	st->noticed_ns = now_ns;
	char limit[48], cost[48], a[32], b[48];
	budget_percent(limit, sizeof limit, collector_config.overhead_budget_permille);
	budget_percent(cost, sizeof cost, st->pending_estimate);
	if (from)
		snprintf(a, sizeof a, "%u", (unsigned)from);
	else
		snprintf(a, sizeof a, "off");
	if (to)
		snprintf(b, sizeof b, "%u %s", (unsigned)to, src->unit);
	else
		snprintf(b, sizeof b, "off");
	collector_notice_about(WIRE_NOTICE_INFO, WIRE_NOTICE_TOPIC_BUDGET,
	                       "overhead budget %s: %s %s%s%s -> %s (estimated cost %s)", limit, src->what, a,
	                       from && !to ? " " : "", from && !to ? src->unit : "", b, cost);
}

/* Moves source i to step; the estimate that moved it goes into the notice. */
static void budget_set_step(size_t i, unsigned step, uint64_t estimate_permille, uint64_t now_ns)
{
	const struct source *src = &sources[i];
	if (step > state[i].step)
		state[i].backoffs++;
	state[i].step = step;
	src->apply(src->level_at(step));
	state[i].pending = 1;
	state[i].pending_estimate = estimate_permille;
	budget_announce(i, now_ns);
}

/*
 * When sampling starts: a rate a CPU-bound thread can afford at the cost a sample is assumed to
 * have until samples are measured (the first window then corrects it either way).
 */
static void budget_prior(void)
{
	unsigned permille = collector_config.overhead_budget_permille;
	uint64_t cost_ns = sampler_prior_cost_ns();
	for (size_t i = 0; i < SOURCE_COUNT && permille; i++) {
		if (sources[i].cost_id != WIRE_COST_SAMPLING)
			continue;
		unsigned step = 0;
		uint32_t hz;
		while ((hz = sources[i].level_at(step)) && (uint64_t)hz * cost_ns / 1000000ull > permille)
			step++;
		if (step) { /* hz 0: even the lowest rate is over the budget, so sampling starts off */
			uint64_t asked = sources[i].level_at(0);
			budget_set_step(i, step, asked * cost_ns / 1000000ull, clock_mono_ns());
		}
	}
}

void source_budget_poll(uint64_t now_ns)
{
	for (size_t i = 0; i < SOURCE_COUNT; i++)
		if (state[i].pending)
			budget_announce(i, now_ns);
	if (!budget.start_ns) {
		budget_window_start(now_ns);
		return;
	}
	if (now_ns - budget.start_ns < BUDGET_WINDOW_NS)
		return;
	/* Process CPU minus our threads' (read a moment apart): never below the window's start. */
	uint64_t program_cpu = budget_program_cpu_ns();
	uint64_t cpu = program_cpu > budget.start_cpu ? program_cpu - budget.start_cpu : 0;
	if (cpu < BUDGET_MIN_CPU_NS) {
		/* Too little of the program ran to judge; an idle program costs nothing anyway. */
		if (now_ns - budget.start_ns >= BUDGET_IDLE_NS)
			budget_window_start(now_ns);
		return;
	}
	uint64_t added[SOURCE_COUNT], total = 0;
	for (size_t i = 0; i < SOURCE_COUNT; i++) {
		added[i] = 0;
		if (!sources[i].budget_rank)
			continue;
		uint64_t now_added = budget_added(i);
		added[i] = now_added > budget.start_added[i] ? now_added - budget.start_added[i] : 0;
		total += added[i];
	}
	uint64_t base = cpu > total ? cpu - total : 1;
	uint64_t estimate = total * 1000 / base;
	for (size_t i = 0; i < SOURCE_COUNT; i++)
		if (sources[i].budget_rank && state[i].step < BUDGET_STEPS_MAX) {
			state[i].permille_at[state[i].step] = (uint32_t)(added[i] * 1000 / base) + 1;
			state[i].measured_ns[state[i].step] = now_ns;
		}
	unsigned permille = collector_config.overhead_budget_permille;
	budget_window_start(now_ns);
	if (!permille)
		return; /* off: what was asked is kept; costs are still reported */
	if (estimate > permille) {
		budget.calm = 0;
		/* The first source in rank order that can go lower and carries a fair share. */
		size_t pick = SOURCE_COUNT;
		for (int rank = 1; rank <= 3 && pick == SOURCE_COUNT; rank++)
			for (size_t i = 0; i < SOURCE_COUNT; i++)
				if (sources[i].budget_rank == rank && sources[i].level_at(state[i].step) &&
				    state[i].step + 1 < BUDGET_STEPS_MAX && added[i] * 4 >= total) {
					pick = i;
					break;
				}
		if (pick == SOURCE_COUNT)
			return;
		if (state[pick].raised_ns &&
		    now_ns - state[pick].raised_ns < BUDGET_UP_WAIT * BUDGET_WINDOW_NS * 2) {
			/* Lowered again soon after a step up: wait longer before the next one. */
			unsigned wait = state[pick].up_wait ? state[pick].up_wait : BUDGET_UP_WAIT;
			state[pick].up_wait = wait * 2 > BUDGET_UP_WAIT_MAX ? BUDGET_UP_WAIT_MAX : wait * 2;
		}
		budget_set_step(pick, state[pick].step + 1, estimate, now_ns);
		return;
	}
	/* Under budget: the last lowered rank whose step back up would still fit goes up first. */
	size_t up = SOURCE_COUNT;
	for (int rank = 3; rank >= 1 && up == SOURCE_COUNT; rank--)
		for (size_t i = 0; i < SOURCE_COUNT && up == SOURCE_COUNT; i++) {
			struct source_state *st = &state[i];
			if (sources[i].budget_rank != rank || !st->step)
				continue;
			/* One step up costs what it measured there (recently), else twice the share now. */
			uint64_t share = added[i] * 1000 / base, above = 2 * share;
			unsigned higher = st->step - 1;
			if (st->permille_at[higher] && now_ns - st->measured_ns[higher] < BUDGET_MEMORY_NS)
				above = st->permille_at[higher] - 1;
			if ((estimate - share + above) * 1000 <= (uint64_t)permille * BUDGET_UP_PERMILLE)
				up = i;
		}
	if (up == SOURCE_COUNT) {
		budget.calm = 0;
		return;
	}
	struct source_state *st = &state[up];
	if (!st->up_wait)
		st->up_wait = BUDGET_UP_WAIT;
	if (++budget.calm < st->up_wait)
		return;
	budget.calm = 0;
	st->raised_ns = now_ns;
	budget_set_step(up, st->step - 1, estimate, now_ns);
}

void source_cost_reset(void)
{
	memset(state, 0, sizeof state);
	memset(&budget, 0, sizeof budget);
	nvtx_events = sender_records = 0;
}
