/*
 * Per-thread counters, read by the sender thread twice a second and sent as cumulative COUNTERS
 * records. The default set costs the program's threads nothing: task-clock is the thread's CPU
 * clock (clock_gettime on its CPU-time clock id), context-switches and page-faults come from
 * /proc/self/task/TID/{status,stat}, all read from our own thread. Per-thread perf events would
 * make the kernel switch their contexts at every context switch of every traced thread (a pipe
 * ping-pong pays for it), so they are opened only for what procfs cannot give (cycles,
 * instructions, LLC-load-misses, libpfm4 names) and only when --counters names them.
 */
#include "collector.h"
#include "cuscope/wire.h"
#include "source.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <perfmon/pfmlib_perf_event.h>

#define MAX_EVENTS          8
#define MAX_COUNTED_THREADS 256
#define COUNTERS_GONE_KEPT  64
#define COUNTERS_PERIOD_NS  500000000ull
/* What one counting perf event is assumed to add to its thread at each context switch (the
 * kernel switches the event's context out and in); an estimate, not measured here. */
#define COUNTERS_PERF_SWITCH_NS 200ull

/* Where an event's value comes from. */
enum counter_source {
	SOURCE_CPU_CLOCK,   /* the thread's CPU-time clock: ns on CPU (what perf's task-clock counts) */
	SOURCE_PROC_SWITCH, /* status: voluntary + nonvoluntary context switches */
	SOURCE_PROC_FAULT,  /* stat: minor + major page faults */
	SOURCE_PERF,        /* a per-thread perf event (asked for by name) */
};

struct counter_event {
	char name[64];
	enum counter_source source;
	struct perf_event_attr attr; /* SOURCE_PERF only */
};

struct counted_thread {
	pid_t tid;
	int fds[MAX_EVENTS]; /* perf events only (registered with collector_fd_own); -1 otherwise */
	/* procfs values of the last read, and the CPU time they were read at: a thread whose CPU time
	 * has not moved has not run, so it has neither switched nor faulted since (no procfs read). */
	uint64_t cpu_ns, switches, faults;
	int have_switches, have_faults;
	uint64_t priced_switches; /* switches already priced into added_ns (perf events only) */
};

static struct {
	int on;
	struct counter_event events[MAX_EVENTS];
	size_t event_count;
	size_t perf_count; /* events with SOURCE_PERF */
	struct counted_thread threads[MAX_COUNTED_THREADS];
	size_t thread_count;
	uint64_t last_poll_ns;
	uint64_t period_ns; /* between reads; 0 = off (the overhead budget): no reads, perf disabled */
	uint64_t reads;     /* thread readings so far */
	uint64_t added_ns;  /* estimated time perf events added to the program's threads */
	int probed;         /* the first thread decided which perf events work */
	int said_cap;       /* the thread cap notice was given */
	int said_proc;      /* the procfs notice was given */
	/* Counted threads the scan found gone lately: their own final counts may still be in their
	 * rings (the scan can run before the drain that holds them). */
	pid_t gone[COUNTERS_GONE_KEPT];
	size_t gone_next;
} ctr;

