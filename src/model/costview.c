/*
 * The profiler's own cost for display: rates from the store's cumulative readings (interpolated
 * between readings, so a window of any width gets the share of each interval it overlaps), reduced
 * stretches, and the texts of the cost row, `info` and the status line.
 */
#include "cuscope/costview.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cuscope/store.h"
#include "cuscope/wire.h"
#include "cuscope/timerow.h"

#define COSTVIEW_NOTICES_SCANNED 64

double costview_added_pct(uint64_t added_ns, uint64_t wall_ns)
{
	if (!wall_ns)
		return 0.0;
	double wall = (double)wall_ns, added = (double)added_ns;
	double rest = wall - added;
	if (rest < wall / 10)
		rest = wall / 10;
	return 100.0 * added / rest;
}

/* Cumulative values at t, interpolated between the readings around it (t inside their span). */
static void costview_interp(const struct store_cost_point *v, size_t n, uint64_t t, double *cpu,
                            double *added)
{
	size_t lo = timerow_bound(v, n, sizeof *v, TIMEROW_START, t, 1); /* first reading after t */
	if (lo == 0 || lo == n) {
		const struct store_cost_point *p = lo == 0 ? &v[0] : &v[n - 1];
		*cpu = (double)p->cpu_ns;
		*added = (double)p->added_ns;
		return;
	}
	const struct store_cost_point *a = &v[lo - 1], *b = &v[lo];
	double f = (double)(t - a->time_ns) / (double)(b->time_ns - a->time_ns);
	*cpu = (double)a->cpu_ns + f * ((double)b->cpu_ns - (double)a->cpu_ns);
	*added = (double)a->added_ns + f * ((double)b->added_ns - (double)a->added_ns);
}

/* The readings of a source taken up to as_of (a paused view ignores later ones); their count. */
static size_t costview_points(const struct store *st, size_t process, uint32_t source, uint64_t as_of,
                              const struct store_cost_point **v)
{
	size_t n = store_cost_points(st, process, source, v);
	while (n && (*v)[n - 1].time_ns > as_of) /* later readings are few: the newest second or so */
		n--;
	return n;
}

/* Adds one source's rate over [from, to) to out. */
static void costview_rate_one(const struct store *st, size_t process, uint32_t source, uint64_t from,
                              uint64_t to, uint64_t as_of, double *cpu_frac, double *added_frac,
                              uint64_t *covered)
{
	const struct store_cost_point *v;
	size_t n = costview_points(st, process, source, as_of, &v);
	if (n < 2)
		return;
	uint64_t lo = from > v[0].time_ns ? from : v[0].time_ns;
	uint64_t hi = to < v[n - 1].time_ns ? to : v[n - 1].time_ns;
	if (hi <= lo)
		return;
	double c0, a0, c1, a1;
	costview_interp(v, n, lo, &c0, &a0);
	costview_interp(v, n, hi, &c1, &a1);
	*cpu_frac += (c1 - c0) / (double)(hi - lo);
	*added_frac += (a1 - a0) / (double)(hi - lo);
	if (hi - lo > *covered)
		*covered = hi - lo;
}

void costview_rate(const struct store *st, size_t process, uint32_t source, uint64_t from, uint64_t to,
                   uint64_t as_of, struct costview_rate *out)
{
	double cpu = 0, added = 0;
	uint64_t covered = 0;
	if (source)
		costview_rate_one(st, process, source, from, to, as_of, &cpu, &added, &covered);
	else
		for (uint32_t s = 1; s < WIRE_COST_SOURCE_MAX; s++)
			costview_rate_one(st, process, s, from, to, as_of, &cpu, &added, &covered);
	out->covered_ns = covered;
	out->cpu_ms_per_s = covered ? cpu * 1000.0 : 0.0;
	/* added per second as a fraction, through the same A/B-like percent as the totals */
	out->added_pct = covered ? costview_added_pct((uint64_t)(added * 1e9 + 0.5), 1000000000ull) : 0.0;
}

void costview_cells(const struct store *st, size_t process, uint64_t from, uint64_t to, size_t cells,
                    uint64_t as_of, struct costview_rate *out)
{
	if (!cells)
		return;
	double step = to > from ? (double)(to - from) / (double)cells : 0.0;
	for (size_t c = 0; c < cells; c++) {
		uint64_t a = from + (uint64_t)(step * (double)c),
		         b = from + (uint64_t)(step * (double)(c + 1));
		if (b <= a)
			b = a + 1;
		costview_rate(st, process, 0, a, b, as_of, &out[c]);
	}
}

