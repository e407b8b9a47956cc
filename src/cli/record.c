/* `cuscope record`: launch, follow the session, stream every frame into a capture file. */
#include "cuscope/capture.h"
#include "cuscope/clock.h"
#include "cuscope/cli.h"
#include "cuscope/launch.h"
#include "cuscope/log.h"
#include "cuscope/safefs.h"
#include "cuscope/session.h"
#include "cuscope/tap.h"
#include "cuscope/wire.h"
#include "cuscope/xalloc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#ifndef CUSCOPE_VERSION
#define CUSCOPE_VERSION "0.0.0"
#endif

#define RECORD_FLUSH_NS 250000000ull
#define RECORD_DRAIN_NS 3000000000ull /* after the target exits, wait this long for its data */
#define RECORD_KILL_NS  5000000000ull /* after forwarding a stop signal, wait this long before SIGKILL */

/* An attach's end: how long collectors may take to send their final counts. */
#define RECORD_DETACH_MS 1000

static volatile sig_atomic_t record_stop_signal;

static void record_on_signal(int sig)
{
	record_stop_signal = sig;
}

static char *record_runtime_facts(pid_t pid, uid_t uid);

/* One stream (a process, or its image before an exec). */
struct record_source {
	pid_t pid;         /* from its HELLO, for messages; 0 before it */
	uint8_t bye;       /* its final counts and BYE arrived */
	uint8_t continued; /* the process went on in a later stream (exec): this is not its end */
};

struct recorder {
	struct capture_writer *writer;
	int write_error;
	int protocol_error;
	struct record_source *sources; /* by source number, grown with the sources seen */
	size_t source_cap;
	char *runtime_manifest; /* key=value lines reported by collectors (GPU runtime versions) */
	char *said[32];         /* warnings already printed */
	size_t said_count;
	pid_t refused;       /* an attached target's collector turned us away (it has a viewer) */
	int attached;        /* recording an attached target (its handshake has a deadline) */
	char *runtime_facts; /* Python/PyTorch versions read from the target's mappings */
	int unanswered;      /* collectors that did not answer the detach in time */
};

/* One recording per process; its callbacks receive it as ctx. */
static struct recorder the_recorder;

/* Prints a collector's notice (e.g. GPU tracing unavailable) once, as a warning line. */
/* The bookkeeping of source (grown on first sight; sources are numbered densely from 0). */
static struct record_source *record_source(struct recorder *rec, int source)
{
	size_t cap = rec->source_cap;
	if ((size_t)source >= cap) {
		xgrow((void **)&rec->sources, &cap, (size_t)source + 1, sizeof *rec->sources);
		memset(&rec->sources[rec->source_cap], 0, (cap - rec->source_cap) * sizeof *rec->sources);
		rec->source_cap = cap;
	}
	return &rec->sources[source];
}

static void record_notice(struct recorder *rec, int source, const void *payload)
{
	struct wire_notice n;
	memcpy(&n, payload, sizeof n);
	pid_t pid = record_source(rec, source)->pid;
	const char *text = (const char *)payload + sizeof n;
	if (n.level == WIRE_NOTICE_INFO) {
		/* Informational notices are key=value facts for the manifest (e.g. CUDA versions). */
		char *next = xasprintf("%s%.*s\n", rec->runtime_manifest ? rec->runtime_manifest : "",
		                       (int)n.length, text);
		free(rec->runtime_manifest);
		rec->runtime_manifest = next;
		return;
	}
	/* A forked child inherits its parent's conditions (and notices): say each thing once. */
	for (size_t i = 0; i < rec->said_count; i++)
		if (strlen(rec->said[i]) == n.length && memcmp(rec->said[i], text, n.length) == 0)
			return;
	if (rec->said_count < sizeof rec->said / sizeof rec->said[0])
		rec->said[rec->said_count++] = xstrndup(text, n.length);
	log_warn("pid %d: %.*s", (int)pid, (int)n.length, text);
}

