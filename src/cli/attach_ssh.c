/*
 * `cuscope attach --ssh HOST,... --record -o PATTERN`: every armed process of this user on each
 * host, relayed over the user's own ssh (ssh.h), recorded headless into one capture per host.
 * Each capture keeps its host's clock; reading them together (stats A B) aligns them by every
 * process's anchor, as for captures recorded on the nodes.
 */
#include "cuscope/capture.h"
#include "cuscope/clock.h"
#include "cuscope/cli.h"
#include "cuscope/clock_align.h"
#include "cuscope/log.h"
#include "cuscope/outpattern.h"
#include "cuscope/ssh.h"
#include "cuscope/store.h"
#include "cuscope/u64.h"
#include "cuscope/ui.h"
#include "cuscope/wire.h"
#include "cuscope/xalloc.h"
#include "attach_ssh.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define ATTACH_SSH_FLUSH_NS 1000000000ull

struct attach_ssh_host {
	struct capture_writer *writer;
	char output[PATH_MAX];
	uint64_t frames;
	unsigned processes;               /* HELLOs seen */
	uint64_t lost_frames, lost_bytes; /* the relay's drops, summed over its sources */
	uint64_t *source_lost;            /* per local source, newest total (frames) */
	size_t source_cap;
	int write_error;
};

struct attach_ssh {
	struct attach_ssh_host *hosts;
	struct ssh_hosts *relays;
};

volatile sig_atomic_t attach_ssh_stop;

static const char *attach_ssh_getenv(const char *name, void *ctx)
{
	(void)ctx;
	return getenv(name);
}

static void attach_ssh_on_signal(int sig)
{
	attach_ssh_stop = sig;
}

static void attach_ssh_frame(void *ctx, int host, uint32_t source, uint32_t type, const void *payload,
                             uint32_t length)
{
	struct attach_ssh *a = ctx;
	struct attach_ssh_host *h = &a->hosts[host];
	h->frames++;
	uint8_t *hello = NULL;
	if (type == WIRE_FRAME_HELLO && length >= sizeof(struct wire_hello)) {
		h->processes++;
		/* Nodes may share a host name (containers, two roots on one machine): a process's
		 * host is the name the user reached it by. */
		hello = xmalloc(length);
		memcpy(hello, payload, length);
		char name[sizeof((struct wire_hello *)0)->host] = {0};
		snprintf(name, sizeof name, "%s", ssh_host_name(a->relays, host));
		memcpy(hello + offsetof(struct wire_hello, host), name, sizeof name);
		payload = hello;
	}
	int rc = h->write_error ? 0 : capture_writer_frame(h->writer, source, type, payload, length);
	free(hello);
	if (rc) {
		h->write_error = rc;
		log_error("attach: %s: cannot write %s: %s", ssh_host_name(a->relays, host), h->output,
		          strerror(-rc));
	}
}

static void attach_ssh_loss(void *ctx, int host, uint32_t source, uint64_t frames, uint64_t bytes)
{
	struct attach_ssh *a = ctx;
	struct attach_ssh_host *h = &a->hosts[host];
	if (source >= h->source_cap) {
		size_t old = h->source_cap;
		xgrow((void **)&h->source_lost, &h->source_cap, (size_t)source + 1, sizeof *h->source_lost);
		memset(h->source_lost + old, 0, (h->source_cap - old) * sizeof *h->source_lost);
	}
	/* Totals per source, newest wins: the host's sum moves by the difference. */
	if (frames > h->source_lost[source]) {
		h->lost_frames += frames - h->source_lost[source];
		h->source_lost[source] = frames;
	}
	(void)bytes;
	h->lost_bytes = h->lost_bytes > bytes ? h->lost_bytes : bytes;
}

static void attach_ssh_note(void *ctx, int host, const char *line)
{
	struct attach_ssh *a = ctx;
	log_error("attach: %s: %s", ssh_host_name(a->relays, host), line);
}

