/* The sender's thread table: threads found in /proc/self/task or named by
 * their own records, renames followed, ends reported, event sources told of each. */
#include "threads.h"
#include "frames.h"
#include "source.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- threads ---- */

static struct known_thread *threads_find(struct sender *s, pid_t tid)
{
	for (size_t i = 0; i < s->thread_count; i++)
		if (s->threads[i].tid == tid)
			return &s->threads[i];
	return NULL;
}

struct known_thread *threads_add(struct sender *s, pid_t tid, uint64_t now)
{
	if (s->thread_count == s->thread_cap) {
		size_t cap = s->thread_cap ? s->thread_cap * 2 : 64;
		struct known_thread *t = realloc(s->threads, cap * sizeof *t);
		if (!t)
			return NULL;
		s->threads = t;
		s->thread_cap = cap;
	}
	struct known_thread *t = &s->threads[s->thread_count++];
	memset(t, 0, sizeof *t);
	t->tid = tid;
	t->first_ns = now;
	return t;
}

const char *threads_display_name(const struct known_thread *t)
{
	return t->nvtx_name[0] ? t->nvtx_name : t->comm;
}

void threads_emit_name(struct sender *s, const struct known_thread *t)
{
	const char *name = threads_display_name(t);
	struct wire_event ev = {.time_ns = t->first_ns, .tid = (uint32_t)t->tid, .kind = WIRE_EV_THREAD_NAME};
	ev.name_id = frames_intern(s, name, strlen(name));
	frames_push_event(s, &ev);
}

/* Reads a thread's kernel name into comm; 0 when the thread is gone, the file unreadable or the
 * fd was taken over by the program meanwhile. */
static int threads_read_comm(pid_t tid, char *comm, size_t size)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/self/task/%d/comm", tid);
	if (collector_fd_read_file(path, comm, size) <= 0)
		return 0;
	comm[strcspn(comm, "\n")] = '\0';
	return 1;
}

/* The tids in /proc/self/task, into scan_tids; their count, or -1 when the listing is not
 * complete and ours (then no thread may be taken for gone). */
static pid_t *scan_tids;
static size_t scan_cap;

static ssize_t threads_list(void)
{
	static struct collector_fd_dir dir; /* the sender thread only: 8 KiB off its stack */
	if (collector_fd_dir_open(&dir, "/proc/self/task") != 0)
		return -1;
	size_t n = 0;
	int full = 0;
	const char *name;
	while ((name = collector_fd_dir_next(&dir))) {
		pid_t tid = (pid_t)atoi(name);
		if (tid <= 0)
			continue;
		if (n == scan_cap) {
			size_t cap = scan_cap ? scan_cap * 2 : 256;
			pid_t *t = realloc(scan_tids, cap * sizeof *t);
			if (!t) {
				full = 1;
				break;
			}
			scan_tids = t;
			scan_cap = cap;
		}
		scan_tids[n++] = tid;
	}
	if (collector_fd_dir_close(&dir) != 0 || full)
		return -1;
	return (ssize_t)n;
}