static int record_frame(void *ctx, int source, uint32_t type, const void *payload, uint32_t length)
{
	struct recorder *rec = ctx;
	if (source < 0)
		return -1;
	if (type == WIRE_FRAME_HELLO) {
		struct wire_hello hello;
		memcpy(&hello, payload, sizeof hello);
		record_source(rec, source)->pid = hello.pid;
		if (rec->attached)
			attach_handshake_done();
	}
	if (type == WIRE_FRAME_BYE)
		record_source(rec, source)->bye = 1;
	if (type == WIRE_FRAME_NOTICE)
		record_notice(rec, source, payload);
	if (rec->write_error)
		return 0;
	int rc = capture_writer_frame(rec->writer, (uint32_t)source, type, payload, length);
	if (rc) {
		rec->write_error = rc;
		log_error("record: cannot write capture: %s", strerror(-rc));
	}
	return 0;
}

/*
 * After the session: records how the launched process ended (an EXIT frame in its stream) and
 * says once which processes left no final counts (their losses are unknown).
 */
static void record_ends(struct recorder *rec, const struct launch *launch)
{
	int launched_source = -1, missing = 0, first_missing = 0;
	/* Each stream on its own: only an exec continues a process in a later stream (the tap
	 * says which); a pid that a new process got again is another process. */
	for (size_t s = 0; s < rec->source_cap; s++) {
		const struct record_source *src = &rec->sources[s];
		if (!src->pid || src->continued)
			continue;
		if (!launch->attached && src->pid == launch->pid)
			launched_source = (int)s;
		if (!src->bye && missing++ == 0)
			first_missing = src->pid;
	}
	if (launched_source >= 0 && !rec->write_error) {
		struct wire_exit ex = {launch->pid, -1, 0, 0};
		if (WIFSIGNALED(launch->status))
			ex.signal = WTERMSIG(launch->status);
		else if (WIFEXITED(launch->status))
			ex.exit_code = WEXITSTATUS(launch->status);
		capture_writer_frame(rec->writer, (uint32_t)launched_source, WIRE_FRAME_EXIT, &ex, sizeof ex);
	}
	if (missing && rec->unanswered)
		log_warn("record: %d process%s (pid %d%s) did not send final counts within %d ms of the "
		         "detach (stopped?): the capture is incomplete and their losses unknown",
		         missing, missing == 1 ? "" : "es", (int)first_missing, missing > 1 ? ", ..." : "",
		         RECORD_DETACH_MS);
	else if (missing)
		log_warn("record: %d process%s (pid %d%s) ended without final counts: the capture is "
		         "incomplete and their losses unknown",
		         missing, missing == 1 ? "" : "es", (int)first_missing, missing > 1 ? ", ..." : "");
}

static void record_continued(void *ctx, int source)
{
	record_source(ctx, source)->continued = 1;
}

static void record_refused(void *ctx, pid_t pid)
{
	struct recorder *rec = ctx;
	rec->refused = pid;
}

/*
 * The target's Python/PyTorch versions, gathered off the recording loop: the target's maps and
 * files may stall (a slow or hung mount, a held mmap lock) and must never stall the capture.
 * Looked at twice (modules load over time); the richest answer is kept.
 */
struct record_facts_job {
	pthread_mutex_t lock;
	pid_t pid;
	char *best; /* taken by record_facts_take */
	int taken;  /* the recording ended: later answers are dropped */
};

static struct record_facts_job record_facts_job = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void *record_facts_main(void *arg)
{
	struct record_facts_job *job = arg;
	static const long delays_ms[] = {1000, 9000};
	for (size_t i = 0; i < sizeof delays_ms / sizeof delays_ms[0]; i++) {
		struct timespec ts = {delays_ms[i] / 1000, (delays_ms[i] % 1000) * 1000000L};
		nanosleep(&ts, NULL);
		/* Read on behalf of the process's own user: nothing it could not read itself. */
		char proc[64];
		struct stat st;
		snprintf(proc, sizeof proc, "/proc/%d", (int)job->pid);
		char *facts = stat(proc, &st) == 0 ? record_runtime_facts(job->pid, st.st_uid) : NULL;
		pthread_mutex_lock(&job->lock);
		if (!job->taken && facts && (!job->best || strlen(facts) >= strlen(job->best))) {
			free(job->best);
			job->best = facts;
			facts = NULL;
		}
		int done = job->taken;
		pthread_mutex_unlock(&job->lock);
		free(facts);
		if (done)
			break;
	}
	return NULL;
}

