/*
 * `cuscope doctor`: one screen of what works on this machine for cuscope and what does not, each
 * with its fix. Every probe is real: perf_event_open on the calling thread, a ptrace seize of a
 * process of our own that is not our descendant, dlopen of the optional libraries in the order the
 * collector loads them. Libraries and Python are probed in a child process, so one that crashes
 * or hangs is a finding, not the end of the report. What is unavailable is a finding: the verb
 * exits 0 after its report, non-zero only when it cannot run (bad options, a failed write).
 */
#include "doctor.h"

#include "cuscope/cli.h"
#include "cuscope/escape.h"
#include "cuscope/log.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef CUSCOPE_VERSION
#define CUSCOPE_VERSION "0.0.0"
#endif

#define DOCTOR_PROBE_TIMEOUT_MS 15000 /* a probe child that takes longer is killed */
#define DOCTOR_WIDTH            100   /* text columns of the report */

static const char *const doctor_status_words[] = {"ok", "limited", "missing"};

/* Runs check in a child process, so a library that crashes or hangs cannot take the report with it. */
static void doctor_run_isolated(const struct doctor_check *check, struct doctor_finding *f)
{
	int fds[2];
	f->status = DOCTOR_MISSING;
	if (pipe2(fds, O_CLOEXEC) != 0) {
		DETAIL(f, "not checked: pipe: %s", strerror(errno));
		return;
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		DETAIL(f, "not checked: fork: %s", strerror(errno));
		close(fds[0]);
		close(fds[1]);
		return;
	}
	if (pid == 0) {
		close(fds[0]);
		struct doctor_finding mine;
		memset(&mine, 0, sizeof mine);
		check->run(&mine);
		ssize_t n = write(fds[1], &mine, sizeof mine);
		_exit(n == (ssize_t)sizeof mine ? 0 : 1);
	}
	close(fds[1]);
	struct pollfd pfd = {fds[0], POLLIN, 0};
	ssize_t got = 0;
	int ready = poll(&pfd, 1, DOCTOR_PROBE_TIMEOUT_MS);
	if (ready > 0)
		got = read(fds[0], f, sizeof *f);
	close(fds[0]);
	if (got != (ssize_t)sizeof *f)
		kill(pid, SIGKILL);
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (got == (ssize_t)sizeof *f) {
		f->detail[sizeof f->detail - 1] = f->fix[sizeof f->fix - 1] = '\0';
		if (f->status < DOCTOR_OK || f->status > DOCTOR_MISSING)
			f->status = DOCTOR_MISSING;
		return;
	}
	memset(f, 0, sizeof *f);
	f->status = DOCTOR_MISSING;
	if (ready == 0)
		DETAIL(f, "the probe did not answer in %d s (a library or program hung)",
		       DOCTOR_PROBE_TIMEOUT_MS / 1000);
	else if (WIFSIGNALED(status) && WTERMSIG(status) != SIGKILL)
		DETAIL(f, "the probe crashed (%s) loading it: the collector would too",
		       strsignal(WTERMSIG(status)));
	else
		DETAIL(f, "the probe ended without an answer");
	FIX(f, "check the library the probe loads (see ldd and the paths above)");
}
/* Writes text at the current column (indent) wrapped to DOCTOR_WIDTH, continuing at indent. */
static void doctor_wrap(FILE *out, const char *text, int indent)
{
	int col = indent;
	while (*text) {
		size_t word = strcspn(text, " ");
		if (col > indent && col + 1 + (int)word > DOCTOR_WIDTH) {
			fprintf(out, "\n%*s", indent, "");
			col = indent;
		} else if (col > indent) {
			fputc(' ', out);
			col++;
		}
		char piece[1024];
		snprintf(piece, sizeof piece, "%.*s", (int)word, text);
		escape_term_fputs(out, piece);
		col += (int)word;
		text += word;
		while (*text == ' ')
			text++;
	}
	fputc('\n', out);
}

static void doctor_print_text(FILE *out, const struct doctor_finding *found, size_t n)
{
	struct utsname u;
	int counts[3] = {0, 0, 0};
	if (uname(&u) != 0)
		snprintf(u.release, sizeof u.release, "?");
	fprintf(out, "cuscope %s doctor: this machine (Linux %s, uid %u)\n\n", CUSCOPE_VERSION, u.release,
	        (unsigned)getuid());
	for (size_t i = 0; i < n; i++) {
		const struct doctor_finding *f = &found[i];
		counts[f->status]++;
		fprintf(out, "%-8s %-14s ", doctor_status_words[f->status], doctor_checks[i].name);
		doctor_wrap(out, f->detail, 24);
		if (f->fix[0]) {
			fprintf(out, "%24s", "fix: ");
			doctor_wrap(out, f->fix, 24);
		}
	}
	fprintf(out, "\n%d ok, %d limited, %d missing\n", counts[DOCTOR_OK], counts[DOCTOR_LIMITED],
	        counts[DOCTOR_MISSING]);
}

static void doctor_print_json(FILE *out, const struct doctor_finding *found, size_t n)
{
	fprintf(out, "{\"cuscope\": \"%s\", \"checks\": [", CUSCOPE_VERSION);
	for (size_t i = 0; i < n; i++) {
		fprintf(out, "%s\n  {\"check\": \"%s\", \"name\": \"%s\", \"status\": \"%s\", \"detail\": ",
		        i ? "," : "", doctor_checks[i].key, doctor_checks[i].name,
		        doctor_status_words[found[i].status]);
		escape_json_fputs(out, found[i].detail);
		fputs(", \"fix\": ", out);
		escape_json_fputs(out, found[i].fix);
		fputc('}', out);
	}
	fputs("\n]}\n", out);
}

int cli_doctor(int argc, char **argv)
{
	struct cli_args args = {0};
	int rc = cli_parse_options(CLI_DOCTOR, argc, argv, &args);
	if (rc >= 0)
		return rc;
	if (args.first != argc) {
		log_error("doctor: takes no arguments, not '%s' (see cuscope doctor --help)",
		          argv[args.first]);
		return CLI_EXIT_USAGE;
	}
	int json = args.json;
	enum { N = DOCTOR_CHECK_COUNT };
	struct doctor_finding found[N];
	memset(found, 0, sizeof found);
	doctor_ptrace_target = doctor_ptrace_target_start();
	for (size_t i = 0; i < N; i++) {
		if (doctor_checks[i].isolated)
			doctor_run_isolated(&doctor_checks[i], &found[i]);
		else
			doctor_checks[i].run(&found[i]);
	}
	if (doctor_ptrace_target > 0) {
		kill(doctor_ptrace_target, SIGKILL);
		while (waitpid(doctor_ptrace_target, NULL, 0) < 0 && errno == EINTR)
			;
	}
	if (json)
		doctor_print_json(stdout, found, N);
	else
		doctor_print_text(stdout, found, N);
	return output_finish(stdout);
}
