/*
 * The per-thread emit path: each application thread's ring (made on first use, retired at the
 * thread's exit), the collector's own threads, records written without blocking or a system call,
 * the NVTX fast path's general cases, and the sender's wake-up.
 */
#include "emit.h"
#include "sender.h"
#include "cuscope/wire.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <time.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Head of the list of thread rings: pushed by application threads, unlinked by the sender only. */
static struct thread_ring *_Atomic collector_rings;
/* Rings that could not be made (no memory), counted on application threads. */
static _Atomic uint64_t collector_lost_no_memory;
_Atomic uint32_t collector_names_epoch;

/* initial-exec: these are read in signal handlers, where lazy TLS allocation must not happen. */
#define COLLECTOR_TLS __thread __attribute__((tls_model("initial-exec")))
COLLECTOR_TLS struct thread_ring *collector_ring_self;
static COLLECTOR_TLS pid_t thread_tid_self;
COLLECTOR_TLS volatile sig_atomic_t collector_in_ring;

static pthread_key_t thread_ring_key;

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

static int emit_ring_write(struct thread_ring *tr, size_t headroom, uint16_t kind, uint16_t flags,
                           uint32_t subject_tid, uint64_t value, const struct collector_string *name_ref,
                           const struct collector_string *domain_ref, const char *text, size_t text_len);

/* pthread key destructor: the thread is ending; the sender frees its ring after draining it. */
static COLLECTOR_TLS int thread_exiting;

static void emit_ring_release(void *arg)
{
	struct thread_ring *tr = arg;
	/* From here on this thread writes nothing: the sender may unmap the ring once it sees dead. */
	thread_exiting = 1;
	collector_ring_self = NULL;
	/* The exact end of a traced thread, with its final counts; untraced threads are found gone by
	 * the sender's scan. */
	struct collector_thread_final final = {0, 0, 0};
	struct timespec cpu;
	struct rusage ru;
	int saved_errno = errno;
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu) == 0)
		final.cpu_ns = (uint64_t)cpu.tv_sec * 1000000000ull + (uint64_t)cpu.tv_nsec;
	if (getrusage(RUSAGE_THREAD, &ru) == 0) {
		final.switches = (uint64_t)ru.ru_nvcsw + (uint64_t)ru.ru_nivcsw;
		final.faults = (uint64_t)ru.ru_minflt + (uint64_t)ru.ru_majflt;
	}
	errno = saved_errno;
	emit_ring_write(tr, 0, WIRE_EV_THREAD_EXIT, 0, 0, 0, NULL, NULL, (const char *)&final, sizeof final);
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
static struct thread_ring *emit_ring_create(void)
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
	return emit_ring_create();
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
static void emit_pending_sample(void)
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
	/* The sampler's unwinder as a service (blocking-call stacks too), not a per-source hook. */
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
		emit_pending_sample();
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
	tr = emit_ring_create();
	collector_in_ring = 0;
	errno = saved_errno;
	if (!tr)
		return NULL;
	pthread_setspecific(thread_ring_key, tr);
	/* Name the thread now: it may end before the sender's next scan of /proc. */
	char comm[17] = "";
	prctl(PR_GET_NAME, comm);
	emit_ring_write(tr, 0, WIRE_EV_THREAD_NAME, COLLECTOR_NAME_FROM_KERNEL, 0, 0, NULL, NULL, comm,
	                strlen(comm));
	errno = saved_errno;
	return tr;
}

/*
 * After a record was committed: takes a sample deferred meanwhile, and wakes the sender once per
 * half ring so that a burst does not wait for its next timer. The system call keeps errno.
 */
/* The rare half of emit_written: wakes a sleeping sender once per half ring. Keeps errno. */
static __attribute__((noinline)) void emit_wake_sender(struct thread_ring *tr)
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
		emit_pending_sample();
	if (ring_used_upper_bound(&tr->ring) > (tr->ring.mask + 1) / 2)
		emit_wake_sender(tr);
}

