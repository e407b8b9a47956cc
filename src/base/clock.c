#include "cuscope/clock.h"

void clock_anchor(uint64_t *mono_ns, uint64_t *real_ns)
{
	uint64_t best_gap = UINT64_MAX;
	/* Bracket REALTIME between two MONOTONIC reads; keep the tightest bracket. */
	for (int attempt = 0; attempt < 5; attempt++) {
		uint64_t before = clock_mono_ns();
		uint64_t real = clock_real_ns();
		uint64_t after = clock_mono_ns();
		if (after - before < best_gap) {
			best_gap = after - before;
			*mono_ns = before + (after - before) / 2;
			*real_ns = real;
		}
	}
}
