#include "cuscope/theme.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const theme_slot_names[THEME_SLOT_COUNT] = {
    [THEME_NORMAL] = "normal",
    [THEME_STATUS] = "status",
    [THEME_STATUS_LIVE] = "status_live",
    [THEME_STATUS_PAUSED] = "status_paused",
    [THEME_AXIS] = "axis",
    [THEME_PROCESS] = "process",
    [THEME_THREAD] = "thread",
    [THEME_FOLD] = "fold",
    [THEME_MARK] = "mark",
    [THEME_BASELINE] = "baseline",
    [THEME_LOG] = "log",
    [THEME_HELP] = "help",
    [THEME_MESSAGE] = "message",
    [THEME_PROMPT] = "prompt",
    [THEME_GPU_HEADER] = "gpu_header",
    [THEME_COPY] = "copy",
    [THEME_MEMSET] = "memset",
    [THEME_SYNC] = "sync",
    [THEME_API] = "api",
    [THEME_GAP] = "gap",
    [THEME_CURSOR] = "cursor",
    [THEME_SELECTED] = "selected",
    [THEME_PANEL_HEADER] = "panel_header",
    [THEME_PANEL] = "panel",
    [THEME_UTIL_SM] = "util_sm",
    [THEME_UTIL_COPY] = "util_copy",
    [THEME_SAMPLE] = "sample",
    [THEME_OSRT] = "osrt",
    [THEME_GC] = "gc",
    [THEME_EVICTED] = "evicted",
    [THEME_COMM] = "comm",
    [THEME_RANGE0 + 0] = "range0",
    [THEME_RANGE0 + 1] = "range1",
    [THEME_RANGE0 + 2] = "range2",
    [THEME_RANGE0 + 3] = "range3",
    [THEME_RANGE0 + 4] = "range4",
    [THEME_RANGE0 + 5] = "range5",
};

static const struct {
	const char *name;
	int16_t color;
} theme_colors[] = {
    {"default", THEME_DEFAULT_COLOR},
    {"black", 0},
    {"red", 1},
    {"green", 2},
    {"yellow", 3},
    {"blue", 4},
    {"magenta", 5},
    {"cyan", 6},
    {"white", 7},
    {"gray", 8},
    {"grey", 8},
    {"bright-black", 8},
    {"bright-red", 9},
    {"bright-green", 10},
    {"bright-yellow", 11},
    {"bright-blue", 12},
    {"bright-magenta", 13},
    {"bright-cyan", 14},
    {"bright-white", 15},
};

static const struct {
	const char *name;
	uint16_t attr;
} theme_attrs[] = {
    {"bold", THEME_BOLD},           {"dim", THEME_DIM}, {"reverse", THEME_REVERSE},
    {"underline", THEME_UNDERLINE}, {"normal", 0},
};

const char *theme_slot_name(enum theme_slot slot)
{
	return slot < THEME_SLOT_COUNT ? theme_slot_names[slot] : "";
}

int theme_parse_color(const char *word, int16_t *out)
{
	for (size_t i = 0; i < sizeof theme_colors / sizeof theme_colors[0]; i++) {
		if (strcasecmp(word, theme_colors[i].name) == 0) {
			*out = theme_colors[i].color;
			return 0;
		}
	}
	char *end;
	long v = strtol(word, &end, 10);
	if (*word && !*end && v >= 0 && v <= 255) {
		*out = (int16_t)v;
		return 0;
	}
	return -EINVAL;
}

/* Parses "FG [on BG] [attr...]" into st: 0, or -EINVAL with the bad word in *bad. */
static int theme_parse_style(char *value, struct theme_style *st, const char **bad)
{
	struct theme_style s = {THEME_DEFAULT_COLOR, THEME_DEFAULT_COLOR, 0};
	int n = 0, want_bg = 0;
	for (char *w = strtok(value, " \t"); w; w = strtok(NULL, " \t"), n++) {
		int16_t c;
		int attr_found = 0;
		if (strcasecmp(w, "on") == 0) {
			want_bg = 1;
			continue;
		}
		for (size_t i = 0; i < sizeof theme_attrs / sizeof theme_attrs[0]; i++) {
			if (strcasecmp(w, theme_attrs[i].name) == 0) {
				s.attr |= theme_attrs[i].attr;
				attr_found = 1;
			}
		}
		if (attr_found)
			continue;
		if (theme_parse_color(w, &c) != 0) {
			*bad = w;
			return -EINVAL;
		}
		if (want_bg) {
			s.bg = c;
			want_bg = 0;
		} else {
			s.fg = c;
		}
	}
	if (!n) {
		*bad = "(empty)";
		return -EINVAL;
	}
	*st = s;
	return 0;
}

