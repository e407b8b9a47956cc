/* The ranks pane as data: its rows, their text, the selection and where Enter goes (see rankspane.h). */
#include "cuscope/rankspane.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuscope/clock.h"
#include "cuscope/cpuview.h"
#include "cuscope/steps.h"
#include "cuscope/store.h"
#include "cuscope/viewport.h"

void rankspane_init(struct rankspane *rp)
{
	memset(rp, 0, sizeof *rp);
}

void rankspane_fini(struct rankspane *rp)
{
	free(rp->rows);
	memset(rp, 0, sizeof *rp);
}

int rankspane_due(const struct rankspane *rp, uint64_t generation, uint64_t now_ns)
{
	if (!rp->computed)
		return 1;
	uint64_t wait = rp->compute_cost_ns * RANKSPANE_SHARE > RANKSPANE_REFRESH_NS
	                    ? rp->compute_cost_ns * RANKSPANE_SHARE
	                    : RANKSPANE_REFRESH_NS;
	return generation != rp->generation && now_ns - rp->computed_at_ns >= wait;
}

/* A restarted worker's " (restart K)" after its rank, "" for a first start; returns its length. */
static int rankspane_restart_text(const struct stats_rank_row *r, char *buf, size_t size)
{
	if (!r->restart) {
		snprintf(buf, size, "%s", "");
		return 0;
	}
	return snprintf(buf, size, " (restart %d)", (int)r->restart);
}

void rankspane_set_rows(struct rankspane *rp, struct stats_rank_row *rows, size_t count)
{
	/* The selected rank moves with its row when the order changes. */
	int had = rp->sel < rp->count;
	uint32_t capture = had ? rp->rows[rp->sel].capture : 0;
	pid_t pid = had ? rp->rows[rp->sel].pid : 0;
	/* Hosts of one live view share a capture and may share pids. */
	const char *host = had && rp->rows[rp->sel].host ? rp->rows[rp->sel].host : "";
	char host_copy[64];
	snprintf(host_copy, sizeof host_copy, "%s", host);
	free(rp->rows);
	rp->rows = rows;
	rp->count = count;
	size_t sel = 0;
	for (size_t i = 0; had && i < count; i++)
		if (rows[i].capture == capture && rows[i].pid == pid &&
		    strcmp(rows[i].host ? rows[i].host : "", host_copy) == 0)
			sel = i;
	rp->sel = sel;
	if (rp->top > rp->sel)
		rp->top = rp->sel;
	rp->multi_host = 0;
	rp->restart_w = 0;
	for (size_t i = 0; i < count; i++) {
		char suffix[32];
		int w = rankspane_restart_text(&rows[i], suffix, sizeof suffix);
		rp->restart_w = w > rp->restart_w ? w : rp->restart_w;
	}
	for (size_t i = 1; i < count; i++) {
		const char *a = rows[0].host ? rows[0].host : "", *b = rows[i].host ? rows[i].host : "";
		if (strcmp(a, b) != 0)
			rp->multi_host = 1;
	}
}

void rankspane_update(struct rankspane *rp, const struct store *store, uint64_t generation, uint64_t now_ns)
{
	uint64_t t0 = clock_mono_ns();
	struct stats_rank_row *rows;
	size_t n = stats_ranks_compute_bounded(store, NULL, STEPS_LIVE_EVENTS, &rows);
	rankspane_set_rows(rp, rows, n);
	rp->computed = 1;
	rp->generation = generation;
	rp->computed_at_ns = now_ns;
	rp->compute_cost_ns = clock_mono_ns() - t0;
}

/* Host column width when shown. */
#define RANKSPANE_HOST_W 16

void rankspane_header(const struct rankspane *rp, char *buf, size_t size)
{
	snprintf(buf, size, " %6s%-*s%s%-*s %8s %6s %9s %9s %9s %9s %8s", "rank", rp->restart_w, "",
	         rp->multi_host ? "  " : "", rp->multi_host ? RANKSPANE_HOST_W : 0,
	         rp->multi_host ? "host" : "", "pid", "steps", "step p50", "step p99", "NCCL", "compute",
	         "GPU idle");
}

void rankspane_row_text(const struct rankspane *rp, size_t i, char *buf, size_t size)
{
	if (i >= rp->count) {
		snprintf(buf, size, "%s", "");
		return;
	}
	const struct stats_rank_row *r = &rp->rows[i];
	char p50[16] = "-", p99[16] = "-", nccl[16] = "-", comp[16] = "-", idle[16] = "-";
	if (r->steps) {
		cpuview_format_dur(p50, sizeof p50, r->step_p50_ns);
		cpuview_format_dur(p99, sizeof p99, r->step_p99_ns);
		cpuview_format_dur(comp, sizeof comp, r->compute_ns);
		/* Without GPU data there is no NCCL time nor idle GPU to speak of: "-", not "0". */
		if (r->gpu[0]) {
			cpuview_format_dur(nccl, sizeof nccl, r->nccl_ns);
			snprintf(idle, sizeof idle, "%.1f%%",
			         r->step_total_ns ? 100.0 * (double)r->gpu_idle_ns / (double)r->step_total_ns
			                          : 0.0);
		}
	}
	char host[RANKSPANE_HOST_W + 1] = "";
	if (rp->multi_host)
		snprintf(host, sizeof host, "%s", r->host ? r->host : "?");
	/* The first row is the straggler when there is something to compare it with. */
	int straggler = i == 0 && rp->count > 1 && r->steps;
	char restart[32];
	rankspane_restart_text(r, restart, sizeof restart);
	snprintf(buf, size, " %6d%-*s%s%-*s %8d %6llu %9s %9s %9s %9s %8s%s%s", (int)r->rank, rp->restart_w,
	         restart, rp->multi_host ? "  " : "", rp->multi_host ? RANKSPANE_HOST_W : 0, host,
	         (int)r->pid, (unsigned long long)r->steps, p50, p99, nccl, comp, idle,
	         straggler ? "  < straggler" : "", r->inferred && r->steps ? "  (steps inferred)" : "");
}

void rankspane_select(struct rankspane *rp, long delta, size_t height)
{
	if (!rp->count) {
		rp->sel = rp->top = 0;
		return;
	}
	long s = (long)rp->sel + delta;
	if (s < 0)
		s = 0;
	if ((size_t)s >= rp->count)
		s = (long)rp->count - 1;
	rp->sel = (size_t)s;
	if (height == 0)
		height = 1;
	if (rp->sel < rp->top)
		rp->top = rp->sel;
	if (rp->sel >= rp->top + height)
		rp->top = rp->sel - height + 1;
}

int rankspane_jump(const struct rankspane *rp, struct rankspane_jump *j)
{
	memset(j, 0, sizeof *j);
	if (rp->sel >= rp->count)
		return 0;
	const struct stats_rank_row *r = &rp->rows[rp->sel];
	j->process = r->process;
	j->main_process = r->main_process;
	j->main_lane = r->main_lane;
	if (!r->steps || r->slow_end_ns <= r->slow_start_ns)
		return 1;
	/* The slowest step with an eighth of its length either side. */
	uint64_t w = r->slow_end_ns - r->slow_start_ns;
	j->has_window = 1;
	j->step_start_ns = r->slow_start_ns;
	j->step_end_ns = r->slow_end_ns;
	j->span_ns = w + w / 4 > VIEWPORT_MIN_SPAN_NS ? w + w / 4 : VIEWPORT_MIN_SPAN_NS;
	j->start_ns = r->slow_start_ns > w / 8 ? r->slow_start_ns - w / 8 : 0;
	return 1;
}