int costview_at(const struct store *st, size_t process, uint64_t t, uint64_t as_of, struct costview_rate *out)
{
	uint64_t oldest = UINT64_MAX, newest = 0;
	for (uint32_t s = 1; s < WIRE_COST_SOURCE_MAX; s++) {
		const struct store_cost_point *v;
		size_t n = costview_points(st, process, s, as_of, &v);
		if (n < 2)
			continue;
		if (v[0].time_ns < oldest)
			oldest = v[0].time_ns;
		if (v[n - 1].time_ns > newest)
			newest = v[n - 1].time_ns;
	}
	memset(out, 0, sizeof *out);
	if (!newest)
		return -ENOENT;
	if (t >= newest)
		t = newest - 1;
	if (t < oldest)
		t = oldest;
	costview_rate(st, process, 0, t, t + 1, as_of, out);
	return out->covered_ns ? 0 : -ENOENT;
}

int costview_summary(const struct store *st, size_t process, struct costview_summary *out)
{
	memset(out, 0, sizeof *out);
	if (process >= store_process_count(st) || !store_cost_any(st, process))
		return -ENOENT;
	struct store_process_info pi;
	store_process_get(st, process, &pi);
	uint64_t newest = 0;
	for (uint32_t s = 1; s < WIRE_COST_SOURCE_MAX; s++) {
		struct store_cost c;
		if (store_cost_get(st, process, s, &c) != 0)
			continue;
		out->cpu_ns += c.cpu_ns;
		out->added_ns += c.added_ns;
		out->events += c.events;
		out->backoffs += c.backoffs;
		if (c.time_ns > newest)
			newest = c.time_ns;
	}
	out->wall_ns = newest > pi.start_ns ? newest - pi.start_ns : 0;
	out->cpu_pct = out->wall_ns ? 100.0 * (double)out->cpu_ns / (double)out->wall_ns : 0.0;
	out->added_pct = costview_added_pct(out->added_ns, out->wall_ns);
	return 0;
}

int costview_reduced_in(const struct store *st, size_t process, uint32_t source, uint64_t from, uint64_t to,
                        uint64_t until, uint32_t *level)
{
	const struct store_cost_reduced *v;
	size_t n = store_cost_reduced(st, process, source, &v);
	/* Stretches never overlap and are sorted: the last one starting before `to` is the newest candidate,
	 * and an earlier one cannot reach further than the one after it starts. */
	size_t lo = timerow_bound(v, n, sizeof *v, TIMEROW_START, to, 0);
	if (lo == 0)
		return 0;
	const struct store_cost_reduced *r = &v[lo - 1];
	uint64_t end = r->end_ns ? r->end_ns : until;
	if (end <= from)
		return 0;
	if (level)
		*level = r->level;
	return 1;
}

unsigned costview_reduced_mask(const struct store *st, size_t process, unsigned sources, uint64_t from,
                               uint64_t to, uint64_t until)
{
	unsigned mask = 0;
	for (uint32_t s = 1; s < WIRE_COST_SOURCE_MAX; s++)
		if ((sources & 1u << s) && costview_reduced_in(st, process, s, from, to, until, NULL))
			mask |= 1u << s;
	return mask;
}

const char *costview_level_text(uint32_t source, uint32_t level, char *buf, size_t size)
{
	if (!level)
		snprintf(buf, size, "off");
	else if (source == WIRE_COST_SAMPLING)
		snprintf(buf, size, "%u/s", level);
	else if (source == WIRE_COST_OSRT)
		snprintf(buf, size, "over %u us", level);
	else if (source == WIRE_COST_COUNTERS)
		snprintf(buf, size, "every %u ms", level);
	else
		snprintf(buf, size, "level %u", level);
	return buf;
}

