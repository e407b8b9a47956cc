/*
 * The collector's own cost per process and source (WIRE_FRAME_COST): the newest cumulative
 * reading, a bounded history of readings for rates over time, and the stretches where the
 * overhead budget held a source below what was asked.
 */
#include "store_impl.h"

#include "cuscope/xalloc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* One source of one process. */
struct cost_series {
	int seen;
	uint64_t stream;      /* start of the collector that sent the newest reading (HELLO start_mono_ns) */
	struct wire_cost raw; /* newest reading as sent, in its stream's own counts */
	/* what earlier streams (before an exec) counted: added to this stream's counts */
	uint64_t base_cpu, base_added, base_events;
	uint32_t base_backoffs;
	struct store_cost total; /* newest reading, totals since the process started */
	struct store_cost_point *points;
	size_t point_count, point_cap;
	struct store_cost_reduced *reduced;
	size_t reduced_count, reduced_cap;
};

struct cost_process {
	struct cost_series series[WIRE_COST_SOURCE_MAX];
};

/* Keeps every other reading of the older ones (the newest stays): cumulative values stay exact,
 * rates over old time get coarser. */
static void cost_thin(struct cost_series *s)
{
	size_t n = s->point_count, k = 0;
	for (size_t i = 0; i + 1 < n; i += 2)
		s->points[k++] = s->points[i];
	s->points[k++] = s->points[n - 1];
	s->point_count = k;
}

static void cost_point_add(struct cost_series *s, uint64_t t)
{
	struct store_cost_point p = {t, s->total.cpu_ns, s->total.added_ns};
	if (s->point_count && s->points[s->point_count - 1].time_ns == t) {
		s->points[s->point_count - 1] = p; /* the same reading again (final counts) */
		return;
	}
	if (s->point_count >= STORE_COST_POINTS_MAX)
		cost_thin(s);
	xgrow((void **)&s->points, &s->point_cap, s->point_count + 1, sizeof *s->points);
	s->points[s->point_count++] = p;
}

/* Opens, closes or moves the reduced stretch as a reading says. */
static void cost_reduced_note(struct cost_series *s, uint64_t t, int reduced, uint32_t level)
{
	struct store_cost_reduced *last = s->reduced_count ? &s->reduced[s->reduced_count - 1] : NULL;
	int open = last && last->end_ns == 0;
	if (open && reduced && last->level == level)
		return;
	if (open)
		last->end_ns = t > last->start_ns ? t : last->start_ns + 1;
	if (!reduced)
		return;
	if (s->reduced_count >= STORE_COST_REDUCED_MAX) {
		size_t drop = STORE_COST_REDUCED_MAX / 4;
		memmove(s->reduced, s->reduced + drop, (s->reduced_count - drop) * sizeof *s->reduced);
		s->reduced_count -= drop;
	}
	xgrow((void **)&s->reduced, &s->reduced_cap, s->reduced_count + 1, sizeof *s->reduced);
	s->reduced[s->reduced_count++] = (struct store_cost_reduced){t, 0, level, 0};
}

/* A cumulative count that must not go back: the larger of the previous total and the new one. */
static uint64_t cost_forward(uint64_t prev, uint64_t base, uint64_t raw)
{
	uint64_t v = base + raw < base ? UINT64_MAX : base + raw;
	return v > prev ? v : prev;
}

static void cost_reading(struct store *st, struct process *pr, const struct wire_cost *c)
{
	if (!c->source || c->source >= WIRE_COST_SOURCE_MAX)
		return; /* a source of a newer collector: nothing to show it by */
	if (!pr->cost)
		pr->cost = xcalloc(1, sizeof *pr->cost);
	struct cost_series *s = &pr->cost->series[c->source];
	/* A reconnect of the same collector goes on counting; one started anew (exec) counts from 0. */
	uint64_t stream = pr->hello.start_mono_ns;
	if (s->seen && s->stream == stream && c->time_ns < s->raw.time_ns)
		return; /* older than the newest of this collector: newest wins */
	if (s->seen && s->stream != stream) {
		if (c->time_ns < s->total.time_ns)
			return;
		/* What the collector before the exec counted carries on. */
		s->base_cpu += s->raw.own_cpu_ns;
		s->base_added += s->raw.added_ns;
		s->base_events += s->raw.events;
		s->base_backoffs += s->raw.backoffs;
	}
	s->seen = 1;
	s->stream = stream;
	s->raw = *c;
	struct store_cost *t = &s->total;
	t->time_ns = c->time_ns;
	t->cpu_ns = cost_forward(t->cpu_ns, s->base_cpu, c->own_cpu_ns);
	t->added_ns = cost_forward(t->added_ns, s->base_added, c->added_ns);
	t->events = cost_forward(t->events, s->base_events, c->events);
	uint64_t b = cost_forward(t->backoffs, s->base_backoffs, c->backoffs);
	t->backoffs = b > UINT32_MAX ? UINT32_MAX : (uint32_t)b;
	t->level = c->level;
	t->reduced = (c->flags & WIRE_COST_REDUCED) != 0;
	if (!t->reduced)
		t->asked_level = c->level;
	cost_point_add(s, c->time_ns);
	cost_reduced_note(s, c->time_ns, t->reduced, c->level);
	store_note_time(st, c->time_ns);
}

