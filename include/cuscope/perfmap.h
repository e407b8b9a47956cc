/*
 * The /tmp/perf-PID.map files CPython writes when cuscope turned its perf trampolines on
 * (--python-perf): removed when the traced process ends, only when that process wrote them.
 */
#ifndef CUSCOPE_PERFMAP_H
#define CUSCOPE_PERFMAP_H

#include <stdint.h>
#include <sys/types.h>

/*
 * 1 when the maps of a launched session are cuscope's to remove: --python-perf asked for them and
 * the user's own environment did not (PYTHONPERFSUPPORT already set means they want the files
 * kept, as `perf report` reads them after the process ends).
 */
int perfmap_ours(int python_perf);
/*
 * Removes /tmp/perf-PID.map of a process that has ended (start_ticks: its start in clock ticks
 * since boot, /proc/PID/stat field 22) when it is a regular file (opened with O_NOFOLLOW through
 * a verified /tmp), owned by owner, with one link, last written after the process started.
 * Returns 0 when removed, -ENOENT when there is none, -EPERM when it is not that process's file.
 */
int perfmap_remove(pid_t pid, uid_t owner, uint64_t start_ticks);
/*
 * The same for a process that ended before any connection (its whole stream in PID.final): the
 * map must have been last written between start_real_ns (its collector's start, from the stream's
 * handshake) and end_real_ns (when PID.final was last written), CLOCK_REALTIME.
 */
int perfmap_remove_ended(pid_t pid, uid_t owner, uint64_t start_real_ns, uint64_t end_real_ns);

/* Processes whose connection ended, waited on until they are gone (an exiting process still runs
 * for a moment after its collector's last word; one that exec'd runs on). */
struct perfmap_watch {
	uid_t owner;
	struct perfmap_pending {
		pid_t pid;
		uint64_t start_ticks;
	} * v;
	size_t n, cap;
};

/* Watches pid (start_ticks from /proc/PID/stat); the same process is watched once. */
void perfmap_watch_add(struct perfmap_watch *w, pid_t pid, uint64_t start_ticks);
/* Removes the maps of watched processes that have ended, and forgets them. */
void perfmap_watch_poll(struct perfmap_watch *w);
/* Forgets every process still running (their maps stay). */
void perfmap_watch_fini(struct perfmap_watch *w);

#endif
