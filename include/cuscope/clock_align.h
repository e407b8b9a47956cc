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

#endif
