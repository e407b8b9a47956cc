/*
 * The collector's sender thread: drains every thread's ring, interns strings, tracks the thread
 * list (/proc/self/task, following renames), keeps a bounded queue of encoded frames that is the
 * flight recorder while no viewer is connected, and writes it to the viewer's socket without ever
 * blocking an application thread.
 */
#include "cuscope/clock.h"
#include "cuscope/collector.h"
#include "cuscope/session.h"
#include "cuscope/strtab.h"
#include "cuscope/wire.h"
#include "sendq.h"
#include "source.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define GPU_EVENTS_PER_FRAME 512
#define MAX_GPU_DEVICES      64
#define MAX_GPU_CONTEXTS     256
#define MAX_NOTICES          8
#define EVENTS_PER_FRAME     2048
#define THREAD_SCAN_NS       200000000ull
#define LOSS_REPORT_NS       250000000ull
#define COST_REPORT_NS       1000000000ull
/*
 * Start-up is lazy: the sender thread sleeps until the process has lived
 * collector_config.lazy_start_ns or made its first ring (an event), and only then makes its
 * socket, scans /proc, starts sampling and counters. A child that ends before (a shell loop of
 * /bin/true) writes its final record from its exiting thread (sender_exit_early) and pays for
 * none of that.
 */

enum sender_state { SENDER_IDLE, SENDER_LAZY, SENDER_RUNNING, SENDER_ENDED_EARLY };
static _Atomic int sender_state;
static _Atomic int first_event; /* the process made an event: the lazy wait ends */

struct known_thread {
	pid_t tid;
	char comm[32];      /* kernel thread name */
	char nvtx_name[64]; /* name given through nvtxNameOsThread, wins over comm */
	uint64_t first_ns;
	int seen;    /* found in the latest scan */
	int exited;  /* its exit was reported by the thread itself; forget it once /proc does */
	int sampled; /* the sampler and counters know this thread */
};

struct sender {
	pthread_t thread;
	int started;
	pid_t tid;
	int listen_fd;
	int viewer_fd;
	int ever_connected;
	unsigned listen_failures; /* re-creations of a lost listening socket that failed */
	uint64_t listen_retry_ns; /* next attempt to re-create it */
	_Atomic int stop;
	char socket_path[4096 + 32]; /* a session path may exceed sun_path: bound through a dir fd */

	struct strtab strings;
	uint32_t generation;

	struct sendq q;

	struct wire_event events[EVENTS_PER_FRAME];
	size_t event_count;
	struct wire_gpu_event gpu_events[GPU_EVENTS_PER_FRAME];
	size_t gpu_event_count;
	uint8_t stacks[64 * 1024]; /* pending STACKS frame payload */
	size_t stacks_len;
	uint64_t stacks_count;
	/* Kept for viewers that connect later: they need these to label GPU lanes. */
	struct wire_gpu_device devices[MAX_GPU_DEVICES];
	size_t device_count;
	struct wire_gpu_event contexts[MAX_GPU_CONTEXTS];
	size_t context_count;
	unsigned notices_sent; /* notices already queued for the current viewer */

	struct known_thread *threads;
	size_t thread_count, thread_cap;

	uint64_t lost[WIRE_LOSS_CAUSE_MAX];
	uint64_t ring_drops_freed; /* drops of rings already freed */
	uint64_t last_loss_total;
	uint64_t last_scan_ns, last_loss_ns, last_cost_ns;
	uint64_t start_mono_ns;
	int tracking; /* the sampler and counters follow the threads scans find */
};
static struct sender snd = {.listen_fd = -1, .viewer_fd = -1};
/* Futex word: 1 once the sender thread has finished its final flush (waited on by _exit). */
static _Atomic uint32_t sender_done;
/* How long the final flush keeps sending to a slow viewer before the rest goes to PID.final. */
static _Atomic uint64_t final_send_ns = 2000000000ull;

/* A session directory an attach asked for (see sender_move_session), taken by the sender. */
static char move_dir[256];
static _Atomic int move_pending;
static _Atomic int viewer_connected;

/* ---- frames ---- */

/*
 * Queues one batch frame of `count` records under the queue bound: a connected viewer that is
 * behind loses the new records (rather than the queue growing); without a viewer the oldest
 * history is evicted instead (the flight-recorder window). Every loss is counted.
 */
static void frames_batch(struct sender *s, uint32_t type, const void *data, size_t len, uint64_t count)
{
	sendq_push_batch(&s->q, s->viewer_fd >= 0, type, data, len, count, s->lost);
}

static void frames_flush_events(struct sender *s)
{
	size_t count = s->event_count;
	s->event_count = 0;
	if (count)
		frames_batch(s, WIRE_FRAME_EVENTS, s->events, count * sizeof(struct wire_event), count);
}

static void frames_flush_gpu(struct sender *s)
{
	size_t count = s->gpu_event_count;
	s->gpu_event_count = 0;
	if (count)
		frames_batch(s, WIRE_FRAME_GPU, s->gpu_events, count * sizeof(struct wire_gpu_event), count);
}

static uint32_t frames_intern(struct sender *s, const char *text, size_t len);
int viewer_move_session(const char *dir);
int viewer_move_pending(void);
void viewer_close(struct sender *s);
void viewer_forget_after_fork(struct sender *s);

static void frames_flush_stacks(struct sender *s)
{
	size_t len = s->stacks_len;
	uint64_t count = s->stacks_count;
	s->stacks_len = 0;
	s->stacks_count = 0;
	if (len)
		frames_batch(s, WIRE_FRAME_STACKS, s->stacks, len, count);
}

/* Symbolises a record's return addresses into a STACKS record. */
static void frames_push_stack(struct sender *s, uint16_t kind, uint64_t time_ns, uint32_t tid,
                              const uint64_t *pcs, size_t depth)
{
	if (depth > WIRE_STACK_MAX_DEPTH)
		depth = WIRE_STACK_MAX_DEPTH;
	size_t need = sizeof(struct wire_stack) + depth * sizeof(uint32_t);
	if (s->stacks_len + need > sizeof s->stacks)
		frames_flush_stacks(s);
	uint32_t ids[WIRE_STACK_MAX_DEPTH];
	/* The first address of a sample is where the thread was (not a return address). */
	for (size_t i = 0; i < depth; i++)
		ids[i] = symbolize_pc(pcs[i], kind == WIRE_STACK_OSRT || i > 0);
	struct wire_stack st = {time_ns, tid, kind, (uint16_t)depth};
	memcpy(s->stacks + s->stacks_len, &st, sizeof st);
	memcpy(s->stacks + s->stacks_len + sizeof st, ids, depth * sizeof(uint32_t));
	s->stacks_len += need;
	s->stacks_count++;
}

void sender_counter(uint64_t time_ns, pid_t tid, const char *event, uint64_t value)
{
	struct sender *s = &snd;
	struct wire_counter c = {time_ns, value, (uint32_t)tid, frames_intern(s, event, strlen(event))};
	frames_flush_events(s);
	if (sendq_append(&s->q, WIRE_FRAME_COUNTERS, &c, sizeof c, NULL, 0, 0) != 0)
		s->lost[WIRE_LOSS_NO_MEMORY]++;
	else if (s->viewer_fd < 0)
		sendq_trim(&s->q, s->lost);
}

