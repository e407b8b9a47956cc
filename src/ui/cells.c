/* Cells: attributes from the theme, glyph sets, clipping names to cells, putting text and fills, short number
 * formats, colour pairs. */
#include "ui_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <wchar.h>

#include "cuscope/cpuview.h"

const struct ui_glyphs ui_glyphs_utf8 = {
    "▮",   "◆",   "│", "─", "─", "█", "▶", "●", "▸",
    "↑/↓", "←/→", "█", "▬", "▼", "▸", "▾", "░", {" ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"},
    "µs",  "╱",   "┄"};
const struct ui_glyphs ui_glyphs_ascii = {
    "|",     "*",     "|", "-", "-", "#", ">", "*", ">",
    "Up/Dn", "Lt/Rt", "#", "=", "v", "+", "-", ".", {" ", "_", ".", "-", "~", "=", "+", "*", "#"},
    "us",    "/",     "~"};

static attr_t ui_theme_attr(uint16_t a)
{
	attr_t r = A_NORMAL;
	if (a & THEME_BOLD)
		r |= A_BOLD;
	if (a & THEME_DIM)
		r |= A_DIM;
	if (a & THEME_REVERSE)
		r |= A_REVERSE;
	if (a & THEME_UNDERLINE)
		r |= A_UNDERLINE;
	return r;
}

attr_t ui_attr(const struct ui *ui, enum theme_slot slot)
{
	if (!ui->cells.color)
		return ui_theme_attr(ui->cells.mono.slot[slot].attr);
	return COLOR_PAIR(slot + 1) | ui_theme_attr(ui->cells.theme.slot[slot].attr);
}

enum theme_slot ui_range_slot(uint32_t name_id)
{
	uint32_t h = name_id * 2654435761u; /* spread neighbouring ids over the colours */
	return THEME_RANGE0 + (h >> 16) % THEME_RANGES;
}

/*
 * Copies up to maxw display cells of s into out, replacing what the terminal cannot show (control
 * bytes, invalid UTF-8, non-ASCII without a UTF-8 locale) by '?'. Returns the cells used.
 */
int ui_clip(const struct ui *ui, const char *s, int maxw, char *out, size_t outsz)
{
	size_t o = 0;
	int w = 0;
	mbstate_t st;
	memset(&st, 0, sizeof st);
	while (*s && w < maxw && o + 8 < outsz) {
		unsigned char c = (unsigned char)*s;
		if (c < 0x80) {
			out[o++] = (c < 0x20 || c == 0x7f) ? ' ' : (char)c;
			w++;
			s++;
			continue;
		}
		if (ui->cells.g == &ui_glyphs_ascii) {
			/* One '?' per character: continuation bytes of UTF-8 add nothing. */
			if ((c & 0xc0) != 0x80) {
				out[o++] = '?';
				w++;
			}
			s++;
			continue;
		}
		wchar_t wc;
		size_t len = mbrtowc(&wc, s, MB_CUR_MAX, &st);
		int cw = (len == (size_t)-1 || len == (size_t)-2 || len == 0) ? -1 : wcwidth(wc);
		if (cw < 0) {
			memset(&st, 0, sizeof st);
			out[o++] = '?';
			w++;
			s++;
			continue;
		}
		if (w + cw > maxw)
			break;
		memcpy(out + o, s, len);
		o += len;
		w += cw;
		s += len;
	}
	out[o] = 0;
	return w;
}

/* Writes s at (y, x) clipped to maxw cells with attribute a; returns the cells written. */
int ui_put(const struct ui *ui, int y, int x, int maxw, attr_t a, const char *s)
{
	char buf[1024];
	if (maxw <= 0 || x >= COLS || y >= LINES || x < 0 || y < 0)
		return 0;
	if (x + maxw > COLS)
		maxw = COLS - x;
	int w = ui_clip(ui, s, maxw, buf, sizeof buf);
	attrset(a);
	mvaddstr(y, x, buf);
	return w;
}

/* Fills cells [x, x + n) of row y with one glyph. */
void ui_fill(int y, int x, int n, attr_t a, const char *glyph)
{
	if (x < 0 || y < 0 || y >= LINES)
		return;
	if (x + n > COLS)
		n = COLS - x;
	attrset(a);
	move(y, x);
	for (int i = 0; i < n; i++)
		addstr(glyph);
}

void ui_format_span(char *buf, size_t size, uint64_t ns)
{
	if (ns >= 1000000000ull)
		snprintf(buf, size, "%.1fs", (double)ns / 1e9);
	else if (ns >= 1000000ull)
		snprintf(buf, size, "%.1fms", (double)ns / 1e6);
	else
		snprintf(buf, size, "%.1fus", (double)ns / 1e3);
}

/* A duration in at most 7 cells: "812ns", "41.2us", "41.2ms", "1.20s". */
void ui_format_dur(char *buf, size_t size, uint64_t ns)
{
	cpuview_format_dur(buf, size, ns);
}

void ui_format_rate(char *buf, size_t size, double rate)
{
	if (rate >= 1e6)
		snprintf(buf, size, "%.2fM", rate / 1e6);
	else if (rate >= 1e3)
		snprintf(buf, size, "%.0fk", rate / 1e3);
	else
		snprintf(buf, size, "%.0f", rate);
}

/* Applies the theme of ui->cells.theme to the colour pairs. */
static void ui_apply_theme(struct ui *ui)
{
	if (!ui->cells.color)
		return;
	for (int i = 0; i < THEME_SLOT_COUNT; i++) {
		int fg = theme_degrade_color(ui->cells.theme.slot[i].fg, COLORS);
		int bg = theme_degrade_color(ui->cells.theme.slot[i].bg, COLORS);
		init_pair((short)(i + 1), (short)fg, (short)bg);
	}
	clearok(curscr, TRUE);
}

void ui_load_theme(struct ui *ui, const char *name, int quiet)
{
	char bufs[3][512], msg[300], from[512];
	const char *dirs[4];
	theme_search_dirs(ui->cells.exe_dir, bufs, dirs);
	theme_load(&ui->cells.theme, name, dirs, msg, sizeof msg, from, sizeof from);
	if (msg[0] && quiet)
		ui_message(ui, msg);
	else if (msg[0])
		ui_say(ui, msg);
	else if (!quiet) {
		char text[300];
		snprintf(text, sizeof text, "theme %.60s (%.200s)", ui->cells.theme.name, from);
		ui_say(ui, text);
	}
	ui_apply_theme(ui);
}

void ui_init_colors(struct ui *ui)
{
	const char *no_color = getenv("NO_COLOR");
	ui->cells.color = 0;
	if ((no_color && *no_color) || !has_colors())
		return;
	if (start_color() != OK)
		return;
	use_default_colors();
	ui->cells.color = 1;
}
