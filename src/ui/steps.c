/*
 * The inferred steps in the viewer: the "step (inferred)" row under each process without repeating NVTX
 * ranges, and their histogram in the NVTX panel (see steps.h for how they are found).
 */
#include "ui_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuscope/clock.h"
#include "cuscope/steps.h"
#include "cuscope/timerow.h"
#include "cuscope/xalloc.h"

#define UI_STEPS_REFRESH_NS 1000000000ull /* a recomputation at most this often */
#define UI_STEPS_KEEP       65536u        /* steps kept per process (the oldest go) */
#define UI_STEPS_SHARE      20            /* the time between computations: at least 20 x their cost */

void ui_steps_fini(struct ui_steps *s)
{
	for (size_t p = 0; p < s->count; p++)
		free(s->procs[p].v);
	free(s->procs);
	memset(s, 0, sizeof *s);
}

/*
 * Takes a new result for a process: the steps it had before the window this computation read stay (the
 * live computation reads only the newest kernels), the rest is replaced; at most UI_STEPS_KEEP.
 */
static void ui_steps_merge(struct ui_steps_proc *sp, const struct steps_result *r)
{
	if (!r->n) { /* annotated now, or no loop: nothing inferred */
		sp->first_index += sp->n;
		sp->n = 0;
		return;
	}
	size_t keep = timerow_bound(sp->v, sp->n, sizeof *sp->v, TIMEROW_END, r->v[0].start_ns, 1);
	size_t drop = keep + r->n > UI_STEPS_KEEP ? keep + r->n - UI_STEPS_KEEP : 0;
	if (drop > keep)
		drop = keep;
	if (drop) /* (sp->v may still be NULL: no memmove of nothing) */
		memmove(sp->v, sp->v + drop, (keep - drop) * sizeof *sp->v);
	sp->first_index += drop;
	keep -= drop;
	size_t take = r->n < UI_STEPS_KEEP ? r->n : UI_STEPS_KEEP;
	xgrow((void **)&sp->v, &sp->cap, keep + take, sizeof *sp->v);
	for (size_t i = 0; i < take; i++) {
		const struct steps_range *s = &r->v[r->n - take + i];
		sp->v[keep + i] = (struct store_range){s->start_ns, s->end_ns, 0, 0};
	}
	sp->n = keep + take;
}

/*
 * Feeds the panel the steps of process p that ended since the last feed, but the newest: in a live view
 * the last iteration may still run (its end is where its work so far ends).
 */
static void ui_steps_feed(struct ui *ui, size_t p)
{
	struct ui_steps_proc *sp = &ui->steps.procs[p];
	for (size_t i = 0; i + 1 < sp->n; i++) {
		if (sp->v[i].start_ns < sp->fed_end_ns)
			continue;
		nvtx_stats_add(&ui->nvtx.stats, p, SIZE_MAX, 0, 0, NVTX_STATS_INFERRED, sp->v[i].start_ns,
		               sp->v[i].end_ns);
		sp->fed_end_ns = sp->v[i].end_ns;
	}
}

int ui_steps_update(struct ui *ui)
{
	struct ui_steps *s = &ui->steps;
	uint64_t gen = store_generation(ui->store), now = clock_mono_ns();
	/* At most once a second, and spending at most 1/UI_STEPS_SHARE of the time (many processes, many
	 * kernels). */
	uint64_t wait = s->cost_ns * UI_STEPS_SHARE > UI_STEPS_REFRESH_NS ? s->cost_ns * UI_STEPS_SHARE
	                                                                  : UI_STEPS_REFRESH_NS;
	if (ui->view.paused || (s->at_ns && (gen == s->generation || now - s->at_ns < wait)))
		return 0;
	s->generation = gen;
	s->at_ns = now;
	size_t np = store_process_count(ui->store);
	if (np > s->count) {
		s->procs = xrealloc(s->procs, np * sizeof *s->procs);
		memset(s->procs + s->count, 0, (np - s->count) * sizeof *s->procs);
		s->count = np;
	}
	int changed = 0;
	struct steps_result r = {0};
	for (size_t p = 0; p < np; p++) {
		struct ui_steps_proc *sp = &s->procs[p];
		int had = sp->n > 0;
		/* Live, the newest kernels (a bounded cost a second); a capture once, whole. */
		steps_infer(ui->store, p, ui->view.now_ns ? STEPS_LIVE_EVENTS : 0, &r);
		ui_steps_merge(sp, &r);
		ui_steps_feed(ui, p);
		if (had != (sp->n > 0)) {
			layout_set_steps(&ui->lanes.layout, p, sp->n > 0);
			changed = 1;
		}
	}
	steps_result_fini(&r);
	s->cost_ns = clock_mono_ns() - now;
	return changed;
}