void sender_gpu_event(const struct wire_gpu_event *ev)
{
	struct sender *s = &snd;
	s->gpu_events[s->gpu_event_count++] = *ev;
	if (s->gpu_event_count == GPU_EVENTS_PER_FRAME)
		frames_flush_gpu(s);
}

void sender_gpu_context(const struct wire_gpu_event *ev)
{
	struct sender *s = &snd;
	if (s->context_count < MAX_GPU_CONTEXTS)
		s->contexts[s->context_count++] = *ev;
	sender_gpu_event(ev);
}

void sender_gpu_device(const struct wire_gpu_device *dev)
{
	struct sender *s = &snd;
	if (s->device_count < MAX_GPU_DEVICES)
		s->devices[s->device_count++] = *dev;
	frames_flush_gpu(s);
	if (sendq_append(&s->q, WIRE_FRAME_GPU_DEVICE, dev, sizeof *dev, NULL, 0, 0) != 0)
		s->lost[WIRE_LOSS_NO_MEMORY]++;
}

uint32_t sender_string_generation(void)
{
	struct sender *s = &snd;
	return s->generation;
}

static void frames_push_event(struct sender *s, const struct wire_event *ev)
{
	/* NVTX calls are priced per event (the NVTX cost entry). */
	if (ev->kind >= WIRE_EV_NVTX_PUSH && ev->kind <= WIRE_EV_NVTX_CATEGORY)
		source_count_nvtx(1);
	s->events[s->event_count++] = *ev;
	if (s->event_count == EVENTS_PER_FRAME)
		frames_flush_events(s);
}

/* ---- strings ---- */

/* Announces a string frame; only needed while a viewer is connected (a new viewer gets the table). */
static void frames_announce_string(struct sender *s, uint32_t id)
{
	if (s->viewer_fd < 0)
		return;
	size_t len;
	const char *text = strtab_text(&s->strings, id, &len);
	struct wire_string ws = {id, (uint32_t)len};
	/* Batched events may refer to earlier strings only, so ordering is kept by flushing first. */
	frames_flush_events(s);
	if (sendq_append(&s->q, WIRE_FRAME_STRING, &ws, sizeof ws, text, len, 0) != 0)
		s->lost[WIRE_LOSS_NO_MEMORY]++;
}

uint32_t sender_intern(const char *text, size_t length)
{
	struct sender *s = &snd;
	return frames_intern(s, text, length);
}

static uint32_t frames_intern(struct sender *s, const char *text, size_t len)
{
	int is_new;
	uint32_t id = strtab_intern(&s->strings, text, len, &is_new);
	if (id == STRTAB_OVERFLOW_ID && !(len == sizeof STRTAB_OVERFLOW_TEXT - 1))
		s->lost[WIRE_LOSS_STRING_CAP]++;
	if (is_new)
		frames_announce_string(s, id);
	return id;
}

static uint32_t frames_intern_ref(struct sender *s, const struct collector_string *ref)
{
	struct collector_string *str = (struct collector_string *)ref;
	if (!str)
		return 0;
	if (str->generation != s->generation || !str->id) {
		str->id = frames_intern(s, str->text, str->length);
		str->generation = s->generation;
	}
	return str->id;
}

/* ---- notices ---- */

static struct {
	_Atomic int ready;
	uint32_t level;
	char text[WIRE_MAX_STRING / 4];
} notices[MAX_NOTICES];
static _Atomic unsigned notice_count;

void collector_notice(uint32_t level, const char *fmt, ...)
{
	unsigned slot = atomic_fetch_add(&notice_count, 1);
	if (slot >= MAX_NOTICES)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(notices[slot].text, sizeof notices[slot].text, fmt, ap);
	va_end(ap);
	notices[slot].level = level;
	atomic_store_explicit(&notices[slot].ready, 1, memory_order_release);
}

/* Queues notices the current viewer has not seen (a new viewer starts from the first). */
static void frames_queue_notices(struct sender *s)
{
	unsigned count = atomic_load(&notice_count);
	if (count > MAX_NOTICES)
		count = MAX_NOTICES;
	while (s->notices_sent < count &&
	       atomic_load_explicit(&notices[s->notices_sent].ready, memory_order_acquire)) {
		const char *text = notices[s->notices_sent].text;
		struct wire_notice n = {notices[s->notices_sent].level, (uint32_t)strlen(text)};
		if (sendq_append(&s->q, WIRE_FRAME_NOTICE, &n, sizeof n, text, n.length, 0) != 0)
			break;
		s->notices_sent++;
	}
}

/* ---- threads ---- */

static struct known_thread *threads_find(struct sender *s, pid_t tid)
{
	for (size_t i = 0; i < s->thread_count; i++)
		if (s->threads[i].tid == tid)
			return &s->threads[i];
	return NULL;
}

static struct known_thread *threads_add(struct sender *s, pid_t tid, uint64_t now)
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

static const char *threads_display_name(const struct known_thread *t)
{
	return t->nvtx_name[0] ? t->nvtx_name : t->comm;
}

static void threads_emit_name(struct sender *s, const struct known_thread *t)
{
	const char *name = threads_display_name(t);
	struct wire_event ev = {.time_ns = t->first_ns, .tid = (uint32_t)t->tid, .kind = WIRE_EV_THREAD_NAME};
	ev.name_id = frames_intern(s, name, strlen(name));
	frames_push_event(s, &ev);
}

