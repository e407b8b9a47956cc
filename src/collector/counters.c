/*
 * Per-thread counters through perf_event_open: software events always (task-clock,
 * context-switches, page-faults), hardware ones (cycles, instructions, LLC misses) where the PMU
 * allows, others by libpfm4 name (--counters=LIST; libpfm is dlopen'ed). Where perf events are
 * missing (some sandboxes) the same software numbers come from /proc/self/task/TID. Values are
 * read by the sender twice a second and sent as cumulative COUNTERS records.
 */
#include "cuscope/collector.h"
#include "cuscope/wire.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <perfmon/pfmlib_perf_event.h>

#define MAX_EVENTS          8
#define MAX_COUNTED_THREADS 256
#define COUNTERS_PERIOD_NS  500000000ull

struct counter_event {
	char name[64];
	struct perf_event_attr attr;
	int hardware; /* may be refused by a virtual PMU: dropped with one notice */
};

struct counted_thread {
	pid_t tid;
	int fds[MAX_EVENTS];
	ino_t inos[MAX_EVENTS]; /* identity of each fd (perf fds are anonymous inodes on one device) */
	dev_t devs[MAX_EVENTS];
};

enum counters_mode { COUNTERS_OFF, COUNTERS_PERF, COUNTERS_PROC };

static struct {
	enum counters_mode mode;
	struct counter_event events[MAX_EVENTS];
	size_t event_count;
	struct counted_thread threads[MAX_COUNTED_THREADS];
	size_t thread_count;
	uint64_t last_poll_ns;
	int probed; /* the first thread decided which events work */
} ctr;

