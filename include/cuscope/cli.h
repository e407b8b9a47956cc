/* The CLI verbs (one file each under src/cli/) and helpers they share. */
#ifndef CUSCOPE_CLI_H
#define CUSCOPE_CLI_H

#include "cuscope/diff.h"
#include "cuscope/launch.h"
#include "cuscope/stats.h"
#include "cuscope/ui.h"

#include <stdio.h>

struct store;

#define CLI_EXIT_USAGE 2 /* bad arguments, unreadable or foreign input */

/* `cuscope [options] -- CMD...`: launch CMD and watch it live. */
int cli_live(int argc, char **argv);
struct trig_hook;
/*
 * The live UI over a launched or attached target's session until the user leaves; exit status.
 * trig (set up by trig_hook_init, possibly without triggers) is evaluated over the view's store.
 */
int live_run(struct launch *target, const char *command_line, const struct ui_options *ui_opts,
             struct trig_hook *trig);
/*
 * Records a launched or attached target's session into output until it exits, a stop signal, or
 * duration_s (0 = none) passes; a launched target is stopped then, an attached one left running.
 * trig's triggers (if any) are evaluated as it goes, their dumps cut from output. Returns the exit
 * status cuscope should use.
 */
struct capture_writer;
int record_run(struct launch *target, struct capture_writer *writer, const char *output,
               char **command_for_manifest, double duration_s, struct trig_hook *trig);
/* Opens a capture for record/attach (one clear line on failure, prefixed "VERB: "); NULL on failure. */
struct capture_writer *record_open_output(const char *verb, const char *output);
/* Says where the capture is written until it completes (FILE.partial), when someone is watching. */
void record_say_partial(struct capture_writer *w, const char *output);
/* `cuscope attach [--record -o FILE --duration S] PID`. */
int cli_attach(int argc, char **argv);
/* `cuscope attach --ssh HOST,... --record -o PATTERN`: relays of several nodes (attach_ssh.c). */
struct cli_args;
int attach_ssh_run(const struct cli_args *args, int argc, char **argv);
/* `cuscope relay [--job ID]`: what attach --ssh runs on each node (not for users). */
int cli_relay(int argc, char **argv);
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
/* `cuscope doctor [--json]`: what works on this machine and what does not, with fixes. */
int cli_doctor(int argc, char **argv);

/* Flushes a verb's output; on any write error says so in one line and returns 1, else 0. */
int output_finish(FILE *out);
/*
 * Reads a capture into store, printing truncation/corruption warnings; 0 or CLI_EXIT_USAGE. With
 * res (info), also says when the manifest was cut, and the caller frees res->manifest.
 */
struct capture_read_result;
int cli_load_capture(const char *path, struct store *store, struct capture_read_result *res);
/*
 * Reads count captures into store on one time axis (captures.c): each file's times are moved by
 * the difference of its CLOCK_REALTIME anchor to the others', its processes kept apart from the
 * other files' (pids repeat across hosts). One file reads exactly as cli_load_capture. Every file
 * is checked before any is read; 0 or CLI_EXIT_USAGE after one line.
 */
int cli_load_captures(int count, char **paths, struct store *store);
/* cli_load_capture with reading options (one file of cli_load_captures' many); *sources: the
 * process streams it used. */
struct capture_read_options;
int cli_load_capture_with(const char *path, struct store *store, const struct capture_read_options *opts,
                          unsigned *sources);
/* The verbs, as bits: the options table says which verbs take each option. */
enum cli_verb {
	CLI_LIVE = 1 << 0, /* `cuscope [OPTIONS] -- COMMAND` */
	CLI_RECORD = 1 << 1,
	CLI_ATTACH = 1 << 2,
	CLI_RUN = 1 << 3,
	CLI_VIEW = 1 << 4,
	CLI_STATS = 1 << 5,
	CLI_EXPORT = 1 << 6,
	CLI_DIFF = 1 << 7,
	CLI_INFO = 1 << 8,
	CLI_DOCTOR = 1 << 9,
	CLI_RELAY = 1 << 10,
};
#define CLI_ALL_VERBS ((unsigned)CLI_RELAY * 2 - 1)

/* --trigger and the dumps of its firings (live mode, record, attach, run); zero: the defaults. */
#define CLI_TRIGGERS_MAX 16
struct cli_triggers {
	const char *exprs[CLI_TRIGGERS_MAX]; /* checked by trigger_parse */
	size_t count;
	uint64_t pre_ns, post_ns; /* --pre, --post; 0 = 5 s, 2 s */
	int pre_set, post_set;
	const char *dump_dir; /* --dump-dir, NULL = no dumps (firings still go into the capture) */
	unsigned dump_max;    /* --dump-max, 0 = the default */
	unsigned dump_max_mb; /* --dump-max-mb, 0 = the default */
	int keep_newest;      /* --dump-keep newest: the oldest dumps go to make room */
};

struct export_format;
/* What the options of a command line said; a verb sets its defaults before parsing. */
struct cli_args {
	struct launch_options launch; /* collector options (live mode, record, attach, run) */
	struct ui_options ui;         /* the view's options (live mode, view, attach) */
	const char *output;           /* -o FILE */
	double duration_s;            /* --duration, 0 = none */
	int record;                   /* attach --record */
	int detached;                 /* run --detached */
	const char *ssh;              /* attach --ssh HOST,...: relays through ssh, NULL = a local PID */
	const char *hosts_file;       /* attach --hosts FILE: the hosts, one per line */
	int slurm_nodes;              /* attach --slurm-nodes: the hosts of SLURM_JOB_NODELIST */
	const char *via;              /* attach --via TEMPLATE: instead of ssh, {host} replaced */
	const char *remote_cuscope;   /* attach --remote-cuscope PATH, NULL = this binary's path */
	const char *job;              /* attach --ssh / relay --job ID: only that Slurm job's processes */
	enum stats_format stats_format;
	unsigned stats_mask; /* stats --report sections */
	const char
	    *step_range; /* stats --step-range: the ranks section's step range, NULL = found per rank */
	enum diff_format diff_format;
	double from_s, to_s;                       /* export --from/--to (to < 0: the end) */
	const struct export_format *export_format; /* export --format, NULL = the default */
	int json;                                  /* doctor --json */
	struct cli_triggers triggers;
	int first; /* argv index of the first operand, once parsed */
};

/*
 * Parses the options of verb (one CLI_* bit; argv[0] is the verb's name) into args, up to the
 * first operand. Returns -1 to go on, else the status to exit with: 0 after --help/--version
 * (1 if stdout failed), CLI_EXIT_USAGE after one line on a bad option or value.
 */
int cli_parse_options(unsigned verb, int argc, char **argv, struct cli_args *args);
/* A verb: its bit, name, entry point and help. */
struct cli_verb_entry {
	unsigned verb;
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
	const char *usage;
};
/* The verb called name, or NULL (live mode has no name). */
const struct cli_verb_entry *cli_verb_find(const char *name);
/* The name of a verb bit ("" for live mode), for messages and help. */
const char *cli_verb_name(unsigned verb);
/* Parses a positive number of seconds; returns 0 or -1. */
int cli_parse_seconds(const char *text, double *out);
/* While the terminal UI runs: a crash restores the terminal first, then dies as it would have. */
void cli_restore_on_crash(void);
/* Prints the help of a verb ("" for the top level) to stdout. */
void cli_usage(const char *verb);

#endif
