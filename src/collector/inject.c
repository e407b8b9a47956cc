/*
 * The injected library's entry points: constructor (LD_PRELOAD or dlopen), destructor,
 * InitializeInjectionNvtx2 (NVTX_INJECTION64_PATH), InitializeInjection (CUDA_INJECTION64_PATH),
 * fork handling, and the per-thread emit path.
 */
#include "cuscope/collector.h"
#include "cuscope/clock.h"
#include "cuscope/safefs.h"
#include "cuscope/session.h"
#include "cuscope/wire.h"
#include "emit.h"
#include "source.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dlfcn.h>
#include <link.h>
#include <stdarg.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <linux/perf_event.h>
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#include <sys/prctl.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

struct collector_config collector_config;
_Atomic int collector_running;
struct thread_ring *_Atomic collector_rings;
_Atomic uint64_t collector_lost_no_memory;
_Atomic uint32_t collector_wake_word;
_Atomic uint32_t collector_names_epoch;

/* initial-exec: these are read in signal handlers, where lazy TLS allocation must not happen. */
#define COLLECTOR_TLS __thread __attribute__((tls_model("initial-exec")))
COLLECTOR_TLS struct thread_ring *collector_ring_self;
static COLLECTOR_TLS pid_t thread_tid_self;
COLLECTOR_TLS volatile sig_atomic_t collector_in_ring;

static pthread_key_t thread_ring_key;
static pid_t collector_pid;
/* --follow: a forked copy of this process (the same program) collects too. */
static int follow_fork_children = 1;

uint64_t collector_now_ns(void)
{
	return clock_mono_ns();
}

uint64_t collector_stamp(uint16_t *flags)
{
	return emit_stamp(flags);
}

pid_t collector_gettid(void)
{
	if (!thread_tid_self)
		thread_tid_self = (pid_t)syscall(SYS_gettid);
	return thread_tid_self;
}

static int ring_write(struct thread_ring *tr, size_t headroom, uint16_t kind, uint16_t flags,
                      uint32_t subject_tid, uint64_t value, const struct collector_string *name_ref,
                      const struct collector_string *domain_ref, const char *text, size_t text_len);

/* pthread key destructor: the thread is ending; the sender frees its ring after draining it. */
static COLLECTOR_TLS int thread_exiting;

static void thread_ring_release(void *arg)
{
	struct thread_ring *tr = arg;
	/* From here on this thread writes nothing: the sender may unmap the ring once it sees dead. */
	thread_exiting = 1;
	collector_ring_self = NULL;
	/* The exact end of a traced thread; untraced threads are found gone by the sender's scan. */
	ring_write(tr, 0, WIRE_EV_THREAD_EXIT, 0, 0, 0, NULL, NULL, NULL, 0);
	atomic_store_explicit(&tr->dead, 1, memory_order_release);
}

static COLLECTOR_TLS int thread_is_collector;
COLLECTOR_TLS volatile sig_atomic_t collector_sample_pending;

void collector_mark_own_thread(void)
{
	thread_is_collector = 1;
}

static _Atomic pid_t own_tids[8];

void collector_register_own_tid(pid_t tid)
{
	for (size_t i = 0; i < sizeof own_tids / sizeof own_tids[0]; i++) {
		pid_t expected = 0;
		if (atomic_compare_exchange_strong(&own_tids[i], &expected, tid))
			return;
	}
}

int collector_is_own_tid(pid_t tid)
{
	for (size_t i = 0; i < sizeof own_tids / sizeof own_tids[0]; i++)
		if (atomic_load(&own_tids[i]) == tid)
			return 1;
	return 0;
}

/*
 * Creates and publishes this thread's ring using only async-signal-safe calls (mmap, atomics), so
 * the sampler's signal handler can use it too. The exit destructor is registered separately.
 */
static struct thread_ring *thread_ring_create(void)
{
	/* mmap rather than malloc: safe even if the app replaced malloc, and never touches its heap locks. */
	size_t bytes = sizeof(struct thread_ring) + collector_config.ring_bytes;
	void *mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED) {
		atomic_fetch_add_explicit(&collector_lost_no_memory, 1, memory_order_relaxed);
		return NULL;
	}
	struct thread_ring *tr = mem;
	ring_init(&tr->ring, (char *)mem + sizeof *tr, collector_config.ring_bytes);
	tr->tid = collector_gettid();
	struct thread_ring *head = atomic_load_explicit(&collector_rings, memory_order_relaxed);
	do {
		tr->next = head;
	} while (!atomic_compare_exchange_weak_explicit(&collector_rings, &head, tr, memory_order_release,
	                                                memory_order_relaxed));
	collector_ring_self = tr;
	if (!head)
		sender_first_event(); /* the first event: a lazy sender starts now */
	return tr;
}

