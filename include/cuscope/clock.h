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

#endif