/* Reads /proc/self/task: new threads and renames produce THREAD_NAME, vanished ones THREAD_EXIT. */
static void threads_scan(struct sender *s, uint64_t now)
{
	DIR *dir = opendir("/proc/self/task");
	if (!dir)
		return;
	for (size_t i = 0; i < s->thread_count; i++)
		s->threads[i].seen = 0;
	struct dirent *de;
	while ((de = readdir(dir))) {
		pid_t tid = (pid_t)atoi(de->d_name);
		if (tid <= 0 || tid == s->tid || collector_is_own_tid(tid))
			continue;
		char path[64], comm[32] = "";
		snprintf(path, sizeof path, "/proc/self/task/%d/comm", tid);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			ssize_t n = read(fd, comm, sizeof comm - 1);
			close(fd);
			if (n > 0) {
				comm[n] = '\0';
				comm[strcspn(comm, "\n")] = '\0';
			}
		}
		struct known_thread *t = threads_find(s, tid);
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
	closedir(dir);
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
		for (struct thread_ring *tr = atomic_load(&collector_rings); tr; tr = tr->next)
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
static void threads_record_name(struct sender *s, const struct ring_record *rec)
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
static void threads_record_exit(struct sender *s, pid_t tid)
{
	struct known_thread *t = threads_find(s, tid);
	if (t)
		t->exited = 1;
}

static void drain_convert_record(struct sender *s, const struct ring_record *rec)
{
	if (rec->kind == WIRE_EV_THREAD_NAME) {
		threads_record_name(s, rec);
		return;
	}
	if (rec->kind == COLLECTOR_REC_SAMPLE) {
		uint64_t pcs[WIRE_STACK_MAX_DEPTH];
		size_t depth = rec->text_len / sizeof(uint64_t);
		memcpy(pcs, rec + 1, depth * sizeof(uint64_t));
		frames_push_stack(s, WIRE_STACK_SAMPLE, rec->time_ns, rec->tid, pcs, depth);
		return;
	}
	if (rec->kind == WIRE_EV_OSRT && rec->text_len) {
		uint64_t pcs[WIRE_STACK_MAX_DEPTH];
		size_t depth = rec->text_len / sizeof(uint64_t);
		memcpy(pcs, rec + 1, depth * sizeof(uint64_t));
		frames_push_stack(s, WIRE_STACK_OSRT, rec->time_ns, rec->tid, pcs, depth);
		struct wire_event ev = {
		    .time_ns = rec->time_ns, .value = rec->value, .tid = rec->tid, .kind = WIRE_EV_OSRT};
		ev.name_id = frames_intern_ref(s, rec->name_ref);
		frames_push_event(s, &ev);
		return;
	}
	if (rec->kind == WIRE_EV_THREAD_EXIT)
		threads_record_exit(s, (pid_t)rec->tid);
	struct wire_event ev = {
	    .time_ns = rec->time_ns,
	    .value = rec->value,
	    .tid = rec->tid,
	    .kind = rec->kind,
	};
	if (rec->name_ref)
		ev.name_id = frames_intern_ref(s, rec->name_ref);
	else if (rec->text_len)
		ev.name_id = frames_intern(s, (const char *)(rec + 1), rec->text_len);
	ev.domain_id = frames_intern_ref(s, rec->domain_ref);
	frames_push_event(s, &ev);
}

/* Application threads stamp ticks; every record leaves the collector in MONOTONIC ns. */
static struct clock_tick_map tick_map;
/* An anchor was taken in this drain (taken lazily: a process that never stamps ticks, such as a
 * short-lived child, never pays for the first rate measurement). */
static int tick_map_anchored;

/* A record's time in MONOTONIC ns: ticks (COLLECTOR_REC_TICKS) converted, else as written. */
static inline uint64_t drain_record_time_ns(uint16_t flags, uint64_t time)
{
	if (!(flags & COLLECTOR_REC_TICKS))
		return time;
	if (__builtin_expect(!tick_map_anchored, 0)) {
		clock_tick_map_update(&tick_map);
		tick_map_anchored = 1;
	}
	return clock_tick_map_ns(&tick_map, time);
}

/*
 * Converts a record stamped with ticks to ns in place: the ring slot is the consumer's until
 * it is released, so writing it here is safe.
 */
static void drain_record_ticks_to_ns(struct ring_record *rec)
{
	rec->time_ns = drain_record_time_ns(rec->flags, rec->time_ns);
	/* Blocking-call ranges carry their end in value. */
	if (rec->kind == WIRE_EV_OSRT)
		rec->value = clock_tick_map_ns(&tick_map, rec->value);
	rec->flags &= (uint16_t)~COLLECTOR_REC_TICKS;
}

/* The id of a push's name: a registered string, the text it carries (which also fills its slot of
 * tr's name cache), or the string its slot holds. */
static uint32_t drain_push_name_id(struct sender *s, struct thread_ring *tr,
                                   const struct collector_rec_nvtx *rec,
                                   const struct collector_string *name_ref, const char *text)
{
	unsigned slot = rec->flags & COLLECTOR_REC_SLOT_MASK;
	if (name_ref)
		return frames_intern_ref(s, name_ref);
	if (rec->text_len) {
		uint32_t id = frames_intern(s, text, rec->text_len);
		if (slot < COLLECTOR_NAME_SLOTS)
			tr->name_ids[slot] = id;
		return id;
	}
	if (slot >= COLLECTOR_NAME_SLOTS)
		return 0;
	uint32_t id = tr->name_ids[slot];
	/* Every use of a name the full table refused is a loss, as when its text is sent. */
	if (id == STRTAB_OVERFLOW_ID)
		s->lost[WIRE_LOSS_STRING_CAP]++;
	return id;
}

/* Converts a compact NVTX push or pop record of tr's ring into a wire event. */
static void drain_convert_nvtx(struct sender *s, struct thread_ring *tr, const struct collector_rec_nvtx *rec)
{
	int push = rec->kind == COLLECTOR_REC_NVTX_PUSH;
	source_count_nvtx(1); /* priced per event, like those push_event counts */
	const uint8_t *extra = (const uint8_t *)(rec + 1);
	const struct collector_string *domain = NULL, *name_ref = NULL;
	uint64_t category = 0;
	if (push && (rec->flags & COLLECTOR_REC_CATEGORY)) {
		memcpy(&category, extra, sizeof category);
		extra += sizeof category;
	}
	if (rec->flags & COLLECTOR_REC_DOMAIN) {
		memcpy(&domain, extra, sizeof domain);
		extra += sizeof domain;
	}
	if (push && (rec->flags & COLLECTOR_REC_NAME_REF)) {
		memcpy(&name_ref, extra, sizeof name_ref);
		extra += sizeof name_ref;
	}
	/* Ids first: a new string is announced before the batch that refers to it (a flush). */
	uint32_t domain_id = domain ? frames_intern_ref(s, domain) : 0;
	uint32_t name_id = push ? drain_push_name_id(s, tr, rec, name_ref, (const char *)extra) : 0;
	uint64_t time_ns = drain_record_time_ns(rec->flags, rec->time);
	if (time_ns < tr->last_nvtx_ns)
		time_ns = tr->last_nvtx_ns;
	tr->last_nvtx_ns = time_ns;
	s->events[s->event_count] = (struct wire_event){
	    .time_ns = time_ns,
	    .value = category,
	    .tid = (uint32_t)tr->tid,
	    .name_id = name_id,
	    .domain_id = domain_id,
	    .kind = push ? WIRE_EV_NVTX_PUSH : WIRE_EV_NVTX_POP,
	};
	if (++s->event_count == EVENTS_PER_FRAME)
		frames_flush_events(s);
}

/* 1 while a connected viewer is so far behind that the batches being filled might not fit under
 * the queue's bound any more. */
static int drain_viewer_behind(struct sender *s)
{
	return s->viewer_fd >= 0 && s->q.queued_bytes + sizeof s->events + sizeof s->stacks > s->q.bound;
}

/*
 * Drains the rings; frees rings of ended threads once empty. With `paced`, a ring is left as it
 * is while a connected viewer is behind (viewer_behind): its records wait in the rings, which hold
 * a burst far longer than the send queue may grow, instead of being converted only to be dropped
 * as viewer_slow. Returns records drained.
 */
static size_t drain_rings_paced(struct sender *s, int paced)
{
	tick_map_anchored = 0;
	size_t drained = 0;
	struct thread_ring *prev = NULL;
	struct thread_ring *tr = atomic_load_explicit(&collector_rings, memory_order_acquire);
	while (tr) {
		/* Read dead before draining: a ring found dead and then empty will never be written again. */
		int dead = atomic_load_explicit(&tr->dead, memory_order_acquire);
		struct ring_batch batch;
		const struct ring_record *rec;
		ring_batch_begin(&tr->ring, &batch);
		/* A dead ring is drained anyway: it is never written again, and only then freed. */
		while (!(paced && !dead && (drained & 255) == 0 && drain_viewer_behind(s)) &&
		       (rec = ring_batch_next(&tr->ring, &batch))) {
			if (rec->kind == COLLECTOR_REC_NVTX_PUSH || rec->kind == COLLECTOR_REC_NVTX_POP) {
				drain_convert_nvtx(s, tr, (const struct collector_rec_nvtx *)rec);
			} else {
				if (rec->flags & COLLECTOR_REC_TICKS)
					drain_record_ticks_to_ns((struct ring_record *)rec);
				drain_convert_record(s, rec);
			}
			drained++;
		}
		int emptied = batch.pos == batch.end;
		ring_batch_end(&tr->ring, &batch);
		/* Write only when set: the flag shares a cache line with fields the producer updates. */
		if (atomic_load_explicit(&tr->wake_sent, memory_order_relaxed))
			atomic_store_explicit(&tr->wake_sent, 0, memory_order_relaxed);
		struct thread_ring *next = tr->next;
		if (dead && emptied) {
			s->ring_drops_freed += atomic_load(&tr->ring.dropped);
			if (prev) {
				prev->next = next;
			} else {
				struct thread_ring *expected = tr;
				if (!atomic_compare_exchange_strong(&collector_rings, &expected, next)) {
					/* New rings were pushed in front: find our predecessor among them. */
					struct thread_ring *p = expected;
					while (p->next != tr)
						p = p->next;
					p->next = next;
					prev = p;
				}
			}
			munmap(tr, sizeof *tr + collector_config.ring_bytes);
		} else {
			prev = tr;
		}
		tr = next;
	}
	frames_flush_events(s);
	frames_flush_stacks(s);
	drained += source_each_drain();
	frames_flush_gpu(s);
	return drained;
}

/* Drains every ring completely (what the queue's bound refuses is counted as viewer_slow). */
static size_t drain_rings(struct sender *s)
{
	return drain_rings_paced(s, 0);
}

/* 1 if a ring holds records not drained yet. */
static int drain_rings_pending(void)
{
	for (struct thread_ring *tr = atomic_load_explicit(&collector_rings, memory_order_acquire); tr;
	     tr = tr->next)
		if (ring_used(&tr->ring))
			return 1;
	return 0;
}

/*
 * How long the sender may wait before its next drain, given the records the last one found: 2 ms
 * while rings are busy (a default 2 MiB ring holds 65 ms of NVTX pairs at 1 M/s: the slack for the
 * scheduler), 10 ms when idle. A drain that found little because the previous one was moments ago
 * does not make a busy program wait 10 ms: the short period holds for 100 ms after the last busy
 * drain.
 */
static int drain_period_ms(size_t drained)
{
	static uint64_t busy_until_ns;
	uint64_t now = clock_mono_ns();
	if (drained > 256)
		busy_until_ns = now + 100000000ull;
	return now < busy_until_ns ? 2 : 10;
}

/* ---- losses ---- */

static void frames_collect_losses(struct sender *s)
{
	uint64_t drops = s->ring_drops_freed;
	for (struct thread_ring *tr = atomic_load(&collector_rings); tr; tr = tr->next)
		drops += atomic_load_explicit(&tr->ring.dropped, memory_order_relaxed);
	s->lost[WIRE_LOSS_RING_FULL] = drops;
}

static uint64_t frames_loss_total(struct sender *s)
{
	uint64_t total = atomic_load(&collector_lost_no_memory);
	for (int i = 1; i < WIRE_LOSS_CAUSE_MAX; i++)
		total += s->lost[i] + source_each_lost((uint32_t)i);
	return total;
}

/* Builds the LOSSES payload; returns its length. */
static size_t frames_build_losses(struct sender *s, struct wire_loss *out)
{
	size_t n = 0;
	frames_collect_losses(s);
	for (uint32_t cause = 1; cause < WIRE_LOSS_CAUSE_MAX; cause++) {
		if (cause == WIRE_LOSS_UNMATCHED_POP)
			continue; /* counted by the viewer */
		uint64_t count = s->lost[cause] + source_each_lost(cause);
		if (cause == WIRE_LOSS_NO_MEMORY)
			count += atomic_load(&collector_lost_no_memory);
		out[n++] = (struct wire_loss){cause, 0, count};
	}
	return n * sizeof *out;
}

/* Queues the collector's cost per source (cumulative; also the final counts). */
static void frames_queue_cost(struct sender *s, uint64_t now)
{
	struct wire_cost cost[WIRE_COST_SOURCE_MAX];
	size_t n = source_cost_build(cost, now);
	frames_flush_events(s);
	if (sendq_append(&s->q, WIRE_FRAME_COST, cost, n * sizeof cost[0], NULL, 0, 0) != 0)
		s->lost[WIRE_LOSS_NO_MEMORY]++;
}

static void frames_queue_losses(struct sender *s)
{
	struct wire_loss losses[WIRE_LOSS_CAUSE_MAX];
	size_t len = frames_build_losses(s, losses);
	frames_flush_events(s);
	sendq_append(&s->q, WIRE_FRAME_LOSSES, losses, len, NULL, 0, 0);
}

/* ---- viewer connection ---- */

static int viewer_read_cmdline(char *buf, size_t cap)
{
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, cap);
	close(fd);
	return n > 0 ? (int)n : 0;
}

