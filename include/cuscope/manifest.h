/*
 * A capture's environment manifest (key=value lines): where and how it was recorded, and the
 * target's Python and PyTorch versions, gathered off the recording loop.
 */
#ifndef CUSCOPE_MANIFEST_H
#define CUSCOPE_MANIFEST_H

#include <sys/types.h>

/* The manifest of a recording of argv: command, cwd, host, kernel, CPU, environment, GPUs. */
char *manifest_environment(char **argv);
/* Starts gathering pid's Python/PyTorch versions in the background (it may block; never waited for). */
void manifest_facts_start(pid_t pid);
/* What was gathered so far (key=value lines, freed by the caller; NULL if nothing); later answers are
 * dropped. */
char *manifest_facts_take(void);

#endif