static char *theme_trim(char *s)
{
	while (isspace((unsigned char)*s))
		s++;
	char *e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = 0;
	return s;
}

/* Slots added after the theme files were written: where their look comes from when unnamed. */
static const struct {
	enum theme_slot slot, from;
} theme_fallbacks[] = {
    {THEME_SAMPLE, THEME_UTIL_SM},
    {THEME_OSRT, THEME_SYNC},
    {THEME_GC, THEME_MARK},
    {THEME_EVICTED, THEME_AXIS},
};

enum theme_slot theme_fallback(enum theme_slot slot)
{
	for (size_t i = 0; i < sizeof theme_fallbacks / sizeof theme_fallbacks[0]; i++)
		if (theme_fallbacks[i].slot == slot)
			return theme_fallbacks[i].from;
	return slot;
}

/* Marks a style as "not named by the text" so the fallback can be applied after parsing. */
#define THEME_UNSET 0x8000u

int theme_parse(struct theme *t, const char *text, char *warn, size_t warn_size)
{
	for (size_t i = 0; i < sizeof theme_fallbacks / sizeof theme_fallbacks[0]; i++)
		t->slot[theme_fallbacks[i].slot].attr |= THEME_UNSET;
	int skipped = 0, line_no = 0;
	if (warn && warn_size)
		warn[0] = 0;
	const char *p = text;
	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		char line[512];
		snprintf(line, sizeof line, "%.*s", (int)(len < sizeof line ? len : sizeof line - 1), p);
		p += len + (nl ? 1 : 0);
		line_no++;
		char *s = theme_trim(line);
		if (!*s || *s == '#' || *s == ';' || *s == '[')
			continue;
		char *eq = strchr(s, '=');
		const char *why = NULL, *what = s;
		char whybuf[128];
		if (!eq) {
			why = "not key = value";
		} else {
			*eq = 0;
			char *key = theme_trim(s), *value = theme_trim(eq + 1);
			what = key;
			if (strcmp(key, "name") == 0) {
				snprintf(t->name, sizeof t->name, "%s", value);
				continue;
			}
			size_t slot = 0;
			while (slot < THEME_SLOT_COUNT && strcmp(theme_slot_names[slot], key) != 0)
				slot++;
			if (slot == THEME_SLOT_COUNT) {
				why = "unknown key";
			} else {
				const char *bad = NULL;
				struct theme_style st;
				if (theme_parse_style(value, &st, &bad) == 0) {
					t->slot[slot] = st;
					continue;
				}
				snprintf(whybuf, sizeof whybuf, "bad colour '%.40s' for", bad);
				why = whybuf;
			}
		}
		if (!skipped && warn && warn_size)
			snprintf(warn, warn_size, "%s '%.40s' (line %d) ignored", why, what, line_no);
		skipped++;
	}
	for (size_t i = 0; i < sizeof theme_fallbacks / sizeof theme_fallbacks[0]; i++) {
		struct theme_style *st = &t->slot[theme_fallbacks[i].slot];
		if (st->attr & THEME_UNSET)
			*st = t->slot[theme_fallbacks[i].from];
	}
	if (skipped > 1 && warn && warn_size) {
		size_t l = strlen(warn);
		snprintf(warn + l, warn_size - l, ", and %d more", skipped - 1);
	}
	return skipped;
}

void theme_default(struct theme *t)
{
	memset(t, 0, sizeof *t);
	for (size_t i = 0; i < THEME_SLOT_COUNT; i++)
		t->slot[i] = (struct theme_style){THEME_DEFAULT_COLOR, THEME_DEFAULT_COLOR, 0};
	theme_parse(t, theme_builtin_text("dark"), NULL, 0);
	snprintf(t->name, sizeof t->name, "dark");
}

/* Reads a whole small file (NULL if unreadable or over 256 KiB). */
static char *theme_read_file(const char *path)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return NULL;
	size_t cap = 256 * 1024;
	char *buf = malloc(cap + 1);
	size_t n = buf ? fread(buf, 1, cap + 1, f) : 0;
	fclose(f);
	if (!buf || n > cap) {
		free(buf);
		return NULL;
	}
	buf[n] = 0;
	return buf;
}

static int theme_apply(struct theme *t, const char *text, const char *label, char *msg, size_t msg_size)
{
	char warn[256];
	theme_default(t);
	t->name[0] = 0;
	if (theme_parse(t, text, warn, sizeof warn) > 0 && msg && msg_size)
		snprintf(msg, msg_size, "theme %s: %s", label, warn);
	if (!t->name[0])
		snprintf(t->name, sizeof t->name, "%s", label);
	return 0;
}