/* Frames a new viewer needs before the queued history: HELLO, every string, thread names, losses. */
static int viewer_build_intro(struct sender *s)
{
	/* Built in a queue of its own (with the main queue's spare blocks), then put in front. */
	struct sendq history = s->q;
	sendq_init(&s->q, history.bound);
	s->q.spare = history.spare;
	s->q.spare_count = history.spare_count;
	history.spare = NULL;
	history.spare_count = 0;

	struct wire_hello hello;
	memset(&hello, 0, sizeof hello);
	memcpy(hello.magic, WIRE_MAGIC, 8);
	hello.version = WIRE_VERSION;
	hello.hello_size = sizeof hello;
	hello.pid = getpid();
	hello.ppid = getppid();
	hello.start_mono_ns = s->start_mono_ns;
	clock_anchor(&hello.anchor_mono_ns, &hello.anchor_real_ns);
	hello.features = WIRE_FEATURE_NVTX | WIRE_FEATURE_THREADS;
	gethostname(hello.host, sizeof hello.host - 1);
	char cmdline[4096];
	int cmd_len = viewer_read_cmdline(cmdline, sizeof cmdline);
	hello.cmdline_len = (uint32_t)cmd_len;
	int ok =
	    sendq_append(&s->q, WIRE_FRAME_HELLO, &hello, sizeof hello, cmdline, (size_t)cmd_len, 0) == 0;
	for (uint32_t id = 1; ok && id < s->strings.count; id++) {
		size_t len;
		const char *text = strtab_text(&s->strings, id, &len);
		struct wire_string ws = {id, (uint32_t)len};
		ok = sendq_append(&s->q, WIRE_FRAME_STRING, &ws, sizeof ws, text, len, 0) == 0;
	}
	for (size_t i = 0; ok && i < s->thread_count; i++) {
		const struct known_thread *t = &s->threads[i];
		const char *name = threads_display_name(t);
		int is_new;
		struct wire_event ev = {
		    .time_ns = t->first_ns, .tid = (uint32_t)t->tid, .kind = WIRE_EV_THREAD_NAME};
		ev.name_id = strtab_intern(&s->strings, name, strlen(name), &is_new);
		if (is_new) {
			struct wire_string ws = {ev.name_id, (uint32_t)strlen(name)};
			sendq_append(&s->q, WIRE_FRAME_STRING, &ws, sizeof ws, name, strlen(name), 0);
		}
		ok = sendq_append(&s->q, WIRE_FRAME_EVENTS, &ev, sizeof ev, NULL, 0, 1) == 0;
	}
	for (size_t i = 0; ok && i < s->device_count; i++)
		ok = sendq_append(&s->q, WIRE_FRAME_GPU_DEVICE, &s->devices[i], sizeof s->devices[i], NULL, 0,
		                  0) == 0;
	if (ok && s->context_count)
		ok = sendq_append(&s->q, WIRE_FRAME_GPU, s->contexts,
		                  s->context_count * sizeof s->contexts[0], NULL, 0, 0) == 0;
	s->notices_sent = 0;
	if (ok)
		frames_queue_notices(s);
	if (ok) {
		struct wire_loss losses[WIRE_LOSS_CAUSE_MAX];
		size_t len = frames_build_losses(s, losses);
		ok = sendq_append(&s->q, WIRE_FRAME_LOSSES, losses, len, NULL, 0, 0) == 0;
	}
	struct sendq intro = s->q;
	s->q = history;
	if (!ok) {
		uint64_t none[WIRE_LOSS_CAUSE_MAX] = {0};
		sendq_clear(&intro, 0, none); /* the intro carries no events of the history */
	}
	sendq_prepend(&s->q, &intro);
	return ok;
}