/* Starts gathering pid's versions in the background (detached: it may block, we never wait). */
static void record_facts_start(pid_t pid)
{
	record_facts_job.pid = pid;
	pthread_attr_t attr;
	pthread_t thread;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	/* Signals are the recording loop's: the helper never takes them. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	pthread_create(&thread, &attr, record_facts_main, &record_facts_job);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
}

/* What was gathered so far (NULL if nothing); later answers are dropped. */
static char *record_facts_take(void)
{
	pthread_mutex_lock(&record_facts_job.lock);
	char *facts = record_facts_job.best;
	record_facts_job.best = NULL;
	record_facts_job.taken = 1;
	pthread_mutex_unlock(&record_facts_job.lock);
	return facts;
}

static void record_error(void *ctx, int source, pid_t pid, const char *message)
{
	struct recorder *rec = ctx;
	(void)source;
	rec->protocol_error = 1;
	log_error("pid %d: %s", (int)pid, message);
}

/* Appends "key=value\n" to *text (value's newlines flattened). */
static void manifest_add(char **text, const char *key, const char *value)
{
	char *flat = xstrdup(value ? value : "");
	for (char *p = flat; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	char *next = xasprintf("%s%s=%s\n", *text, key, flat);
	free(flat);
	free(*text);
	*text = next;
}

/* Runs a system tool (never anything the target names) with a time limit; each line is key=line. */
static void manifest_add_command(char **text, const char *key, const char *command)
{
	char *cmd = xasprintf("timeout 15 %s 2>/dev/null", command);
	FILE *p = popen(cmd, "r");
	free(cmd);
	if (!p)
		return;
	char line[1024];
	while (fgets(line, sizeof line, p)) {
		line[strcspn(line, "\n")] = '\0';
		if (line[0])
			manifest_add(text, key, line);
	}
	pclose(p);
}

/*
 * Reads name in dir (a verified directory, see record_open_site) as data on uid's behalf: a
 * regular file uid may read, no link, no FIFO, no device, at most size - 1 bytes. Bytes or -1.
 */
static ssize_t manifest_read_data(int dir, const char *name, uid_t uid, char *buf, size_t size)
{
	int fd = safefs_open_data_at(dir, name, uid, 1 << 20);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, size - 1);
	close(fd);
	if (n >= 0)
		buf[n] = '\0';
	return n;
}

/* The quoted value of `name = '...'` (or `name: str = '...'`) in Python source text, or NULL. */
static char *manifest_py_assignment(const char *text, const char *name)
{
	size_t len = strlen(name);
	for (const char *p = text; (p = strstr(p, name)); p += len) {
		if (p != text && p[-1] != '\n')
			continue;
		const char *q = p + len;
		if (*q == ':') {
			q++;
			q += strspn(q, " \t");
			if (strncmp(q, "str", 3) == 0)
				q += 3;
		}
		q += strspn(q, " \t");
		if (*q++ != '=')
			continue;
		q += strspn(q, " \t");
		char quote = *q;
		if (quote != '\'' && quote != '"')
			continue;
		const char *end = strchr(q + 1, quote);
		const char *nl = strchr(q + 1, '\n');
		if (!end || (nl && nl < end) || end - q > 200)
			continue;
		return xstrndup(q + 1, (size_t)(end - q - 1));
	}
	return NULL;
}

/* Appends name==version for each *.dist-info directory in a site-packages folder (a verified fd). */
static void manifest_add_packages(char **text, int site)
{
	DIR *d = safefs_opendir(site);
	if (!d)
		return;
	struct dirent *de;
	unsigned n = 0;
	while ((de = readdir(d)) && n < 4000) {
		size_t len = strlen(de->d_name);
		const char *dash = strchr(de->d_name, '-');
		if (len < 11 || strcmp(de->d_name + len - 10, ".dist-info") != 0 || !dash)
			continue;
		char *pkg = xasprintf("%.*s==%.*s", (int)(dash - de->d_name), de->d_name,
		                      (int)(len - 10 - (size_t)(dash + 1 - de->d_name)), dash + 1);
		manifest_add(text, "python_package", pkg);
		free(pkg);
		n++;
	}
	closedir(d);
}

/*
 * Opens a directory pid's maps named (absolute, as pid sees it) to read data from on uid's
 * behalf: reached from pid's root through verified directory fds (every step owned by root or
 * uid, no one else's link followed), and the directory itself writable by nobody else and
 * listable by uid. fd or -1.
 */
static int record_open_site(pid_t pid, uid_t uid, const char *dir)
{
	char path[PATH_MAX + 64];
	if (snprintf(path, sizeof path, "/proc/%d/root%s", (int)pid, dir) >= (int)sizeof path)
		return -1;
	int fd = safefs_open_dir(path, uid, 0);
	if (fd < 0)
		return -1;
	struct stat st;
	if (fstat(fd, &st) != 0 || (st.st_mode & 0022) || !safefs_uid_may(&st, uid, 5)) {
		close(fd);
		return -1;
	}
	return fd;
}

#define RECORD_SITE_MAX 4

/*
 * Python and PyTorch versions of pid, found without running anything of the target: the
 * interpreter's name in its mappings, torch/version.py and the *.dist-info folders beside the
 * mapped extension modules, all read as data on behalf of uid (the process's user) and only
 * from directories nobody else can change (record_open_site). NULL when pid maps no Python.
 */
static char *record_runtime_facts(pid_t pid, uid_t uid)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return NULL;
	char *python = NULL, *site[RECORD_SITE_MAX] = {NULL};
	int torch_site = -1;
	char line[PATH_MAX + 256];
	while (fgets(line, sizeof line, f)) {
		char *file = strchr(line, '/');
		if (!file)
			continue;
		file[strcspn(file, "\n")] = '\0';
		const char *base = strrchr(file, '/') + 1;
		int major, minor;
		if (!python && (sscanf(base, "libpython%d.%d", &major, &minor) == 2 ||
		                sscanf(base, "python%d.%d", &major, &minor) == 2))
			python = xasprintf("%d.%d", major, minor);
		char *pkgs = strstr(file, "/site-packages/");
		if (!pkgs)
			pkgs = strstr(file, "/dist-packages/");
		if (!pkgs)
			continue;
		size_t dir_len = (size_t)(pkgs - file) + 14;
		for (int i = 0; i < RECORD_SITE_MAX; i++) {
			if (site[i] && strlen(site[i]) == dir_len && strncmp(site[i], file, dir_len) == 0) {
				if (torch_site < 0 && strncmp(pkgs + 15, "torch/", 6) == 0)
					torch_site = i;
				break;
			}
			if (!site[i]) {
				site[i] = xstrndup(file, dir_len);
				if (torch_site < 0 && strncmp(pkgs + 15, "torch/", 6) == 0)
					torch_site = i;
				break;
			}
		}
	}
	fclose(f);
	if (!python && !site[0])
		return NULL;
	char *text = xstrdup("");
	if (python)
		manifest_add(&text, "python_version", python);
	char src[16384];
	for (int i = 0; i < RECORD_SITE_MAX && site[i]; i++) {
		int dir = record_open_site(pid, uid, site[i]);
		int torch = dir >= 0 && i == torch_site ? safefs_open_dir_for(dir, "torch", uid) : -1;
		if (torch >= 0 && manifest_read_data(torch, "version.py", uid, src, sizeof src) > 0) {
			static const char *const keys[][2] = {{"__version__", "torch_version"},
			                                      {"cuda", "torch_cuda"},
			                                      {"git_version", "torch_git"}};
			for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
				char *v = manifest_py_assignment(src, keys[k][0]);
				if (v)
					manifest_add(&text, keys[k][1], v);
				free(v);
			}
		}
		if (torch >= 0)
			close(torch);
		if (dir >= 0) {
			manifest_add_packages(&text, dir);
			close(dir);
		}
		free(site[i]);
	}
	free(python);
	return text;
}

