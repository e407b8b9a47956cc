/* The CLI verbs (one file each under src/cli/) and helpers they share. */
#ifndef CUSCOPE_CLI_H
#define CUSCOPE_CLI_H

struct store;

#define CLI_EXIT_USAGE 2 /* bad arguments, unreadable or foreign input */

/* `cuscope [options] -- CMD...`: launch CMD and watch it live. */
int cli_live(int argc, char **argv);
struct launch;
struct ui_options;
/* The live UI over a launched or attached target's session until the user leaves; exit status. */
int live_run(struct launch *target, const char *command_line, const struct ui_options *ui_opts);
/*
 * Records a launched or attached target's session into output until it exits, a stop signal, or
 * duration_s (0 = none) passes; a launched target is stopped then, an attached one left running.
 * Returns the exit status cuscope should use.
 */
struct capture_writer;
int record_run(struct launch *target, struct capture_writer *writer, const char *output,
               char **command_for_manifest, double duration_s);
/* Opens a capture for record/attach (one clear line on failure, prefixed "VERB: "); NULL on failure. */
struct capture_writer *record_open_output(const char *verb, const char *output);
/* Says where the capture is written until it completes (FILE.partial), when someone is watching. */
void record_say_partial(struct capture_writer *w, const char *output);
/* `cuscope attach [--record -o FILE --duration S] PID`. */
int cli_attach(int argc, char **argv);
/* `cuscope run --detached -- CMD`: an armed launch with no viewer. */
int cli_run(int argc, char **argv);

/* `cuscope record -o FILE [--duration S] -- CMD...`: headless capture. */
int cli_record(int argc, char **argv);
/* `cuscope view FILE`: the live UI on a capture. */
int cli_view(int argc, char **argv);
/* `cuscope stats [--format=F] FILE`: summary tables. */
int cli_stats(int argc, char **argv);

/* `cuscope export [-o OUT] [--from S] [--to S] FILE`: Chrome Trace Event JSON. */
int cli_export(int argc, char **argv);
/* `cuscope diff [--format=F] A B`: NVTX ranges and kernels of two captures compared. */
int cli_diff(int argc, char **argv);

/* `cuscope info FILE`: manifest, size, events and losses of a capture. */
int cli_info(int argc, char **argv);

#include <stdio.h>
/* Flushes a verb's output; on any write error says so in one line and returns 1, else 0. */
int output_finish(FILE *out);
/* Reads a capture into store, printing truncation/corruption warnings; 0 or CLI_EXIT_USAGE. */
int cli_load_capture(const char *path, struct store *store);
/* getopt_long entries of the UI options shared by live mode, view and attach. */
#define CLI_OPT_MEMORY_MB 2001
#define CLI_OPT_DISK_MB   2002
#define CLI_UI_LONG_OPTIONS                                                                                  \
	{"ascii", no_argument, NULL, 'a'}, {"window", required_argument, NULL, 'w'},                         \
	    {"theme", required_argument, NULL, 'T'}, {"gap-ms", required_argument, NULL, 'G'},               \
	    {"no-mouse", no_argument, NULL, 'M'}, {"memory-mb", required_argument, NULL, CLI_OPT_MEMORY_MB}, \
	{                                                                                                    \
		"disk-mb", required_argument, NULL, CLI_OPT_DISK_MB                                          \
	}
struct ui_options;
/* Applies one UI option; returns 1 if it was one, 0 if not, -1 on a bad value (said in one line). */
int cli_parse_ui_option(struct ui_options *options, int opt, const char *arg);
/* Parses --buffer-mb (1-65536 MiB); returns 0 or -1 (said in one line). */
int cli_parse_buffer_mb(const char *arg, unsigned *out);
/* Parses a positive number of seconds; returns 0 or -1. */
int cli_parse_seconds(const char *text, double *out);
/* Reports the option getopt_long just rejected in one line; returns CLI_EXIT_USAGE. */
int cli_bad_option(const char *verb, char **argv);
/* Prints the help of a verb ("" for the top level) to stdout. */
void cli_usage(const char *verb);

#endif