static void viewer_disconnect(struct sender *s)
{
	/* Closed only while the number is still ours: the program may have closed and reused it. */
	collector_fd_close(s->viewer_fd);
	s->viewer_fd = -1;
	atomic_store(&viewer_connected, 0);
	/* A half-sent block cannot be resumed by another viewer: drop it. */
	sendq_drop_partial(&s->q, s->lost);
}

static void viewer_request_reset(void);

static void viewer_accept(struct sender *s)
{
	for (;;) {
		int fd = accept4(s->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return;
		/* One viewer at a time; others and foreign users are turned away. */
		if (s->viewer_fd >= 0 || session_peer_allowed(fd) != 1) {
			close(fd); /* just made by accept4 on this thread: still ours */
			continue;
		}
		if (collector_fd_own(fd) < 0)
			continue;
		s->viewer_fd = fd;
		viewer_request_reset();
		drain_rings(s);
		if (!viewer_build_intro(s)) {
			collector_fd_close(fd);
			s->viewer_fd = -1;
			continue;
		}
		s->ever_connected = 1;
		atomic_store(&viewer_connected, 1);
	}
}

/* Writes queued blocks until the socket would block. */
static void viewer_send(struct sender *s)
{
	if (s->viewer_fd >= 0 && sendq_send(&s->q, s->viewer_fd) != 0)
		viewer_disconnect(s);
}

/* ---- requests from the viewer (see struct wire_request) ---- */

/* How long a detach answer may take to send; the viewer waits 1 s for it. */
#define DETACH_SEND_NS 800000000ull

/* The part of a request read so far: requests are 8 bytes, read whole across short reads. */
static struct {
	uint8_t bytes[sizeof(struct wire_request)];
	size_t len;
} viewer_req;

/* A new viewer's requests start from their first byte. */
static void viewer_request_reset(void)
{
	viewer_req.len = 0;
}

/* Takes bytes the viewer sent; returns 1 when they complete a detach request (others are ignored). */
static int viewer_request_feed(const uint8_t *buf, size_t n)
{
	int detach = 0;
	while (n) {
		size_t take = sizeof viewer_req.bytes - viewer_req.len;
		if (take > n)
			take = n;
		memcpy(viewer_req.bytes + viewer_req.len, buf, take);
		viewer_req.len += take;
		buf += take;
		n -= take;
		if (viewer_req.len < sizeof viewer_req.bytes)
			break;
		struct wire_request req;
		memcpy(&req, viewer_req.bytes, sizeof req);
		viewer_req.len = 0;
		if (req.magic == WIRE_REQUEST_MAGIC && req.type == WIRE_REQUEST_DETACH)
			detach = 1;
	}
	return detach;
}

/* Sends the queue to the viewer until it is empty, the viewer is gone, or max_ns have passed. */
static void viewer_flush_within(struct sender *s, uint64_t max_ns)
{
	uint64_t deadline = clock_mono_ns() + max_ns;
	while (s->viewer_fd >= 0 && s->q.head) {
		viewer_send(s);
		if (s->viewer_fd < 0 || sendq_all_sent(&s->q))
			return;
		uint64_t now = clock_mono_ns();
		if (now >= deadline)
			return;
		uint64_t left_ms = (deadline - now) / 1000000 + 1;
		struct pollfd p = {s->viewer_fd, POLLOUT, 0};
		poll(&p, 1, left_ms < 10 ? (int)left_ms : 10);
	}
}

/*
 * Answers a detach request (sender thread only: the program never waits for it): what the rings
 * hold, notices, the losses so far and a BYE marked detached, sent within DETACH_SEND_NS; then the
 * viewer is let go as after a hang-up (an attached collector stops, an armed one keeps its flight
 * recorder). A BYE that could not be sent is taken back out of the queue, so that a later viewer
 * of an armed process does not read it as the end of the stream.
 */
static void viewer_answer_detach(struct sender *s)
{
	if (atomic_load_explicit(&s->stop, memory_order_acquire))
		return; /* exiting: the final flush sends the real end */
	/* An attached collector stops GPU tracing once the viewer is gone anyway: stopping it now
	 * delivers the records CUPTI still holds into this answer, before the BYE. */
	if (collector_config.attached)
		cupti_detach();
	else
		cupti_flush(); /* tracing goes on: what CUPTI completed so far belongs to this viewer */
	drain_rings(s);
	frames_queue_notices(s);
	frames_queue_losses(s);
	struct wire_bye bye = {clock_mono_ns(), -1, WIRE_BYE_DETACHED};
	const size_t bye_size = sizeof(struct wire_frame_header) + sizeof bye;
	if (sendq_append(&s->q, WIRE_FRAME_BYE, &bye, sizeof bye, NULL, 0, 0) == 0) {
		viewer_flush_within(s, DETACH_SEND_NS);
		/* Nothing was queued since the BYE: if unsent, it is the end of the tail block. */
		sendq_retract(&s->q, bye_size);
	}
	viewer_disconnect(s);
}

static void viewer_check_hangup(struct sender *s, short revents)
{
	if (s->viewer_fd < 0)
		return;
	if (revents & (POLLHUP | POLLERR)) {
		viewer_disconnect(s);
		return;
	}
	if (revents & POLLIN) {
		uint8_t buf[256];
		ssize_t n = recv(s->viewer_fd, buf, sizeof buf, MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
			viewer_disconnect(s);
		else if (n > 0 && viewer_request_feed(buf, (size_t)n))
			viewer_answer_detach(s);
	}
}

/* Creates the listening socket at s->socket_path and registers it; 0 or -errno. */
static int viewer_listen(struct sender *s)
{
	int fd = session_listen(s->socket_path);
	if (fd < 0)
		return fd;
	if (collector_fd_own(fd) < 0) {
		unlink(s->socket_path);
		return -EMFILE;
	}
	s->listen_fd = fd;
	return 0;
}

/*
 * Checks that the sockets are still ours before they are used: a program that closed them
 * (daemon style) may have the numbers for its own files now. A lost viewer connection is
 * dropped (counted); a lost listening socket is made again, a few times at most.
 */
static void viewer_take_move(struct sender *s);

static void viewer_check_fds(struct sender *s)
{
	viewer_take_move(s);
	if (s->viewer_fd >= 0 && !collector_fd_check(s->viewer_fd)) {
		s->viewer_fd = -1; /* not ours to close any more */
		atomic_store(&viewer_connected, 0);
		sendq_drop_partial(&s->q, s->lost);
	}
	if (s->listen_fd >= 0 && !collector_fd_check(s->listen_fd))
		s->listen_fd = -1;
	uint64_t now = clock_mono_ns();
	if (s->listen_fd < 0 && s->listen_failures < 8 && now >= s->listen_retry_ns &&
	    !atomic_load_explicit(&s->stop, memory_order_relaxed)) {
		if (viewer_listen(s) != 0) {
			s->listen_failures++;
			s->listen_retry_ns = now + 250000000ull;
		}
	}
}

int sender_move_session(const char *dir)
{
	return viewer_move_session(dir);
}

/* Any thread: asks the sender to listen in dir (see sender_move_session). */
int viewer_move_session(const char *dir)
{
	if (strlen(dir) >= sizeof move_dir)
		return -ENAMETOOLONG;
	if (atomic_load(&viewer_connected))
		return -EBUSY;
	int expected = 0;
	if (!atomic_compare_exchange_strong(&move_pending, &expected, 1))
		return -EBUSY;
	strcpy(move_dir, dir);
	atomic_store_explicit(&move_pending, 2, memory_order_release);
	collector_wake_sender();
	return 0;
}

/* Sender thread: listens in the session an attach asked for, leaving the old one. */
static void viewer_take_move(struct sender *s)
{
	if (atomic_load_explicit(&move_pending, memory_order_acquire) != 2)
		return;
	char path[sizeof s->socket_path];
	if (s->viewer_fd < 0 && session_socket_path(path, sizeof path, move_dir, getpid()) == 0) {
		if (s->listen_fd >= 0)
			collector_fd_close(s->listen_fd);
		s->listen_fd = -1;
		unlink(s->socket_path);
		snprintf(collector_config.session_dir, sizeof collector_config.session_dir, "%s", move_dir);
		memcpy(s->socket_path, path, sizeof path);
		s->listen_failures = 0;
		s->listen_retry_ns = 0;
	}
	atomic_store(&move_pending, 0);
}

/* 1 while an attach asked the sender to move (the lazy start ends for it). */
int viewer_move_pending(void)
{
	return atomic_load(&move_pending) != 0;
}

/* Closes the viewer connection and the listening socket (still ours only) and removes the socket. */
void viewer_close(struct sender *s)
{
	if (s->viewer_fd >= 0)
		collector_fd_close(s->viewer_fd);
	s->viewer_fd = -1;
	atomic_store(&viewer_connected, 0);
	if (s->listen_fd >= 0)
		collector_fd_close(s->listen_fd);
	s->listen_fd = -1;
	unlink(s->socket_path);
}

/* Forked child: the parent's sockets are closed here, never used (the viewer must see the parent's
 * EOF); the socket file is the parent's and stays. */
void viewer_forget_after_fork(struct sender *s)
{
	if (s->listen_fd >= 0)
		collector_fd_close(s->listen_fd);
	if (s->viewer_fd >= 0)
		collector_fd_close(s->viewer_fd);
	s->listen_fd = s->viewer_fd = -1;
	atomic_store(&viewer_connected, 0);
	atomic_store(&move_pending, 0);
	s->ever_connected = 0;
}

/* Sleeps on the wake word (no fd): a ring half full wakes it, or timeout_ms passes. */
static void sender_sleep(int timeout_ms)
{
	if (atomic_exchange_explicit(&collector_wake_word, 0, memory_order_acquire) != 0)
		return; /* woken since the last drain */
	struct timespec ts = {timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000L};
	syscall(SYS_futex, &collector_wake_word, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0);
}

/*
 * Waits for work: with frames to send, on the viewer's socket (bounded by timeout_ms); otherwise
 * on the wake word, then looks at the sockets without waiting (a new viewer or a hangup waits at
 * most one period).
 */
static void sender_poll_once(struct sender *s, int timeout_ms)
{
	viewer_check_fds(s);
	struct pollfd pfd[2];
	int n = 0, listen_at = -1, viewer_at = -1;
	int want_out = s->viewer_fd >= 0 && s->q.head;
	if (s->listen_fd >= 0) {
		listen_at = n;
		pfd[n++] = (struct pollfd){s->listen_fd, POLLIN, 0};
	}
	if (s->viewer_fd >= 0) {
		viewer_at = n;
		pfd[n++] = (struct pollfd){s->viewer_fd, (short)(POLLIN | (want_out ? POLLOUT : 0)), 0};
	}
	if (!want_out)
		sender_sleep(timeout_ms);
	int ready = n ? poll(pfd, (nfds_t)n, want_out ? timeout_ms : 0) : 0;
	if (ready <= 0)
		return;
	if (viewer_at >= 0)
		viewer_check_hangup(s, pfd[viewer_at].revents);
	if (listen_at >= 0 && (pfd[listen_at].revents & POLLIN))
		viewer_accept(s);
}

static void sender_periodic(struct sender *s, uint64_t now)
{
	/* A connected viewer that stopped reading (suspended, stuck) must not grow the queue without
	 * bound through the frames that are never dropped (strings, counters, losses): let it go; it
	 * can reconnect and start again from the intro. */
	if (s->viewer_fd >= 0 && s->q.queued_bytes > 2 * s->q.bound) {
		viewer_disconnect(s);
		sendq_clear(&s->q, WIRE_LOSS_VIEWER_SLOW, s->lost);
	}
	if (s->viewer_fd >= 0)
		frames_queue_notices(s);
	source_each_poll(now);
	source_budget_poll(now);
	if (s->viewer_fd >= 0 && now - s->last_cost_ns >= COST_REPORT_NS) {
		s->last_cost_ns = now;
		frames_queue_cost(s, now);
	}
	if (now - s->last_scan_ns >= THREAD_SCAN_NS) {
		s->last_scan_ns = now;
		threads_scan(s, now);
	}
	if (now - s->last_loss_ns >= LOSS_REPORT_NS) {
		s->last_loss_ns = now;
		frames_collect_losses(s);
		uint64_t total = frames_loss_total(s);
		if (total != s->last_loss_total && s->viewer_fd >= 0) {
			s->last_loss_total = total;
			frames_queue_losses(s);
		}
	}
}

/*
 * Writes the unsent rest of the stream (from the first unsent byte: the viewer's decoder goes on
 * where the socket stopped) to SESSION/PID.final, 0600, created beside it and renamed into
 * place, so a viewer that is late or stalled still gets every event and the final counts.
 * Returns 0 or -errno (then the viewer reports the counts missing).
 */
static int viewer_write_final(struct sender *s)
{
	char path[sizeof s->socket_path], tmp[sizeof s->socket_path + 16];
	if (snprintf(path, sizeof path, "%s/%d.final", collector_config.session_dir, (int)getpid()) >=
	        (int)sizeof path ||
	    snprintf(tmp, sizeof tmp, "%s/.%d.final.tmp", collector_config.session_dir, (int)getpid()) >=
	        (int)sizeof tmp)
		return -ENAMETOOLONG;
	/* Every short-lived child writes one: a leftover is removed only when it is in the way. */
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 && errno == EEXIST && unlink(tmp) == 0)
		fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	int rc = sendq_write_all(&s->q, fd);
	if (close(fd) != 0 && !rc)
		rc = -errno;
	if (!rc && rename(tmp, path) != 0)
		rc = -errno;
	if (rc)
		unlink(tmp);
	return rc;
}

/*
 * Exit path: last drain, final counts and BYE. A connected viewer gets them over the socket while
 * it keeps reading; whatever it has not taken after a short stall (or 2 s), and everything when a
 * launcher's viewer has not connected yet, goes to PID.final for it. With no viewer expected
 * (armed, never attached; or the viewer left), the process exits at once.
 */
/*
 * At exit: a connected viewer takes the rings' backlog as fast as it reads, for half the final
 * send time at most (from start_ns), so a burst just before exit is not converted at once only to
 * be dropped beyond the queue's bound; then the rest is drained whole, as before.
 */
static void sender_drain_final_backlog(struct sender *s, uint64_t start_ns)
{
	uint64_t deadline = start_ns + atomic_load(&final_send_ns) / 2;
	uint64_t progress_ns = clock_mono_ns();
	while (s->viewer_fd >= 0 && drain_rings_pending()) {
		size_t unsent = sendq_unsent(&s->q);
		size_t drained = drain_rings_paced(s, 1);
		viewer_send(s);
		uint64_t t = clock_mono_ns();
		if (drained || sendq_unsent(&s->q) < unsent)
			progress_ns = t;
		if (t >= deadline || t - progress_ns >= 100000000ull)
			break; /* the viewer stalled: what it has not taken goes to PID.final */
		if (drain_viewer_behind(s))
			sender_poll_once(s, 5);
	}
	drain_rings(s);
}

static void sender_final_flush(struct sender *s)
{
	uint64_t now = clock_mono_ns();
	source_each_stop();
	threads_scan(s, now);
	source_each_poll(0);
	sender_drain_final_backlog(s, now);
	int viewer_expected = collector_config.wait_viewer_ms > 0 && !collector_config.attached;
	if (s->viewer_fd < 0 && (!viewer_expected || s->ever_connected))
		return; /* nobody to hand anything to */
	struct wire_bye bye = {now, -1, 0};
	if (s->viewer_fd < 0) {
		/* A launcher's viewer is coming but not here yet: the whole stream goes to the file. */
		if (!viewer_build_intro(s))
			return;
	}
	frames_queue_notices(s);
	frames_queue_losses(s);
	frames_queue_cost(s, clock_mono_ns());
	sendq_append(&s->q, WIRE_FRAME_BYE, &bye, sizeof bye, NULL, 0, 0);
	uint64_t deadline = now + atomic_load(&final_send_ns), last_progress = clock_mono_ns();
	while (s->viewer_fd >= 0 && s->q.head) {
		uint64_t sent = s->q.sent_total;
		viewer_send(s);
		uint64_t t = clock_mono_ns();
		if (s->q.sent_total != sent)
			last_progress = t;
		if (t >= deadline || t - last_progress >= 100000000ull)
			break; /* stalled: the rest goes to the file */
		if (s->q.head)
			sender_poll_once(s, 5);
	}
	if (s->viewer_fd < 0 && s->ever_connected)
		return; /* the viewer hung up meanwhile */
	if (s->q.head)
		viewer_write_final(s);
}

/* Attach mode: the viewer is gone (or never came), so stop everything and leave the library inert. */
static void sender_detach(struct sender *s)
{
	drain_rings(s);
	source_each_detach();
	viewer_close(s);
	sendq_fini(&s->q);
	s->ever_connected = 0;
	s->thread_count = 0;
	strtab_fini(&s->strings);
	s->started = 0;
	pthread_detach(pthread_self());
	collector_detached(); /* last: a re-attach may start a new sender from here on */
}

static void sender_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * The lazy part of start-up: sleeps until the process has lived lazy_start_ns, made its first
 * ring, been asked to move or to stop. Returns 1 when the sender goes on, 0 when the exiting
 * thread took over (sender_exit_early: this thread must not touch anything).
 */
static int sender_wait_lazy(struct sender *s)
{
	uint64_t deadline = s->start_mono_ns + collector_config.lazy_start_ns;
	for (;;) {
		uint64_t now = clock_mono_ns();
		if (atomic_load_explicit(&s->stop, memory_order_acquire) || now >= deadline ||
		    atomic_load(&first_event) || atomic_load(&collector_rings) || viewer_move_pending())
			break;
		if (atomic_exchange_explicit(&collector_wake_word, 0, memory_order_acquire) != 0)
			continue; /* woken: look again */
		uint64_t left = deadline - now;
		struct timespec ts = {(time_t)(left / 1000000000ull), (long)(left % 1000000000ull)};
		syscall(SYS_futex, &collector_wake_word, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0);
	}
	int expected = SENDER_LAZY;
	return atomic_compare_exchange_strong(&sender_state, &expected, SENDER_RUNNING) ||
	       expected == SENDER_RUNNING;
}

/* What the lazy start deferred: the socket, sampling, the clock choice, thread tracking. 0, or
 * -errno when the socket cannot be made (the collector then rests: nobody could read it). */
static int sender_begin(struct sender *s)
{
	if (atomic_load_explicit(&s->stop, memory_order_acquire))
		return 0; /* exiting already: only the final record is left to write */
	if (s->listen_fd < 0) {
		int err = viewer_listen(s);
		if (err) {
			/* Never on the program's stderr (a setuid or chroot child's may be anything): a
			 * line in the session directory, if it can be reached at all. */
			sender_log("collector in pid %d cannot listen on %s: %s", (int)getpid(),
			           s->socket_path, strerror(-err));
			return err;
		}
	}
	collector_begin();
	s->tracking = 1;
	return 0;
}

static void *sender_main(void *arg)
{
	struct sender *s = arg;
	collector_mark_own_thread();
	if (!sender_wait_lazy(s))
		return NULL; /* the process ended early; its exiting thread wrote the final record */
	prctl(PR_SET_NAME, "cuscope-sender");
	s->tid = collector_gettid();
	collector_register_own_tid(s->tid);
	s->last_scan_ns = 0;
	/* A burst may be filling the first ring: make room before the slower start-up work. */
	drain_rings(s);
	if (sender_begin(s) != 0) {
		/* Unreachable session: rest like a detached collector (rings are never drained), with
		 * nothing left of this start that a later attach would send or reuse. */
		sendq_fini(&s->q);
		s->ever_connected = 0;
		s->thread_count = 0;
		strtab_fini(&s->strings);
		s->started = 0;
		atomic_store(&sender_state, SENDER_IDLE);
		collector_detached();
		pthread_detach(pthread_self());
		return NULL;
	}
	uint64_t started_ns = clock_mono_ns();
	/* Ticks only where the TSC is invariant and the kernel's clocksource. */
	atomic_store_explicit(&collector_config.use_ticks,
	                      collector_config.ticks_wanted && clock_ticks_usable(), memory_order_relaxed);
	/* Attached late to a CUDA program: GPU tracing starts here, not at its first CUDA call. */
	if (collector_config.attached && dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD) &&
	    !getenv("CUSCOPE_NO_GPU"))
		cupti_start_late();
	while (!atomic_load_explicit(&s->stop, memory_order_acquire)) {
		if (collector_config.attached && s->viewer_fd < 0 &&
		    (s->ever_connected || clock_mono_ns() - started_ns > 30000000000ull)) {
			sender_detach(s);
			return NULL;
		}
		size_t drained = drain_rings_paced(s, 1);
		source_count_sender(drained);
		uint64_t now = clock_mono_ns();
		sender_periodic(s, now);
		frames_flush_events(s);
		viewer_send(s);
		sender_poll_once(s, drain_period_ms(drained));
	}
	sender_final_flush(s);
	viewer_close(s);
	atomic_store_explicit(&sender_done, 1, memory_order_release);
	syscall(SYS_futex, &sender_done, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	return NULL;
}

/*
 * A line for the user when no viewer can be told: appended to PID.log in the session directory
 * (0600, never through a link), or dropped. Never written to an fd the program owns.
 */
static void sender_log(const char *fmt, ...)
{
	char path[4096 + 32], line[512];
	if (snprintf(path, sizeof path, "%s/%d.log", collector_config.session_dir, (int)getpid()) >=
	    (int)sizeof path)
		return;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof line - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n > sizeof line - 2)
		n = (int)sizeof line - 2;
	line[n++] = '\n';
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	if (write(fd, line, (size_t)n) < 0) {
		/* nothing more to do: the line is dropped */
	}
	close(fd);
}

