/*
 * GPU hardware metrics as the viewer shows them (header bars, counter lanes under each GPU):
 * short labels, values as text with their unit (bytes over a sample become a rate), per-cell
 * time-weighted means and the scale of a lane. Pure: no curses.
 */
#ifndef CUSCOPE_GPUMETRIC_H
#define CUSCOPE_GPUMETRIC_H

#include <stddef.h>
#include <stdint.h>

struct store;

#define GPUMETRIC_PER_GPU_MAX 32 /* series of one GPU a view lists */

/* A short label for a metric name: "sm", "tensor", "dram rd", "nvl tx", ... (written into buf). */
const char *gpumetric_label(const char *name, char *buf, size_t size);
/*
 * A value of a series as people read it, into buf: "71%", "1.2 TB/s" (bytes over the sample's
 * duration_ns as a rate), "830 MB/s" (NVML MiB/s), "1.5G cyc/s" (cycles likewise), or "%.3g".
 */
const char *gpumetric_text(const char *unit, double value, uint64_t duration_ns, char *buf, size_t size);
/* A value as a rate per second where its unit is "over the interval" (bytes, cycles), else itself. */
double gpumetric_rate(const char *unit, double value, uint64_t duration_ns);
/*
 * The series of the GPU with this UUID text ("GPU-..."), in store order, at most max into out;
 * returns how many.
 */
size_t gpumetric_series_of(const struct store *store, const char *uuid, size_t *out, size_t max);
/*
 * The time-weighted mean rate (gpumetric_rate) of a series in each of `cols` equal slices of
 * [from_ns, to_ns) into out[cols], have[c] = 0 where no sample covers the slice. Returns the largest
 * mean (0 when none).
 */
double gpumetric_cells(const struct store *store, size_t series, uint64_t from_ns, uint64_t to_ns,
                       size_t cols, double *out, uint8_t *have);
/*
 * The mean rate of a series over [from_ns, to_ns) and the text of it: 0, or -ENOENT when no
 * sample covers any of it.
 */
int gpumetric_mean(const struct store *store, size_t series, uint64_t from_ns, uint64_t to_ns, double *rate);
/* One item of a GPU's header: "tensor" "45%" with a bar of 0.45 (-1: a rate, no bar). */
struct gpumetric_item {
	char label[32];
	char value[32];
	double fraction;
};
/*
 * The header's items of a GPU over [from_ns, to_ns): percent metrics and rates (raw cycle counts
 * say little at a glance), in store order, at most max; returns how many.
 */
size_t gpumetric_items(const struct store *store, const char *uuid, uint64_t from_ns, uint64_t to_ns,
                       struct gpumetric_item *out, size_t max);
/*
 * The header's summary of a GPU over [from_ns, to_ns) as text: "sm 71%  tensor 45%  dram rd 1.2 TB/s"
 * (its items, as many as fit size); "" when it has none.
 */
const char *gpumetric_summary(const struct store *store, const char *uuid, uint64_t from_ns, uint64_t to_ns,
                              char *buf, size_t size);

/*
 * The details of a metric lane's cell [from_ns, to_ns): the metric's full name, its GPU and who
 * sampled it how, the cell's mean and its samples' range, into lines[max][256]; returns the count.
 */
int gpumetric_details(const struct store *store, size_t series, uint64_t from_ns, uint64_t to_ns,
                      char (*lines)[256], int max);

#endif