/* The capture's manifest: which host, through what, and what the relay dropped. */
static void attach_ssh_manifest(struct attach_ssh *a, int i)
{
	struct attach_ssh_host *h = &a->hosts[i];
	char *text = xasprintf("host=%s\nrelay_remote=%s\ncommand=cuscope attach --ssh %s\n"
	                       "relay_lost_frames=%llu\n",
	                       ssh_host_name(a->relays, i), ssh_host_remote_name(a->relays, i),
	                       ssh_host_name(a->relays, i), (unsigned long long)h->lost_frames);
	capture_writer_manifest(h->writer, text, strlen(text));
	free(text);
}

/*
 * The hosts of attach --ssh / --hosts / --slurm-nodes, checked with the other options that go with
 * them; their count (names allocated), or -1 after one error line.
 */
static int attach_ssh_names(const struct cli_args *args, int argc, char ***names)
{
	char cause[512];
	if (!!args->ssh + !!args->hosts_file + !!args->slurm_nodes != 1) {
		log_error("attach: name the hosts once: --ssh HOST,..., --hosts FILE or --slurm-nodes%s",
		          args->ssh || args->hosts_file || args->slurm_nodes ? ""
		                                                             : " (--via needs one of them)");
		return -1;
	}
	/* The one list of hosts: as given, from a file, or from the Slurm job's node list. */
	char *host_list = NULL;
	if (args->hosts_file) {
		host_list = ssh_hosts_file(args->hosts_file, cause, sizeof cause);
	} else if (args->slurm_nodes) {
		const char *nodes = getenv("SLURM_JOB_NODELIST");
		if (!nodes || !*nodes)
			snprintf(cause, sizeof cause,
			         "SLURM_JOB_NODELIST is not set (run inside the job's allocation, e.g. "
			         "srun --overlap --jobid=J, or give --hosts FILE)");
		else
			host_list = ssh_slurm_nodelist(nodes, cause, sizeof cause);
	}
	if ((args->hosts_file || args->slurm_nodes) && !host_list) {
		log_error("attach: %s: %s", args->hosts_file ? "--hosts" : "--slurm-nodes", cause);
		return -1;
	}
	const char *hosts = host_list ? host_list : args->ssh;
	if (args->first != argc) {
		log_error("attach: --ssh takes no process id: every armed process on the hosts is followed");
		free(host_list);
		return -1;
	}
	if (args->record && !args->output) {
		log_error("attach: --record needs -o 'run-%%h.cuscope' (one capture per host)");
		free(host_list);
		return -1;
	}
	if (!args->record && (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO))) {
		log_error("attach: the live view needs a terminal; use --record -o 'run-%%h.cuscope'");
		free(host_list);
		return -1;
	}
	int count = ssh_parse_hosts(hosts, names, cause, sizeof cause);
	free(host_list);
	if (count < 0) {
		log_error("attach: %s: %s",
		          args->hosts_file    ? "--hosts"
		          : args->slurm_nodes ? "--slurm-nodes"
		                              : "--ssh",
		          cause);
		return -1;
	}
	return count;
}

