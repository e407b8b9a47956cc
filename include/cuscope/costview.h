/*
 * The profiler's own cost as the viewer shows it (cost row, `stats`, `info`): rates over time from
 * the store's cumulative readings, what the overhead budget reduced and when, and the texts that
 * say so. Pure: no curses.
 */
#ifndef CUSCOPE_COSTVIEW_H
#define CUSCOPE_COSTVIEW_H

#include <stddef.h>
#include <stdint.h>

#include "cuscope/wire.h"

struct store;

/* The cost of a process's collector over a time window. */
struct costview_rate {
	double cpu_ms_per_s; /* CPU time of the collector's threads per second of wall time, ms */
	double added_pct;    /* estimated time added to the program's threads, percent (costview_added_pct) */
	uint64_t covered_ns; /* part of the window the readings span; 0 = no rate there */
};

/* The whole run of a process so far (all sources). */
struct costview_summary {
	uint64_t wall_ns;  /* collector start to the newest reading */
	uint64_t cpu_ns;   /* collector CPU time, all sources */
	uint64_t added_ns; /* estimated added time on the program's threads, all sources */
	uint64_t events;
	uint32_t backoffs;
	double cpu_pct;   /* cpu_ns of wall_ns, percent of one CPU */
	double added_pct; /* costview_added_pct(added_ns, wall_ns) */
};

/*
 * Percent by which added_ns of extra work slowed a program that ran wall_ns: added / (wall - added),
 * what an A/B run measures when the added time lies on the program's critical thread (spread over
 * many threads it overstates). The denominator is at least a tenth of wall_ns.
 */
double costview_added_pct(uint64_t added_ns, uint64_t wall_ns);
/*
 * Rate of one source (0 = all sources summed) of a process over [from, to), the cumulative readings
 * interpolated linearly between readings; out->covered_ns = 0 where no two readings surround any of it.
 * Only readings taken up to as_of count (UINT64_MAX: all), so a paused view stays as it was.
 */
void costview_rate(const struct store *store, size_t process, uint32_t source, uint64_t from, uint64_t to,
                   uint64_t as_of, struct costview_rate *out);
/* costview_rate of all sources for `cells` equal slices of [from, to) into out[cells]. */
void costview_cells(const struct store *store, size_t process, uint64_t from, uint64_t to, size_t cells,
                    uint64_t as_of, struct costview_rate *out);
/*
 * The rate at time t: over the interval between the readings around it, or over the newest interval when
 * t is past the newest reading (the oldest when before the first). 0, or -ENOENT without two readings.
 */
int costview_at(const struct store *store, size_t process, uint64_t t, uint64_t as_of,
                struct costview_rate *out);
/* Totals of a process; 0, or -ENOENT when it sent no cost reading. */
int costview_summary(const struct store *store, size_t process, struct costview_summary *out);

/* Cost sources that lower what the program's CPU threads show (sampling, blocking calls, counters). */
#define COSTVIEW_CPU_SOURCES (1u << WIRE_COST_SAMPLING | 1u << WIRE_COST_OSRT | 1u << WIRE_COST_COUNTERS)
/*
 * Whether the budget held `source` of a process reduced at some time in [from, to) (a stretch still
 * open lasts to `until`): 1 with *level the setting of the newest such stretch, else 0.
 */
int costview_reduced_in(const struct store *store, size_t process, uint32_t source, uint64_t from,
                        uint64_t to, uint64_t until, uint32_t *level);
/* Bit mask (1 << source) of the sources in `sources` reduced in [from, to) (see costview_reduced_in). */
unsigned costview_reduced_mask(const struct store *store, size_t process, unsigned sources, uint64_t from,
                               uint64_t to, uint64_t until);

/* A source's setting in words: "250/s", "over 100 us", "every 100 ms", "off", or "level N". */
const char *costview_level_text(uint32_t source, uint32_t level, char *buf, size_t size);
/* "sampling reduced to 250/s by the overhead budget" (with " (asked: 1000/s)" when asked is known). */
const char *costview_reduced_text(uint32_t source, uint32_t level, uint32_t asked, char *buf, size_t size);
/*
 * One line for `info`: "collector 0.8 % CPU, est. +1.2 % on the program (sampling reduced to 250/s
 * from 1000/s, 3 back-offs); not counted: CUPTI's time in the driver". Returns buf, "" without readings.
 */
const char *costview_info_line(const struct store *store, size_t process, char *buf, size_t size);
/*
 * The newest overhead-budget notice of any process (a notice that says "budget"), or, when
 * there is none, a text made from a source the budget holds reduced now; NULL when neither.
 * *seq (if not NULL) = the notice's store-wide order, 0 for a made text.
 */
const char *costview_budget_note(const struct store *store, char *buf, size_t size, uint64_t *seq);

#endif
