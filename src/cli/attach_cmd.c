/* `cuscope attach PID`: the live view or a recording of a process that is already running. */
#include "cuscope/attach.h"
#include "cuscope/capture.h"
#include "cuscope/cli.h"
#include "cuscope/launch.h"
#include "cuscope/log.h"
#include "cuscope/session.h"
#include "cuscope/ui.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

int cli_attach(int argc, char **argv)
{
	static const struct option options[] = {
	    {"record", no_argument, NULL, 'r'},
	    {"output", required_argument, NULL, 'o'},
	    {"duration", required_argument, NULL, 'd'},
	    {"buffer-mb", required_argument, NULL, 'b'},
	    {"help", no_argument, NULL, 'h'},
	    CLI_UI_LONG_OPTIONS,
	    LAUNCH_LONG_OPTIONS,
	    {0},
	};
	struct launch_options lopts = {0};
	struct ui_options ui_opts = {.window_s = 10.0};
	int record = 0;
	const char *output = NULL;
	double duration_s = 0;
	int opt;
	optind = 1;
	optopt = 0;
	while ((opt = getopt_long(argc, argv, "+ro:d:h", options, NULL)) != -1) {
		switch (opt) {
		case 'r':
			record = 1;
			break;
		case 'o':
			output = optarg;
			break;
		case 'd':
			if (cli_parse_seconds(optarg, &duration_s) != 0) {
				log_error("attach: --duration needs a positive number of seconds, not '%s'",
				          optarg);
				return CLI_EXIT_USAGE;
			}
			break;
		case 'b':
			if (cli_parse_buffer_mb(optarg, &lopts.buffer_mb) != 0)
				return CLI_EXIT_USAGE;
			break;
		case 'h':
			cli_usage("attach");
			return 0;
		default: {
			int urc = cli_parse_ui_option(&ui_opts, opt, optarg);
			if (urc < 0)
				return CLI_EXIT_USAGE;
			if (urc > 0)
				break;
			int lrc = launch_parse_option(&lopts, opt, optarg);
			if (lrc < 0)
				return CLI_EXIT_USAGE;
			if (lrc == 0)
				return cli_bad_option("attach", argv);
		}
		}
	}
	if (optind != argc - 1) {
		log_error(
		    "attach: expected one process id (cuscope attach [--record -o FILE --duration S] PID)");
		return CLI_EXIT_USAGE;
	}
	char *end;
	long pid_value = strtol(argv[optind], &end, 10);
	if (*end || pid_value <= 0 || pid_value > 0x3fffffff) {
		log_error("attach: '%s' is not a process id", argv[optind]);
		return CLI_EXIT_USAGE;
	}
	pid_t pid = (pid_t)pid_value;
	if (record && !output) {
		log_error("attach: --record needs -o FILE");
		return CLI_EXIT_USAGE;
	}
	if (kill(pid, 0) != 0 && errno == ESRCH) {
		log_error("attach: no such process: %d", (int)pid);
		return 1;
	}
	if (!record && (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO))) {
		log_error(
		    "attach: the live view needs a terminal; use `cuscope attach --record -o FILE PID`");
		return CLI_EXIT_USAGE;
	}
	int rc = attach_begin(pid);
	if (rc)
		return rc;
	struct capture_writer *writer = NULL;
	if (record) {
		writer = record_open_output("attach", output);
		if (!writer)
			return CLI_EXIT_USAGE;
		attach_remove_on_deadline(capture_writer_partial_path(writer));
	}
	session_sweep();
	struct launch target;
	rc = attach_connect(pid, &lopts, &target);
	if (rc) {
		if (writer)
			capture_writer_abandon(writer);
		return rc;
	}
	if (writer)
		record_say_partial(writer, output);
	char *cmdline = attach_cmdline(pid);
	if (record) {
		char *manifest_argv[] = {cmdline, NULL};
		rc = record_run(&target, writer, output, manifest_argv, duration_s);
	} else {
		/* The terminal UI lets the user leave whenever they like. */
		attach_handshake_done();
		rc = live_run(&target, cmdline, &ui_opts);
	}
	free(cmdline);
	attach_end(pid);
	return rc;
}