int attach_ssh_run(const struct cli_args *args, int argc, char **argv)
{
	(void)argv;
	char cause[512];
	char **names;
	int count = attach_ssh_names(args, argc, &names);
	if (count < 0)
		return CLI_EXIT_USAGE;
	char self[PATH_MAX];
	const char *remote = args->remote_cuscope;
	if (!remote) {
		ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
		if (n <= 0) {
			log_error("attach: cannot tell this binary's path; name it with --remote-cuscope");
			for (int i = 0; i < count; i++)
				free(names[i]);
			free(names);
			return CLI_EXIT_USAGE;
		}
		self[n] = '\0';
		remote = self;
	}
	if (!args->record) {
		struct ssh_config live_config = {
		    .remote_cuscope = remote, .via = args->via, .job = args->job};
		struct sigaction sa = {0};
		sa.sa_handler = attach_ssh_on_signal;
		sigaction(SIGTERM, &sa, NULL);
		sigaction(SIGHUP, &sa, NULL);
		int live_rc = attach_ssh_live(args, names, count, &live_config);
		for (int i = 0; i < count; i++)
			free(names[i]);
		free(names);
		return live_rc;
	}
	struct attach_ssh a = {.hosts = xcalloc((size_t)count, sizeof *a.hosts)};
	int rc = 0, opened = 0;
	/* Every name is expanded and checked before any file is made or host reached. */
	for (int i = 0; i < count && !rc; i++) {
		struct outpattern_vars vars = {.get = attach_ssh_getenv, .host = names[i]};
		struct attach_ssh_host *h = &a.hosts[i];
		if (outpattern_expand(args->output, &vars, h->output, sizeof h->output, cause,
		                      sizeof cause)) {
			log_error("attach: -o %s: %s", args->output, cause);
			rc = CLI_EXIT_USAGE;
		}
		for (int j = 0; j < i && !rc; j++)
			if (strcmp(a.hosts[j].output, h->output) == 0) {
				log_error("attach: -o %s names one file for %s and %s: put %%h in it",
				          args->output, names[j], names[i]);
				rc = CLI_EXIT_USAGE;
			}
	}
	for (int i = 0; i < count && !rc; i++, opened++) {
		a.hosts[i].writer = record_open_output("attach", a.hosts[i].output);
		if (!a.hosts[i].writer)
			rc = CLI_EXIT_USAGE;
	}
	struct ssh_config config = {.remote_cuscope = remote, .via = args->via, .job = args->job};
	struct ssh_callbacks cb = {
	    .ctx = &a, .frame = attach_ssh_frame, .loss = attach_ssh_loss, .note = attach_ssh_note};
	if (!rc) {
		a.relays = ssh_hosts_new(names, count, &config, &cb, cause, sizeof cause);
		if (!a.relays) {
			log_error("attach: %s", cause);
			rc = CLI_EXIT_USAGE;
		}
	}
	if (rc) {
		for (int i = 0; i < opened; i++)
			if (a.hosts[i].writer)
				capture_writer_abandon(a.hosts[i].writer);
		goto out;
	}
	struct sigaction sa = {0};
	sa.sa_handler = attach_ssh_on_signal; /* no SA_RESTART: the wait returns */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	uint64_t start = clock_mono_ns(), last_flush = start;
	uint64_t duration = (uint64_t)(args->duration_s * 1e9);
	while (!attach_ssh_stop && (!duration || clock_mono_ns() - start < duration)) {
		ssh_hosts_pump(a.relays, 100, -1);
		int failed = 0;
		for (int i = 0; i < count; i++)
			failed += ssh_host_failed(a.relays, i);
		if (failed == count)
			break; /* each said why in its line */
		if (clock_mono_ns() - last_flush >= ATTACH_SSH_FLUSH_NS) {
			for (int i = 0; i < count; i++)
				if (!a.hosts[i].write_error)
					capture_writer_flush(a.hosts[i].writer);
			last_flush = clock_mono_ns();
		}
	}
	/* The relays end with their stdin; each detaches its collectors (which run on) and
	 * passes on their final counts first. */
	ssh_hosts_finish(a.relays, ATTACH_SSH_FINISH_MS);
	for (int i = 0; i < count; i++) {
		struct attach_ssh_host *h = &a.hosts[i];
		int connected_once = ssh_host_remote_name(a.relays, i)[0] != '\0';
		if (!connected_once || !h->frames) {
			/* Nothing came from it: whatever -o named before stays as it was. */
			capture_writer_abandon(h->writer);
			rc = 1;
			if (ssh_host_failed(a.relays, i) && !h->frames)
				continue; /* its line said why */
			log_error("attach: %s: nothing recorded (%s)", names[i],
			          connected_once ? "no armed process there"
			                         : (ssh_host_line(a.relays, i)[0] ? ssh_host_line(a.relays, i)
			                                                          : "no relay answered"));
			continue;
		}
		attach_ssh_manifest(&a, i);
		int close_rc = capture_writer_close(h->writer);
		if (close_rc || h->write_error) {
			if (close_rc)
				log_error("attach: %s: cannot finish %s: %s", names[i], h->output,
				          strerror(-close_rc));
			rc = 1;
		}
		if (h->lost_frames)
			log_warn("attach: %s: the link was too slow: the relay dropped %llu frames "
			         "(counted in the capture's manifest)",
			         names[i], (unsigned long long)h->lost_frames);
	}
	ssh_hosts_free(a.relays);
out:
	for (int i = 0; i < count; i++) {
		free(a.hosts[i].source_lost);
		free(names[i]);
	}
	free(names);
	free(a.hosts);
	return rc;
}
