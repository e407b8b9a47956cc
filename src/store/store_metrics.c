/*
 * GPU hardware metric samples (WIRE_FRAME_GPU_METRICS): one series per (GPU UUID, metric name),
 * store-wide, since one sampler per physical GPU serves every process on it. Points are kept
 * sorted by start; each series is bounded (STORE_GPU_METRIC_POINTS_MAX, oldest half dropped and
 * counted, as are samples that arrive far out of order) and the memory window (store_evict_before)
 * drops old points with the events.
 */
#include "store_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuscope/xalloc.h"

struct metric_series {
	uint8_t uuid[16];
	uint32_t metric_id; /* global string */
	uint32_t source;    /* enum wire_gpu_metric_source of the newest sample */
	size_t process;     /* the process whose sampler sent the first sample */
	uint32_t device;    /* its CUDA ordinal there */
	struct store_gpu_metric_point *v;
	size_t n, cap;
	uint64_t dropped; /* points dropped by the series bound */
};

struct store_metrics {
	struct metric_series *series;
	size_t n, cap;
	uint64_t samples; /* ingested in total */
};

/* The series of (uuid, metric), created on first use; NULL at STORE_GPU_METRIC_SERIES_MAX. */
static struct metric_series *series_of(struct store_metrics *m, const uint8_t *uuid, uint32_t metric_id,
                                       size_t process, uint32_t device)
{
	for (size_t i = 0; i < m->n; i++)
		if (m->series[i].metric_id == metric_id && memcmp(m->series[i].uuid, uuid, 16) == 0)
			return &m->series[i];
	if (m->n >= STORE_GPU_METRIC_SERIES_MAX)
		return NULL;
	xgrow((void **)&m->series, &m->cap, m->n + 1, sizeof *m->series);
	struct metric_series *s = &m->series[m->n++];
	memset(s, 0, sizeof *s);
	memcpy(s->uuid, uuid, 16);
	s->metric_id = metric_id;
	s->process = process;
	s->device = device;
	return s;
}

/*
 * Inserts a point in start order: samples come in order, a late one (another sampler took over)
 * is placed among the last SERIES_LATE_MAX; one later than that is dropped and counted, so that
 * a stream in reverse order costs linear time, not quadratic.
 */
#define SERIES_LATE_MAX 256u
static void series_insert(struct metric_series *s, const struct store_gpu_metric_point *pt)
{
	size_t late = 0;
	while (late < s->n && s->v[s->n - 1 - late].start_ns > pt->start_ns)
		if (++late > SERIES_LATE_MAX) {
			s->dropped++;
			return;
		}
	if (s->n >= STORE_GPU_METRIC_POINTS_MAX) {
		size_t drop = s->n / 2;
		memmove(s->v, s->v + drop, (s->n - drop) * sizeof *s->v);
		s->n -= drop;
		s->dropped += drop;
	}
	xgrow((void **)&s->v, &s->cap, s->n + 1, sizeof *s->v);
	size_t i = s->n - late;
	memmove(s->v + i + 1, s->v + i, (s->n - i) * sizeof *s->v);
	s->v[i] = *pt;
	s->n++;
}

int store_metrics_ingest(struct store *st, struct process *pr, struct source *src, const void *payload,
                         uint32_t length)
{
	if (!st->metrics)
		st->metrics = xcalloc(1, sizeof *st->metrics);
	struct store_metrics *m = st->metrics;
	size_t count = length / sizeof(struct wire_gpu_metric);
	const char *bytes = payload;
	for (size_t i = 0; i < count; i++) {
		struct wire_gpu_metric w;
		memcpy(&w, bytes + i * sizeof w, sizeof w);
		/* Unnamed, backwards or non-finite samples are no measurement. */
		if (!w.metric_id || w.metric_id >= src->strmap_cap || !src->strmap[w.metric_id] ||
		    w.end_ns < w.start_ns || !w.start_ns || w.value != w.value || w.value > 1e300 ||
		    w.value < -1e300)
			continue;
		struct metric_series *s =
		    series_of(m, w.uuid, src->strmap[w.metric_id], (size_t)(pr - st->procs), w.device);
		if (!s)
			continue;
		s->source = w.source < WIRE_GPU_METRIC_SOURCE_MAX ? w.source : 0;
		struct store_gpu_metric_point pt = {w.start_ns, w.end_ns, w.value};
		series_insert(s, &pt);
		m->samples++;
		store_note_time(st, w.end_ns);
	}
	return 0;
}