void store_cost_ingest(struct store *st, struct process *pr, const void *payload, uint32_t length)
{
	const char *bytes = payload;
	for (size_t i = 0; i < length / sizeof(struct wire_cost); i++) {
		struct wire_cost c;
		memcpy(&c, bytes + i * sizeof c, sizeof c); /* frames are not aligned */
		cost_reading(st, pr, &c);
	}
}

uint64_t store_cost_evict(struct process *pr, uint64_t t)
{
	if (!pr->cost)
		return 0;
	uint64_t dropped = 0;
	for (size_t i = 0; i < WIRE_COST_SOURCE_MAX; i++) {
		struct cost_series *s = &pr->cost->series[i];
		size_t k = timerow_bound(s->points, s->point_count, sizeof *s->points, TIMEROW_START, t, 0);
		if (k) {
			memmove(s->points, s->points + k, (s->point_count - k) * sizeof *s->points);
			s->point_count -= k;
			store_evict_shrink((void **)&s->points, s->point_count, &s->point_cap,
			                   sizeof *s->points);
			dropped += k;
		}
		size_t r = 0;
		while (r < s->reduced_count && s->reduced[r].end_ns && s->reduced[r].end_ns < t)
			r++;
		if (r) {
			memmove(s->reduced, s->reduced + r, (s->reduced_count - r) * sizeof *s->reduced);
			s->reduced_count -= r;
		}
	}
	return dropped;
}

void store_cost_process_fini(struct process *pr)
{
	if (!pr->cost)
		return;
	for (size_t i = 0; i < WIRE_COST_SOURCE_MAX; i++) {
		free(pr->cost->series[i].points);
		free(pr->cost->series[i].reduced);
	}
	free(pr->cost);
	pr->cost = NULL;
}

size_t store_cost_memory_bytes(const struct store *st)
{
	size_t bytes = 0;
	for (size_t p = 0; p < st->proc_count; p++) {
		const struct cost_process *cp = st->procs[p].cost;
		if (!cp)
			continue;
		bytes += sizeof *cp;
		for (size_t i = 0; i < WIRE_COST_SOURCE_MAX; i++)
			bytes += cp->series[i].point_cap * sizeof *cp->series[i].points +
			         cp->series[i].reduced_cap * sizeof *cp->series[i].reduced;
	}
	return bytes;
}

/* The series of a source, or NULL when the process sent no reading for it. */
static const struct cost_series *cost_series_of(const struct store *st, size_t process, uint32_t source)
{
	if (process >= st->proc_count || !st->procs[process].cost || !source ||
	    source >= WIRE_COST_SOURCE_MAX)
		return NULL;
	const struct cost_series *s = &st->procs[process].cost->series[source];
	return s->seen ? s : NULL;
}

int store_cost_any(const struct store *st, size_t process)
{
	for (uint32_t s = 1; s < WIRE_COST_SOURCE_MAX; s++)
		if (cost_series_of(st, process, s))
			return 1;
	return 0;
}

int store_cost_get(const struct store *st, size_t process, uint32_t source, struct store_cost *out)
{
	const struct cost_series *s = cost_series_of(st, process, source);
	if (!s) {
		memset(out, 0, sizeof *out);
		return -ENOENT;
	}
	*out = s->total;
	return 0;
}

size_t store_cost_points(const struct store *st, size_t process, uint32_t source,
                         const struct store_cost_point **out)
{
	const struct cost_series *s = cost_series_of(st, process, source);
	*out = s ? s->points : NULL;
	return s ? s->point_count : 0;
}

size_t store_cost_reduced(const struct store *st, size_t process, uint32_t source,
                          const struct store_cost_reduced **out)
{
	const struct cost_series *s = cost_series_of(st, process, source);
	*out = s ? s->reduced : NULL;
	return s ? s->reduced_count : 0;
}
