/*
 * Refining the alignment of several captures by matching collectives: NCCL runs the collectives of
 * a communicator in the same order on every rank and a collective's kernel ends on every rank at
 * once (each waits for the others' data), so the k-th collective kernel's end on one host matches
 * the k-th on another. clock_align_fit fits the line that moves one capture's times onto the
 * reference's from those pairs: offset and drift, robust to a few wrong pairs.
 */
#ifndef CUSCOPE_CLOCK_ALIGN_H
#define CUSCOPE_CLOCK_ALIGN_H

#include <stddef.h>
#include <stdint.h>

struct store;

#define CLOCK_ALIGN_MIN_PAIRS 3       /* fewer matched collectives: no fit */
#define CLOCK_ALIGN_DRIFT_MAX 1e-3    /* 1000 ppm: beyond, the pairs are wrong, not the clocks */
#define CLOCK_ALIGN_FLOOR_NS  10000.0 /* outlier threshold never below (exact data has MAD 0) */

/* A fitted line: a capture time t moves by offset_ns + drift * (t - origin_ns). */
struct clock_align_fit {
	size_t pairs;             /* collectives matched: the common prefix of the two lists */
	size_t unmatched;         /* collectives beyond it (the lists' lengths differ) */
	size_t outliers;          /* pairs left out of the fit */
	int64_t offset_ns;        /* the move at origin_ns */
	double drift;             /* ns per ns (1e-6 = 1 ppm) */
	uint64_t origin_ns;       /* a capture time (the median matched end) */
	uint64_t residual_p50_ns; /* |ref - moved t| over the pairs used */
	uint64_t residual_max_ns;
};

/*
 * Fits ref[k] ~ t[k] + move(t[k]) over k < min(n_ref, n), both lists in end-time order. Robust: a
 * first line through the medians of the two halves, pairs off it by more than max(6 MADs,
 * CLOCK_ALIGN_FLOOR_NS) dropped, then least squares over the rest (a drift within 3 standard
 * errors of 0 is taken as 0). 0, or -EDOM with fewer than
 * CLOCK_ALIGN_MIN_PAIRS pairs (*out then holds only pairs and unmatched).
 */
int clock_align_fit(const uint64_t *ref, size_t n_ref, const uint64_t *t, size_t n,
                    struct clock_align_fit *out);
/* The move the fit gives a capture time t (0 for a NULL fit). */
int64_t clock_align_move(const struct clock_align_fit *fit, uint64_t t);
/* |ref[k] - t[k]| over the common prefix, median and largest (what an alignment left); 0 when none. */
void clock_align_residual(const uint64_t *ref, size_t n_ref, const uint64_t *t, size_t n, uint64_t *p50,
                          uint64_t *max);
/* The end times of process p's NCCL kernels (short names starting "nccl"), ascending, into a
 * malloc'd *out (NULL when none); returns how many. */
size_t clock_align_nccl_ends(const struct store *store, size_t p, uint64_t **out);
/* As clock_align_nccl_ends, only kernels that end at from_ns or later (the ops since then are read,
 * not the whole store: a live refit's cost stays that of its window). */
size_t clock_align_nccl_ends_since(const struct store *store, size_t p, uint64_t from_ns, uint64_t **out);

/*
 * Live refinement (attach --ssh): a host's collectives are matched again every second or so, and the
 * move its times get becomes a path: pieces appended as fits land, each a line of the host's own
 * time. Times already moved keep their move (the path before the host's newest time is never
 * changed), and a new fit is reached by slewing at most CLOCK_ALIGN_LIVE_SLEW ns per ns, so later
 * events of a thread stay later and no range ends before it starts.
 */
#define CLOCK_ALIGN_LIVE_MIN_PAIRS   8       /* fewer matched collectives: a poor fit, not applied */
#define CLOCK_ALIGN_LIVE_RESIDUAL_NS 500000u /* a residual p50 above: a poor fit, not applied */
#define CLOCK_ALIGN_LIVE_SLEW        0.5     /* ns of move per ns of the host's time while steering */
#define CLOCK_ALIGN_LIVE_TRACK_NS    200000u /* least tolerance when pairing by the last fit */
#define CLOCK_ALIGN_PATH_MAX         1024    /* pieces kept; past it the oldest half is merged away */

struct clock_align_piece {
	uint64_t from_ns; /* the host's time this piece starts at */
	int64_t at_ns;    /* the move at from_ns */
	double slope;     /* ns of move per ns of host time after from_ns */
};

struct clock_align_path {
	struct clock_align_piece *pieces; /* from_ns ascending */
	size_t count, cap;
};

/* A path that moves every time by move_ns (the clock anchor's move). */
void clock_align_path_init(struct clock_align_path *path, int64_t move_ns);
void clock_align_path_fini(struct clock_align_path *path);
/* The move of the host's time t (before the first piece: the first piece's line). */
int64_t clock_align_path_move(const struct clock_align_path *path, uint64_t t);
/* The host time t whose t + move(t) is s (the path is increasing: its slopes are above -1). */
uint64_t clock_align_path_unmove(const struct clock_align_path *path, uint64_t s);
/*
 * From the host's time from_ns on (later than every time moved so far), the path leaves its current
 * move for the fit's line, slewing at max_rate (0 < max_rate < 1) until it meets it. Pieces after
 * from_ns are replaced.
 */
void clock_align_path_steer(struct clock_align_path *path, uint64_t from_ns,
                            const struct clock_align_fit *fit, double max_rate);
/*
 * Pairs each t[k] (ascending, host time) with the ref end (ascending, reference time) nearest to t[k]
 * moved by fit, when it is within tol_ns and no other ref end is: the pairs go to ref_out/t_out
 * (n entries each) in order; returns how many.
 */
size_t clock_align_pair_nearest(const uint64_t *ref, size_t n_ref, const uint64_t *t, size_t n,
                                const struct clock_align_fit *fit, uint64_t tol_ns, uint64_t *ref_out,
                                uint64_t *t_out);

struct store_capture_clock;
/* One manifest line (without its newline) saying how host was aligned: "clock_alignment=HOST k=v ...". */
int clock_align_manifest_line(char *buf, size_t size, const char *host, const struct store_capture_clock *c);
/*
 * The alignments a live capture's manifest holds (the last line of each host wins) kept in store
 * (store_capture_set_clock, numbered by first appearance) for stats; returns how many hosts.
 */
int clock_align_manifest_apply(const char *manifest, struct store *store);

#endif