struct thread_ring *collector_thread_ring_in_signal(void)
{
	if (thread_exiting || !atomic_load_explicit(&collector_running, memory_order_relaxed))
		return NULL;
	struct thread_ring *tr = collector_ring_self;
	if (tr)
		return tr;
	if (thread_is_collector)
		return NULL;
	/* No destructor from here (pthread_setspecific is not signal-safe): the sender's thread scan
	 * retires this ring when the thread is gone. */
	return thread_ring_create();
}

int collector_thread_exiting(void)
{
	return thread_exiting;
}

int collector_thread_busy(void)
{
	return collector_in_ring || thread_is_collector;
}

void collector_note_pending_sample(void)
{
	collector_sample_pending = 1;
}

/*
 * Takes a sample deferred by the signal handler, now that the ring is consistent. Its stack shows
 * the collector frames the thread was in, which is where its time went.
 */
static void flush_pending_sample(void)
{
	if (!collector_sample_pending || collector_in_ring || thread_is_collector)
		return;
	collector_sample_pending = 0;
	struct thread_ring *tr = collector_ring_self;
	if (!tr || thread_exiting)
		return;
	int saved_errno = errno;
	collector_in_ring = 1;
	uint64_t pcs[128];
	int depth = sampler_backtrace(pcs, 128);
	struct ring_record *rec =
	    depth > 0 ? ring_reserve(&tr->ring, (size_t)depth * sizeof(uint64_t)) : NULL;
	if (rec) {
		rec->kind = COLLECTOR_REC_SAMPLE;
		rec->flags = 0;
		rec->tid = (uint32_t)tr->tid;
		rec->reserved = 0;
		rec->time_ns = clock_mono_ns();
		rec->value = 0;
		rec->name_ref = NULL;
		rec->domain_ref = NULL;
		memcpy(rec + 1, pcs, (size_t)depth * sizeof(uint64_t));
		ring_commit(&tr->ring, rec);
	}
	collector_in_ring = 0;
	errno = saved_errno;
}

int collector_thread_enter(void)
{
	int was = collector_in_ring;
	collector_in_ring = 1;
	return was;
}

void collector_thread_restore(int was)
{
	collector_in_ring = was;
}

void collector_thread_leave(int was)
{
	collector_in_ring = was;
	if (!was)
		flush_pending_sample();
}

struct thread_ring *collector_thread_ring_slow(void)
{
	/* Not running (detached, or not started): nobody drains, so nothing is written. */
	if (thread_exiting || !atomic_load_explicit(&collector_running, memory_order_acquire))
		return NULL;
	struct thread_ring *tr = collector_ring_self;
	if (tr)
		return tr;
	if (thread_is_collector)
		return NULL;
	int saved_errno = errno;
	collector_in_ring = 1;
	tr = thread_ring_create();
	collector_in_ring = 0;
	errno = saved_errno;
	if (!tr)
		return NULL;
	pthread_setspecific(thread_ring_key, tr);
	/* Name the thread now: it may end before the sender's next scan of /proc. */
	char comm[17] = "";
	prctl(PR_GET_NAME, comm);
	ring_write(tr, 0, WIRE_EV_THREAD_NAME, COLLECTOR_NAME_FROM_KERNEL, 0, 0, NULL, NULL, comm,
	           strlen(comm));
	errno = saved_errno;
	return tr;
}

/*
 * After a record was committed: takes a sample deferred meanwhile, and wakes the sender once per
 * half ring so that a burst does not wait for its next timer. The system call keeps errno.
 */
/* The rare half of emit_written: wakes a sleeping sender once per half ring. Keeps errno. */
static __attribute__((noinline)) void ring_wake_sender(struct thread_ring *tr)
{
	if (!atomic_load_explicit(&tr->wake_sent, memory_order_relaxed) &&
	    ring_refresh_used(&tr->ring) > (tr->ring.mask + 1) / 2) {
		atomic_store_explicit(&tr->wake_sent, 1, memory_order_relaxed);
		int saved_errno = errno;
		collector_wake_sender();
		errno = saved_errno;
	}
}

void collector_after_write_slow(struct thread_ring *tr)
{
	if (collector_sample_pending)
		flush_pending_sample();
	if (ring_used_upper_bound(&tr->ring) > (tr->ring.mask + 1) / 2)
		ring_wake_sender(tr);
}

/* Writes one record into tr; returns 1, or 0 when it did not fit (counted by the ring). */
static int ring_write(struct thread_ring *tr, size_t headroom, uint16_t kind, uint16_t flags,
                      uint32_t subject_tid, uint64_t value, const struct collector_string *name_ref,
                      const struct collector_string *domain_ref, const char *text, size_t text_len)
{
	if (text_len > 4096)
		text_len = 4096;
	if (collector_in_ring) {
		/* A signal handler interrupted the collector on this thread: the ring is mid-write. */
		collector_count_drop(tr);
		return 0;
	}
	emit_enter();
	size_t need = (sizeof(struct ring_record) + text_len + 7) & ~(size_t)7;
	struct ring_record *rec = emit_space(tr, need, headroom);
	if (!rec) {
		emit_leave();
		return 0;
	}
	rec->size = (uint16_t)need;
	rec->kind = kind;
	rec->text_len = (uint16_t)text_len;
	rec->tid = subject_tid ? subject_tid : (uint32_t)tr->tid;
	rec->reserved = 0;
	rec->time_ns = emit_stamp(&flags);
	rec->flags = flags;
	rec->value = value;
	rec->name_ref = name_ref;
	rec->domain_ref = domain_ref;
	if (text_len)
		memcpy(rec + 1, text, text_len);
	ring_commit_bytes(&tr->ring, need);
	emit_leave();
	emit_written(tr);
	return 1;
}

