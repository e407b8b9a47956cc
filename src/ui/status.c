/* The status line at the top and the message / prompt line at the bottom. */
#include "ui_impl.h"

#include <stdio.h>
#include <string.h>

#include "cuscope/clock.h"
#include "cuscope/cmdtext.h"
#include "cuscope/wire.h"

void ui_draw_status(struct ui *ui, const struct ui_status *st)
{
	char line[1024], state[96], span[32], rate[32];
	attr_t a = ui_attr(ui, THEME_STATUS);
	ui_fill(0, 0, COLS, a, " ");

	if (!st || !st->live)
		snprintf(state, sizeof state, "CAPTURE");
	else if (ui->view.paused) {
		char newer[32], ev[32];
		uint64_t last = store_last_ns(ui->store), cnt = store_event_count(ui->store);
		ui_format_span(newer, sizeof newer, last > ui->view.pause_ns ? last - ui->view.pause_ns : 0);
		ui_format_rate(ev, sizeof ev,
		               (double)(cnt > ui->view.pause_events ? cnt - ui->view.pause_events : 0));
		snprintf(state, sizeof state, "PAUSED +%s / %s ev newer", newer, ev);
	} else if (st->target_alive)
		snprintf(state, sizeof state, "%s LIVE%s", ui->cells.g->live,
		         ui->view.follow ? "" : " (scrolled, End follows)");
	else if (st->exit_signal)
		snprintf(state, sizeof state, "EXITED (signal %d)", st->exit_signal);
	else
		snprintf(state, sizeof state, "EXITED (code %d)", st->exit_code);
	ui_format_span(span, sizeof span, ui->view.vp.span_ns);
	ui_format_rate(rate, sizeof rate, st ? st->events_per_s : 0);

	int x = ui_put(ui, 0, 0, COLS, a | A_BOLD, " cuscope ");
	/* The latest overhead-budget back-off (or what the budget holds reduced now). */
	char budget[256];
	const char *bnote = costview_budget_note(ui->store, budget, sizeof budget, NULL);
	int bw = bnote ? (int)strlen(bnote) + 2 : 0;
	if (bw > 64)
		bw = 64;
	/* The command gets what the rest leaves, but at least some of it shows. */
	uint64_t from = store_memory_from_ns(ui->store);
	int room = COLS - x - 60 - (ui->view.paused ? 16 : 0) - (from ? 22 : 0) - bw -
	           (st && st->log_note ? (int)strlen(st->log_note) + 2 : 0);
	/*
	 * The program's basename and arguments, cut from the middle, then the pid, never cut: a long
	 * path or argument list must not push the pid off or cut the program's name. The command
	 * keeps at least its name (up to 24 cells) whatever the rest of the line takes.
	 */
	char pid[32] = " ", cmd[1000];
	if (st && st->pid)
		snprintf(pid, sizeof pid, " pid %d ", (int)st->pid);
	int arrow = (int)cmdtext_cells(ui->cells.g->arrow) + 1;
	int least = arrow + (int)cmdtext_cells(pid) + 24;
	if (room < least)
		room = least;
	cmdtext_fit(st && st->command ? st->command : "", pid, (size_t)(room - arrow),
	            ui->cells.g == &ui_glyphs_ascii ? "..." : "\u2026", cmd, sizeof cmd);
	snprintf(line, sizeof line, "%s %s", ui->cells.g->arrow, cmd);
	x += ui_put(ui, 0, x, COLS - x, a, line);
	enum theme_slot ss = ui->view.paused                      ? THEME_STATUS_PAUSED
	                     : st && st->live && st->target_alive ? THEME_STATUS_LIVE
	                                                          : THEME_STATUS;
	x += ui_put(ui, 0, x, COLS - x, ss == THEME_STATUS ? a | A_BOLD : ui_attr(ui, ss), state);
	if (from) {
		/* A bounded live store: how far back memory reaches (older time is the band). */
		char reach[32];
		uint64_t now = ui_now(ui);
		ui_format_span(reach, sizeof reach, now > from ? now - from : 0);
		snprintf(line, sizeof line, "  memory: last %s", reach);
		x += ui_put(ui, 0, x, COLS - x, ui_attr(ui, THEME_STATUS_LIVE), line);
	}
	if (st && st->log_note) {
		snprintf(line, sizeof line, "  %s", st->log_note);
		x += ui_put(ui, 0, x, COLS - x, ui_attr(ui, THEME_STATUS_LIVE), line);
	}
	snprintf(line, sizeof line, "  window %s  %s ev/s  drops %llu", span, rate,
	         (unsigned long long)store_loss_total(ui->store));
	x += ui_put(ui, 0, x, COLS - x, a, line);
	uint64_t gpu = store_gpu_event_count(ui->store);
	if (gpu) {
		if (st && st->live) {
			ui_format_rate(rate, sizeof rate, ui->gpu.rate);
			snprintf(line, sizeof line, "  gpu %s/s", rate);
		} else {
			ui_format_rate(rate, sizeof rate, (double)gpu);
			snprintf(line, sizeof line, "  gpu %s", rate);
		}
		x += ui_put(ui, 0, x, COLS - x, a, line);
	}
	uint64_t cupti = store_loss_count(ui->store, WIRE_LOSS_CUPTI_DROPPED) +
	                 store_loss_count(ui->store, WIRE_LOSS_GPU_BUFFER);
	if (cupti) {
		snprintf(line, sizeof line, "  cupti drops %llu", (unsigned long long)cupti);
		x += ui_put(ui, 0, x, COLS - x, ui_attr(ui, THEME_STATUS_LIVE), line);
	}
	/* After the fixed fields (their width was set aside above), so these stay where they are. */
	if (bnote) {
		snprintf(line, sizeof line, "  %s", bnote);
		x += ui_put(ui, 0, x, bw < COLS - x - 8 ? bw : COLS - x - 8, ui_attr(ui, THEME_STATUS_LIVE),
		            line);
	}
	if (st && st->log_path && COLS - x - 8 >= 16) {
		snprintf(line, sizeof line, "  log %s", st->log_path);
		x += ui_put(ui, 0, x, COLS - x - 8, a, line);
	}
	if (COLS - x >= 8)
		ui_put(ui, 0, COLS - 7, 7, a, "? help ");
}

