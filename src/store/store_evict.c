/*
 * The memory bound of a live store: when the store holds more than its limit, the oldest completed
 * events (ranges, marks, GPU ops and API calls, samples, blocking calls, GC ranges) are dropped by
 * time, and the store remembers from when on it is complete ("memory reaches back to"). Ranges still
 * open, lanes, processes, strings, stacks and loss counters stay: they are small, and strings and
 * stacks are bounded by the collector's own tables. Eviction only drops a prefix of each sorted row,
 * so queries stay binary searches; what was dropped from a range row is counted per row so an
 * incremental reader (the NVTX panel) keeps its place.
 */
#include "store_impl.h"

#include "cuscope/xalloc.h"

#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#define EVICT_CHECK_MIN_BYTES (256u << 10) /* fed bytes between two checks, at least */
#define EVICT_ROUNDS          6

void store_grow(void **ptr, size_t *cap, size_t need, size_t elem_size)
{
	if (need <= *cap)
		return;
	size_t new_cap = *cap ? *cap : 16;
	while (new_cap < need)
		new_cap += new_cap * elem_size < (64u << 10) ? new_cap : new_cap / 4;
	*ptr = xrealloc(*ptr, new_cap * elem_size);
	*cap = new_cap;
}

/* Gives back the room of a row that eviction emptied: the bound counts capacity, not use. */
void store_evict_shrink(void **v, size_t n, size_t *cap, size_t elem)
{
	if (*cap <= 64 || *cap <= n + n / 2 + 64)
		return;
	size_t want = n + n / 4 + 16;
	*v = xrealloc(*v, want * elem);
	*cap = want;
}

size_t store_evict_prefix(void **v, size_t n, size_t *cap, size_t k, size_t elem)
{
	if (!k)
		return n;
	size_t left = n - k;
	memmove(*v, (char *)*v + k * elem, left * elem);
	store_evict_shrink(v, left, cap, elem);
	return left;
}

size_t store_evict_count(const void *v, size_t n, size_t elem, size_t offset, uint64_t t)
{
	const unsigned char *b = v;
	size_t k = 0;
	while (k < n) {
		uint64_t x;
		memcpy(&x, b + k * elem + offset, sizeof x);
		if (x >= t)
			break;
		k++;
	}
	return k;
}

static uint64_t evict_lane(struct lane *l, uint64_t t)
{
	uint64_t dropped = 0;
	for (size_t r = 0; r < l->row_count; r++) {
		struct range_row *row = &l->rows[r];
		size_t k = store_evict_count(row->v, row->n, sizeof *row->v, TIMEROW_END, t);
		row->n = store_evict_prefix((void **)&row->v, row->n, &row->cap, k, sizeof *row->v);
		row->dropped += k;
		dropped += k;
	}
	size_t k = store_evict_count(l->marks, l->mark_count, sizeof *l->marks, TIMEROW_START, t);
	l->mark_count =
	    store_evict_prefix((void **)&l->marks, l->mark_count, &l->mark_cap, k, sizeof *l->marks);
	dropped += k;
	return dropped + store_gpu_lane_evict(l, t) + store_cpu_lane_evict(l, t);
}

uint64_t store_evict_before(struct store *st, uint64_t t)
{
	if (!t || t <= st->memory_from_ns || t <= st->first_ns)
		return 0;
	uint64_t dropped = 0;
	for (size_t p = 0; p < st->proc_count; p++) {
		struct process *pr = &st->procs[p];
		for (size_t l = 0; l < pr->lane_count; l++)
			dropped += evict_lane(&pr->lanes[l], t);
		store_cost_evict(pr, t); /* readings are not events: not counted as evicted */
	}
	dropped += store_metrics_evict(st, t);
	st->memory_from_ns = t;
	st->evicted += dropped;
	st->generation++;
	return dropped;
}

size_t store_event_bytes(const struct store *st)
{
	size_t bytes = 0;
	for (size_t p = 0; p < st->proc_count; p++) {
		const struct process *pr = &st->procs[p];
		for (size_t i = 0; i < pr->lane_count; i++) {
			const struct lane *l = &pr->lanes[i];
			for (size_t r = 0; r < l->row_count; r++)
				bytes += l->rows[r].cap * sizeof *l->rows[r].v;
			bytes += l->mark_cap * sizeof *l->marks;
			bytes += store_gpu_lane_event_bytes(l) + store_cpu_lane_event_bytes(l);
		}
	}
	return bytes + store_metrics_event_bytes(st);
}

uint64_t store_trim(struct store *st)
{
	if (!st->memory_limit)
		return 0;
	uint64_t dropped = 0;
	/* Above 4/5 of the limit, down to 3/5: rows grow by a quarter at most between two checks,
	 * and the next trim is a while away (eviction moves memory). */
	size_t high = st->memory_limit / 5 * 4, target = st->memory_limit / 5 * 3;
	for (int round = 0; round < EVICT_ROUNDS; round++) {
		size_t used = store_event_bytes(st);
		if (used <= (round ? target : high))
			break;
		uint64_t lo = st->memory_from_ns > st->first_ns ? st->memory_from_ns : st->first_ns;
		uint64_t hi = st->last_ns;
		if (hi <= lo + 1)
			break;
		/* Events are assumed spread evenly in time: drop the share of time that is over. */
		double share = (double)(used - target) / (double)used;
		if (share < 0.05)
			share = 0.05;
		uint64_t t = lo + (uint64_t)((double)(hi - lo) * share);
		if (t <= lo)
			t = lo + 1;
		dropped += store_evict_before(st, t);
	}
	if (dropped)
		malloc_trim(0); /* freed rows inside the heap go back to the system too */
	return dropped;
}

void store_evict_after_feed(struct store *st, uint32_t length)
{
	st->fed_since_check += length;
	size_t every = st->memory_limit / 64;
	if (every < EVICT_CHECK_MIN_BYTES)
		every = EVICT_CHECK_MIN_BYTES;
	if (st->fed_since_check < every)
		return;
	st->fed_since_check = 0;
	store_trim(st);
}

void store_set_memory_limit(struct store *st, size_t bytes)
{
	st->memory_limit = bytes;
	st->fed_since_check = 0;
	store_trim(st);
}

size_t store_memory_limit(const struct store *st)
{
	return st->memory_limit;
}

uint64_t store_memory_from_ns(const struct store *st)
{
	return st->memory_from_ns;
}

uint64_t store_evicted_count(const struct store *st)
{
	return st->evicted;
}

uint64_t store_lane_row_dropped(const struct store *st, size_t process, size_t lane, size_t row)
{
	const struct lane *l = &st->procs[process].lanes[lane];
	return row < l->row_count ? l->rows[row].dropped : 0;
}