static long perf_open(struct perf_event_attr *attr, pid_t tid)
{
	return syscall(SYS_perf_event_open, attr, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

/*
 * 1 while event i's fd of t is still the one we opened: a program that closes its descriptors
 * may have reused the number, for an eventfd or epoll fd too, which share the perf fds' anonymous
 * inode; the fd registry also compares the perf event id. A lost fd is forgotten, never read or
 * closed.
 */
static int counters_fd_ours(struct counted_thread *t, size_t i)
{
	if (t->fds[i] < 0)
		return 0;
	if (collector_fd_check(t->fds[i]))
		return 1;
	t->fds[i] = -1;
	static int said;
	if (!said++)
		collector_notice(WIRE_NOTICE_WARNING,
		                 "the program closed a counter descriptor of thread %d: that counter stops",
		                 t->tid);
	return 0;
}

/* Adds one event (dropped when the list is full). */
static struct counter_event *counters_add(const char *name, enum counter_source source)
{
	if (ctr.event_count == MAX_EVENTS)
		return NULL;
	for (size_t i = 0; i < ctr.event_count; i++)
		if (strcmp(ctr.events[i].name, name) == 0)
			return NULL; /* named twice: one row is enough */
	struct counter_event *e = &ctr.events[ctr.event_count++];
	memset(e, 0, sizeof *e);
	snprintf(e->name, sizeof e->name, "%s", name);
	e->source = source;
	e->attr.size = sizeof e->attr;
	if (source == SOURCE_PERF)
		ctr.perf_count++;
	return e;
}

/* The default set, read without perf events. */
static const struct {
	const char *name;
	enum counter_source source;
} soft_events[] = {
    {"task-clock", SOURCE_CPU_CLOCK},
    {"context-switches", SOURCE_PROC_SWITCH},
    {"page-faults", SOURCE_PROC_FAULT},
};

/* Hardware events known by name without libpfm4 (perf's own names). */
static const struct {
	const char *name;
	uint32_t type;
	uint64_t config;
} hw_events[] = {
    {"cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES},
    {"instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS},
    {"LLC-load-misses", PERF_TYPE_HW_CACHE,
     PERF_COUNT_HW_CACHE_LL | (PERF_COUNT_HW_CACHE_OP_READ << 8) | (PERF_COUNT_HW_CACHE_RESULT_MISS << 16)},
};

#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

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
	struct perf_event_attr attr;
	memset(&attr, 0, sizeof attr);
	attr.size = sizeof attr;
	pfm_perf_encode_arg_t arg;
	memset(&arg, 0, sizeof arg);
	arg.attr = &attr;
	arg.size = sizeof arg;
	if (encode(name, PFM_PLM3, PFM_OS_PERF_EVENT, &arg) != PFM_SUCCESS) {
		collector_notice(WIRE_NOTICE_WARNING,
		                 "counter '%s' skipped: libpfm4 does not know it on this CPU", name);
		return -1;
	}
	struct counter_event *e = counters_add(name, SOURCE_PERF);
	if (!e)
		return -1;
	e->attr = attr;
	return 0;
}

/* Adds the event NAME from an explicit list: a software one from procfs, else a perf event. */
static void counters_add_named(const char *name)
{
	if (strcmp(name, "default") == 0) {
		for (size_t i = 0; i < COUNT_OF(soft_events); i++)
			counters_add(soft_events[i].name, soft_events[i].source);
		return;
	}
	for (size_t i = 0; i < COUNT_OF(soft_events); i++)
		if (strcmp(name, soft_events[i].name) == 0) {
			counters_add(name, soft_events[i].source);
			return;
		}
	for (size_t i = 0; i < COUNT_OF(hw_events); i++)
		if (strcmp(name, hw_events[i].name) == 0) {
			struct counter_event *e = counters_add(name, SOURCE_PERF);
			if (e) {
				e->attr.type = hw_events[i].type;
				e->attr.config = hw_events[i].config;
			}
			return;
		}
	counters_add_pfm(name);
}

int counters_init(const char *list)
{
	/* A re-attach may bring another list: decide again which events this machine allows. */
	ctr.event_count = 0;
	ctr.perf_count = 0;
	ctr.probed = 0;
	ctr.said_cap = 0;
	ctr.said_proc = 0;
	ctr.period_ns = COUNTERS_PERIOD_NS;
	ctr.on = !(list && strcmp(list, "none") == 0);
	if (!ctr.on)
		return 0;
	if (!list || !*list)
		list = "default";
	char copy[512];
	snprintf(copy, sizeof copy, "%s", list);
	for (char *save = NULL, *name = strtok_r(copy, ",", &save); name; name = strtok_r(NULL, ",", &save))
		counters_add_named(name);
	return 0;
}

/* Drops event i (a perf event this machine refuses). */
static void counters_drop_event(size_t i)
{
	if (ctr.events[i].source == SOURCE_PERF)
		ctr.perf_count--;
	memmove(&ctr.events[i], &ctr.events[i + 1], (ctr.event_count - i - 1) * sizeof ctr.events[0]);
	ctr.event_count--;
}

/* The first thread tells which perf events this machine allows; refusals are said once. */
static void counters_probe(pid_t tid)
{
	ctr.probed = 1;
	char refused[256] = "";
	int refusal = 0;
	for (size_t i = 0; i < ctr.event_count;) {
		if (ctr.events[i].source != SOURCE_PERF) {
			i++;
			continue;
		}
		struct perf_event_attr attr = ctr.events[i].attr;
		attr.disabled = 0;
		long fd = perf_open(&attr, tid);
		if (fd < 0 && (errno == EACCES || errno == EPERM) && !attr.exclude_kernel) {
			/* perf_event_paranoid >= 2 keeps unprivileged users out of kernel counts: count the
			 * program's own (user) side, as perf stat does. */
			attr.exclude_kernel = attr.exclude_hv = 1;
			fd = perf_open(&attr, tid);
			if (fd >= 0)
				ctr.events[i].attr = attr;
		}
		if (fd >= 0) {
			collector_fd_close(collector_fd_own((int)fd, 0));
			i++;
			continue;
		}
		int err = errno;
		size_t used = strlen(refused);
		snprintf(refused + used, sizeof refused - used, "%s%s", used ? ", " : "", ctr.events[i].name);
		counters_drop_event(i);
		refusal = err ? err : EOPNOTSUPP;
	}
	if (!refused[0])
		return;
	if (refusal == EACCES || refusal == EPERM || refusal == ENOSYS)
		collector_notice(WIRE_NOTICE_WARNING,
		                 "counters unavailable (perf events not allowed here: %s): %s; software "
		                 "counters continue",
		                 strerror(refusal), refused);
	else
		collector_notice(WIRE_NOTICE_WARNING,
		                 "counters unavailable on this machine (the PMU refuses them: %s): %s; "
		                 "software counters continue",
		                 strerror(refusal), refused);
}

static void counters_read_thread(struct counted_thread *t, uint64_t now);

void counters_thread_added(pid_t tid)
{
	if (!ctr.on || collector_is_own_tid(tid))
		return;
	if (!ctr.probed)
		counters_probe(tid);
	if (ctr.thread_count == MAX_COUNTED_THREADS) {
		if (!ctr.said_cap++)
			collector_notice(WIRE_NOTICE_WARNING,
			                 "more than %d threads: thread %d and later ones have no counters",
			                 MAX_COUNTED_THREADS, tid);
		return;
	}
	struct counted_thread *t = &ctr.threads[ctr.thread_count];
	memset(t, 0, sizeof *t);
	t->tid = tid;
	for (size_t i = 0; i < MAX_EVENTS; i++)
		t->fds[i] = -1;
	for (size_t i = 0; i < ctr.event_count; i++) {
		if (ctr.events[i].source != SOURCE_PERF)
			continue;
		struct perf_event_attr attr = ctr.events[i].attr;
		attr.disabled = !ctr.period_ns; /* counters off (overhead budget): enabled when back on */
		attr.inherit = 0;
		long fd = perf_open(&attr, tid);
		if (fd >= 0)
			t->fds[i] = collector_fd_own((int)fd, 0);
	}
	ctr.thread_count++;
	/* A first reading now: a thread that ends before the next poll still has its counters (as of
	 * this reading; procfs numbers of an ended thread cannot be read). */
	counters_read_thread(t, collector_now_ns());
}

/*
 * Reads /proc/self/task/TID/FILE into buf (NUL-terminated); returns 0 or -1 (thread gone, or the fd
 * was taken over by the program meanwhile: what was read is dropped).
 */
static int counters_proc_read(pid_t tid, const char *file, char *buf, size_t size)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/self/task/%d/%s", (int)tid, file);
	ssize_t n = collector_fd_read_file(path, buf, size);
	if (n < 0 && n != -ENOENT && n != -ESRCH && n != -EBADF && !ctr.said_proc++)
		collector_notice(WIRE_NOTICE_WARNING,
		                 "cannot read %s (%s): context-switches and page-faults may be missing", path,
		                 strerror((int)-n));
	return n > 0 ? 0 : -1;
}

/* Voluntary + nonvoluntary context switches of tid (perf's context-switches counts both). */
static int counters_proc_switches(pid_t tid, uint64_t *out)
{
	char buf[8192];
	if (counters_proc_read(tid, "status", buf, sizeof buf) != 0)
		return -1;
	unsigned long long sum = 0, v;
	int found = 0;
	for (char *line = buf; line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
		if (sscanf(line, "voluntary_ctxt_switches: %llu", &v) == 1 ||
		    sscanf(line, "nonvoluntary_ctxt_switches: %llu", &v) == 1) {
			sum += v;
			found++;
		}
	}
	*out = sum;
	return found == 2 ? 0 : -1;
}

/* Minor + major page faults of tid. */
static int counters_proc_faults(pid_t tid, uint64_t *out)
{
	char buf[1024];
	if (counters_proc_read(tid, "stat", buf, sizeof buf) != 0)
		return -1;
	/* Fields after the command name (which may hold spaces and parentheses): minflt is the 10th
	 * field of the line, majflt the 12th. */
	char *p = strrchr(buf, ')');
	unsigned long long minflt, majflt;
	if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %llu %*u %llu", &minflt, &majflt) != 2)
		return -1;
	*out = minflt + majflt;
	return 0;
}

/* ns on CPU of tid, from its CPU-time clock (the clock id glibc's pthread_getcpuclockid makes). */
static int counters_cpu_clock(pid_t tid, uint64_t *out)
{
	/* CPUCLOCK_SCHED (2) | CPUCLOCK_PERTHREAD_MASK (4), the tid inverted above 3 bits. */
	clockid_t clock = (clockid_t)((~(unsigned)tid << 3) | 6u);
	struct timespec ts;
	if (clock_gettime(clock, &ts) != 0)
		return -1;
	*out = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	return 0;
}

static void counters_read_thread(struct counted_thread *t, uint64_t now)
{
	uint64_t cpu_ns = 0;
	int cpu_ok = counters_cpu_clock(t->tid, &cpu_ns) == 0;
	int ran = !cpu_ok || cpu_ns != t->cpu_ns;
	if (cpu_ok)
		t->cpu_ns = cpu_ns;
	for (size_t i = 0; i < ctr.event_count; i++) {
		uint64_t value = 0;
		int rc = -1;
		switch (ctr.events[i].source) {
		case SOURCE_CPU_CLOCK:
			rc = cpu_ok ? 0 : -1;
			value = cpu_ns;
			break;
		case SOURCE_PROC_SWITCH:
			if (ran || !t->have_switches)
				t->have_switches = counters_proc_switches(t->tid, &t->switches) == 0;
			rc = t->have_switches ? 0 : -1;
			value = t->switches;
			break;
		case SOURCE_PROC_FAULT:
			if (ran || !t->have_faults)
				t->have_faults = counters_proc_faults(t->tid, &t->faults) == 0;
			rc = t->have_faults ? 0 : -1;
			value = t->faults;
			break;
		case SOURCE_PERF:
			if (counters_fd_ours(t, i) &&
			    read(t->fds[i], &value, sizeof value) == (ssize_t)sizeof value)
				rc = 0;
			break;
		}
		if (rc == 0)
			sender_counter(now, t->tid, ctr.events[i].name, value);
	}
	ctr.reads++;
	/* Perf events cost the thread at each of its context switches (procfs counters cost it
	 * nothing: they are read here, on the sender). */
	if (ctr.perf_count && ran) {
		uint64_t switches = 0;
		if (counters_proc_switches(t->tid, &switches) == 0) {
			if (t->priced_switches && switches > t->priced_switches)
				ctr.added_ns += (switches - t->priced_switches) * ctr.perf_count *
				                COUNTERS_PERF_SWITCH_NS;
			t->priced_switches = switches;
		}
	}
}

void counters_thread_removed(pid_t tid)
{
	for (size_t k = 0; k < ctr.thread_count; k++) {
		struct counted_thread *t = &ctr.threads[k];
		if (t->tid != tid)
			continue;
		/* The thread is gone; its perf counts are still readable once more (procfs ones are not:
		 * the last poll's values stand). */
		if (ctr.perf_count)
			counters_read_thread(t, collector_now_ns());
		for (size_t i = 0; i < MAX_EVENTS; i++)
			if (t->fds[i] >= 0)
				collector_fd_close(t->fds[i]);
		ctr.threads[k] = ctr.threads[--ctr.thread_count];
		ctr.gone[ctr.gone_next++ % COUNTERS_GONE_KEPT] = tid;
		return;
	}
}

void counters_thread_final(pid_t tid, uint64_t now_ns, const struct collector_thread_final *final)
{
	if (!ctr.on || !ctr.period_ns)
		return;
	/* Only a thread counted so far (the cap leaves some out), or found gone lately. */
	int counted = 0;
	for (size_t k = 0; k < ctr.thread_count && !counted; k++)
		counted = ctr.threads[k].tid == tid;
	for (size_t k = 0; k < COUNTERS_GONE_KEPT && !counted; k++)
		counted = ctr.gone[k] == tid;
	if (!counted)
		return;
	for (size_t i = 0; i < ctr.event_count; i++) {
		switch (ctr.events[i].source) {
		case SOURCE_CPU_CLOCK:
			sender_counter(now_ns, tid, ctr.events[i].name, final->cpu_ns);
			break;
		case SOURCE_PROC_SWITCH:
			sender_counter(now_ns, tid, ctr.events[i].name, final->switches);
			break;
		case SOURCE_PROC_FAULT:
			sender_counter(now_ns, tid, ctr.events[i].name, final->faults);
			break;
		case SOURCE_PERF:
			break; /* read once more when the scan finds the thread gone */
		}
	}
}

void counters_poll(uint64_t now_ns)
{
	if (!ctr.on || !ctr.event_count || !ctr.period_ns)
		return;
	if (now_ns && now_ns - ctr.last_poll_ns < ctr.period_ns)
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
			if (ctr.threads[k].fds[i] >= 0)
				collector_fd_close(ctr.threads[k].fds[i]);
	ctr.thread_count = 0;
	memset(ctr.gone, 0, sizeof ctr.gone);
}

int counters_active(void)
{
	return ctr.on && ctr.event_count;
}

/* Off (0) disables the perf events too: a disabled event costs its thread no context switch. */
void counters_set_period(uint64_t period_ns)
{
	int was_off = !ctr.period_ns;
	ctr.period_ns = period_ns;
	if (was_off == !period_ns || !ctr.perf_count)
		return;
	for (size_t k = 0; k < ctr.thread_count; k++)
		for (size_t i = 0; i < ctr.event_count; i++)
			if (ctr.events[i].source == SOURCE_PERF && counters_fd_ours(&ctr.threads[k], i))
				ioctl(ctr.threads[k].fds[i],
				      period_ns ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE, 0);
}

void counters_cost(struct wire_cost *cost)
{
	cost->added_ns = ctr.added_ns;
	cost->events = ctr.reads;
	cost->level = counters_active() ? (uint32_t)(ctr.period_ns / 1000000ull) : 0;
}