void ui_draw_bottom(struct ui *ui, int y)
{
	if (ui->prompt.kind == UI_PROMPT_QUIT) {
		attr_t a = ui_attr(ui, THEME_PROMPT);
		ui_fill(y, 0, COLS, a, " ");
		ui_put(ui, y, 0, COLS, a | A_BOLD,
		       " Target running: [d]etach (it runs on)  [s]top it  [c]ancel");
		return;
	}
	if (ui->prompt.kind == UI_PROMPT_DUMP_SCOPE) {
		attr_t a = ui_attr(ui, THEME_PROMPT);
		ui_fill(y, 0, COLS, a, " ");
		ui_put(ui, y, 0, COLS, a | A_BOLD,
		       " Dump to a file: [v]isible window  [w]hole capture  [c]ancel (capture goes on)");
		return;
	}
	if (ui->prompt.kind == UI_PROMPT_FIND || ui->prompt.kind == UI_PROMPT_GOTO ||
	    ui->prompt.kind == UI_PROMPT_DUMP_FILE) {
		attr_t a = ui_attr(ui, THEME_PROMPT);
		char text[700];
		snprintf(text, sizeof text,
		         ui->prompt.kind == UI_PROMPT_FIND ? " find: %s_"
		         : ui->prompt.kind == UI_PROMPT_GOTO
		             ? " go to (s since origin): %s_"
		             : " dump to file (Enter writes, Esc cancels): %s_",
		         ui->prompt.input);
		ui_fill(y, 0, COLS, a, " ");
		ui_put(ui, y, 0, COLS, a | A_BOLD, text);
		return;
	}
	if (ui->msg.text[0] && clock_mono_ns() < ui->msg.until) {
		ui_put(ui, y, 0, COLS, ui_attr(ui, THEME_MESSAGE), ui->msg.text);
		return;
	}
	char hint[256];
	snprintf(
	    hint, sizeof hint,
	    " space pause  +/- zoom  %s pan  %s lanes  Enter details  / find  h nvtx  H hot  R ranks  ] gap  "
	    "? help  q quit",
	    ui->cells.g->leftright, ui->cells.g->updown);
	ui_put(ui, y, 0, COLS, ui_attr(ui, THEME_NORMAL) | A_DIM, hint);
}
