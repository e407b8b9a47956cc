/*
 * The collector's configuration (private to the collector): read at each start from the
 * environment, or after an attach from the rendezvous file the CLI wrote for this pid.
 */
#ifndef CUSCOPE_COLLECTOR_CONFIG_H
#define CUSCOPE_COLLECTOR_CONFIG_H

/* Reads and removes /tmp/cuscope-UID/attach-PID.env; returns 1 if there was one. */
int config_read_rendezvous(void);
/* A setting: from the rendezvous read last, else the environment; NULL when unset. */
const char *config_value(const char *name);
/* Fills collector_config from the settings (every start). */
void config_load(void);

#endif
