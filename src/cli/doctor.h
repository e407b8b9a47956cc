/*
 * `cuscope doctor`, private to the verb: a finding, the table of checks (doctor_checks.c) and what
 * the checks share with the report (doctor.c).
 */
#ifndef CUSCOPE_CLI_DOCTOR_H
#define CUSCOPE_CLI_DOCTOR_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum doctor_status { DOCTOR_OK, DOCTOR_LIMITED, DOCTOR_MISSING };

/* One check's result; fixed-size so a probe child can hand it over a pipe in one write. */
struct doctor_finding {
	int32_t status;   /* enum doctor_status */
	char detail[640]; /* what it means for cuscope */
	char fix[640];    /* what to do about it ("" when nothing) */
};
_Static_assert(sizeof(struct doctor_finding) < PIPE_BUF, "a finding crosses a pipe in one write");

struct doctor_check {
	const char *name; /* shown in the report */
	const char *key;  /* the JSON "check" member */
	int isolated;     /* probed in a child process (loads libraries, runs programs) */
	void (*run)(struct doctor_finding *f);
};

/* The checks, in report order (doctor_checks.c). */
#define DOCTOR_CHECK_COUNT 10
extern const struct doctor_check doctor_checks[DOCTOR_CHECK_COUNT];

/* Formats into a finding's detail or fix (through DETAIL and FIX). */
__attribute__((format(printf, 3, 4))) void doctor_say(char *buf, size_t size, const char *fmt, ...);

#define DETAIL(f, ...) doctor_say((f)->detail, sizeof(f)->detail, __VA_ARGS__)
#define FIX(f, ...)    doctor_say((f)->fix, sizeof(f)->fix, __VA_ARGS__)

/* A process of ours that is not our descendant: Yama's scope 1 lets a tracer reach descendants only. */
extern pid_t doctor_ptrace_target;
/* A sibling process for the ptrace probe: it only waits, and dies with us. */
pid_t doctor_ptrace_target_start(void);

#endif
