/* Removing the perf maps CPython wrote for a process cuscope started with --python-perf. */
#include "cuscope/perfmap.h"
#include "cuscope/safefs.h"
#include "cuscope/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int perfmap_ours(int python_perf)
{
	const char *env = getenv("PYTHONPERFSUPPORT");
	return python_perf && !(env && *env);
}

/* Boot time (CLOCK_REALTIME seconds) from /proc/stat's btime; 0 when unknown. */
static time_t perfmap_boot_time(void)
{
	FILE *f = fopen("/proc/stat", "re");
	if (!f)
		return 0;
	char line[256];
	long long btime = 0;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "btime %lld", &btime) == 1)
			break;
	fclose(f);
	return (time_t)btime;
}

/* Removes /tmp/perf-PID.map when it is that process's file: a regular file of owner's, one link,
 * last written at or after since (seconds, CLOCK_REALTIME) and, with until, not after it. */
static int perfmap_remove_written(pid_t pid, uid_t owner, time_t since, time_t until)
{
	if (pid <= 0 || !since)
		return -EPERM;
	/* /tmp is root's and sticky: a name in it can be replaced only by its owner (checked below). */
	int dir = safefs_open_dir("/tmp", 0, 0);
	if (dir < 0)
		return dir;
	char name[64];
	snprintf(name, sizeof name, "perf-%d.map", (int)pid);
	/* Only a regular file is opened (a FIFO or device is never touched), without following a link. */
	struct stat lst, st;
	if (fstatat(dir, name, &lst, AT_SYMLINK_NOFOLLOW) != 0) {
		int err = -errno;
		close(dir);
		return err;
	}
	if (!S_ISREG(lst.st_mode)) {
		close(dir);
		return -EPERM;
	}
	int fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		int err = errno == ELOOP ? -EPERM : -errno;
		close(dir);
		return err;
	}
	int rc = fstat(fd, &st) == 0 ? 0 : -errno;
	close(fd);
	if (rc == 0 && (st.st_dev != lst.st_dev || st.st_ino != lst.st_ino))
		rc = -EPERM; /* replaced between the two looks */
	/* Written while the process ran: not a stale map of an earlier process with that pid, nor
	 * one of a later process that got the pid again. */
	if (rc == 0 && (!S_ISREG(st.st_mode) || st.st_uid != owner || st.st_nlink != 1 ||
	                st.st_mtim.tv_sec < since || (until && st.st_mtim.tv_sec > until)))
		rc = -EPERM;
	if (rc == 0 && unlinkat(dir, name, 0) != 0)
		rc = -errno;
	close(dir);
	return rc;
}

int perfmap_remove(pid_t pid, uid_t owner, uint64_t start_ticks)
{
	if (!start_ticks)
		return -EPERM;
	/* btime has whole seconds: a second of slack. */
	long hz = sysconf(_SC_CLK_TCK);
	time_t boot = perfmap_boot_time();
	time_t started = boot && hz > 0 ? boot + (time_t)(start_ticks / (uint64_t)hz) - 1 : 0;
	return perfmap_remove_written(pid, owner, started, 0);
}

int perfmap_remove_ended(pid_t pid, uid_t owner, uint64_t start_real_ns, uint64_t end_real_ns)
{
	if (!start_real_ns || !end_real_ns || end_real_ns < start_real_ns)
		return -EPERM;
	/* Whole seconds (st_mtim is compared by its seconds): a second of slack either side. */
	return perfmap_remove_written(pid, owner, (time_t)(start_real_ns / 1000000000ull) - 1,
	                              (time_t)(end_real_ns / 1000000000ull) + 1);
}

/* 1 while the process with that pid and start time exists and is not a zombie. */
static int perfmap_alive(pid_t pid, uint64_t start_ticks)
{
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	/* The name may hold anything: fields start after its last ')'. */
	const char *p = strrchr(buf, ')');
	char state;
	unsigned long long start;
	if (!p ||
	    sscanf(p + 1, " %c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
	           &state, &start) != 2)
		return 0;
	return start == start_ticks && state != 'Z' && state != 'X';
}

void perfmap_watch_add(struct perfmap_watch *w, pid_t pid, uint64_t start_ticks)
{
	if (!start_ticks)
		return;
	for (size_t i = 0; i < w->n; i++)
		if (w->v[i].pid == pid && w->v[i].start_ticks == start_ticks)
			return;
	xgrow((void **)&w->v, &w->cap, w->n + 1, sizeof *w->v);
	w->v[w->n++] = (struct perfmap_pending){pid, start_ticks};
}

void perfmap_watch_poll(struct perfmap_watch *w)
{
	for (size_t i = 0; i < w->n;) {
		if (perfmap_alive(w->v[i].pid, w->v[i].start_ticks)) {
			i++;
			continue;
		}
		perfmap_remove(w->v[i].pid, w->owner, w->v[i].start_ticks);
		w->v[i] = w->v[--w->n];
	}
}

void perfmap_watch_fini(struct perfmap_watch *w)
{
	free(w->v);
	w->v = NULL;
	w->n = w->cap = 0;
}