/*
 * The environment manifest: what a capture needs to be understood and reproduced elsewhere.
 * GPU runtime versions arrive later from the collector and go into a second MANIFEST chunk.
 */
static void record_manifest(struct capture_writer *w, char **argv)
{
	extern char **environ;
	static const char *const env_prefixes[] = {"CUDA_",       "NCCL_",  "PYTHON", "CONDA_", "LD_",
	                                           "VIRTUAL_ENV", "TORCH_", "OMP_",   "NVIDIA_"};
	char *text = xstrdup("");
	char cwd[PATH_MAX] = "", host[256] = "";
	struct utsname un;
	if (!getcwd(cwd, sizeof cwd))
		cwd[0] = '\0';
	gethostname(host, sizeof host - 1);
	uname(&un);
	char *cmd = xstrdup("");
	for (char **a = argv; *a; a++) {
		char *next = xasprintf("%s%s%s", cmd, a == argv ? "" : " ", *a);
		free(cmd);
		cmd = next;
	}
	char buf[512];
	manifest_add(&text, "cuscope_version", CUSCOPE_VERSION);
	manifest_add(&text, "command", cmd);
	manifest_add(&text, "cwd", cwd);
	manifest_add(&text, "host", host);
	snprintf(buf, sizeof buf, "%s %s %s %s", un.sysname, un.release, un.version, un.machine);
	manifest_add(&text, "kernel", buf);
	snprintf(buf, sizeof buf, "%llu", (unsigned long long)clock_real_ns());
	manifest_add(&text, "recorded_real_ns", buf);
	FILE *cpu = fopen("/proc/cpuinfo", "r");
	if (cpu) {
		char line[512];
		while (fgets(line, sizeof line, cpu)) {
			if (strncmp(line, "model name", 10) == 0 && strchr(line, ':')) {
				manifest_add(&text, "cpu_model", strchr(line, ':') + 2);
				break;
			}
		}
		fclose(cpu);
	}
	snprintf(buf, sizeof buf, "%ld", sysconf(_SC_NPROCESSORS_ONLN));
	manifest_add(&text, "cpu_count", buf);
	for (char **e = environ; *e; e++) {
		for (size_t i = 0; i < sizeof env_prefixes / sizeof env_prefixes[0]; i++) {
			if (strncmp(*e, env_prefixes[i], strlen(env_prefixes[i])) == 0) {
				char *eq = strchr(*e, '=');
				if (!eq)
					break;
				char *key = xasprintf("env.%.*s", (int)(eq - *e), *e);
				manifest_add(&text, key, eq + 1);
				free(key);
				break;
			}
		}
	}
	/* A system tool found on our own PATH; Python versions come from record_runtime_facts. */
	manifest_add_command(&text, "gpu",
	                     "nvidia-smi --query-gpu=index,name,uuid,driver_version --format=csv,noheader");
	capture_writer_manifest(w, text, strlen(text));
	free(cmd);
	free(text);
}

