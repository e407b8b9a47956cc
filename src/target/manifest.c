/*
 * What a capture's manifest says about where and how it was recorded: the host, the relevant
 * environment, the GPUs, and the target's Python and PyTorch versions, read as data from the
 * target's mappings without running anything it names.
 */
#include "cuscope/manifest.h"
#include "cuscope/clock.h"
#include "cuscope/safefs.h"
#include "cuscope/xalloc.h"

#include <dirent.h>
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

static char *manifest_runtime_facts(pid_t pid, uid_t uid);

/*
 * The target's Python/PyTorch versions, gathered off the recording loop: the target's maps and
 * files may stall (a slow or hung mount, a held mmap lock) and must never stall the capture.
 * Looked at twice (modules load over time); the richest answer is kept.
 */
struct manifest_facts_job {
	pthread_mutex_t lock;
	pid_t pid;
	char *best; /* taken by manifest_facts_take */
	int taken;  /* the recording ended: later answers are dropped */
};

static struct manifest_facts_job manifest_facts_job = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void *manifest_facts_main(void *arg)
{
	struct manifest_facts_job *job = arg;
	static const long delays_ms[] = {1000, 9000};
	for (size_t i = 0; i < sizeof delays_ms / sizeof delays_ms[0]; i++) {
		struct timespec ts = {delays_ms[i] / 1000, (delays_ms[i] % 1000) * 1000000L};
		nanosleep(&ts, NULL);
		/* Read on behalf of the process's own user: nothing it could not read itself. */
		char proc[64];
		struct stat st;
		snprintf(proc, sizeof proc, "/proc/%d", (int)job->pid);
		char *facts = stat(proc, &st) == 0 ? manifest_runtime_facts(job->pid, st.st_uid) : NULL;
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
void manifest_facts_start(pid_t pid)
{
	manifest_facts_job.pid = pid;
	pthread_attr_t attr;
	pthread_t thread;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	/* Signals are the recording loop's: the helper never takes them. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	pthread_create(&thread, &attr, manifest_facts_main, &manifest_facts_job);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
}

/* What was gathered so far (NULL if nothing); later answers are dropped. */
char *manifest_facts_take(void)
{
	pthread_mutex_lock(&manifest_facts_job.lock);
	char *facts = manifest_facts_job.best;
	manifest_facts_job.best = NULL;
	manifest_facts_job.taken = 1;
	pthread_mutex_unlock(&manifest_facts_job.lock);
	return facts;
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
 * Reads name in dir (a verified directory, see manifest_open_site) as data on uid's behalf: a
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
static int manifest_open_site(pid_t pid, uid_t uid, const char *dir)
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

#define MANIFEST_SITE_MAX 4

/*
 * Python and PyTorch versions of pid, found without running anything of the target: the
 * interpreter's name in its mappings, torch/version.py and the *.dist-info folders beside the
 * mapped extension modules, all read as data on behalf of uid (the process's user) and only
 * from directories nobody else can change (manifest_open_site). NULL when pid maps no Python.
 */
static char *manifest_runtime_facts(pid_t pid, uid_t uid)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return NULL;
	char *python = NULL, *site[MANIFEST_SITE_MAX] = {NULL};
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
		for (int i = 0; i < MANIFEST_SITE_MAX; i++) {
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
	for (int i = 0; i < MANIFEST_SITE_MAX && site[i]; i++) {
		int dir = manifest_open_site(pid, uid, site[i]);
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
char *manifest_environment(char **argv)
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
	/* A system tool found on our own PATH; Python versions come from manifest_runtime_facts. */
	manifest_add_command(&text, "gpu",
	                     "nvidia-smi --query-gpu=index,name,uuid,driver_version --format=csv,noheader");
	free(cmd);
	return text;
}
