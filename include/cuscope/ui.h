/*
 * The ncurses timeline. The CLI owns the event loop (sockets, child process, signals) and calls
 * into the UI: feed input when stdin is readable, draw when something changed or time passed.
 * Nothing here reads sockets or starts processes.
 */
#ifndef CUSCOPE_UI_H
#define CUSCOPE_UI_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

struct store;
struct ui;

/* What the CLI knows about the target and the capture, shown in the status line. */
struct ui_status {
	const char *command;  /* target command line (or the capture file name in view mode) */
	pid_t pid;            /* launched target pid, 0 in view mode */
	int live;             /* 1 while capturing live, 0 for a capture file */
	int target_alive;     /* launched target still running */
	int exit_code;        /* when !target_alive: exit code, or 128+signal */
	int exit_signal;      /* when !target_alive: terminating signal or 0 */
	const char *log_path; /* where the target's stdout/stderr go, or NULL */
	const char *log_note; /* what the output log dropped (cap, full disk), or NULL */
	double events_per_s;  /* recent ingest rate */
	uint64_t now_ns;      /* CLOCK_MONOTONIC "now" for live mode; 0 in view mode */
};

struct ui_options {
	int ascii;          /* draw with ASCII only */
	double window_s;    /* initial visible time span, seconds (default 10) */
	const char *theme;  /* theme name or path (NULL: dark) */
	double gap_ms;      /* shade GPU idle gaps longer than this (0: default 10 ms, < 0: off) */
	int no_mouse;       /* leave the mouse to the terminal */
	unsigned memory_mb; /* live: events kept in memory, MiB (0 = UI_MEMORY_MB_DEFAULT) */
	unsigned disk_mb;   /* live: live capture file kept for dumps, MiB (0 = UI_DISK_MB_DEFAULT) */
};

#define UI_MEMORY_MB_DEFAULT 512u
#define UI_DISK_MB_DEFAULT   4096u

enum ui_action {
	UI_ACTION_NONE = 0,
	UI_ACTION_QUIT = 1 << 0,      /* leave: the target is gone or this is view mode */
	UI_ACTION_DETACH = 1 << 1,    /* leave the target running and exit */
	UI_ACTION_STOP = 1 << 2,      /* stop the target (SIGTERM to its process group), then exit */
	UI_ACTION_INTERRUPT = 1 << 3, /* Ctrl-C typed: forward SIGINT to the target */
};

/* Takes over the terminal (initscr etc.); returns NULL with *cause if there is no usable terminal. */
struct ui *ui_new(struct store *store, const struct ui_options *options, const char **cause);
/* ui_new on given streams (benchmarks draw into a file or a pipe); no terminal check. */
struct ui *ui_new_on(struct store *store, const struct ui_options *options, FILE *out, FILE *in,
                     const char **cause);
/* Restores the terminal and frees the UI. Safe to call from an atexit path once. */
void ui_free(struct ui *ui);
/* Reads every pending key (non-blocking) and returns enum ui_action flags. */
int ui_handle_input(struct ui *ui, const struct ui_status *status);
/* Redraws if the store, the status or the view changed (or force); one doupdate at most. */
void ui_draw(struct ui *ui, const struct ui_status *status, int force);
/* Shows [start_ns, start_ns + span_ns) and stops following now (benchmarks, a --from option). */
void ui_view_set(struct ui *ui, uint64_t start_ns, uint64_t span_ns);
/*
 * A dump the user asked for with `d` (live mode): the file name and the time range (0 ..
 * UINT64_MAX for the whole capture). Returns 1 once per request, 0 when none waits.
 */
int ui_dump_request(struct ui *ui, char *path, size_t size, uint64_t *from_ns, uint64_t *to_ns);
/* Shows a one-line message at the bottom for a few seconds (e.g. a warning). */
void ui_message(struct ui *ui, const char *text);
/*
 * A trigger fired at time_ns (expr: its expression): marked on the time axis and reachable with
 * } and {; the first firing pauses the view centred on it.
 */
void ui_trigger_fired(struct ui *ui, uint64_t time_ns, const char *expr);
/* A firing a capture holds: marked and reachable with } and {, nothing else (cuscope view). */
void ui_trigger_mark(struct ui *ui, uint64_t time_ns, const char *expr);
/* Restores the terminal from a signal or crash path (async-signal-tolerant best effort). */
void ui_emergency_restore(void);

#endif
