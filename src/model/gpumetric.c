/* GPU hardware metrics for the view (see gpumetric.h). */
#include "cuscope/gpumetric.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cuscope/store.h"

/* Short labels by the start of a metric's name (after a "UNIT.Group." prefix), longest first. */
static const struct {
	const char *prefix;
	const char *label;
} gpumetric_labels[] = {
    {"gr__cycles_active", "gpu"},       {"sm__cycles_active", "sm"},
    {"sm__warps_active", "warps"},      {"sm__pipe_tensor", "tensor"},
    {"dram__bytes_read", "dram rd"},    {"dram__bytes_write", "dram wr"},
    {"pcie__read_bytes", "pcie rd"},    {"pcie__write_bytes", "pcie wr"},
    {"nvlrx__bytes", "nvl rx"},         {"nvltx__bytes", "nvl tx"},
    {"nvml:gpm_sm_util", "sm"},         {"nvml:gpm_sm_occupancy", "occupancy"},
    {"nvml:gpm_tensor_util", "tensor"}, {"nvml:gpm_dram_bw_util", "dram bw"},
    {"nvml:gpm_pcie_tx", "pcie tx"},    {"nvml:gpm_pcie_rx", "pcie rx"},
    {"nvml:gpm_nvlink_rx", "nvl rx"},   {"nvml:gpm_nvlink_tx", "nvl tx"},
    {"nvml:gpu_util", "util"},
};

const char *gpumetric_label(const char *name, char *buf, size_t size)
{
	/* "TPC.TriageCompute.sm__pipe_tensor_...": the metric proper follows the last '.' before "__". */
	const char *base = name, *under = strstr(name, "__");
	if (under && strncmp(name, "nvml:", 5) != 0)
		for (const char *p = name; p < under; p++)
			if (*p == '.')
				base = p + 1;
	for (size_t i = 0; i < sizeof gpumetric_labels / sizeof gpumetric_labels[0]; i++) {
		size_t n = strlen(gpumetric_labels[i].prefix);
		if (strncmp(base, gpumetric_labels[i].prefix, n) == 0) {
			/* The realtime tensor counter and the elapsed one are both "tensor": tell them apart.
			 */
			const char *rt = strstr(base, "_realtime") && strstr(base, "tensor") ? " rt" : "";
			snprintf(buf, size, "%s%s", gpumetric_labels[i].label, rt);
			return buf;
		}
	}
	snprintf(buf, size, "%.*s", (int)strcspn(base, "."), base);
	return buf;
}

double gpumetric_rate(const char *unit, double value, uint64_t duration_ns)
{
	if ((strcmp(unit, "bytes") == 0 || strcmp(unit, "cycles") == 0) && duration_ns)
		return value * 1e9 / (double)duration_ns;
	if (strcmp(unit, "MiB/s") == 0)
		return value * 1048576.0;
	return value;
}

/* "1.2 T" style: value scaled by 1000s with one decimal under 10. */
static void gpumetric_si(double v, const char *suffix, char *buf, size_t size)
{
	static const char *const prefixes[] = {"", "k", "M", "G", "T", "P"};
	size_t i = 0;
	while (v >= 1000 && i + 1 < sizeof prefixes / sizeof prefixes[0]) {
		v /= 1000;
		i++;
	}
	snprintf(buf, size, v < 10 && i ? "%.1f %s%s" : "%.0f %s%s", v, prefixes[i], suffix);
}

const char *gpumetric_text(const char *unit, double value, uint64_t duration_ns, char *buf, size_t size)
{
	if (strcmp(unit, "percent") == 0)
		snprintf(buf, size, "%.0f%%", value);
	else if (strcmp(unit, "bytes") == 0 || strcmp(unit, "MiB/s") == 0)
		gpumetric_si(gpumetric_rate(unit, value, duration_ns), "B/s", buf, size);
	else if (strcmp(unit, "cycles") == 0)
		gpumetric_si(gpumetric_rate(unit, value, duration_ns), "cyc/s", buf, size);
	else
		snprintf(buf, size, "%.3g", value);
	return buf;
}

size_t gpumetric_series_of(const struct store *st, const char *uuid, size_t *out, size_t max)
{
	size_t n = 0;
	for (size_t i = 0; i < store_gpu_metric_count(st) && n < max; i++) {
		struct store_gpu_metric_info mi;
		store_gpu_metric_get(st, i, &mi);
		if (strcmp(mi.uuid, uuid) == 0)
			out[n++] = i;
	}
	return n;
}

/* Sums rate x overlap and the overlap of the points of [from, to). */
static void gpumetric_sum(const struct store_gpu_metric_point *pt, size_t n, const char *unit, uint64_t from,
                          uint64_t to, double *weighted, double *covered)
{
	for (size_t k = 0; k < n; k++) {
		uint64_t s = pt[k].start_ns > from ? pt[k].start_ns : from;
		uint64_t e = pt[k].end_ns < to ? pt[k].end_ns : to;
		if (e <= s)
			continue;
		double w = (double)(e - s);
		*weighted += gpumetric_rate(unit, pt[k].value, pt[k].end_ns - pt[k].start_ns) * w;
		*covered += w;
	}
}

double gpumetric_cells(const struct store *st, size_t series, uint64_t from_ns, uint64_t to_ns, size_t cols,
                       double *out, uint8_t *have)
{
	struct store_gpu_metric_info mi;
	store_gpu_metric_get(st, series, &mi);
	double full = 0;
	for (size_t c = 0; c < cols; c++) {
		uint64_t s = from_ns + (uint64_t)((double)(to_ns - from_ns) * (double)c / (double)cols);
		uint64_t e = from_ns + (uint64_t)((double)(to_ns - from_ns) * (double)(c + 1) / (double)cols);
		const struct store_gpu_metric_point *pt;
		size_t n = e > s ? store_gpu_metric_query(st, series, s, e, &pt) : 0;
		double weighted = 0, covered = 0;
		gpumetric_sum(pt, n, mi.unit, s, e, &weighted, &covered);
		have[c] = covered > 0;
		out[c] = covered > 0 ? weighted / covered : 0;
		if (have[c] && out[c] > full)
			full = out[c];
	}
	return full;
}