int cli_record(int argc, char **argv)
{
	static const struct option options[] = {
	    {"output", required_argument, NULL, 'o'},
	    {"duration", required_argument, NULL, 'd'},
	    {"buffer-mb", required_argument, NULL, 'b'},
	    {"help", no_argument, NULL, 'h'},
	    LAUNCH_LONG_OPTIONS,
	    {0},
	};
	struct launch_options lopts = {.log_output = 0, .wait_viewer_ms = 3000};
	const char *output = NULL;
	double duration_s = 0;
	unsigned buffer_mb = 0;
	int opt;
	optind = 1;
	optopt = 0;
	while ((opt = getopt_long(argc, argv, "+o:d:h", options, NULL)) != -1) {
		switch (opt) {
		case 'o':
			output = optarg;
			break;
		case 'd':
			if (cli_parse_seconds(optarg, &duration_s) != 0) {
				log_error("record: --duration needs a positive number of seconds, not '%s'",
				          optarg);
				return CLI_EXIT_USAGE;
			}
			break;
		case 'b':
			if (cli_parse_buffer_mb(optarg, &buffer_mb) != 0)
				return CLI_EXIT_USAGE;
			break;
		case 'h':
			cli_usage("record");
			return 0;
		default: {
			int rc = launch_parse_option(&lopts, opt, optarg);
			if (rc < 0)
				return CLI_EXIT_USAGE;
			if (rc == 0)
				return cli_bad_option("record", argv);
		}
		}
	}
	if (!output) {
		log_error("record: -o FILE is required (see cuscope record --help)");
		return CLI_EXIT_USAGE;
	}
	if (optind >= argc) {
		log_error("record: no command given (cuscope record -o FILE -- COMMAND ...)");
		return CLI_EXIT_USAGE;
	}
	char **command = argv + optind;
	if (strcmp(output, "-") == 0) {
		log_error("record: -o - would mix the capture with the program's own output; name a file");
		return CLI_EXIT_USAGE;
	}

	the_recorder.writer = record_open_output("record", output);
	if (!the_recorder.writer)
		return CLI_EXIT_USAGE;

	struct launch launch;
	lopts.buffer_mb = buffer_mb;
	char msg[1024];
	session_sweep();
	int rc = launch_start(&launch, command, &lopts, msg, sizeof msg);
	if (rc) {
		log_error("%s", msg);
		/* Nothing was recorded: whatever output named before stays as it was. */
		capture_writer_abandon(the_recorder.writer);
		return rc;
	}
	record_say_partial(the_recorder.writer, output);
	return record_run(&launch, the_recorder.writer, output, command, duration_s);
}

