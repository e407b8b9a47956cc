/* Private to attach_ssh*.c: the live view of attach --ssh, started by attach_ssh_run. */
#ifndef CUSCOPE_CLI_ATTACH_SSH_H
#define CUSCOPE_CLI_ATTACH_SSH_H

#include "cuscope/cli.h"
#include "cuscope/ssh.h"

#include <signal.h>

#define ATTACH_SSH_FINISH_MS 3000 /* relays given this long to end after the view */

/* The signal that asked attach --ssh to stop (SIGINT, SIGTERM, SIGHUP), 0 while running. */
extern volatile sig_atomic_t attach_ssh_stop;

/* Every host's sources in one live view until the user quits; the exit status for the verb. */
int attach_ssh_live(const struct cli_args *args, char **names, int count, const struct ssh_config *config);

#endif