int gpumetric_mean(const struct store *st, size_t series, uint64_t from_ns, uint64_t to_ns, double *rate)
{
	struct store_gpu_metric_info mi;
	store_gpu_metric_get(st, series, &mi);
	const struct store_gpu_metric_point *pt;
	size_t n = to_ns > from_ns ? store_gpu_metric_query(st, series, from_ns, to_ns, &pt) : 0;
	double weighted = 0, covered = 0;
	gpumetric_sum(pt, n, mi.unit, from_ns, to_ns, &weighted, &covered);
	if (covered <= 0)
		return -ENOENT;
	*rate = weighted / covered;
	return 0;
}

int gpumetric_details(const struct store *st, size_t series, uint64_t from_ns, uint64_t to_ns,
                      char (*lines)[256], int max)
{
	static const char *const sources[] = {"", "CUPTI PM sampling", "NVML GPM", "NVML utilisation"};
	struct store_gpu_metric_info mi;
	if (series >= store_gpu_metric_count(st) || max < 4)
		return 0;
	store_gpu_metric_get(st, series, &mi);
	struct store_process_info pi;
	store_process_get(st, mi.process, &pi);
	int n = 0;
	char a[32], b[32], label[32];
	snprintf(lines[n++], 256, "GPU metric   %s (%s)", mi.name,
	         gpumetric_label(mi.name, label, sizeof label));
	snprintf(lines[n++], 256, "GPU          %s  GPU%u %s, sampled by pid %d with %s", mi.uuid, mi.device,
	         mi.device_name, (int)pi.pid, mi.source < 4 ? sources[mi.source] : "?");
	const struct store_gpu_metric_point *pt;
	size_t k = to_ns > from_ns ? store_gpu_metric_query(st, series, from_ns, to_ns, &pt) : 0;
	double rate;
	if (!k || gpumetric_mean(st, series, from_ns, to_ns, &rate) != 0) {
		snprintf(lines[n++], 256, "this cell    no sample");
		return n;
	}
	double lo = pt[0].value, hi = pt[0].value;
	size_t ilo = 0, ihi = 0;
	for (size_t i = 1; i < k; i++) {
		if (pt[i].value < lo)
			lo = pt[i].value, ilo = i;
		if (pt[i].value > hi)
			hi = pt[i].value, ihi = i;
	}
	/* The mean is a rate already (bytes and cycles per second): a 1 s duration shows it as one. */
	const char *unit = strcmp(mi.unit, "MiB/s") == 0 ? "bytes" : mi.unit;
	snprintf(lines[n++], 256, "this cell    mean %s over %zu sample%s",
	         gpumetric_text(unit, rate, 1000000000ull, a, sizeof a), k, k == 1 ? "" : "s");
	snprintf(lines[n++], 256, "             lowest %s, highest %s",
	         gpumetric_text(mi.unit, lo, pt[ilo].end_ns - pt[ilo].start_ns, a, sizeof a),
	         gpumetric_text(mi.unit, hi, pt[ihi].end_ns - pt[ihi].start_ns, b, sizeof b));
	return n;
}

size_t gpumetric_items(const struct store *st, const char *uuid, uint64_t from_ns, uint64_t to_ns,
                       struct gpumetric_item *out, size_t max)
{
	size_t series[GPUMETRIC_PER_GPU_MAX], n_out = 0;
	size_t n = gpumetric_series_of(st, uuid, series, GPUMETRIC_PER_GPU_MAX);
	for (size_t i = 0; i < n && n_out < max; i++) {
		struct store_gpu_metric_info mi;
		store_gpu_metric_get(st, series[i], &mi);
		double rate;
		if (strcmp(mi.unit, "cycles") == 0 || !*mi.unit ||
		    gpumetric_mean(st, series[i], from_ns, to_ns, &rate) != 0)
			continue;
		struct gpumetric_item *it = &out[n_out++];
		gpumetric_label(mi.name, it->label, sizeof it->label);
		if (strcmp(mi.unit, "percent") == 0) {
			snprintf(it->value, sizeof it->value, "%.0f%%", rate);
			it->fraction = rate <= 0 ? 0 : rate >= 100 ? 1 : rate / 100;
		} else {
			/* The mean is already a rate: a 1 s duration shows it as one. */
			gpumetric_text(strcmp(mi.unit, "MiB/s") == 0 ? "bytes" : mi.unit, rate, 1000000000ull,
			               it->value, sizeof it->value);
			it->fraction = -1;
		}
	}
	return n_out;
}

const char *gpumetric_summary(const struct store *st, const char *uuid, uint64_t from_ns, uint64_t to_ns,
                              char *buf, size_t size)
{
	struct gpumetric_item items[GPUMETRIC_PER_GPU_MAX];
	size_t n = gpumetric_items(st, uuid, from_ns, to_ns, items, GPUMETRIC_PER_GPU_MAX), used = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		char item[80];
		int w =
		    snprintf(item, sizeof item, "%s%s %s", used ? "  " : "", items[i].label, items[i].value);
		if (w < 0 || used + (size_t)w >= size)
			break;
		memcpy(buf + used, item, (size_t)w + 1);
		used += (size_t)w;
	}
	return buf;
}