int sender_start(void)
{
	struct sender *s = &snd;
	if (strtab_init(&s->strings, collector_config.max_strings,
	                (size_t)collector_config.max_strings * 64) != 0)
		return -ENOMEM;
	s->generation++;
	s->start_mono_ns = clock_mono_ns();
	if (session_socket_path(s->socket_path, sizeof s->socket_path, collector_config.session_dir,
	                        getpid()) != 0) {
		strtab_fini(&s->strings);
		return -ENAMETOOLONG;
	}
	s->listen_failures = 0;
	s->tracking = 0;
	s->q.bound = collector_config.buffer_bytes;
	/* An attach waits for the socket: no lazy start there. */
	int lazy = !collector_config.attached;
	if (!lazy) {
		int err = viewer_listen(s);
		if (err) {
			sender_log("collector in pid %d cannot listen on %s: %s", (int)getpid(),
			           s->socket_path, strerror(-err));
			s->listen_fd = -1;
			strtab_fini(&s->strings);
			return err;
		}
	}
	atomic_store(&first_event, 0);
	atomic_store(&sender_state, lazy ? SENDER_LAZY : SENDER_RUNNING);
	atomic_store(&s->stop, 0);
	atomic_store(&sender_done, 0);
	atomic_store(&final_send_ns, 2000000000ull);
	/* The sender must not inherit signals meant for the application's threads. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = pthread_create(&s->thread, NULL, sender_main, s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		if (s->listen_fd >= 0) {
			collector_fd_close(s->listen_fd);
			unlink(s->socket_path);
		}
		s->listen_fd = -1;
		atomic_store(&sender_state, SENDER_IDLE);
		strtab_fini(&s->strings);
		return -rc;
	}
	s->started = 1;
	return 0;
}

int sender_exit_early(void)
{
	struct sender *s = &snd;
	/* Events in rings or GPU records need the sender's whole drain: only a process without any
	 * ends here. */
	if (atomic_load(&sender_state) != SENDER_LAZY || atomic_load(&collector_rings) || cupti_running())
		return 0;
	int expected = SENDER_LAZY;
	if (!atomic_compare_exchange_strong(&sender_state, &expected, SENDER_ENDED_EARLY))
		return 0;
	/* From here this thread owns the sender's state; the sleeping thread ends when it wakes. */
	s->started = 0;
	int viewer_expected = collector_config.wait_viewer_ms > 0 && !collector_config.attached;
	if (!viewer_expected)
		return 1;                   /* armed, never attached: nothing to hand anyone */
	int was = collector_thread_enter(); /* our own files: no blocking-call records */
	uint64_t now = clock_mono_ns();
	/* The exiting thread names the process's lane (no /proc scan: the sleeping sender may not
	 * have registered itself yet, and other threads made no event). */
	struct known_thread *t = threads_add(s, collector_gettid(), s->start_mono_ns);
	if (t) {
		prctl(PR_GET_NAME, t->comm);
		threads_emit_name(s, t);
	}
	frames_flush_events(s);
	struct wire_bye bye = {now, -1, 0};
	if (viewer_build_intro(s)) {
		frames_queue_notices(s);
		frames_queue_losses(s);
		sendq_append(&s->q, WIRE_FRAME_BYE, &bye, sizeof bye, NULL, 0, 0);
		viewer_write_final(s);
	}
	collector_thread_restore(was);
	return 1;
}