void ui_draw_steps_row(struct ui *ui, int y, const struct layout_row *row)
{
	if (row->process >= ui->steps.count)
		return;
	const struct ui_steps_proc *sp = &ui->steps.procs[row->process];
	uint64_t from = ui->view.vp.start_ns, to = ui_data_end(ui, viewport_end_ns(&ui->view.vp));
	if (from >= to)
		return;
	size_t a = timerow_bound(sp->v, sp->n, sizeof *sp->v, TIMEROW_END, from, 1);
	size_t b = timerow_bound(sp->v, sp->n, sizeof *sp->v, TIMEROW_START, to, 0);
	const struct store_range *r = sp->v + a;
	size_t ns = viewport_fold(&ui->view.vp, r, b > a ? b - a : 0, ui->lanes.segs, ui->lanes.seg_cap);
	int gx = ui_gutter();
	for (size_t i = 0; i < ns; i++) {
		const struct viewport_seg *sg = &ui->lanes.segs[i];
		/* Steps abut: every other one in another colour, underlined: inferred, not annotated. */
		uint64_t index = sp->first_index + a + sg->first;
		attr_t at = ui_attr(ui, (enum theme_slot)(THEME_RANGE0 + (index % 2) * 3)) | A_UNDERLINE;
		int w = sg->col1 - sg->col0;
		if (sg->kind == VIEWPORT_SEG_FOLD || w <= 1) {
			ui_put(ui, y, gx + sg->col0, 1, ui_attr(ui, THEME_FOLD) | A_UNDERLINE,
			       ui->cells.g->fold);
			continue;
		}
		char dur[32], text[64];
		const struct store_range *k = &r[sg->first];
		ui_format_dur(dur, sizeof dur, k->end_ns - k->start_ns);
		/* "[step 2.1ms", "[step" where that does not fit, nothing but the brackets below that. */
		int room = w - (sg->clip_left ? 0 : 1) - (sg->clip_right ? 0 : 1);
		snprintf(text, sizeof text, "%s%s%s", sg->clip_left ? "" : "[", room >= 4 ? "step" : "",
		         room >= 5 + (int)strlen(dur) ? " " : "");
		if (room >= 5 + (int)strlen(dur))
			snprintf(text + strlen(text), sizeof text - strlen(text), "%s", dur);
		ui_fill(y, gx + sg->col0, w, at, ui->cells.color ? " " : ".");
		ui_put(ui, y, gx + sg->col0, w - (sg->clip_right ? 0 : 1), at | A_BOLD, text);
		if (!sg->clip_right)
			ui_put(ui, y, gx + sg->col1 - 1, 1, at, "]");
	}
}

void ui_steps_jump(struct ui *ui, const struct nvtx_stat *e)
{
	/* As ui_show_event does for a range, with the process's steps row instead of a lane's. */
	struct store_process_info pi;
	store_process_get(ui->store, e->process, &pi);
	uint64_t w = e->slow_end_ns - e->slow_start_ns;
	ui->view.vp.span_ns = w + w / 4 > VIEWPORT_MIN_SPAN_NS ? w + w / 4 : VIEWPORT_MIN_SPAN_NS;
	uint64_t mid = e->slow_start_ns + w / 2;
	ui->view.vp.start_ns = mid > ui->view.vp.span_ns / 2 ? mid - ui->view.vp.span_ns / 2 : 0;
	ui->view.follow = 0;
	int64_t c = viewport_col_of(&ui->view.vp, mid);
	ui->view.cursor_col = c >= 0 && c < ui->view.vp.cols ? (int)c : -1;
	layout_reveal(&ui->lanes.layout, pi.pid, 0, 0, 0);
	ui_rebuild_layout(ui, 1);
	struct layout_row key = {.kind = LAYOUT_ROW_STEPS, .process = e->process, .pid = pi.pid};
	size_t i = layout_find(&ui->lanes.layout, &key);
	if (i < ui->lanes.layout.count) {
		ui->lanes.layout.selected = i;
		layout_clamp(&ui->lanes.layout, ui->lanes.height);
	}
	char dur[32], msg[128];
	ui_format_dur(dur, sizeof dur, w);
	snprintf(msg, sizeof msg, "slowest step (inferred): %s", dur);
	ui_say(ui, msg);
}
