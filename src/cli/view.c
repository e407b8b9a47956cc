#include "cuscope/cli.h"
#include "cuscope/log.h"
#include "cuscope/store.h"
#include "cuscope/trigger.h"
#include "cuscope/ui.h"

#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static volatile sig_atomic_t view_quit;

static void view_on_signal(int sig)
{
	(void)sig;
	view_quit = 1;
}

int cli_view(int argc, char **argv)
{
	struct cli_args args = {0};
	int rc = cli_parse_options(CLI_VIEW, argc, argv, &args);
	if (rc >= 0)
		return rc;
	if (args.first >= argc) {
		log_error("view: expected one or more capture files (see cuscope view --help)");
		return CLI_EXIT_USAGE;
	}
	struct ui_options ui_opts = args.ui;
	const char *path = argv[args.first];
	struct store *store = store_new();
	rc = cli_load_captures(argc - args.first, argv + args.first, store);
	if (rc) {
		store_free(store);
		return rc;
	}
	if (!ui_opts.window_s) {
		uint64_t span = store_last_ns(store) - store_first_ns(store);
		ui_opts.window_s = span ? (double)span * 1.05e-9 : 10.0;
	}
	const char *cause = NULL;
	struct ui *ui = ui_new(store, &ui_opts, &cause);
	if (!ui) {
		log_error("view: %s", cause ? cause : "cannot start the terminal UI");
		store_free(store);
		return 1;
	}
	struct sigaction sa = {0};
	sa.sa_handler = view_on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	cli_restore_on_crash();
	/* The title names the first file and how many more share the time axis. */
	char title[512];
	if (argc - args.first > 1)
		snprintf(title, sizeof title, "%s +%d more", path, argc - args.first - 1);
	struct ui_status status = {.command = argc - args.first > 1 ? title : path, .live = 0};
	/* Trigger firings the captures hold: marked, walked with } and {. */
	struct trigger_notice *fired;
	size_t nfired = trigger_notices(store, &fired);
	for (size_t i = 0; i < nfired; i++)
		ui_trigger_mark(ui, fired[i].time_ns, fired[i].expr);
	free(fired);
	if (nfired) {
		char line[128];
		snprintf(line, sizeof line, "%zu trigger firing%s in this capture: } { walk them", nfired,
		         nfired == 1 ? "" : "s");
		ui_message(ui, line);
	}
	ui_draw(ui, &status, 1);
	while (!view_quit) {
		struct pollfd pfd = {STDIN_FILENO, POLLIN, 0};
		poll(&pfd, 1, 100);
		int actions = ui_handle_input(ui, &status);
		if (actions & (UI_ACTION_QUIT | UI_ACTION_DETACH | UI_ACTION_STOP | UI_ACTION_INTERRUPT))
			break;
		ui_draw(ui, &status, 0);
	}
	ui_free(ui);
	store_free(store);
	return 0;
}
