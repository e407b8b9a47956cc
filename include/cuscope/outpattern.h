/*
 * `record -o` patterns (as nsys names its reports): %r rank, %j SLURM_JOB_ID, %p the launched
 * program's pid, %h short host name, %q{VAR} any variable, %% a literal %. Expanded once, by
 * the recording process, from its own environment.
 */
#ifndef CUSCOPE_OUTPATTERN_H
#define CUSCOPE_OUTPATTERN_H

#include <stddef.h>
#include <sys/types.h>

#include "cuscope/rank.h"

struct outpattern_vars {
	rank_getenv_fn get; /* the environment */
	void *ctx;
	pid_t pid;        /* for %p */
	const char *host; /* for %h: the host name (cut at its first '.') */
};

/* 1 when pattern has a %p (its name is known only once the program started), else 0. */
int outpattern_uses_pid(const char *pattern);
/*
 * Writes the expansion of pattern into out (size bytes with the NUL): 0, or -EINVAL with one
 * line in cause (an unknown %x, an unterminated %q{, an unset or unusable variable, no rank, an
 * empty or too long result). Values with control characters are refused.
 */
int outpattern_expand(const char *pattern, const struct outpattern_vars *vars, char *out, size_t size,
                      char *cause, size_t cause_size);

#endif
