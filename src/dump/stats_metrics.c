/* The gpu_metrics stats section: per physical GPU and metric, its samples' min, median and max. */
#include <stdlib.h>
#include <string.h>

#include "cuscope/store.h"
#include "cuscope/wire.h"
#include "cuscope/xalloc.h"
#include "stats_table.h"

const struct column stats_metric_cols[STATS_METRIC_COLS] = {
    {"gpu", CELL_STR},     {"device", CELL_STR}, {"metric", CELL_STR},  {"source", CELL_STR},
    {"samples", CELL_INT}, {"min", CELL_REAL},   {"median", CELL_REAL}, {"max", CELL_REAL},
    {"mean", CELL_REAL},   {"unit", CELL_STR},
};

static int stats_metrics_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* "pm", "gpm", "nvml" or "" for a source id. */
static const char *stats_metrics_source(uint32_t source)
{
	static const char *const names[WIRE_GPU_METRIC_SOURCE_MAX] = {
	    [WIRE_GPU_METRIC_PM] = "pm", [WIRE_GPU_METRIC_GPM] = "gpm", [WIRE_GPU_METRIC_NVML] = "nvml"};
	return source < WIRE_GPU_METRIC_SOURCE_MAX && names[source] ? names[source] : "";
}

void stats_metrics_section(const struct store *st, struct table *t)
{
	for (size_t i = 0; i < store_gpu_metric_count(st); i++) {
		struct store_gpu_metric_info mi;
		store_gpu_metric_get(st, i, &mi);
		const struct store_gpu_metric_point *pts;
		size_t n = store_gpu_metric_query(st, i, 0, UINT64_MAX, &pts);
		if (!n)
			continue;
		double *v = xmalloc(n * sizeof *v), sum = 0;
		for (size_t k = 0; k < n; k++) {
			v[k] = pts[k].value;
			sum += v[k];
		}
		qsort(v, n, sizeof *v, stats_metrics_cmp);
		/* The lower median: a value that was measured, never an average of two. */
		stats_table_row(t, mi.uuid, mi.device_name, mi.name, stats_metrics_source(mi.source),
		                (int64_t)n, v[0], v[(n - 1) / 2], v[n - 1], sum / (double)n, mi.unit);
		free(v);
	}
}
