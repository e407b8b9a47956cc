/* Tick timestamps (TSC) converted to CLOCK_MONOTONIC: the conversion the collector's sender applies. */
#include "cuscope/clock.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include <cmocka.h>

static uint64_t distance(uint64_t a, uint64_t b)
{
	return a > b ? a - b : b - a;
}

/* Ticks read next to MONOTONIC, converted later through anchors taken in between, land within a
 * few microseconds of the MONOTONIC reading (the rate is refined at each anchor). */
static void test_ticks_convert_to_monotonic(void **state)
{
	(void)state;
	if (!clock_ticks_usable())
		skip();
	struct clock_tick_map map = {0};
	clock_tick_map_update(&map);
	uint64_t ticks[50], mono[50];
	struct timespec pause = {0, 2000000};
	for (int i = 0; i < 50; i++) {
		/* A pair read without a preemption in between (the ticks on both sides of the MONOTONIC
		 * read stay close): a preempted pair measures the scheduler, not the conversion. */
		for (int tries = 0; tries < 1000; tries++) {
			ticks[i] = clock_ticks();
			mono[i] = clock_mono_ns();
			if (clock_ticks() - ticks[i] < 20000) /* ~5-10 µs at the TSC rates in use */
				break;
		}
		nanosleep(&pause, NULL);
		if (i % 10 == 9)
			clock_tick_map_update(&map);
	}
	clock_tick_map_update(&map);
	uint64_t worst = 0;
	for (int i = 0; i < 50; i++) {
		uint64_t d = distance(clock_tick_map_ns(&map, ticks[i]), mono[i]);
		if (d > worst)
			worst = d;
	}
	/* 100 ms of history converted through one anchor: a preempted read can add tens of µs on a
	 * loaded machine, so the bound is loose; a wrong rate or sign would be off by milliseconds. */
	if (worst > 50000)
		fail_msg("ticks converted %llu ns away from MONOTONIC", (unsigned long long)worst);
}

/* Conversion is monotonic: later ticks never convert to an earlier time. */
static void test_ticks_conversion_monotonic(void **state)
{
	(void)state;
	if (!clock_ticks_usable())
		skip();
	struct clock_tick_map map = {0};
	clock_tick_map_update(&map);
	uint64_t base = clock_ticks();
	uint64_t last = 0;
	for (uint64_t t = base - 1000000; t < base + 1000000; t += 997) {
		uint64_t ns = clock_tick_map_ns(&map, t);
		assert_true(ns >= last);
		last = ns;
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ticks_convert_to_monotonic),
	    cmocka_unit_test(test_ticks_conversion_monotonic),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