void sender_first_event(void)
{
	if (atomic_load_explicit(&sender_state, memory_order_relaxed) == SENDER_LAZY) {
		atomic_store(&first_event, 1);
		collector_wake_sender();
	}
}

void sender_stop(void)
{
	struct sender *s = &snd;
	if (!s->started)
		return;
	atomic_store_explicit(&s->stop, 1, memory_order_release);
	collector_wake_sender();
	struct timespec deadline;
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += 3 + collector_config.wait_viewer_ms / 1000;
	/* Bounded: a stuck sender must never hold the application's exit hostage. */
	if (pthread_timedjoin_np(s->thread, NULL, &deadline) == 0)
		s->started = 0;
}

void sender_stop_within(uint64_t max_ns)
{
	struct sender *s = &snd;
	if (!s->started)
		return;
	/* The last frames go to the viewer for half the time at most, the rest to PID.final. */
	atomic_store(&final_send_ns, max_ns / 2);
	atomic_store_explicit(&s->stop, 1, memory_order_release);
	collector_wake_sender();
	uint64_t deadline = clock_mono_ns() + max_ns;
	for (;;) {
		if (atomic_load_explicit(&sender_done, memory_order_acquire))
			return;
		uint64_t now = clock_mono_ns();
		if (now >= deadline)
			return;
		uint64_t left = deadline - now;
		struct timespec ts = {(time_t)(left / 1000000000ull), (long)(left % 1000000000ull)};
		syscall(SYS_futex, &sender_done, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0);
	}
}

void sender_forget_after_fork(void)
{
	struct sender *s = &snd;
	/* Everything below belonged to the parent; its memory is leaked on purpose (the parent's
	 * sender may have been mid-update, so nothing is trusted or freed). */
	s->started = 0;
	s->tracking = 0;
	atomic_store(&sender_state, SENDER_IDLE);
	viewer_forget_after_fork(s);
	sendq_forget(&s->q);
	s->event_count = 0;
	s->stacks_len = 0;
	s->stacks_count = 0;
	symbolize_forget();
	s->gpu_event_count = 0;
	s->device_count = s->context_count = 0;
	s->notices_sent = 0;
	s->threads = NULL;
	s->thread_count = s->thread_cap = 0;
	memset(s->lost, 0, sizeof s->lost);
	s->ring_drops_freed = 0;
	s->last_loss_total = 0;
	memset(&s->strings, 0, sizeof s->strings);
}