static long perf_open(struct perf_event_attr *attr, pid_t tid)
{
	return syscall(SYS_perf_event_open, attr, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

/*
 * 1 while event i's fd of t is still the one we opened: a program that closes its descriptors
 * may have reused the number. A lost fd is forgotten, never read or closed.
 */
static int counters_fd_ours(struct counted_thread *t, size_t i)
{
	struct stat st;
	if (t->fds[i] < 0)
		return 0;
	if (fstat(t->fds[i], &st) == 0 && st.st_ino == t->inos[i] && st.st_dev == t->devs[i])
		return 1;
	t->fds[i] = -1;
	static int said;
	if (!said++)
		collector_notice(WIRE_NOTICE_WARNING,
		                 "the program closed a counter descriptor of thread %d: that counter stops",
		                 t->tid);
	return 0;
}

static void counters_add_builtin(const char *name, uint32_t type, uint64_t config, int hardware)
{
	if (ctr.event_count == MAX_EVENTS)
		return;
	struct counter_event *e = &ctr.events[ctr.event_count++];
	memset(e, 0, sizeof *e);
	snprintf(e->name, sizeof e->name, "%s", name);
	e->attr.size = sizeof e->attr;
	e->attr.type = type;
	e->attr.config = config;
	e->hardware = hardware;
}

static const struct {
	const char *name;
	uint32_t type;
	uint64_t config;
	int hardware;
} builtin_events[] = {
    {"task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, 0},
    {"context-switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES, 0},
    {"page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, 0},
    {"cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, 1},
    {"instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, 1},
    {"LLC-load-misses", PERF_TYPE_HW_CACHE,
     PERF_COUNT_HW_CACHE_LL | (PERF_COUNT_HW_CACHE_OP_READ << 8) | (PERF_COUNT_HW_CACHE_RESULT_MISS << 16),
     1},
};

/* Resolves a name through libpfm4 (dlopen, optional); returns 0 or -1. */
static int counters_add_pfm(const char *name)
{
	static void *lib;
	static int (*initialize)(void);
	static int (*encode)(const char *, int, int, void *);
	static int ready = -1;
	if (ready < 0) {
		lib = dlopen("libpfm.so.4", RTLD_NOW | RTLD_LOCAL);
		initialize = lib ? (int (*)(void))dlsym(lib, "pfm_initialize") : NULL;
		encode =
		    lib ? (int (*)(const char *, int, int, void *))dlsym(lib, "pfm_get_os_event_encoding")
		        : NULL;
		ready = initialize && encode && initialize() == PFM_SUCCESS;
	}
	if (!ready) {
		collector_notice(WIRE_NOTICE_WARNING,
		                 "counter '%s' skipped: libpfm4 (libpfm.so.4) is not available", name);
		return -1;
	}
	if (ctr.event_count == MAX_EVENTS)
		return -1;
	struct counter_event *e = &ctr.events[ctr.event_count];
	memset(e, 0, sizeof *e);
	e->attr.size = sizeof e->attr;
	pfm_perf_encode_arg_t arg;
	memset(&arg, 0, sizeof arg);
	arg.attr = &e->attr;
	arg.size = sizeof arg;
	int rc = encode(name, PFM_PLM3, PFM_OS_PERF_EVENT, &arg);
	if (rc != PFM_SUCCESS) {
		collector_notice(WIRE_NOTICE_WARNING,
		                 "counter '%s' skipped: libpfm4 does not know it on this CPU", name);
		return -1;
	}
	snprintf(e->name, sizeof e->name, "%s", name);
	e->hardware = e->attr.type != PERF_TYPE_SOFTWARE;
	ctr.event_count++;
	return 0;
}

int counters_init(const char *list)
{
	/* A re-attach may bring another list: decide again which events this machine allows. */
	ctr.event_count = 0;
	ctr.probed = 0;
	if (list && strcmp(list, "none") == 0) {
		ctr.mode = COUNTERS_OFF;
		return 0;
	}
	if (!list || !*list) {
		for (size_t i = 0; i < sizeof builtin_events / sizeof builtin_events[0]; i++)
			counters_add_builtin(builtin_events[i].name, builtin_events[i].type,
			                     builtin_events[i].config, builtin_events[i].hardware);
	} else {
		char copy[512];
		snprintf(copy, sizeof copy, "%s", list);
		for (char *save = NULL, *name = strtok_r(copy, ",", &save); name;
		     name = strtok_r(NULL, ",", &save)) {
			size_t i;
			for (i = 0; i < sizeof builtin_events / sizeof builtin_events[0]; i++)
				if (strcmp(name, builtin_events[i].name) == 0)
					break;
			if (i < sizeof builtin_events / sizeof builtin_events[0])
				counters_add_builtin(builtin_events[i].name, builtin_events[i].type,
				                     builtin_events[i].config, builtin_events[i].hardware);
			else
				counters_add_pfm(name);
		}
	}
	ctr.mode = COUNTERS_PERF;
	return 0;
}

/* The first thread tells which events this machine allows; refusals are said once. */
static void counters_probe(pid_t tid)
{
	ctr.probed = 1;
	char refused[256] = "";
	int refusal = 0;
	for (size_t i = 0; i < ctr.event_count;) {
		struct perf_event_attr attr = ctr.events[i].attr;
		attr.disabled = 0;
		long fd = perf_open(&attr, tid);
		if (fd >= 0) {
			close((int)fd);
			i++;
			continue;
		}
		int err = errno;
		if (!ctr.events[i].hardware && (err == ENOSYS || err == EACCES || err == EPERM)) {
			/* No perf events at all: /proc gives the software numbers. */
			ctr.mode = COUNTERS_PROC;
			collector_notice(
			    WIRE_NOTICE_WARNING,
			    "perf events unavailable (%s): counters come from /proc (task-clock, "
			    "context-switches, page-faults only)",
			    strerror(err));
			return;
		}
		size_t used = strlen(refused);
		snprintf(refused + used, sizeof refused - used, "%s%s", used ? ", " : "", ctr.events[i].name);
		memmove(&ctr.events[i], &ctr.events[i + 1], (ctr.event_count - i - 1) * sizeof ctr.events[0]);
		ctr.event_count--;
		refusal = err ? err : EOPNOTSUPP;
	}
	if (refused[0])
		collector_notice(
		    WIRE_NOTICE_WARNING,
		    "counters unavailable on this machine (the PMU refuses them: %s): %s; software "
		    "counters continue",
		    strerror(refusal), refused);
}

void counters_thread_added(pid_t tid)
{
	if (ctr.mode == COUNTERS_OFF || collector_is_own_tid(tid))
		return;
	if (!ctr.probed)
		counters_probe(tid);
	if (ctr.thread_count == MAX_COUNTED_THREADS)
		return;
	struct counted_thread *t = &ctr.threads[ctr.thread_count];
	t->tid = tid;
	for (size_t i = 0; i < MAX_EVENTS; i++)
		t->fds[i] = -1;
	if (ctr.mode == COUNTERS_PERF) {
		for (size_t i = 0; i < ctr.event_count; i++) {
			struct perf_event_attr attr = ctr.events[i].attr;
			attr.disabled = 0;
			attr.inherit = 0;
			long fd = perf_open(&attr, tid);
			struct stat st;
			t->fds[i] = -1;
			if (fd >= 0 && fstat((int)fd, &st) == 0) {
				t->fds[i] = (int)fd;
				t->inos[i] = st.st_ino;
				t->devs[i] = st.st_dev;
			} else if (fd >= 0) {
				close((int)fd);
			}
		}
	}
	ctr.thread_count++;
}

/* /proc fallback: the same three software numbers. */
static void counters_read_proc(pid_t tid, uint64_t now)
{
	char path[96], buf[4096];
	snprintf(path, sizeof path, "/proc/self/task/%d/schedstat", tid);
	FILE *f = fopen(path, "r");
	if (f) {
		unsigned long long run_ns;
		if (fscanf(f, "%llu", &run_ns) == 1)
			sender_counter(now, tid, "task-clock", run_ns);
		fclose(f);
	}
	snprintf(path, sizeof path, "/proc/self/task/%d/status", tid);
	f = fopen(path, "r");
	if (f) {
		unsigned long long switches = 0, v;
		while (fgets(buf, sizeof buf, f)) {
			if (sscanf(buf, "voluntary_ctxt_switches: %llu", &v) == 1 ||
			    sscanf(buf, "nonvoluntary_ctxt_switches: %llu", &v) == 1)
				switches += v;
		}
		fclose(f);
		sender_counter(now, tid, "context-switches", switches);
	}
	snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
	f = fopen(path, "r");
	if (f) {
		if (fgets(buf, sizeof buf, f)) {
			/* Fields after the command name (which may hold spaces): minflt is 10th, majflt 12th.
			 */
			char *p = strrchr(buf, ')');
			unsigned long long minflt = 0, majflt = 0;
			if (p &&
			    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %llu %*u %llu", &minflt, &majflt) == 2)
				sender_counter(now, tid, "page-faults", minflt + majflt);
		}
		fclose(f);
	}
}

static void counters_read_thread(struct counted_thread *t, uint64_t now)
{
	if (ctr.mode == COUNTERS_PROC) {
		counters_read_proc(t->tid, now);
		return;
	}
	for (size_t i = 0; i < ctr.event_count; i++) {
		uint64_t value;
		if (counters_fd_ours(t, i) && read(t->fds[i], &value, sizeof value) == (ssize_t)sizeof value)
			sender_counter(now, t->tid, ctr.events[i].name, value);
	}
}

void counters_thread_removed(pid_t tid)
{
	for (size_t k = 0; k < ctr.thread_count; k++) {
		struct counted_thread *t = &ctr.threads[k];
		if (t->tid != tid)
			continue;
		/* The thread is gone; its perf counts are still readable once more. */
		if (ctr.mode == COUNTERS_PERF)
			counters_read_thread(t, collector_now_ns());
		for (size_t i = 0; i < MAX_EVENTS; i++)
			if (counters_fd_ours(t, i))
				close(t->fds[i]);
		ctr.threads[k] = ctr.threads[--ctr.thread_count];
		return;
	}
}

void counters_poll(uint64_t now_ns)
{
	if (ctr.mode == COUNTERS_OFF)
		return;
	if (now_ns && now_ns - ctr.last_poll_ns < COUNTERS_PERIOD_NS)
		return;
	uint64_t now = now_ns ? now_ns : collector_now_ns();
	ctr.last_poll_ns = now;
	for (size_t k = 0; k < ctr.thread_count; k++)
		counters_read_thread(&ctr.threads[k], now);
}

void counters_forget_after_fork(void)
{
	/* The parent's counter fds count the parent's threads: close them in the child. */
	for (size_t k = 0; k < ctr.thread_count; k++)
		for (size_t i = 0; i < MAX_EVENTS; i++)
			if (counters_fd_ours(&ctr.threads[k], i))
				close(ctr.threads[k].fds[i]);
	ctr.thread_count = 0;
}