/* What the level of a source sets, for "X reduced to ...": "sampling", "blocking calls", ... */
static const char *costview_source_words(uint32_t source)
{
	static const char *const words[WIRE_COST_SOURCE_MAX] = {
	    [WIRE_COST_SENDER] = "sender",
	    [WIRE_COST_GPU] = "GPU activity",
	    [WIRE_COST_NVTX] = "NVTX",
	    [WIRE_COST_SAMPLING] = "sampling",
	    [WIRE_COST_OSRT] = "blocking calls",
	    [WIRE_COST_COUNTERS] = "counters",
	    [WIRE_COST_GPU_METRICS] = "GPU metrics",
	};
	return source < WIRE_COST_SOURCE_MAX && words[source] ? words[source] : "a source";
}

const char *costview_reduced_text(uint32_t source, uint32_t level, uint32_t asked, char *buf, size_t size)
{
	char now[32], was[32];
	costview_level_text(source, level, now, sizeof now);
	if (asked && asked != level)
		snprintf(buf, size, "%s reduced to %s by the overhead budget (asked: %s)",
		         costview_source_words(source), now,
		         costview_level_text(source, asked, was, sizeof was));
	else
		snprintf(buf, size, "%s reduced to %s by the overhead budget", costview_source_words(source),
		         now);
	return buf;
}

const char *costview_info_line(const struct store *st, size_t process, char *buf, size_t size)
{
	struct costview_summary sum;
	buf[0] = '\0';
	if (costview_summary(st, process, &sum) != 0)
		return buf;
	char reduced[256] = "";
	size_t len = 0;
	for (uint32_t s = 1; s < WIRE_COST_SOURCE_MAX; s++) {
		struct store_cost c;
		if (store_cost_get(st, process, s, &c) != 0 || (!c.reduced && !c.backoffs))
			continue;
		char now[32], was[32];
		costview_level_text(s, c.level, now, sizeof now);
		int w;
		if (c.reduced && c.asked_level && c.asked_level != c.level)
			w = snprintf(reduced + len, sizeof reduced - len,
			             "%s%s reduced to %s from %s, %u back-off%s", len ? "; " : "",
			             costview_source_words(s), now,
			             costview_level_text(s, c.asked_level, was, sizeof was), c.backoffs,
			             c.backoffs == 1 ? "" : "s");
		else if (c.reduced)
			w = snprintf(reduced + len, sizeof reduced - len, "%s%s reduced to %s, %u back-off%s",
			             len ? "; " : "", costview_source_words(s), now, c.backoffs,
			             c.backoffs == 1 ? "" : "s");
		else
			w = snprintf(reduced + len, sizeof reduced - len,
			             "%s%s back at %s after %u back-off%s", len ? "; " : "",
			             costview_source_words(s), now, c.backoffs, c.backoffs == 1 ? "" : "s");
		if (w < 0 || (size_t)w >= sizeof reduced - len)
			break;
		len += (size_t)w;
	}
	snprintf(buf, size,
	         "collector %.1f %% CPU, est. +%.1f %% on the program%s%s%s; not counted: CUPTI's time "
	         "in the driver",
	         sum.cpu_pct, sum.added_pct, len ? " (" : "", reduced, len ? ")" : "");
	return buf;
}

const char *costview_budget_note(const struct store *st, char *buf, size_t size, uint64_t *seq)
{
	const char *best = NULL;
	uint64_t best_seq = 0;
	for (size_t p = 0; p < store_process_count(st); p++) {
		/* newest first: the first budget notice found is the process's latest; a status line asks
		 * this every frame, so only the newest COSTVIEW_NOTICES_SCANNED of a process are looked at */
		size_t n = store_notice_count(st, p);
		for (size_t i = n; i-- > 0 && n - i <= COSTVIEW_NOTICES_SCANNED;) {
			struct store_notice_info ni;
			store_notice_get(st, p, i, &ni);
			if (ni.seq <= best_seq)
				break;
			if (ni.topic == WIRE_NOTICE_TOPIC_BUDGET) {
				best = ni.text;
				best_seq = ni.seq;
				break;
			}
		}
	}
	if (seq)
		*seq = best_seq;
	if (best) {
		snprintf(buf, size, "%s", best);
		return buf;
	}
	for (size_t p = 0; p < store_process_count(st); p++) {
		for (uint32_t s = 1; s < WIRE_COST_SOURCE_MAX; s++) {
			struct store_cost c;
			if (store_cost_get(st, p, s, &c) == 0 && c.reduced)
				return costview_reduced_text(s, c.level, c.asked_level, buf, size);
		}
	}
	return NULL;
}