int theme_load(struct theme *t, const char *name, const char *const *dirs, char *msg, size_t msg_size,
               char *from, size_t from_size)
{
	if (msg && msg_size)
		msg[0] = 0;
	if (!name || !*name)
		name = "dark";
	size_t len = strlen(name);
	int is_path = strchr(name, '/') || (len > 6 && strcmp(name + len - 6, ".theme") == 0);
	if (is_path) {
		char *text = theme_read_file(name);
		if (text) {
			const char *base = strrchr(name, '/');
			char label[64];
			snprintf(label, sizeof label, "%.*s", (int)strcspn(base ? base + 1 : name, "."),
			         base ? base + 1 : name);
			theme_apply(t, text, label, msg, msg_size);
			free(text);
			if (from)
				snprintf(from, from_size, "%s", name);
			return 0;
		}
	} else {
		for (size_t i = 0; dirs && dirs[i]; i++) {
			char path[1024];
			snprintf(path, sizeof path, "%s/%s.theme", dirs[i], name);
			char *text = theme_read_file(path);
			if (!text)
				continue;
			theme_apply(t, text, name, msg, msg_size);
			free(text);
			if (from)
				snprintf(from, from_size, "%s", path);
			return 0;
		}
		const char *builtin = theme_builtin_text(name);
		if (builtin) {
			theme_apply(t, builtin, name, msg, msg_size);
			if (from)
				snprintf(from, from_size, "built-in");
			return 0;
		}
	}
	theme_default(t);
	if (msg && msg_size)
		snprintf(msg, msg_size, "theme '%.200s' not found; using the built-in dark theme", name);
	if (from)
		snprintf(from, from_size, "built-in");
	return -ENOENT;
}

void theme_search_dirs(const char *exe_dir, char bufs[][512], const char **dirs)
{
	size_t n = 0;
	const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
	if (xdg && *xdg)
		snprintf(bufs[n], 512, "%s/cuscope/themes", xdg), dirs[n] = bufs[n], n++;
	else if (home && *home)
		snprintf(bufs[n], 512, "%s/.config/cuscope/themes", home), dirs[n] = bufs[n], n++;
	if (exe_dir && *exe_dir) {
		snprintf(bufs[n], 512, "%s/../share/cuscope/themes", exe_dir), dirs[n] = bufs[n], n++;
		snprintf(bufs[n], 512, "%s/../../themes", exe_dir), dirs[n] = bufs[n], n++;
	}
	dirs[n] = NULL;
}

/* RGB of xterm colour c (0-255). */
static void theme_rgb(int c, int *r, int *g, int *b)
{
	static const int base16[16][3] = {
	    {0, 0, 0},     {205, 0, 0},     {0, 205, 0},     {205, 205, 0},   {0, 0, 238}, {205, 0, 205},
	    {0, 205, 205}, {229, 229, 229}, {127, 127, 127}, {255, 0, 0},     {0, 255, 0}, {255, 255, 0},
	    {92, 92, 255}, {255, 0, 255},   {0, 255, 255},   {255, 255, 255},
	};
	if (c < 16) {
		*r = base16[c][0], *g = base16[c][1], *b = base16[c][2];
	} else if (c < 232) {
		static const int lv[6] = {0, 95, 135, 175, 215, 255};
		c -= 16;
		*r = lv[c / 36], *g = lv[(c / 6) % 6], *b = lv[c % 6];
	} else {
		*r = *g = *b = 8 + (c - 232) * 10;
	}
}

int theme_degrade_color(int color, int ncolors)
{
	if (color < 0 || color < ncolors)
		return color;
	if (ncolors >= 16 || color >= 16) {
		/* Nearest of the first min(ncolors, 16) colours by RGB distance. */
		int limit = ncolors >= 16 ? 16 : 8, best = 0;
		long best_d = -1;
		int r, g, b;
		theme_rgb(color, &r, &g, &b);
		for (int i = 0; i < limit; i++) {
			int r2, g2, b2;
			theme_rgb(i, &r2, &g2, &b2);
			long d =
			    (long)(r - r2) * (r - r2) + (long)(g - g2) * (g - g2) + (long)(b - b2) * (b - b2);
			if (best_d < 0 || d < best_d)
				best_d = d, best = i;
		}
		return best;
	}
	return color & 7; /* bright 8-15 onto 0-7 */
}
