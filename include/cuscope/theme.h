/*
 * Colour themes as data: `key = value` lines naming a slot and its look, e.g.
 *     status = white on blue bold
 *     gap    = 236 on default
 * Colours are names (default, black, red, green, yellow, blue, magenta, cyan, white, bright-*,
 * gray) or 0-255; attributes bold, dim, reverse, underline. Unknown keys are ignored (reported once).
 * Slots not set keep the built-in dark look, except the CPU slots (sample, osrt, gc) and evicted, which a
 * theme that does not name them takes from one of its own slots (theme_fallback). Pure parsing and search: no
 * curses.
 */
#ifndef CUSCOPE_THEME_H
#define CUSCOPE_THEME_H

#include <stddef.h>
#include <stdint.h>

enum theme_slot {
	THEME_NORMAL = 0,
	THEME_STATUS,
	THEME_STATUS_LIVE,
	THEME_STATUS_PAUSED,
	THEME_AXIS,
	THEME_PROCESS,
	THEME_THREAD,
	THEME_FOLD,
	THEME_MARK,
	THEME_BASELINE,
	THEME_LOG,
	THEME_HELP,
	THEME_MESSAGE,
	THEME_PROMPT,
	THEME_GPU_HEADER,
	THEME_COPY,
	THEME_MEMSET,
	THEME_SYNC,
	THEME_API,
	THEME_GAP,
	THEME_CURSOR,
	THEME_SELECTED,
	THEME_PANEL_HEADER,
	THEME_PANEL,
	THEME_UTIL_SM,
	THEME_UTIL_COPY,
	THEME_SAMPLE,  /* CPU sample density on a thread row (falls back to util_sm) */
	THEME_OSRT,    /* blocking calls (OS runtime) under a thread (falls back to sync) */
	THEME_GC,      /* Python GC ranges under a thread (falls back to mark) */
	THEME_EVICTED, /* time no longer in the live viewer's memory (falls back to axis) */
	THEME_COMM,    /* communication kernels (NCCL) on GPU stream rows; unnamed: the built-in dark look */
	THEME_RANGE0,  /* THEME_RANGES slots for range and kernel boxes, picked by name */
	THEME_SLOT_COUNT = THEME_RANGE0 + 6,
};
#define THEME_RANGES 6

#define THEME_BOLD      1u
#define THEME_DIM       2u
#define THEME_REVERSE   4u
#define THEME_UNDERLINE 8u

#define THEME_DEFAULT_COLOR (-1)

struct theme_style {
	int16_t fg, bg; /* 0-255, or THEME_DEFAULT_COLOR */
	uint16_t attr;  /* THEME_BOLD | ... */
};

struct theme {
	char name[64];
	struct theme_style slot[THEME_SLOT_COUNT];
};

/* Name of a slot as written in theme files ("status", "range0", ...). */
const char *theme_slot_name(enum theme_slot slot);
/* Parses a colour name or number: 0, or -EINVAL. */
int theme_parse_color(const char *word, int16_t *out);
/*
 * Applies the lines of text onto t (slots not named keep their look). Unknown keys and bad values
 * are skipped; the first is described in warn ("unknown key 'x' (line 3)"), with the number of
 * skipped lines returned. origin names the file in messages.
 */
int theme_parse(struct theme *t, const char *text, char *warn, size_t warn_size);
/* Names of the built-in themes, NULL-terminated: dark first (the default). */
extern const char *const theme_builtin_names[];
/* Text of a built-in theme, NULL if there is none by that name. */
const char *theme_builtin_text(const char *name);
/* The slot whose look an unnamed slot takes (the slot itself when it has no fallback). */
enum theme_slot theme_fallback(enum theme_slot slot);
/* Sets t to the built-in dark theme. */
void theme_default(struct theme *t);
/*
 * Loads a theme by name or path: a path (has '/' or ends in .theme) is read as is; a name is looked
 * up in dirs (NULL-terminated, each holding NAME.theme), then among the built-ins. Returns 0 (msg
 * may hold a warning about skipped lines) or -ENOENT (t = built-in dark, msg says so). *from
 * receives the file used or "built-in".
 */
int theme_load(struct theme *t, const char *name, const char *const *dirs, char *msg, size_t msg_size,
               char *from, size_t from_size);
/* The directories searched for a name, in order: $XDG_CONFIG_HOME/cuscope/themes (or
 * ~/.config/...), EXE_DIR/../share/cuscope/themes, EXE_DIR/../../themes (a build tree). Fills
 * bufs (count 3, each size bytes) and dirs (4 entries, NULL-terminated). */
void theme_search_dirs(const char *exe_dir, char bufs[][512], const char **dirs);
/* Maps a 0-255 colour onto a terminal with ncolors colours (256, 16 or 8): nearest match. */
int theme_degrade_color(int color, int ncolors);

#endif
