/* One clock for every event source: CLOCK_MONOTONIC ns, plus a REALTIME anchor. */
#ifndef CUSCOPE_CLOCK_H
#define CUSCOPE_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Current CLOCK_MONOTONIC time in ns; async-signal-safe. */
static inline uint64_t clock_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Current CLOCK_REALTIME time in ns. */
static inline uint64_t clock_real_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Reads MONOTONIC and REALTIME as close together as possible (smallest of a few tries). */
void clock_anchor(uint64_t *mono_ns, uint64_t *real_ns);

/*
 * Cheap timestamps for hot paths on application threads: the CPU's time-stamp counter, read in a
 * few ns where clock_gettime costs 15-50 ns, converted to CLOCK_MONOTONIC later on a thread of
 * ours. Only where the TSC is invariant (constant_tsc and nonstop_tsc), so every core ticks at one
 * rate through frequency changes and idle states.
 */
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
static inline uint64_t clock_ticks(void)
{
	return __rdtsc();
}
#else
static inline uint64_t clock_ticks(void)
{
	return clock_mono_ns();
}
#endif

/* 1 when this machine's TSC is invariant and the kernel clocksource is the TSC, so clock_ticks()
 * can stand in for MONOTONIC. */
int clock_ticks_usable(void);
/* The same decided from the texts of /proc/cpuinfo (its start: the first CPU's flags line; cut
 * in place) and of the current clocksource, read by the caller (the collector reads them through
 * fds it checks). */
int clock_ticks_usable_text(char *cpuinfo, const char *clocksource);

/*
 * Conversion of ticks to MONOTONIC ns: anchored at the latest (ticks, ns) pair taken by
 * clock_tick_map_update, with the rate measured over everything since the first pair. A tick
 * value converts with an error of (its distance to the anchor) x (rate error), which is below a
 * microsecond for records drained within a second of being written.
 */
struct clock_tick_map {
	uint64_t first_ticks, first_ns; /* the first anchor */
	uint64_t ticks, ns;             /* the latest anchor */
	double ns_per_tick;
	int ready;
};

/* Takes a new anchor (spins up to ~200 us on the first call to get a first rate). */
void clock_tick_map_update(struct clock_tick_map *map);
/* MONOTONIC ns of a tick value. */
uint64_t clock_tick_map_ns(const struct clock_tick_map *map, uint64_t ticks);

#endif
