/* The collector's configuration: the environment (launch) or the rendezvous file an attach wrote. */
#include "config.h"
#include "collector.h"
#include "cuscope/safefs.h"
#include "cuscope/session.h"
#include "cuscope/wire.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct collector_config collector_config;

/*
 * Configuration: the environment (launch mode) or, after an attach, the rendezvous file the CLI
 * wrote for this pid (setenv in a running multi-threaded program is unsafe, so it is parsed here).
 */
static char rendezvous[4096];

const char *config_value(const char *name)
{
	size_t len = strlen(name);
	for (const char *line = rendezvous; *line;) {
		const char *end = strchr(line, '\n');
		if (!end)
			end = line + strlen(line);
		if ((size_t)(end - line) > len && strncmp(line, name, len) == 0 && line[len] == '=') {
			static char value[8][1024];
			static unsigned next;
			char *out = value[next++ % 8];
			size_t n = (size_t)(end - line) - len - 1;
			if (n >= sizeof value[0])
				n = sizeof value[0] - 1;
			memcpy(out, line + len + 1, n);
			out[n] = '\0';
			return out;
		}
		line = *end ? end + 1 : end;
	}
	return getenv(name);
}

/* Reads and removes /tmp/cuscope-UID/attach-PID.env; returns 1 if there was one. */
int config_read_rendezvous(void)
{
	char base[64], path[96];
	snprintf(base, sizeof base, "/tmp/cuscope-%u", (unsigned)getuid());
	snprintf(path, sizeof path, "%s/attach-%d.env", base, (int)getpid());
	rendezvous[0] = '\0';
	/* Another user may have made /tmp/cuscope-UID first: only a private one of ours is read. It is
	 * checked through an fd of ours (the program runs meanwhile and may take any number), then the
	 * file is read below it by path (never through a link): nobody else can rename entries of a
	 * sticky /tmp or of our private directory. */
	struct stat tmp;
	if (stat("/tmp", &tmp) != 0 || (tmp.st_uid != 0 && tmp.st_uid != getuid()) ||
	    ((tmp.st_mode & 0022) && !(tmp.st_mode & S_ISVTX)))
		return 0;
	int dir = collector_fd_open(base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0);
	if (dir < 0)
		return 0;
	int ok = collector_fd_check(dir) && safefs_check_dir(dir, getuid(), SAFEFS_PRIVATE) == 0;
	if (collector_fd_close(dir) != 0 || !ok)
		return 0;
	ssize_t n = collector_fd_read_file(path, rendezvous, sizeof rendezvous);
	if (n == -ENOENT)
		return 0;
	unlink(path);
	return n > 0;
}

static size_t config_env_size(const char *name, size_t fallback, size_t unit, size_t min, size_t max)
{
	const char *v = config_value(name);
	if (!v || !*v)
		return fallback;
	char *end;
	unsigned long long n = strtoull(v, &end, 10);
	if (*end || n == 0)
		return fallback;
	size_t bytes = (size_t)n * unit;
	return bytes < min ? min : bytes > max ? max : bytes;
}

static size_t config_round_pow2(size_t n)
{
	size_t p = 4096;
	while (p < n)
		p <<= 1;
	return p;
}

/* The process's own environment (never the rendezvous file: the rank is the process's). */
static const char *config_own_env(const char *name, void *ctx)
{
	(void)ctx;
	return getenv(name);
}

/* Reads the launcher's rank labels; one notice, once, for a variable that is not a label. */
static void config_load_rank(void)
{
	static int noticed;
	rank_read(&collector_config.rank, config_own_env, NULL);
	if (collector_config.rank.bad_name[0] && !noticed) {
		noticed = 1;
		collector_notice(WIRE_NOTICE_WARNING,
		                 "%s=%s is not a rank (a decimal 0..2147483647): ignored",
		                 collector_config.rank.bad_name, collector_config.rank.bad_value);
	}
}

