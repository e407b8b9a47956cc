#include "cuscope/cpuview.h"

#include <stdio.h>
#include <string.h>

#include "cuscope/timerow.h"

int cpuview_density_level(uint32_t count, uint32_t max)
{
	if (!count || !max)
		return 0;
	uint64_t lvl = ((uint64_t)count * CPUVIEW_LEVELS + max - 1) / max;
	return lvl > CPUVIEW_LEVELS ? CPUVIEW_LEVELS : (int)lvl;
}

void cpuview_format_dur(char *buf, size_t size, uint64_t ns)
{
	if (ns < 1000)
		snprintf(buf, size, "%lluns", (unsigned long long)ns);
	else if (ns < 1000000)
		snprintf(buf, size, ns < 100000 ? "%.1fus" : "%.0fus", (double)ns / 1e3);
	else if (ns < 1000000000)
		snprintf(buf, size, ns < 100000000 ? "%.1fms" : "%.0fms", (double)ns / 1e6);
	else
		snprintf(buf, size, "%.2fs", (double)ns / 1e9);
}

size_t cpuview_call_label(const char *name, uint64_t dur_ns, size_t width, char *buf, size_t size)
{
	char d[32];
	if (!size)
		return 0;
	if (!name || !*name)
		name = "call";
	cpuview_format_dur(d, sizeof d, dur_ns);
	size_t nl = strlen(name), dl = strlen(d);
	int n;
	if (nl + 1 + dl <= width)
		n = snprintf(buf, size, "%s %s", name, d);
	else if (width >= dl + 4) /* at least 3 characters of the name */
		n = snprintf(buf, size, "%.*s %s", (int)(width - dl - 1), name, d);
	else
		n = snprintf(buf, size, "%.*s", (int)width, name);
	return n < 0 ? 0 : (size_t)n < size ? (size_t)n : size - 1;
}

double cpuview_share(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0;
}

/* First index whose start_ns > t. */
static size_t cpuview_upper_bound(const struct store_gpu_op *ops, size_t n, uint64_t t)
{
	return timerow_bound(ops, n, sizeof *ops, TIMEROW_START, t, 1);
}

int cpuview_is_gap(uint64_t a, uint64_t b, uint64_t min_ns)
{
	return b > a && b - a >= min_ns;
}

/* The gap before ops[i] (i >= 1) if it is long enough. */
static int cpuview_gap_before(const struct store_gpu_op *ops, size_t i, uint64_t min_ns,
                              struct cpuview_gap *out)
{
	uint64_t a = ops[i - 1].end_ns, b = ops[i].start_ns;
	if (!cpuview_is_gap(a, b, min_ns))
		return 0;
	*out = (struct cpuview_gap){a, b, i};
	return 1;
}

int cpuview_gap_at(const struct store_gpu_op *ops, size_t n, uint64_t t, uint64_t min_ns,
                   struct cpuview_gap *out)
{
	size_t i = cpuview_upper_bound(ops, n, t);
	if (i == 0 || i >= n)
		return 0;
	struct cpuview_gap g;
	if (!cpuview_gap_before(ops, i, min_ns, &g) || t < g.start_ns)
		return 0;
	*out = g;
	return 1;
}

int cpuview_gap_step(const struct store_gpu_op *ops, size_t n, uint64_t t, int dir, uint64_t min_ns,
                     struct cpuview_gap *out)
{
	/* A gap starts where the op before it ends; ends are sorted too on a non-overlapping row. */
	size_t i = cpuview_upper_bound(ops, n, t);
	if (dir > 0) {
		/* The gap before ops[i] may start after t (ops[i-1] ends after t). */
		for (size_t k = i ? i : 1; k < n; k++) {
			if (ops[k - 1].end_ns <= t)
				continue;
			if (cpuview_gap_before(ops, k, min_ns, out))
				return 1;
		}
		return 0;
	}
	/* Ops from i on start after t, so their ends lie after t too: start below them. */
	for (size_t k = i < n ? i : n - 1; k >= 1 && n > 1; k--) {
		if (ops[k].start_ns < t && cpuview_gap_before(ops, k, min_ns, out))
			return 1;
	}
	return 0;
}

pid_t cpuview_gap_thread(const struct store *store, size_t process, const struct store_gpu_op *after,
                         const char **why)
{
	struct store_gpu_launch gl;
	if (after && store_gpu_op_get_launch(store, process, after, &gl) == 0 && gl.tid) {
		if (why)
			*why = "launched the next GPU op";
		return gl.tid;
	}
	struct store_process_info pi;
	store_process_get(store, process, &pi);
	pid_t best = 0;
	uint64_t most = 0;
	for (size_t l = 0; l < pi.lane_count; l++) {
		struct store_lane_info li;
		store_lane_get(store, process, l, &li);
		if (li.kind == STORE_LANE_THREAD && li.gpu_ops > most) {
			most = li.gpu_ops;
			best = li.tid;
		}
	}
	if (why)
		*why = best ? "most CUDA API calls" : "";
	return best;
}