struct capture_writer *record_open_output(const char *verb, const char *output)
{
	int err = 0;
	const char *cause = NULL;
	struct capture_writer *w = capture_writer_open(output, &err, &cause);
	if (w)
		return w;
	if (err == -EEXIST)
		log_error("%s: %s.partial already exists (left by an interrupted recording?); move it away "
		          "or remove it first",
		          verb, output);
	else
		log_error("%s: %s %s: %s", verb, cause, output, strerror(-err));
	return NULL;
}

void record_say_partial(struct capture_writer *w, const char *output)
{
	/* For whoever may interrupt it: where the data is until the recording completes. */
	const char *partial = capture_writer_partial_path(w);
	if (partial && isatty(STDERR_FILENO))
		fprintf(stderr, "cuscope: recording into %s (renamed to %s when complete)\n", partial,
		        output);
}

int record_run(struct launch *target, struct capture_writer *writer, const char *output, char **command,
               double duration_s)
{
	struct launch launch = *target;
	the_recorder.writer = writer;
	the_recorder.attached = launch.attached;
	struct sigaction sa = {0};
	sa.sa_handler = record_on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	struct tap_callbacks cb = {.ctx = &the_recorder,
	                           .frame = record_frame,
	                           .error = record_error,
	                           .refused = record_refused,
	                           .continued = record_continued};
	int tap_err = 0;
	struct tap *tap =
	    tap_new_owned(launch.session_dir, launch.attached ? launch.session_uid : getuid(), &cb, &tap_err);
	if (!tap) {
		log_error("record: session directory %s is not a private directory of the target's user: %s",
		          launch.session_dir, strerror(-tap_err));
		if (!launch.attached)
			launch_signal(&launch, SIGTERM);
		capture_writer_abandon(the_recorder.writer);
		return 1;
	}
	if (!launch.attached && launch.perf_maps_ours)
		tap_remove_perf_maps(tap);
	/* The manifest (nvidia-smi, pip take a moment) is gathered once the first collector is
	 * connected, so its start-up data is safely flowing first; collectors queue meanwhile. */
	int manifest_done = 0;

	uint64_t start = clock_mono_ns();
	uint64_t last_flush = start, exited_at = 0, stop_sent_at = 0;
	if (launch.running)
		record_facts_start(launch.pid);
	int forwarded = 0, connected_once = 0;
	for (;;) {
		tap_pump(tap, 20, -1);
		uint64_t now = clock_mono_ns();
		if (now - last_flush >= RECORD_FLUSH_NS) {
			last_flush = now;
			capture_writer_flush(the_recorder.writer);
		}
		connected_once |= tap_connection_count(tap) > 0;
		if (!manifest_done && (connected_once || now - start > 2000000000ull)) {
			record_manifest(the_recorder.writer, command);
			manifest_done = 1;
		}
		if (launch.attached && the_recorder.refused == launch.pid)
			break;
		if (!launch_poll(&launch) && !exited_at)
			exited_at = now;
		if (exited_at) {
			/* The target is gone: stop once its collectors said goodbye, or after a grace period.
			 */
			if (tap_connection_count(tap) == 0 || now - exited_at > RECORD_DRAIN_NS)
				break;
			continue;
		}
		int stop_sig = record_stop_signal;
		if (!stop_sig && duration_s > 0 && now - start >= (uint64_t)(duration_s * 1e9))
			stop_sig = SIGTERM;
		/* An attached target is never signalled: the recording just ends and we detach. */
		if (stop_sig && launch.attached)
			break;
		if (launch.attached && connected_once && tap_connection_count(tap) == 0)
			break; /* its collector went away (detached elsewhere or exiting) */
		if (stop_sig && !forwarded) {
			launch_signal(&launch, stop_sig == SIGHUP ? SIGTERM : stop_sig);
			forwarded = 1;
			stop_sent_at = now;
		}
		if (forwarded && now - stop_sent_at > RECORD_KILL_NS) {
			log_warn("record: pid %d ignored the stop signal; killing it", (int)launch.pid);
			launch_signal(&launch, SIGKILL);
			stop_sent_at = now;
		}
	}
	/* Leaving a process that runs on: its collector's counts up to now, or a bounded wait. */
	if (launch.attached && the_recorder.refused != launch.pid && tap_connection_count(tap) > 0)
		the_recorder.unanswered = tap_detach(tap, RECORD_DETACH_MS);
	tap_finish(tap);
	tap_free(tap);
	the_recorder.runtime_facts = record_facts_take();
	if (launch.attached && (the_recorder.refused == launch.pid || !connected_once)) {
		/* Nothing was recorded: whatever output named before stays as it was. */
		capture_writer_abandon(the_recorder.writer);
		free(the_recorder.runtime_facts);
		free(the_recorder.runtime_manifest);
		if (the_recorder.refused == launch.pid && !launch_poll(&launch))
			log_error("attach: pid %d exited during attach", (int)launch.pid);
		else if (the_recorder.refused == launch.pid)
			log_error("attach: pid %d already has a viewer attached (one at a time); detach that "
			          "one first",
			          (int)launch.pid);
		else
			log_error("record: pid %d's collector never answered", (int)launch.pid);
		return 1;
	}
	record_ends(&the_recorder, &launch);
	if (!manifest_done)
		record_manifest(the_recorder.writer, command);
	if (the_recorder.runtime_facts) {
		char *next =
		    xasprintf("%s%s", the_recorder.runtime_manifest ? the_recorder.runtime_manifest : "",
		              the_recorder.runtime_facts);
		free(the_recorder.runtime_manifest);
		free(the_recorder.runtime_facts);
		the_recorder.runtime_manifest = next;
		the_recorder.runtime_facts = NULL;
	}
	if (the_recorder.runtime_manifest) {
		capture_writer_manifest(the_recorder.writer, the_recorder.runtime_manifest,
		                        strlen(the_recorder.runtime_manifest));
		free(the_recorder.runtime_manifest);
	}
	char partial[PATH_MAX + 16] = "";
	if (capture_writer_partial_path(the_recorder.writer))
		snprintf(partial, sizeof partial, "%s", capture_writer_partial_path(the_recorder.writer));
	int close_rc = capture_writer_close(the_recorder.writer);
	if (close_rc && !the_recorder.write_error)
		log_error("record: cannot finish %s: %s%s%s", output, strerror(-close_rc),
		          partial[0] ? "; what was recorded is in " : "", partial);
	else if (close_rc && partial[0])
		log_error("record: what was recorded is in %s; %s is unchanged", partial, output);
	/* An attached target's session is its own (or attach.c's to remove). */
	if (!launch.attached)
		launch_cleanup(&launch);
	if (the_recorder.protocol_error || the_recorder.write_error || close_rc)
		return launch.attached ? 1 : CLI_EXIT_USAGE;
	return launch_exit_code(&launch);
}