void collector_count_drop(struct thread_ring *tr)
{
	atomic_fetch_add_explicit(&tr->ring.dropped, 1, memory_order_relaxed);
}

void collector_wake_sender(void)
{
	/* Only the 0 -> 1 transition makes a system call; the sender resets the word before sleeping. */
	if (atomic_exchange_explicit(&collector_wake_word, 1, memory_order_release) == 0)
		syscall(SYS_futex, &collector_wake_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

int collector_emit_reserved(size_t headroom, uint16_t kind, uint32_t subject_tid, uint64_t value,
                            const struct collector_string *name_ref,
                            const struct collector_string *domain_ref, const char *text, size_t text_len)
{
	struct thread_ring *tr = collector_thread_ring();
	if (!tr)
		return 0;
	return ring_write(tr, headroom, kind, 0, subject_tid, value, name_ref, domain_ref, text, text_len);
}

/* ---- NVTX fast path ---- */

/* Writes a compact push record; slot names the cache slot (or COLLECTOR_NAME_NONE). */
EMIT_INLINE int nvtx_push_write(struct thread_ring *tr, uint32_t slot, uint32_t category,
                                const struct collector_string *domain,
                                const struct collector_string *name_ref, const char *text, size_t len)
{
	size_t fixed = sizeof(struct collector_rec_nvtx) + (category ? 8 : 0) + (domain ? sizeof domain : 0) +
	               (name_ref ? sizeof name_ref : 0);
	size_t need = (fixed + len + 7) & ~(size_t)7;
	uint8_t *p = emit_space(tr, need, emit_push_headroom(tr));
	if (!p)
		return 0;
	struct collector_rec_nvtx *rec = (struct collector_rec_nvtx *)p;
	uint16_t flags =
	    (uint16_t)(slot | (category ? COLLECTOR_REC_CATEGORY : 0) | (domain ? COLLECTOR_REC_DOMAIN : 0) |
	               (name_ref ? COLLECTOR_REC_NAME_REF : 0));
	rec->time = emit_stamp(&flags);
	rec->size = (uint16_t)need;
	rec->kind = COLLECTOR_REC_NVTX_PUSH;
	rec->text_len = (uint16_t)len;
	rec->flags = flags;
	uint8_t *extra = p + sizeof *rec;
	if (category) {
		uint64_t word = category;
		memcpy(extra, &word, sizeof word);
		extra += sizeof word;
	}
	if (domain) {
		memcpy(extra, &domain, sizeof domain);
		extra += sizeof domain;
	}
	if (name_ref)
		memcpy(extra, &name_ref, sizeof name_ref);
	if (len)
		memcpy(p + fixed, text, len);
	ring_commit_bytes(&tr->ring, need);
	return 1;
}

/* A push of an ASCII message, inside the ring code (collector_in_ring set): the cached case (when
 * emit_push_cached could not take it: a category, a domain, a look at the consumer needed) and the
 * rest. */
static int nvtx_push_general(struct thread_ring *tr, const char *msg, uint32_t category,
                             const struct collector_string *domain)
{
	if (!msg)
		return nvtx_push_write(tr, COLLECTOR_NAME_NONE, category, domain, NULL, NULL, 0);
	unsigned index = emit_name_slot(msg);
	struct collector_name_slot *slot = &tr->names[index];
	uint32_t epoch = atomic_load_explicit(&collector_names_epoch, memory_order_relaxed);
	if (slot->ptr == msg && slot->epoch == epoch && emit_name_matches(slot, msg))
		return nvtx_push_write(tr, index, category, domain, NULL, NULL, 0);
	size_t len = strnlen(msg, 4096);
	if (len > COLLECTOR_NAME_MAX)
		return nvtx_push_write(tr, COLLECTOR_NAME_NONE, category, domain, NULL, msg, len);
	/* The sender maps the slot to this text from this record on; until the copy is complete
	 * nothing may match the slot. */
	slot->ptr = NULL;
	if (!nvtx_push_write(tr, index, category, domain, NULL, msg, len))
		return 0;
	memcpy(slot->text, msg, len);
	slot->text[len] = '\0';
	slot->len = (uint32_t)len;
	slot->epoch = epoch;
	slot->ptr = msg;
	return 1;
}

int collector_nvtx_push(struct thread_ring *tr, const char *msg, uint32_t category,
                        const struct collector_string *domain)
{
	if (collector_in_ring) {
		collector_count_drop(tr); /* a signal handler interrupted the collector on this thread */
		return 0;
	}
	emit_enter();
	int ok = nvtx_push_general(tr, msg, category, domain);
	emit_leave();
	if (ok)
		emit_written(tr);
	return ok;
}

int collector_nvtx_push_text(struct thread_ring *tr, const char *text, size_t len, uint32_t category,
                             const struct collector_string *domain, const struct collector_string *name_ref)
{
	if (collector_in_ring) {
		collector_count_drop(tr);
		return 0;
	}
	if (len > 4096)
		len = 4096;
	emit_enter();
	int ok = nvtx_push_write(tr, COLLECTOR_NAME_NONE, category, domain, name_ref, text, len);
	emit_leave();
	if (ok)
		emit_written(tr);
	return ok;
}

int collector_nvtx_pop(struct thread_ring *tr, const struct collector_string *domain)
{
	if (__builtin_expect(collector_in_ring, 0)) {
		collector_count_drop(tr);
		return 0;
	}
	emit_enter();
	size_t need = sizeof(struct collector_rec_nvtx) + (domain ? sizeof domain : 0);
	uint8_t *p = emit_space(tr, need, 0);
	if (!p) {
		emit_leave();
		return 0;
	}
	struct collector_rec_nvtx *rec = (struct collector_rec_nvtx *)p;
	uint16_t flags = domain ? COLLECTOR_REC_DOMAIN : 0;
	rec->time = emit_stamp(&flags);
	rec->size = (uint16_t)need;
	rec->kind = COLLECTOR_REC_NVTX_POP;
	rec->text_len = 0;
	rec->flags = flags;
	if (domain)
		memcpy(p + sizeof *rec, &domain, sizeof domain);
	ring_commit_bytes(&tr->ring, need);
	emit_leave();
	emit_written(tr);
	return 1;
}

int collector_emit_stack(uint16_t kind, uint64_t start_ns, uint64_t end_ns,
                         const struct collector_string *name_ref, const uint64_t *pcs, size_t depth)
{
	struct thread_ring *tr = collector_thread_ring();
	if (!tr)
		return 0;
	if (collector_in_ring) {
		collector_count_drop(tr);
		return 0;
	}
	emit_enter();
	size_t text_len = depth * sizeof(uint64_t);
	size_t need = (sizeof(struct ring_record) + text_len + 7) & ~(size_t)7;
	/* Refused (and counted) when a 16-bit size cannot hold it. */
	struct ring_record *rec = emit_space(tr, need, 0);
	if (!rec) {
		emit_leave();
		return 0;
	}
	rec->size = (uint16_t)need;
	rec->text_len = (uint16_t)text_len;
	rec->kind = kind;
	rec->flags = 0;
	rec->tid = (uint32_t)tr->tid;
	rec->reserved = 0;
	rec->time_ns = start_ns;
	rec->value = end_ns;
	rec->name_ref = name_ref;
	rec->domain_ref = NULL;
	if (depth)
		memcpy(rec + 1, pcs, depth * sizeof(uint64_t));
	ring_commit_bytes(&tr->ring, need);
	emit_leave();
	emit_written(tr);
	return 1;
}

int collector_emit(uint16_t kind, uint32_t subject_tid, uint64_t value,
                   const struct collector_string *name_ref, const struct collector_string *domain_ref,
                   const char *text, size_t text_len)
{
	return collector_emit_reserved(0, kind, subject_tid, value, name_ref, domain_ref, text, text_len);
}

struct collector_string *collector_string_new(const char *text, size_t length)
{
	struct collector_string *s = calloc(1, sizeof *s);
	if (!s)
		return NULL;
	if (length > 4096)
		length = 4096;
	s->text = malloc(length + 1);
	if (!s->text) {
		free(s);
		return NULL;
	}
	memcpy(s->text, text, length);
	s->text[length] = '\0';
	s->length = (uint32_t)length;
	return s;
}

void collector_note_rename(pid_t tid, const char *name)
{
	if (!name || thread_is_collector || !atomic_load_explicit(&collector_running, memory_order_acquire))
		return;
	struct thread_ring *tr = collector_thread_ring();
	if (tr)
		ring_write(tr, 0, WIRE_EV_THREAD_NAME, COLLECTOR_NAME_FROM_KERNEL, (uint32_t)tid, 0, NULL,
		           NULL, name, strnlen(name, 15));
}

/* Creates the key whose destructor retires a thread's ring when the thread ends; 0 or -1. */
int collector_thread_key_create(void)
{
	return pthread_key_create(&thread_ring_key, thread_ring_release) == 0 ? 0 : -1;
}

int collector_thread_own(void)
{
	return thread_is_collector;
}

/*
 * Forked child: the parent's rings are abandoned (their threads are gone here). A child that
 * collects also forgets the forking thread's cached tid, ring and the collector's thread ids.
 */
void collector_rings_after_fork(int collecting)
{
	atomic_store(&collector_rings, NULL);
	collector_ring_self = NULL;
	if (!collecting)
		return;
	thread_tid_self = 0;
	for (size_t i = 0; i < sizeof own_tids / sizeof own_tids[0]; i++)
		atomic_store(&own_tids[i], 0);
	pthread_setspecific(thread_ring_key, NULL);
}

/* ---- fd identity ---- */

struct fd_identity {
	int owned;
	int has_perf_id;
	dev_t dev;
	ino_t ino;
	dev_t rdev;
	mode_t type;      /* S_IFMT bits */
	uint64_t perf_id; /* PERF_EVENT_IOC_ID: perf fds share one anonymous inode */
};

/* Indexed by fd number; grown on the collector's threads only. */
static struct fd_identity *fd_table;
static size_t fd_table_cap;
static pthread_mutex_t fd_table_lock = PTHREAD_MUTEX_INITIALIZER;

/* Reads fd's identity; 0 or -1. The perf id is asked only of a perf fd (has_perf_id set). */
static int fd_identity_read(int fd, struct fd_identity *id, int ask_perf_id)
{
	struct stat st;
	if (fstat(fd, &st) != 0)
		return -1;
	id->dev = st.st_dev;
	id->ino = st.st_ino;
	id->rdev = st.st_rdev;
	id->type = st.st_mode & S_IFMT;
	id->has_perf_id = 0;
	if (ask_perf_id && ioctl(fd, PERF_EVENT_IOC_ID, &id->perf_id) == 0)
		id->has_perf_id = 1;
	return 0;
}

int collector_fd_own(int fd)
{
	if (fd < 0)
		return -1;
	struct fd_identity id;
	/* Only a freshly created fd of ours is asked for a perf id: an ioctl on anything else
	 * could mean something to its driver. */
	int anon = 0;
	struct stat st;
	if (fstat(fd, &st) == 0 && (st.st_mode & S_IFMT) == 0)
		anon = 1; /* anonymous inodes (perf, eventfd) have no file type */
	if (fd_identity_read(fd, &id, anon) != 0) {
		close(fd);
		return -1;
	}
	pthread_mutex_lock(&fd_table_lock);
	if ((size_t)fd >= fd_table_cap) {
		size_t cap = fd_table_cap ? fd_table_cap : 64;
		while (cap <= (size_t)fd)
			cap *= 2;
		struct fd_identity *t = realloc(fd_table, cap * sizeof *t);
		if (!t) {
			pthread_mutex_unlock(&fd_table_lock);
			close(fd);
			return -1;
		}
		memset(t + fd_table_cap, 0, (cap - fd_table_cap) * sizeof *t);
		fd_table = t;
		fd_table_cap = cap;
	}
	id.owned = 1;
	fd_table[fd] = id;
	pthread_mutex_unlock(&fd_table_lock);
	return fd;
}

int collector_fd_check(int fd)
{
	if (fd < 0)
		return 0;
	pthread_mutex_lock(&fd_table_lock);
	int ok = 0;
	if ((size_t)fd < fd_table_cap && fd_table[fd].owned) {
		struct fd_identity *want = &fd_table[fd], now;
		/* The perf id is asked only once fstat shows the same anonymous inode: a perf fd. */
		ok = fd_identity_read(fd, &now, 0) == 0 && now.dev == want->dev && now.ino == want->ino &&
		     now.rdev == want->rdev && now.type == want->type;
		if (ok && want->has_perf_id)
			ok = ioctl(fd, PERF_EVENT_IOC_ID, &now.perf_id) == 0 && now.perf_id == want->perf_id;
		if (!ok)
			want->owned = 0; /* the number is the program's now */
	}
	pthread_mutex_unlock(&fd_table_lock);
	return ok;
}

int collector_fd_close(int fd)
{
	if (!collector_fd_check(fd))
		return -1;
	collector_fd_forget(fd);
	close(fd);
	return 0;
}

void collector_fd_forget(int fd)
{
	pthread_mutex_lock(&fd_table_lock);
	if (fd >= 0 && (size_t)fd < fd_table_cap)
		fd_table[fd].owned = 0;
	pthread_mutex_unlock(&fd_table_lock);
}

/* Forked child: the forking thread may have held the table's lock; nobody else runs here now. */
void collector_fd_after_fork(void)
{
	pthread_mutex_init(&fd_table_lock, NULL);
}

/*
 * Configuration: the environment (launch mode) or, after an attach, the rendezvous file the CLI
 * wrote for this pid (setenv in a running multi-threaded program is unsafe, so it is parsed here).
 */
static char rendezvous[4096];

static const char *config_value(const char *name)
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
static int config_read_rendezvous(void)
{
	char base[64], name[64];
	snprintf(base, sizeof base, "/tmp/cuscope-%u", (unsigned)getuid());
	snprintf(name, sizeof name, "attach-%d.env", (int)getpid());
	rendezvous[0] = '\0';
	/* Another user may have made /tmp/cuscope-UID first: only a private one of ours is read. */
	int dir = safefs_open_dir(base, getuid(), SAFEFS_PRIVATE);
	if (dir < 0)
		return 0;
	int fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		close(dir);
		return 0;
	}
	ssize_t n = read(fd, rendezvous, sizeof rendezvous - 1);
	close(fd);
	unlinkat(dir, name, 0);
	close(dir);
	rendezvous[n > 0 ? n : 0] = '\0';
	return n > 0;
}

static size_t env_size(const char *name, size_t fallback, size_t unit, size_t min, size_t max)
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

static size_t round_pow2(size_t n)
{
	size_t p = 4096;
	while (p < n)
		p <<= 1;
	return p;
}

/* Child side of fork: the parent's rings and sender thread do not exist here. */
static void collector_atfork_child(void)
{
	collector_fd_after_fork();
	if (!atomic_load(&collector_running))
		return;
	atomic_store(&collector_running, 0);
	if (!follow_fork_children) {
		/* --follow leaves this copy out: inert, like a process never started. */
		sender_forget_after_fork();
		source_each_after_fork();
		collector_rings_after_fork(0);
		return;
	}
	/* Parent's rings are abandoned (their threads are gone); this thread starts a fresh one. */
	collector_rings_after_fork(1);
	sender_forget_after_fork();
	source_each_after_fork();
	collector_pid = getpid();
	if (sender_start() == 0)
		atomic_store_explicit(&collector_running, 1, memory_order_release);
}

static int cuda_injection_called;

/* dl_iterate_phdr visitor: notes whether a CUDA runtime or driver library is mapped. */
static int find_cuda_library(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	const char *slash = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;
	const char *base = slash ? slash + 1 : info->dlpi_name;
	if (base && (strncmp(base, "libcudart.so", 12) == 0 || strncmp(base, "libcuda.so", 10) == 0)) {
		*(int *)data = 1;
		return 1;
	}
	return 0;
}

static void collector_at_exit(void)
{
	if (!atomic_load(&collector_running) || collector_pid != getpid())
		return;
	static _Atomic int done;
	if (atomic_exchange(&done, 1))
		return;
	/* A CUDA program whose driver never initialised (no GPU, no driver) would otherwise just show
	 * no GPU lanes without saying why. */
	int cuda_loaded = 0;
	if (!cuda_injection_called && !getenv("CUSCOPE_NO_GPU")) {
		dl_iterate_phdr(find_cuda_library, &cuda_loaded);
		if (cuda_loaded)
			collector_notice(
			    WIRE_NOTICE_WARNING,
			    "GPU tracing: the program loaded CUDA but the CUDA driver never initialised "
			    "(no GPU or no driver?); no GPU lanes");
	}
	source_each_exit();
	if (!sender_exit_early())
		sender_stop();
	atomic_store(&collector_running, 0);
}

/* How long _exit waits for the sender's final counts at most. */
#define COLLECTOR_EXIT_WAIT_NS 300000000ull

/* libc's _exit, resolved before the program runs: _exit may be called from a signal handler or a
 * vfork child, where dlsym (the loader's lock) must not be. */
static void (*real_exit)(int);

__attribute__((constructor)) static void collector_exit_resolve(void)
{
	real_exit = (void (*)(int))dlsym(RTLD_NEXT, "_exit");
}

/*
 * _exit's share of the exit path. Programs call _exit from signal handlers (which may have
 * interrupted a CUDA call holding CUPTI's lock, or the loader) and from vfork children (sharing
 * our memory), and shells (dash) end this way. So: nothing at all in another process (a vfork
 * child has another pid; a forked child that collects has its own collector_pid), no CUPTI
 * flush, no loader call, no join; the sender writes its final counts from what the rings hold,
 * waited for at most COLLECTOR_EXIT_WAIT_NS. A handler cannot be told from the program's thread
 * cheaply, so it gets the same bounded path.
 */
static void collector_at_quick_exit(void)
{
	if (!atomic_load(&collector_running) || collector_pid != (pid_t)syscall(SYS_getpid) ||
	    collector_thread_own())
		return;
	static _Atomic int done;
	if (atomic_exchange(&done, 1))
		return;
	if (cupti_running())
		collector_notice(WIRE_NOTICE_WARNING,
		                 "the program ended through _exit: GPU activity CUPTI had not handed over "
		                 "yet is missing");
	sender_stop_within(COLLECTOR_EXIT_WAIT_NS);
	atomic_store(&collector_running, 0);
}

/* _exit skips atexit handlers: the final counts are still sent, within a bound. */
COLLECTOR_EXPORT void _exit(int status)
{
	collector_at_quick_exit();
	if (real_exit)
		real_exit(status);
	syscall(SYS_exit_group, status);
	__builtin_unreachable();
}

static _Atomic int attach_notice_given;

/* Runs when the library is loaded (LD_PRELOAD, NVTX/CUDA injection dlopen, or attach). */
/* Reads the configuration (environment or rendezvous) that every start shares. */
static void config_load(void)
{
	/* 2 MiB: 65 ms of NVTX pairs at 1 M/s (16 bytes a record), the time the sender may be kept off
	 * a CPU on a loaded machine before pushes are refused; pages are touched only as the ring
	 * fills, so threads that record little cost little. */
	collector_config.ring_bytes =
	    round_pow2(env_size("CUSCOPE_RING_KB", 2048 * 1024, 1024, 4096, 1u << 28));
	collector_config.buffer_bytes =
	    env_size(SESSION_ENV_BUFFER_MB, 64u << 20, 1u << 20, 1u << 20, (size_t)16 << 30);
	collector_config.wait_viewer_ms = (uint32_t)env_size(SESSION_ENV_WAIT_VIEWER_MS, 0, 1, 0, 600000);
	collector_config.max_strings = (uint32_t)env_size("CUSCOPE_MAX_STRINGS", 65536, 1, 16, 1u << 24);
	collector_config.gpu_buffer_bytes =
	    env_size("CUSCOPE_GPU_BUFFER_MB", 256u << 20, 1u << 20, 16u << 20, (size_t)16 << 30);
	const char *osrt_env = config_value("CUSCOPE_OSRT_THRESHOLD_US");
	/* The fallback is already in ns; a given value is in µs. */
	collector_config.osrt_threshold_ns =
	    env_size("CUSCOPE_OSRT_THRESHOLD_US", 100000, 1000, 0, (size_t)3600 * 1000000000ull);
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
	        : (uint64_t)env_size("CUSCOPE_LAZY_START_MS", 10, 1, 0, 60000) * 1000000ull;
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
	const char *hz = config_value("CUSCOPE_SAMPLE_HZ");
	collector_config.sample_hz = hz && *hz ? (unsigned)strtoul(hz, NULL, 10) : 1000;
}

void collector_begin(void)
{
	/* Before the sender's first thread scan, which creates each thread's sampling event. */
	source_each_begin();
}

/* Starts the sender (lazily: see sender.c); 0 or -1. */
static int collector_start(void)
{
	/* The sampling signal is claimed now; sampling starts when the sender's lazy start ends. */
	source_each_init(&collector_config);
	if (sender_start() != 0) {
		source_each_stop();
		return -1;
	}
	/* A new string table: names the threads cached for the previous one are sent again. */
	atomic_fetch_add_explicit(&collector_names_epoch, 1, memory_order_relaxed);
	atomic_store_explicit(&collector_running, 1, memory_order_release);
	return 0;
}

/* Armed mode (CUSCOPE_ARM=1 with the collector preloaded): a session of our own to attach to later. */
static const char *collector_armed_session(void)
{
	static char dir[4096];
	const char *cause;
	const char *arm = getenv("CUSCOPE_ARM");
	if (!arm || strcmp(arm, "1") != 0 || session_create(dir, sizeof dir, &cause) != 0)
		return NULL;
	return dir;
}

/*
 * --follow (CUSCOPE_FOLLOW, set by the launcher with CUSCOPE_LAUNCHED_PID): whether this process
 * collects. The launched process always does, whatever it execs; with "none" nobody else; with a
 * list of names, a descendant whose executable or argv[0] has one of these base names. A process
 * not followed stays inert (no thread, socket, ring or timer) but keeps the environment, so its
 * own children decide for themselves.
 */
static const char *follow_argv0; /* from the constructor's arguments */

/* 1 if name is one of the comma-separated names in list. */
static int follow_list_has(const char *list, const char *name)
{
	size_t n = strlen(name);
	for (const char *p = list; *p;) {
		size_t len = strcspn(p, ",");
		if (n && len == n && memcmp(p, name, n) == 0)
			return 1;
		p += len + (p[len] == ',');
	}
	return 0;
}

static const char *follow_basename(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

/* Decides whether this process collects, and whether its forked copies will (same program). */
static int collector_followed(void)
{
	const char *follow = getenv("CUSCOPE_FOLLOW");
	if (!follow || !*follow || strcmp(follow, "all") == 0)
		return 1;
	int ours = 0;
	if (strcmp(follow, "none") != 0) {
		char exe[4096];
		ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
		if (n > 0) {
			exe[n] = '\0';
			ours = follow_list_has(follow, follow_basename(exe));
		}
		if (!ours && follow_argv0)
			ours = follow_list_has(follow, follow_basename(follow_argv0));
	}
	follow_fork_children = ours;
	const char *launched = getenv("CUSCOPE_LAUNCHED_PID");
	return ours || (launched && strtol(launched, NULL, 10) == (long)getpid());
}

/* Runs when the library is loaded (LD_PRELOAD, NVTX/CUDA injection dlopen, or attach). */
static void collector_init(void)
{
	static int initialised;
	if (initialised)
		return;
	initialised = 1;
	int attached = 0;
	const char *session = getenv(SESSION_ENV);
	if (session && *session && !collector_followed())
		return; /* inert: --follow leaves this process out */
	if (!session || !*session) {
		attached = config_read_rendezvous();
		session = attached ? config_value(SESSION_ENV) : collector_armed_session();
	}
	/* Without a session the library stays inert: loaded but costing nothing. */
	if (!session || !*session || strlen(session) >= sizeof collector_config.session_dir)
		return;
	strcpy(collector_config.session_dir, session);
	collector_config.attached = attached;
	if (attached) {
		atomic_store(&attach_notice_given, 1);
		collector_notice(
		    WIRE_NOTICE_WARNING,
		    "attached to a running process: NVTX ranges of code that already used NVTX, and "
		    "blocking-call tracing, are not available");
	}
	if (collector_thread_key_create() != 0)
		return;
	config_load();
	collector_pid = getpid();
	pthread_atfork(NULL, NULL, collector_atfork_child);
	if (collector_start() != 0)
		return;
	atexit(collector_at_exit);
}

/* glibc passes the program's arguments to constructors: argv[0] for --follow. */
__attribute__((constructor)) static void collector_constructor(int argc, char **argv)
{
	if (argc > 0 && argv && argv[0])
		follow_argv0 = argv[0];
	collector_init();
}

/*
 * Called by `cuscope attach` (through ptrace) when the library is already loaded but inert after a
 * detach: reads the new rendezvous and starts collecting again. Returns 1 when running.
 */
COLLECTOR_EXPORT int cuscope_attach_start(void)
{
	if (!config_read_rendezvous())
		return 0;
	const char *session = config_value(SESSION_ENV);
	if (!session || strlen(session) >= sizeof collector_config.session_dir)
		return 0;
	/* Already collecting, but the viewer did not find the socket (the program was started with
	 * another session root or runtime directory): the sender moves it to the viewer's session,
	 * unless a viewer is connected now. */
	if (atomic_load(&collector_running))
		return sender_move_session(session) == 0;
	strcpy(collector_config.session_dir, session);
	collector_config.attached = 1;
	if (!atomic_load(&attach_notice_given)) {
		atomic_store(&attach_notice_given, 1);
		collector_notice(
		    WIRE_NOTICE_WARNING,
		    "attached to a running process: NVTX ranges of code that already used NVTX, and "
		    "blocking-call tracing, are not available");
	}
	if (collector_pid == 0) {
		collector_thread_key_create();
		pthread_atfork(NULL, NULL, collector_atfork_child);
		atexit(collector_at_exit);
	}
	collector_pid = getpid();
	config_load();
	return collector_start() == 0;
}

/* The sender's detach in attach mode: the viewer left, so collection stops and the library rests. */
void collector_detached(void)
{
	atomic_store_explicit(&collector_running, 0, memory_order_release);
}

/* NVTX entry point, found through NVTX_INJECTION64_PATH. */
COLLECTOR_EXPORT int InitializeInjectionNvtx2(void *get_export_table)
{
	collector_init();
	if (!atomic_load(&collector_running) || getenv("CUSCOPE_NO_NVTX"))
		return 0; /* NVTX then uses its no-op implementation */
	return nvtx_inject(get_export_table);
}

/*
 * CUDA driver entry point, found through CUDA_INJECTION64_PATH: called at the first CUDA call.
 * GPU tracing failing (no CUPTI, another subscriber) is reported through a notice; the driver is
 * always told injection succeeded so the application runs unchanged.
 */
COLLECTOR_EXPORT int InitializeInjection(void)
{
	collector_init();
	cuda_injection_called = 1;
	if (atomic_load(&collector_running) && !getenv("CUSCOPE_NO_GPU")) {
		cupti_start();
		sender_first_event(); /* GPU records are events: the sender starts now */
	}
	return 1;
}

/*
 * Thread renames, seen the moment they happen (LD_PRELOAD interposition): a short-lived thread
 * may be renamed and gone between two scans of /proc. The real function always runs first.
 */
COLLECTOR_EXPORT int pthread_setname_np(pthread_t thread, const char *name)
{
	static int (*real)(pthread_t, const char *);
	if (!real)
		real = (int (*)(pthread_t, const char *))dlsym(RTLD_NEXT, "pthread_setname_np");
	if (!real)
		return ENOSYS;
	int rc = real(thread, name);
	/* Another thread's tid is not portably known; the sender's scan picks that rename up. */
	if (rc == 0 && pthread_equal(thread, pthread_self()))
		collector_note_rename(collector_gettid(), name);
	return rc;
}

COLLECTOR_EXPORT int prctl(int option, ...)
{
	static int (*real)(int, ...);
	va_list ap;
	va_start(ap, option);
	unsigned long a2 = va_arg(ap, unsigned long), a3 = va_arg(ap, unsigned long);
	unsigned long a4 = va_arg(ap, unsigned long), a5 = va_arg(ap, unsigned long);
	va_end(ap);
	if (!real)
		real = (int (*)(int, ...))dlsym(RTLD_NEXT, "prctl");
	if (!real)
		return (int)syscall(SYS_prctl, option, a2, a3, a4, a5);
	int rc = real(option, a2, a3, a4, a5);
	if (rc == 0 && option == PR_SET_NAME)
		collector_note_rename(collector_gettid(), (const char *)a2);
	return rc;
}