uint64_t store_metrics_evict(struct store *st, uint64_t t)
{
	struct store_metrics *m = st->metrics;
	uint64_t dropped = 0;
	for (size_t i = 0; m && i < m->n; i++) {
		struct metric_series *s = &m->series[i];
		size_t k = store_evict_count(s->v, s->n, sizeof *s->v,
		                             offsetof(struct store_gpu_metric_point, end_ns), t);
		s->n = store_evict_prefix((void **)&s->v, s->n, &s->cap, k, sizeof *s->v);
		dropped += k;
	}
	return dropped;
}

size_t store_metrics_event_bytes(const struct store *st)
{
	size_t bytes = 0;
	for (size_t i = 0; st->metrics && i < st->metrics->n; i++)
		bytes += st->metrics->series[i].cap * sizeof(struct store_gpu_metric_point);
	return bytes;
}

void store_metrics_free(struct store *st)
{
	if (!st->metrics)
		return;
	for (size_t i = 0; i < st->metrics->n; i++)
		free(st->metrics->series[i].v);
	free(st->metrics->series);
	free(st->metrics);
	st->metrics = NULL;
}

const char *store_gpu_metric_unit(const char *name)
{
	if (strncmp(name, "nvml:", 5) == 0)
		return strstr(name, "mib_s") ? "MiB/s" : "percent";
	if (strstr(name, "pct"))
		return "percent";
	if (strstr(name, "bytes"))
		return "bytes";
	if (strstr(name, "cycles"))
		return "cycles";
	return "";
}

uint64_t store_gpu_metric_samples(const struct store *st)
{
	return st->metrics ? st->metrics->samples : 0;
}

size_t store_gpu_metric_count(const struct store *st)
{
	return st->metrics ? st->metrics->n : 0;
}

void store_gpu_metric_get(const struct store *st, size_t index, struct store_gpu_metric_info *out)
{
	const struct metric_series *s = &st->metrics->series[index];
	memset(out, 0, sizeof *out);
	static const char hex[] = "0123456789abcdef";
	char *u = out->uuid;
	u += sprintf(u, "GPU-");
	for (int b = 0; b < 16; b++) {
		if (b == 4 || b == 6 || b == 8 || b == 10)
			*u++ = '-';
		*u++ = hex[s->uuid[b] >> 4];
		*u++ = hex[s->uuid[b] & 15];
	}
	*u = 0;
	out->metric_id = s->metric_id;
	out->name = store_string(st, s->metric_id);
	out->source = s->source;
	out->process = s->process;
	out->device = s->device;
	out->points = s->n;
	out->dropped = s->dropped;
	out->unit = store_gpu_metric_unit(out->name);
	struct store_gpu_device_info di;
	out->device_name = "";
	if (s->process < st->proc_count && store_gpu_device_find(st, s->process, s->device, &di) == 0)
		out->device_name = di.short_name;
}

size_t store_gpu_metric_query(const struct store *st, size_t index, uint64_t from_ns, uint64_t to_ns,
                              const struct store_gpu_metric_point **out)
{
	const struct metric_series *s = &st->metrics->series[index];
	/* First point ending after from_ns (ends rise with starts: samples do not overlap). */
	size_t lo = 0, hi = s->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (s->v[mid].end_ns <= from_ns)
			lo = mid + 1;
		else
			hi = mid;
	}
	size_t end_lo = lo, end_hi = s->n;
	while (end_lo < end_hi) {
		size_t mid = end_lo + (end_hi - end_lo) / 2;
		if (s->v[mid].start_ns < to_ns)
			end_lo = mid + 1;
		else
			end_hi = mid;
	}
	*out = s->v + lo;
	return end_lo - lo;
}