/* Reads the configuration (environment or rendezvous) that every start shares. */
void config_load(void)
{
	/* 2 MiB: 65 ms of NVTX pairs at 1 M/s (16 bytes a record), the time the sender may be kept off
	 * a CPU on a loaded machine before pushes are refused; pages are touched only as the ring
	 * fills, so threads that record little cost little. */
	collector_config.ring_bytes =
	    config_round_pow2(config_env_size("CUSCOPE_RING_KB", 2048 * 1024, 1024, 4096, 1u << 28));
	collector_config.buffer_bytes =
	    config_env_size(SESSION_ENV_BUFFER_MB, 64u << 20, 1u << 20, 1u << 20, (size_t)16 << 30);
	collector_config.wait_viewer_ms =
	    (uint32_t)config_env_size(SESSION_ENV_WAIT_VIEWER_MS, 0, 1, 0, 600000);
	collector_config.max_strings =
	    (uint32_t)config_env_size("CUSCOPE_MAX_STRINGS", 65536, 1, 16, 1u << 24);
	collector_config.gpu_buffer_bytes =
	    config_env_size("CUSCOPE_GPU_BUFFER_MB", 256u << 20, 1u << 20, 16u << 20, (size_t)16 << 30);
	const char *osrt_env = config_value("CUSCOPE_OSRT_THRESHOLD_US");
	/* The fallback is already in ns; a given value is in µs. */
	collector_config.osrt_threshold_ns =
	    config_env_size("CUSCOPE_OSRT_THRESHOLD_US", 100000, 1000, 0, (size_t)3600 * 1000000000ull);
	collector_config.osrt_enabled = !(osrt_env && strcmp(osrt_env, "off") == 0);
	const char *counters = config_value("CUSCOPE_COUNTERS");
	snprintf(collector_config.counters, sizeof collector_config.counters, "%s", counters ? counters : "");
	/* CUSCOPE_CLOCK=mono forces clock_gettime everywhere; otherwise the sender thread decides
	 * (reading /proc/cpuinfo is no work for a program's start-up). */
	const char *clock = config_value("CUSCOPE_CLOCK");
	collector_config.ticks_wanted = !(clock && strcmp(clock, "mono") == 0);
	/* A process pays for the socket, sampling and counters once it lived this long (10 ms by
	 * default; 0 = at once) or made an event: short-lived children stay cheap. */
	const char *lazy = config_value("CUSCOPE_LAZY_START_MS");
	collector_config.lazy_start_ns =
	    lazy && *lazy && strcmp(lazy, "0") == 0
	        ? 0
	        : (uint64_t)config_env_size("CUSCOPE_LAZY_START_MS", 10, 1, 0, 60000) * 1000000ull;
	/* The overhead budget: a percentage (one decimal) or "off"; the CLI checked it. */
	const char *budget = config_value("CUSCOPE_OVERHEAD_BUDGET");
	collector_config.overhead_budget_permille = 30;
	if (budget && strcmp(budget, "off") == 0) {
		collector_config.overhead_budget_permille = 0;
	} else if (budget && *budget) {
		char *end;
		double pct = strtod(budget, &end);
		if (*end == '\0' && pct > 0 && pct <= 100)
			collector_config.overhead_budget_permille =
			    pct < 0.1 ? 1 : (unsigned)(pct * 10 + 0.5);
	}
	const char *torch = config_value("CUSCOPE_TORCH");
	collector_config.torch = torch && strcmp(torch, "1") == 0;
	/* Off unless asked for: PM sampling has not yet run on a GPU host, where its cost goes into
	 * the overhead budget (README "GPU hardware metrics") before it may be on by default. */
	const char *gm = config_value("CUSCOPE_GPU_METRICS");
	snprintf(collector_config.gpu_metrics, sizeof collector_config.gpu_metrics, "%s",
	         !gm || !*gm             ? "off"
	         : strcmp(gm, "on") == 0 ? ""
	                                 : gm);
	collector_config.gpu_metrics_hz = (unsigned)config_env_size("CUSCOPE_GPU_METRICS_HZ", 50, 1, 1, 1000);
	const char *hz = config_value("CUSCOPE_SAMPLE_HZ");
	collector_config.sample_hz = hz && *hz ? (unsigned)strtoul(hz, NULL, 10) : 1000;
	config_load_rank();
}

/*
 * Asked by the Python hook (ctypes) when it starts: 1 if this process collects and --torch asked
 * for PyTorch's operator ranges. A process --follow leaves out, or one only attached to (the hook
 * ran long before), answers 0.
 */
COLLECTOR_EXPORT int cuscope_python_torch(void)
{
	return atomic_load_explicit(&collector_running, memory_order_acquire) && collector_config.torch;
}
