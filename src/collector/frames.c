/* The sender's frames: events, GPU records and stacks batched into frames
 * under the queue's bound, strings interned and announced, notices, losses and costs. */
#include "frames.h"
#include "source.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define MAX_NOTICES 8

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

void frames_flush_events(struct sender *s)
{
	size_t count = s->event_count;
	s->event_count = 0;
	if (count)
		frames_batch(s, WIRE_FRAME_EVENTS, s->events, count * sizeof(struct wire_event), count);
}

void frames_flush_gpu(struct sender *s)
{
	size_t count = s->gpu_event_count;
	s->gpu_event_count = 0;
	if (count)
		frames_batch(s, WIRE_FRAME_GPU, s->gpu_events, count * sizeof(struct wire_gpu_event), count);
}

void frames_flush_stacks(struct sender *s)
{
	size_t len = s->stacks_len;
	uint64_t count = s->stacks_count;
	s->stacks_len = 0;
	s->stacks_count = 0;
	if (len)
		frames_batch(s, WIRE_FRAME_STACKS, s->stacks, len, count);
}

/* Symbolises a record's return addresses into a STACKS record. */
void frames_push_stack(struct sender *s, uint16_t kind, uint64_t time_ns, uint32_t tid, const uint64_t *pcs,
                       size_t depth)
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

void frames_push_event(struct sender *s, const struct wire_event *ev)
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

uint32_t frames_intern(struct sender *s, const char *text, size_t len)
{
	int is_new;
	uint32_t id = strtab_intern(&s->strings, text, len, &is_new);
	if (id == STRTAB_OVERFLOW_ID && !(len == sizeof STRTAB_OVERFLOW_TEXT - 1))
		s->lost[WIRE_LOSS_STRING_CAP]++;
	if (is_new)
		frames_announce_string(s, id);
	return id;
}

uint32_t frames_intern_ref(struct sender *s, const struct collector_string *ref)
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
	uint32_t level, topic;
	char text[WIRE_MAX_STRING / 4];
} notices[MAX_NOTICES];
static _Atomic unsigned notice_count;

/* Keeps one notice in the next free slot (the first MAX_NOTICES are kept). */
static void frames_notice(uint32_t level, uint32_t topic, const char *fmt, va_list ap)
{
	unsigned slot = atomic_fetch_add(&notice_count, 1);
	if (slot >= MAX_NOTICES)
		return;
	vsnprintf(notices[slot].text, sizeof notices[slot].text, fmt, ap);
	notices[slot].level = level;
	notices[slot].topic = topic;
	atomic_store_explicit(&notices[slot].ready, 1, memory_order_release);
}

void collector_notice(uint32_t level, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	frames_notice(level, WIRE_NOTICE_TOPIC_GENERAL, fmt, ap);
	va_end(ap);
}

void collector_notice_about(uint32_t level, uint32_t topic, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	frames_notice(level, topic, fmt, ap);
	va_end(ap);
}

/* Queues notices the current viewer has not seen (a new viewer starts from the first). */
void frames_queue_notices(struct sender *s)
{
	unsigned count = atomic_load(&notice_count);
	if (count > MAX_NOTICES)
		count = MAX_NOTICES;
	while (s->notices_sent < count &&
	       atomic_load_explicit(&notices[s->notices_sent].ready, memory_order_acquire)) {
		const char *text = notices[s->notices_sent].text;
		struct wire_notice n = {.level = notices[s->notices_sent].level,
		                        .topic = notices[s->notices_sent].topic,
		                        .length = (uint32_t)strlen(text)};
		if (sendq_append(&s->q, WIRE_FRAME_NOTICE, &n, sizeof n, text, n.length, 0) != 0)
			break;
		s->notices_sent++;
	}
}

/* ---- losses ---- */

void frames_collect_losses(struct sender *s)
{
	uint64_t drops = s->ring_drops_freed;
	for (struct thread_ring *tr = collector_rings_head(); tr; tr = tr->next)
		drops += atomic_load_explicit(&tr->ring.dropped, memory_order_relaxed);
	s->lost[WIRE_LOSS_RING_FULL] = drops;
}

uint64_t frames_loss_total(struct sender *s)
{
	uint64_t total = collector_rings_lost_no_memory();
	for (int i = 1; i < WIRE_LOSS_CAUSE_MAX; i++)
		total += s->lost[i] + source_each_lost((uint32_t)i);
	return total;
}

/* Builds the LOSSES payload; returns its length. */
size_t frames_build_losses(struct sender *s, struct wire_loss *out)
{
	size_t n = 0;
	frames_collect_losses(s);
	for (uint32_t cause = 1; cause < WIRE_LOSS_CAUSE_MAX; cause++) {
		if (cause == WIRE_LOSS_UNMATCHED_POP)
			continue; /* counted by the viewer */
		uint64_t count = s->lost[cause] + source_each_lost(cause);
		if (cause == WIRE_LOSS_NO_MEMORY)
			count += collector_rings_lost_no_memory();
		out[n++] = (struct wire_loss){cause, 0, count};
	}
	return n * sizeof *out;
}

/* Queues the collector's cost per source (cumulative; also the final counts). */
void frames_queue_cost(struct sender *s, uint64_t now)
{
	struct wire_cost cost[WIRE_COST_SOURCE_MAX];
	size_t n = source_cost_build(cost, now);
	frames_flush_events(s);
	if (sendq_append(&s->q, WIRE_FRAME_COST, cost, n * sizeof cost[0], NULL, 0, 0) != 0)
		s->lost[WIRE_LOSS_NO_MEMORY]++;
}

void frames_queue_losses(struct sender *s)
{
	struct wire_loss losses[WIRE_LOSS_CAUSE_MAX];
	size_t len = frames_build_losses(s, losses);
	frames_flush_events(s);
	sendq_append(&s->q, WIRE_FRAME_LOSSES, losses, len, NULL, 0, 0);
}
