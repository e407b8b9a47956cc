/* `cuscope attach PID`: the live view or a recording of a process that is already running. */
#include "cuscope/attach.h"
#include "cuscope/capture.h"
#include "cuscope/cli.h"
#include "cuscope/launch.h"
#include "cuscope/log.h"
#include "cuscope/session.h"
#include "cuscope/ui.h"
#include "trighook.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

int cli_attach(int argc, char **argv)
{
	struct cli_args args = {.ui = {.window_s = 10.0}};
	int rc = cli_parse_options(CLI_ATTACH, argc, argv, &args);
	if (rc >= 0)
		return rc;
	if ((args.ssh || args.via || args.hosts_file || args.slurm_nodes) && args.triggers.count) {
		log_error("attach: --trigger is not available with --ssh yet; attach to each node's process");
		return CLI_EXIT_USAGE;
	}
	if (args.ssh || args.via || args.hosts_file || args.slurm_nodes)
		return attach_ssh_run(&args, argc, argv);
	if (args.job || args.remote_cuscope) {
		log_error("attach: --job and --remote-cuscope go with --ssh HOST,...");
		return CLI_EXIT_USAGE;
	}
	if (args.first != argc - 1) {
		log_error(
		    "attach: expected one process id (cuscope attach [--record -o FILE --duration S] PID)");
		return CLI_EXIT_USAGE;
	}
	char *end;
	long pid_value = strtol(argv[args.first], &end, 10);
	if (*end || pid_value <= 0 || pid_value > 0x3fffffff) {
		log_error("attach: '%s' is not a process id", argv[args.first]);
		return CLI_EXIT_USAGE;
	}
	pid_t pid = (pid_t)pid_value;
	if (args.record && !args.output) {
		log_error("attach: --record needs -o FILE");
		return CLI_EXIT_USAGE;
	}
	static struct trig_hook trig;
	rc = trig_hook_init(&trig, &args.triggers, args.ui.gap_ms, NULL, args.ui.memory_mb, "attach");
	if (rc)
		return rc;
	if (kill(pid, 0) != 0 && errno == ESRCH) {
		log_error("attach: no such process: %d", (int)pid);
		return 1;
	}
	if (!args.record && (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO))) {
		log_error(
		    "attach: the live view needs a terminal; use `cuscope attach --record -o FILE PID`");
		return CLI_EXIT_USAGE;
	}
	rc = attach_begin(pid);
	if (rc)
		return rc;
	struct capture_writer *writer = NULL;
	if (args.record) {
		writer = record_open_output("attach", args.output);
		if (!writer)
			return CLI_EXIT_USAGE;
		attach_remove_on_deadline(capture_writer_partial_path(writer));
	}
	session_sweep();
	struct launch target;
	rc = attach_connect(pid, &args.launch, &target);
	if (rc) {
		if (writer)
			capture_writer_abandon(writer);
		return rc;
	}
	if (writer)
		record_say_partial(writer, args.output);
	char *cmdline = attach_cmdline(pid);
	if (args.record) {
		char *manifest_argv[] = {cmdline, NULL};
		rc = record_run(&target, writer, args.output, manifest_argv, args.duration_s, &trig);
	} else {
		/* The terminal UI lets the user leave whenever they like. */
		attach_handshake_done();
		rc = live_run(&target, cmdline, &args.ui, &trig);
	}
	free(cmdline);
	attach_end(pid);
	return rc;
}