/* Reads /proc/self/task: new threads and renames produce THREAD_NAME, vanished ones THREAD_EXIT. */
void threads_scan(struct sender *s, uint64_t now)
{
	/* Listed whole first: a listing cut short (the program took the fd's number) would make every
	 * thread not yet listed look gone, and the ring of a live thread would be unmapped. */
	ssize_t count = threads_list();
	if (count < 0)
		return;
	for (size_t i = 0; i < s->thread_count; i++)
		s->threads[i].seen = 0;
	for (ssize_t k = 0; k < count; k++) {
		pid_t tid = scan_tids[k];
		if (tid == s->tid || collector_is_own_tid(tid))
			continue;
		char comm[32];
		int have_comm = threads_read_comm(tid, comm, sizeof comm);
		struct known_thread *t = threads_find(s, tid);
		/* A thread ending during the scan has no comm left to read: that is not a rename to "",
		 * and the next scan reports its end. */
		if (!have_comm) {
			if (t)
				t->seen = 1;
			continue;
		}
		if (!t) {
			t = threads_add(s, tid, now);
			if (!t)
				continue;
			snprintf(t->comm, sizeof t->comm, "%s", comm);
			t->seen = 1;
			t->sampled = s->tracking;
			if (s->tracking)
				source_each_thread_added(tid);
			threads_emit_name(s, t);
			continue;
		}
		if (!t->sampled && s->tracking) {
			/* Known from its own records before the scan saw it. */
			t->sampled = 1;
			source_each_thread_added(tid);
		}
		t->seen = 1;
		if (t->exited)
			continue;
		if (strcmp(t->comm, comm) != 0) {
			snprintf(t->comm, sizeof t->comm, "%s", comm);
			if (!t->nvtx_name[0]) {
				struct wire_event ev = {
				    .time_ns = now, .tid = (uint32_t)tid, .kind = WIRE_EV_THREAD_NAME};
				ev.name_id = frames_intern(s, comm, strlen(comm));
				frames_push_event(s, &ev);
			}
		}
	}
	for (size_t i = 0; i < s->thread_count;) {
		if (s->threads[i].seen) {
			i++;
			continue;
		}
		if (!s->threads[i].exited) {
			struct wire_event ev = {
			    .time_ns = now, .tid = (uint32_t)s->threads[i].tid, .kind = WIRE_EV_THREAD_EXIT};
			frames_push_event(s, &ev);
		}
		pid_t gone = s->threads[i].tid;
		if (s->threads[i].sampled)
			source_each_thread_removed(gone);
		/* Rings made in a signal handler have no exit destructor: retire them here. */
		for (struct thread_ring *tr = collector_rings_head(); tr; tr = tr->next)
			if (tr->tid == gone)
				atomic_store_explicit(&tr->dead, 1, memory_order_release);
		s->threads[i] = s->threads[--s->thread_count];
	}
}

/* ---- rings ---- */

/* Applies a thread naming record to the thread table; returns 0 if it changes nothing visible. */
static int threads_apply_name(struct sender *s, const struct ring_record *rec)
{
	struct known_thread *t = threads_find(s, (pid_t)rec->tid);
	int is_new = !t;
	if (!t)
		t = threads_add(s, (pid_t)rec->tid, rec->time_ns);
	if (!t)
		return 1;
	t->exited = 0;
	if (rec->flags & COLLECTOR_NAME_FROM_KERNEL) {
		size_t len = rec->text_len < sizeof t->comm - 1 ? rec->text_len : sizeof t->comm - 1;
		memcpy(t->comm, rec + 1, len);
		t->comm[len] = '\0';
		/* An NVTX name, once given, wins over kernel renames. */
		return is_new || !t->nvtx_name[0];
	}
	size_t len = rec->text_len < sizeof t->nvtx_name - 1 ? rec->text_len : sizeof t->nvtx_name - 1;
	memcpy(t->nvtx_name, rec + 1, len);
	t->nvtx_name[len] = '\0';
	return 1;
}

/* A thread naming record from a ring: the thread table follows it, and a visible change is sent. */
void threads_record_name(struct sender *s, const struct ring_record *rec)
{
	struct known_thread *t = threads_find(s, (pid_t)rec->tid);
	uint64_t first_ns = t ? t->first_ns : rec->time_ns;
	if (!threads_apply_name(s, rec))
		return;
	t = threads_find(s, (pid_t)rec->tid);
	const char *name = t ? threads_display_name(t) : "";
	struct wire_event ev = {.time_ns = first_ns < rec->time_ns ? rec->time_ns : first_ns,
	                        .tid = rec->tid,
	                        .kind = WIRE_EV_THREAD_NAME};
	ev.name_id = frames_intern(s, name, strlen(name));
	frames_push_event(s, &ev);
}

/* A thread reported its own exit (its ring's last record): the next scan forgets it quietly. */
void threads_record_exit(struct sender *s, pid_t tid)
{
	struct known_thread *t = threads_find(s, tid);
	if (t)
		t->exited = 1;
}