/* Writes one record into tr; returns 1, or 0 when it did not fit (counted by the ring). */
static int emit_ring_write(struct thread_ring *tr, size_t headroom, uint16_t kind, uint16_t flags,
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

int collector_emit_reserved(size_t headroom, uint16_t kind, uint32_t subject_tid, uint64_t value,
                            const struct collector_string *name_ref,
                            const struct collector_string *domain_ref, const char *text, size_t text_len)
{
	struct thread_ring *tr = collector_thread_ring();
	if (!tr)
		return 0;
	return emit_ring_write(tr, headroom, kind, 0, subject_tid, value, name_ref, domain_ref, text,
	                       text_len);
}

/* ---- NVTX fast path ---- */

/* Writes a compact push record; slot names the cache slot (or COLLECTOR_NAME_NONE). */
EMIT_INLINE int emit_nvtx_push_write(struct thread_ring *tr, uint32_t slot, uint32_t category,
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
static int emit_nvtx_push_general(struct thread_ring *tr, const char *msg, uint32_t category,
                                  const struct collector_string *domain)
{
	if (!msg)
		return emit_nvtx_push_write(tr, COLLECTOR_NAME_NONE, category, domain, NULL, NULL, 0);
	unsigned index = emit_name_slot(msg);
	struct collector_name_slot *slot = &tr->names[index];
	uint32_t epoch = atomic_load_explicit(&collector_names_epoch, memory_order_relaxed);
	if (slot->ptr == msg && slot->epoch == epoch && emit_name_matches(slot, msg))
		return emit_nvtx_push_write(tr, index, category, domain, NULL, NULL, 0);
	size_t len = strnlen(msg, 4096);
	if (len > COLLECTOR_NAME_MAX)
		return emit_nvtx_push_write(tr, COLLECTOR_NAME_NONE, category, domain, NULL, msg, len);
	/* The sender maps the slot to this text from this record on; until the copy is complete
	 * nothing may match the slot. */
	slot->ptr = NULL;
	if (!emit_nvtx_push_write(tr, index, category, domain, NULL, msg, len))
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
	int ok = emit_nvtx_push_general(tr, msg, category, domain);
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
	int ok = emit_nvtx_push_write(tr, COLLECTOR_NAME_NONE, category, domain, name_ref, text, len);
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

int collector_emit_cuda_api(uint64_t start, uint16_t start_flags, uint32_t correlation_id, uint16_t cbid,
                            uint32_t domain)
{
	struct thread_ring *tr = collector_thread_ring();
	if (!tr)
		return 0;
	/* The exit in the entry's clock: the sender picks ticks or ns once, at start-up, which may
	 * fall inside a call (CUDA's first call, which creates the context, takes that long). */
	uint16_t flags = start_flags & COLLECTOR_REC_TICKS;
	uint64_t end = flags ? clock_ticks() : clock_mono_ns();
	if (collector_in_ring) {
		collector_count_drop(tr);
		return 0;
	}
	emit_enter();
	struct collector_rec_cuda_api *rec = emit_space(tr, sizeof *rec, 0);
	if (!rec) {
		emit_leave();
		return 0;
	}
	rec->size = sizeof *rec;
	rec->kind = COLLECTOR_REC_CUDA_API;
	rec->cbid = cbid;
	rec->flags = flags;
	rec->start = start;
	rec->end = end;
	rec->correlation_id = correlation_id;
	rec->domain = domain;
	ring_commit_bytes(&tr->ring, sizeof *rec);
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
		emit_ring_write(tr, 0, WIRE_EV_THREAD_NAME, COLLECTOR_NAME_FROM_KERNEL, (uint32_t)tid, 0,
		                NULL, NULL, name, strnlen(name, 15));
}

/* Creates the key whose destructor retires a thread's ring when the thread ends; 0 or -1. */
int collector_thread_key_create(void)
{
	return pthread_key_create(&thread_ring_key, emit_ring_release) == 0 ? 0 : -1;
}

int collector_thread_own(void)
{
	return thread_is_collector;
}

/*
 * Forked child: the parent's rings are abandoned (their threads are gone here). A child that
 * collects also forgets the forking thread's cached tid, ring and the collector's thread ids.
 */
struct thread_ring *collector_rings_head(void)
{
	return atomic_load_explicit(&collector_rings, memory_order_acquire);
}

struct thread_ring *collector_rings_unlink(struct thread_ring *prev, struct thread_ring *tr)
{
	struct thread_ring *next = tr->next;
	if (prev) {
		prev->next = next;
		return prev;
	}
	struct thread_ring *expected = tr;
	if (atomic_compare_exchange_strong(&collector_rings, &expected, next))
		return NULL;
	/* New rings were pushed in front: find tr's predecessor among them. */
	struct thread_ring *p = expected;
	while (p->next != tr)
		p = p->next;
	p->next = next;
	return p;
}

uint64_t collector_rings_lost_no_memory(void)
{
	return atomic_load(&collector_lost_no_memory);
}

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
