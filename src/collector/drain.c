/* Draining the rings: every thread's records converted to wire events in
 * MONOTONIC ns, paced while a viewer is behind; rings of ended threads freed once empty. */
#include "drain.h"
#include "cuscope/clock.h"
#include "frames.h"
#include "nvtxname.h"
#include "nvtxpayload.h"
#include "source.h"
#include "threads.h"

#include <string.h>
#include <sys/mman.h>

/* The id of an NVTX message: named by its operator when it is a PyTorch per-call message
 * (nvtxname.h), so that such calls share one string instead of filling the table. */
static uint32_t drain_intern_nvtx(struct sender *s, const char *text, size_t len)
{
	return frames_intern(s, text, nvtxname_op_length(text, len));
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
	if (rec->kind == COLLECTOR_REC_NVTX_ARGS) {
		struct nvtxpayload_arg arg;
		for (size_t i = 0; i < rec->text_len / sizeof arg; i++) {
			memcpy(&arg, (const char *)(rec + 1) + i * sizeof arg, sizeof arg);
			struct wire_event ev = {.time_ns = rec->time_ns,
			                        .value = arg.value,
			                        .tid = rec->tid,
			                        .name_id = frames_intern_ref(s, arg.name),
			                        .domain_id = frames_intern_ref(s, arg.text),
			                        .kind = WIRE_EV_NVTX_ARG,
			                        .flags = (uint16_t)arg.type};
			frames_push_event(s, &ev);
		}
		return;
	}
	if (rec->kind == WIRE_EV_THREAD_EXIT) {
		struct collector_thread_final final;
		if (rec->text_len == sizeof final) {
			memcpy(&final, rec + 1, sizeof final);
			counters_thread_final((pid_t)rec->tid, rec->time_ns, &final);
		}
		threads_record_exit(s, (pid_t)rec->tid);
		struct wire_event ev = {.time_ns = rec->time_ns, .tid = rec->tid, .kind = rec->kind};
		frames_push_event(s, &ev);
		return;
	}
	struct wire_event ev = {
	    .time_ns = rec->time_ns,
	    .value = rec->value,
	    .tid = rec->tid,
	    .kind = rec->kind,
	};
	if (rec->name_ref)
		ev.name_id = frames_intern_ref(s, rec->name_ref);
	else if (rec->text_len && (rec->kind == WIRE_EV_NVTX_START || rec->kind == WIRE_EV_NVTX_MARK))
		ev.name_id = drain_intern_nvtx(s, (const char *)(rec + 1), rec->text_len);
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
 * tr's name cache: the slot's text is the whole message, its id the operator's name), or the
 * string its slot holds. */
static uint32_t drain_push_name_id(struct sender *s, struct thread_ring *tr,
                                   const struct collector_rec_nvtx *rec,
                                   const struct collector_string *name_ref, const char *text)
{
	unsigned slot = rec->flags & COLLECTOR_REC_SLOT_MASK;
	if (name_ref)
		return frames_intern_ref(s, name_ref);
	if (rec->text_len) {
		uint32_t id = drain_intern_nvtx(s, text, rec->text_len);
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
int drain_viewer_behind(struct sender *s)
{
	return s->viewer_fd >= 0 && s->q.queued_bytes + sizeof s->events + sizeof s->stacks > s->q.bound;
}

/* A CUDA API call recorded by callback: its times in ns, then the GPU event it stands for. */
static void drain_convert_cuda_api(struct thread_ring *tr, struct collector_rec_cuda_api *rec)
{
	rec->start = drain_record_time_ns(rec->flags, rec->start);
	rec->end = drain_record_time_ns(rec->flags, rec->end);
	rec->flags &= (uint16_t)~COLLECTOR_REC_TICKS;
	cupti_api_ring_record(rec, (uint32_t)tr->tid);
}

/*
 * Drains the rings; frees rings of ended threads once empty. With `paced`, a ring is left as it
 * is while a connected viewer is behind (viewer_behind): its records wait in the rings, which hold
 * a burst far longer than the send queue may grow, instead of being converted only to be dropped
 * as viewer_slow. Returns records drained.
 */
size_t drain_rings_paced(struct sender *s, int paced)
{
	tick_map_anchored = 0;
	size_t drained = 0;
	struct thread_ring *prev = NULL;
	struct thread_ring *tr = collector_rings_head();
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
			} else if (rec->kind == COLLECTOR_REC_CUDA_API) {
				drain_convert_cuda_api(tr, (struct collector_rec_cuda_api *)rec);
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
			prev = collector_rings_unlink(prev, tr);
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
size_t drain_rings(struct sender *s)
{
	return drain_rings_paced(s, 0);
}

/* 1 if a ring holds records not drained yet. */
int drain_rings_pending(void)
{
	for (struct thread_ring *tr = collector_rings_head(); tr; tr = tr->next)
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
int drain_period_ms(size_t drained)
{
	static uint64_t busy_until_ns;
	uint64_t now = clock_mono_ns();
	if (drained > 256)
		busy_until_ns = now + 100000000ull;
	return now < busy_until_ns ? 2 : 10;
}
