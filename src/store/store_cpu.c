/*
 * CPU side of the event store: stack samples on thread lanes (stacks interned store-wide, frames
 * split into demangled function + module once), blocking calls (OSRT) joined with their stacks
 * whichever arrives first, Python GC ranges, per-thread counters; and the queries over them (sample
 * density, hot functions, what a thread did in an interval).
 */
#include "store_impl.h"

#include "cuscope/xalloc.h"

#include <stdlib.h>
#include <string.h>

#define PENDING_STACKS_MAX 1024 /* OSRT stacks per lane waiting for their call event */

/* Calls on one row: sorted by start, never overlapping. */
struct call_row {
	struct store_call *v;
	size_t n, cap;
};

struct call_rows {
	struct call_row *rows;
	size_t count, cap;
	uint64_t calls;
};

/* An OSRT stack that arrived before its call event. */
struct pending_stack {
	uint64_t time_ns;
	uint32_t stack_id;
};

struct cpu_lane {
	struct store_sample *samples; /* sorted by time */
	size_t sample_count, sample_cap;
	struct call_rows osrt, gc;
	struct pending_stack *pending; /* FIFO ring of PENDING_STACKS_MAX */
	size_t pending_head, pending_count;
};

struct cpu_counter {
	pid_t tid;
	uint32_t event_id;
	uint64_t value, time_ns;
};

struct cpu_process {
	struct cpu_counter *v;
	size_t n, cap;
	struct hashmap map; /* by (tid, event): index + 1 */
};

struct stack_ref {
	size_t off; /* into pool */
	uint32_t depth;
	uint32_t hash;
};

struct cpu_store {
	struct store_frame *frames; /* [0] unused */
	size_t frame_count, frame_cap;
	uint32_t *frame_of_string; /* global string id -> frame id, 0 = not seen */
	size_t fos_cap;
	uint32_t *pool; /* frame ids of all stacks */
	size_t pool_n, pool_cap;
	struct stack_ref *stacks; /* [0] = the empty stack */
	size_t stack_count, stack_cap;
	struct hashmap stack_map; /* stack ids by frames */
	uint64_t samples;
};

static size_t sample_lower_bound(const struct store_sample *v, size_t lo, size_t n, uint64_t t);

static struct cpu_store *cpu_store(struct store *st)
{
	if (!st->cpu) {
		st->cpu = xcalloc(1, sizeof *st->cpu);
		st->cpu->frame_count = 1;
		st->cpu->stack_count = 1;
		xgrow((void **)&st->cpu->frames, &st->cpu->frame_cap, 1, sizeof *st->cpu->frames);
		xgrow((void **)&st->cpu->stacks, &st->cpu->stack_cap, 1, sizeof *st->cpu->stacks);
		memset(&st->cpu->frames[0], 0, sizeof st->cpu->frames[0]);
		memset(&st->cpu->stacks[0], 0, sizeof st->cpu->stacks[0]);
	}
	return st->cpu;
}

static struct cpu_lane *cpu_lane(struct lane *l)
{
	if (!l->cpu)
		l->cpu = xcalloc(1, sizeof *l->cpu);
	return l->cpu;
}

/* ---- frames and stacks ---- */

/* Frame id of global string text_id ("function\x1fmodule"), created on first sight. */
static uint32_t frame_of(struct store *st, uint32_t text_id)
{
	struct cpu_store *c = cpu_store(st);
	if (!text_id)
		return 0;
	if (text_id >= c->fos_cap) {
		size_t old = c->fos_cap;
		xgrow((void **)&c->frame_of_string, &c->fos_cap, (size_t)text_id + 1,
		      sizeof *c->frame_of_string);
		memset(c->frame_of_string + old, 0, (c->fos_cap - old) * sizeof *c->frame_of_string);
	}
	if (c->frame_of_string[text_id])
		return c->frame_of_string[text_id];
	/* Strings are separately allocated: text stays valid while store_intern grows the table. */
	const char *text = st->strings[text_id];
	size_t len = st->string_len[text_id];
	const char *sep = memrchr(text, WIRE_FRAME_SEPARATOR, len);
	size_t fn_len = sep ? (size_t)(sep - text) : len;
	struct store_frame f = {0, 0, text_id};
	if (sep)
		f.module_id = store_intern(st, sep + 1, len - fn_len - 1);
	char *fn = xstrndup(text, fn_len);
	char buf[8192];
	const char *d = store_demangle(fn, buf, sizeof buf);
	f.function_id = d ? store_intern(st, d, strlen(d)) : store_intern(st, fn, fn_len);
	free(fn);
	xgrow((void **)&c->frames, &c->frame_cap, c->frame_count + 1, sizeof *c->frames);
	uint32_t id = (uint32_t)c->frame_count++;
	c->frames[id] = f;
	c->frame_of_string[text_id] = id;
	return id;
}

static uint32_t stack_hash(const uint32_t *f, size_t n)
{
	uint32_t h = 2166136261u ^ (uint32_t)n;
	for (size_t i = 0; i < n; i++)
		h = (h ^ f[i]) * 16777619u;
	return h ? h : 1;
}

struct stack_key {
	const struct cpu_store *c;
	const uint32_t *frames;
	size_t n;
	uint32_t hash;
};

static int stack_eq(const void *key, uint32_t id)
{
	const struct stack_key *k = key;
	const struct stack_ref *r = &k->c->stacks[id];
	return r->hash == k->hash && r->depth == k->n &&
	       memcmp(k->c->pool + r->off, k->frames, k->n * sizeof *k->frames) == 0;
}

static uint64_t stack_rehash(const void *ctx, uint32_t id)
{
	const struct cpu_store *c = ctx;
	return c->stacks[id].hash;
}

/* Stack id of a frame sequence (leaf first), interning it; 0 for an empty one. */
static uint32_t stack_intern(struct cpu_store *c, const uint32_t *f, size_t n)
{
	if (!n)
		return 0;
	hashmap_reserve(&c->stack_map, 1024, stack_rehash, c, xcalloc);
	uint32_t h = stack_hash(f, n);
	struct stack_key key = {c, f, n, h};
	uint32_t *slot = hashmap_slot(&c->stack_map, h, stack_eq, &key);
	if (*slot)
		return *slot;
	xgrow((void **)&c->pool, &c->pool_cap, c->pool_n + n, sizeof *c->pool);
	memcpy(c->pool + c->pool_n, f, n * sizeof *f);
	xgrow((void **)&c->stacks, &c->stack_cap, c->stack_count + 1, sizeof *c->stacks);
	uint32_t id = (uint32_t)c->stack_count++;
	c->stacks[id] = (struct stack_ref){c->pool_n, (uint32_t)n, h};
	c->pool_n += n;
	hashmap_fill(&c->stack_map, slot, id);
	return id;
}

/* ---- calls on rows ---- */

/* First index whose start_ns >= t. */
static size_t call_lower_bound(const struct store_call *v, size_t n, uint64_t t)
{
	return timerow_bound(v, n, sizeof *v, TIMEROW_START, t, 0);
}

/* First index whose end_ns > t (ends are sorted too on a row without overlaps). */
static size_t call_first_ending_after(const struct store_call *v, size_t n, uint64_t t)
{
	return timerow_bound(v, n, sizeof *v, TIMEROW_END, t, 1);
}

/* Puts a call on the lowest row where it overlaps nothing, keeping the row sorted. */
static void calls_insert(struct call_rows *cr, const struct store_call *call)
{
	for (size_t row = 0;; row++) {
		if (row == cr->count) {
			xgrow((void **)&cr->rows, &cr->cap, row + 1, sizeof *cr->rows);
			memset(&cr->rows[row], 0, sizeof *cr->rows);
			cr->count++;
		}
		struct call_row *r = &cr->rows[row];
		size_t pos = timerow_fit(r->v, r->n, sizeof *r->v, call->start_ns, call->end_ns);
		if (pos == SIZE_MAX)
			continue;
		store_grow((void **)&r->v, &r->cap, r->n + 1, sizeof *r->v);
		timerow_insert(r->v, &r->n, sizeof *r->v, pos, call);
		cr->calls++;
		return;
	}
}

/* The call starting at t without a stack yet, or NULL. */
static struct store_call *calls_find_unstacked(struct call_rows *cr, uint64_t t)
{
	for (size_t row = 0; row < cr->count; row++) {
		struct call_row *r = &cr->rows[row];
		for (size_t i = call_lower_bound(r->v, r->n, t); i < r->n && r->v[i].start_ns == t; i++)
			if (!r->v[i].stack_id)
				return &r->v[i];
	}
	return NULL;
}

static size_t calls_query(const struct call_rows *cr, size_t row, uint64_t from_ns, uint64_t to_ns,
                          const struct store_call **out)
{
	if (row >= cr->count || from_ns >= to_ns) {
		*out = NULL;
		return 0;
	}
	const struct call_row *r = &cr->rows[row];
	size_t lo = call_first_ending_after(r->v, r->n, from_ns);
	size_t hi = call_lower_bound(r->v, r->n, to_ns);
	*out = hi > lo ? r->v + lo : NULL; /* an empty row may have no array: never NULL + 0 */
	return hi > lo ? hi - lo : 0;
}

static void calls_fini(struct call_rows *cr)
{
	for (size_t r = 0; r < cr->count; r++)
		free(cr->rows[r].v);
	free(cr->rows);
}

static size_t calls_bytes(const struct call_rows *cr)
{
	size_t bytes = cr->cap * sizeof *cr->rows;
	for (size_t r = 0; r < cr->count; r++)
		bytes += cr->rows[r].cap * sizeof *cr->rows[r].v;
	return bytes;
}

/* ---- ingest ---- */

static void pending_push(struct cpu_lane *cl, uint64_t t, uint32_t stack)
{
	if (!cl->pending)
		cl->pending = xcalloc(PENDING_STACKS_MAX, sizeof *cl->pending);
	if (cl->pending_count == PENDING_STACKS_MAX) { /* the oldest gives way */
		cl->pending_head = (cl->pending_head + 1) % PENDING_STACKS_MAX;
		cl->pending_count--;
	}
	cl->pending[(cl->pending_head + cl->pending_count++) % PENDING_STACKS_MAX] =
	    (struct pending_stack){t, stack};
}

/* Takes the pending stack of the call that started at t; 0 if none. */
static uint32_t pending_take(struct cpu_lane *cl, uint64_t t)
{
	for (size_t k = 0; k < cl->pending_count; k++) {
		size_t i = (cl->pending_head + k) % PENDING_STACKS_MAX;
		if (cl->pending[i].time_ns != t)
			continue;
		uint32_t stack = cl->pending[i].stack_id;
		/* Close the gap: move the later entries back by one. */
		for (size_t j = k; j + 1 < cl->pending_count; j++)
			cl->pending[(cl->pending_head + j) % PENDING_STACKS_MAX] =
			    cl->pending[(cl->pending_head + j + 1) % PENDING_STACKS_MAX];
		cl->pending_count--;
		return stack;
	}
	return 0;
}

static void sample_insert(struct cpu_lane *cl, uint64_t t, uint32_t stack)
{
	store_grow((void **)&cl->samples, &cl->sample_cap, cl->sample_count + 1, sizeof *cl->samples);
	size_t pos = cl->sample_count;
	/* Samples of one thread arrive in order; a reconnect may replay a few out of it. */
	while (pos > 0 && cl->samples[pos - 1].time_ns > t)
		pos--;
	timerow_insert(cl->samples, &cl->sample_count, sizeof *cl->samples, pos,
	               &(struct store_sample){t, stack, 0});
}

static void ingest_stacks(struct store *st, struct process *pr, const struct source *src, const uint8_t *p,
                          uint32_t length)
{
	struct cpu_store *c = cpu_store(st);
	uint32_t off = 0;
	uint32_t frames[WIRE_STACK_MAX_DEPTH];
	/* wire_frame_check has verified that the records fit exactly. */
	while (length - off >= sizeof(struct wire_stack)) {
		struct wire_stack ws;
		memcpy(&ws, p + off, sizeof ws);
		off += (uint32_t)sizeof ws;
		size_t depth = ws.depth <= WIRE_STACK_MAX_DEPTH ? ws.depth : WIRE_STACK_MAX_DEPTH;
		size_t n = 0;
		for (size_t i = 0; i < depth; i++) {
			uint32_t local;
			memcpy(&local, p + off + i * 4, 4);
			uint32_t text = local < src->strmap_cap ? src->strmap[local] : 0;
			uint32_t f = frame_of(st, text);
			if (f) /* a frame whose string never came is left out */
				frames[n++] = f;
		}
		off += (uint32_t)ws.depth * 4u;
		uint32_t stack = stack_intern(c, frames, n);
		struct lane *l = store_thread_lane(pr, (pid_t)ws.tid, ws.time_ns);
		struct cpu_lane *cl = cpu_lane(l);
		if (ws.kind == WIRE_STACK_SAMPLE) {
			store_note_time(st, ws.time_ns);
			if (ws.time_ns && ws.time_ns < l->first_ns)
				l->first_ns = ws.time_ns;
			sample_insert(cl, ws.time_ns, stack);
			c->samples++;
			pr->events++;
			st->events++;
		} else if (ws.kind == WIRE_STACK_OSRT) {
			struct store_call *call = calls_find_unstacked(&cl->osrt, ws.time_ns);
			if (call)
				call->stack_id = stack;
			else if (stack)
				pending_push(cl, ws.time_ns, stack);
		}
		/* Other kinds come from newer collectors: nothing to show yet. */
	}
}

struct counter_key {
	const struct cpu_process *cp;
	pid_t tid;
	uint32_t event_id;
};

static uint64_t counter_hash(pid_t tid, uint32_t event_id)
{
	return (uint32_t)tid * 2654435761u ^ event_id * 40503u;
}

static int counter_eq(const void *key, uint32_t ref)
{
	const struct counter_key *k = key;
	const struct cpu_counter *x = &k->cp->v[ref - 1];
	return x->tid == k->tid && x->event_id == k->event_id;
}

static uint64_t counter_rehash(const void *ctx, uint32_t ref)
{
	const struct cpu_process *cp = ctx;
	return counter_hash(cp->v[ref - 1].tid, cp->v[ref - 1].event_id);
}

static void ingest_counters(struct store *st, struct process *pr, const struct source *src, const uint8_t *p,
                            uint32_t length)
{
	(void)st;
	if (!pr->cpu)
		pr->cpu = xcalloc(1, sizeof *pr->cpu);
	struct cpu_process *cp = pr->cpu;
	size_t count = length / sizeof(struct wire_counter);
	for (size_t i = 0; i < count; i++) {
		struct wire_counter wc;
		memcpy(&wc, p + i * sizeof wc, sizeof wc);
		uint32_t event = wc.event_id < src->strmap_cap ? src->strmap[wc.event_id] : 0;
		hashmap_reserve(&cp->map, 64, counter_rehash, cp, xcalloc);
		struct counter_key key = {cp, (pid_t)wc.tid, event};
		uint32_t *slot = hashmap_slot(&cp->map, counter_hash(key.tid, event), counter_eq, &key);
		struct cpu_counter *e = *slot ? &cp->v[*slot - 1] : NULL;
		if (!e) {
			xgrow((void **)&cp->v, &cp->cap, cp->n + 1, sizeof *cp->v);
			e = &cp->v[cp->n];
			*e = (struct cpu_counter){(pid_t)wc.tid, event, wc.value, wc.time_ns};
			hashmap_fill(&cp->map, slot, (uint32_t)++cp->n);
		} else if (wc.time_ns >= e->time_ns) { /* newest wins */
			e->value = wc.value;
			e->time_ns = wc.time_ns;
		}
	}
}

int store_cpu_ingest(struct store *st, struct process *pr, struct source *src, uint32_t type,
                     const void *payload, uint32_t length)
{
	if (type == WIRE_FRAME_STACKS)
		ingest_stacks(st, pr, src, payload, length);
	else if (type == WIRE_FRAME_COUNTERS)
		ingest_counters(st, pr, src, payload, length);
	return 0;
}

void store_cpu_event(struct store *st, struct process *pr, const struct wire_event *ev, uint32_t name)
{
	struct lane *l = store_thread_lane(pr, (pid_t)ev->tid, ev->time_ns);
	struct cpu_lane *cl = cpu_lane(l);
	struct store_call call = {ev->time_ns, ev->value > ev->time_ns ? ev->value : ev->time_ns, name, 0};
	store_note_time(st, call.end_ns);
	if (ev->kind == WIRE_EV_OSRT) {
		call.stack_id = pending_take(cl, ev->time_ns);
		calls_insert(&cl->osrt, &call);
	} else if (ev->kind == WIRE_EV_GC) {
		calls_insert(&cl->gc, &call);
	}
}

/* Leading calls of each row that ended before t dropped; returns how many. */
static uint64_t calls_evict(struct call_rows *cr, uint64_t t)
{
	uint64_t dropped = 0;
	for (size_t r = 0; r < cr->count; r++) {
		struct call_row *row = &cr->rows[r];
		size_t k = 0;
		while (k < row->n && row->v[k].end_ns < t)
			k++;
		if (!k)
			continue;
		memmove(row->v, row->v + k, (row->n - k) * sizeof *row->v);
		row->n -= k;
		store_evict_shrink((void **)&row->v, row->n, &row->cap, sizeof *row->v);
		dropped += k;
	}
	return dropped;
}

size_t store_cpu_lane_event_bytes(const struct lane *l)
{
	const struct cpu_lane *cl = l->cpu;
	return cl ? cl->sample_cap * sizeof *cl->samples + calls_bytes(&cl->osrt) + calls_bytes(&cl->gc) : 0;
}

uint64_t store_cpu_lane_evict(struct lane *l, uint64_t t)
{
	struct cpu_lane *cl = l->cpu;
	if (!cl)
		return 0;
	size_t k = sample_lower_bound(cl->samples, 0, cl->sample_count, t);
	if (k) {
		memmove(cl->samples, cl->samples + k, (cl->sample_count - k) * sizeof *cl->samples);
		cl->sample_count -= k;
		store_evict_shrink((void **)&cl->samples, cl->sample_count, &cl->sample_cap,
		                   sizeof *cl->samples);
	}
	return k + calls_evict(&cl->osrt, t) + calls_evict(&cl->gc, t);
}

void store_cpu_lane_fini(struct lane *l)
{
	struct cpu_lane *cl = l->cpu;
	if (!cl)
		return;
	free(cl->samples);
	calls_fini(&cl->osrt);
	calls_fini(&cl->gc);
	free(cl->pending);
	free(cl);
	l->cpu = NULL;
}

void store_cpu_process_fini(struct process *pr)
{
	if (!pr->cpu)
		return;
	free(pr->cpu->v);
	hashmap_fini(&pr->cpu->map);
	free(pr->cpu);
	pr->cpu = NULL;
}

void store_cpu_fini(struct store *st)
{
	struct cpu_store *c = st->cpu;
	if (!c)
		return;
	free(c->frames);
	free(c->frame_of_string);
	free(c->pool);
	free(c->stacks);
	hashmap_fini(&c->stack_map);
	free(c);
	st->cpu = NULL;
}

size_t store_cpu_memory_bytes(const struct store *st)
{
	size_t bytes = 0;
	const struct cpu_store *c = st->cpu;
	if (c) {
		bytes +=
		    sizeof *c + c->frame_cap * sizeof *c->frames + c->fos_cap * sizeof *c->frame_of_string;
		bytes += c->pool_cap * sizeof *c->pool + c->stack_cap * sizeof *c->stacks;
		bytes += hashmap_bytes(&c->stack_map);
	}
	for (size_t p = 0; p < st->proc_count; p++) {
		const struct process *pr = &st->procs[p];
		if (pr->cpu)
			bytes += sizeof *pr->cpu + pr->cpu->cap * sizeof *pr->cpu->v +
			         hashmap_bytes(&pr->cpu->map);
		for (size_t l = 0; l < pr->lane_count; l++) {
			const struct cpu_lane *cl = pr->lanes[l].cpu;
			if (!cl)
				continue;
			bytes += sizeof *cl + cl->sample_cap * sizeof *cl->samples;
			bytes += calls_bytes(&cl->osrt) + calls_bytes(&cl->gc);
			if (cl->pending)
				bytes += PENDING_STACKS_MAX * sizeof *cl->pending;
		}
	}
	return bytes;
}

/* ---- queries ---- */

static const struct cpu_lane *lane_cpu(const struct store *st, size_t process, size_t lane)
{
	if (process >= st->proc_count || lane >= st->procs[process].lane_count)
		return NULL;
	return st->procs[process].lanes[lane].cpu;
}

uint64_t store_sample_count(const struct store *st)
{
	return st->cpu ? st->cpu->samples : 0;
}

void store_lane_cpu_get(const struct store *st, size_t process, size_t lane, struct store_lane_cpu_info *out)
{
	memset(out, 0, sizeof *out);
	const struct cpu_lane *cl = lane_cpu(st, process, lane);
	if (!cl)
		return;
	out->samples = cl->sample_count;
	out->osrt_row_count = cl->osrt.count;
	out->osrt_calls = cl->osrt.calls;
	out->gc_row_count = cl->gc.count;
	out->gc_count = cl->gc.calls;
	out->osrt_pending = cl->pending_count;
}

/* First index in samples[lo..n) with time_ns >= t. */
static size_t sample_lower_bound(const struct store_sample *v, size_t lo, size_t n, uint64_t t)
{
	if (lo >= n) /* v may be NULL: never NULL + 0 */
		return lo;
	return lo + timerow_bound(v + lo, n - lo, sizeof *v, TIMEROW_START, t, 0);
}

size_t store_lane_samples(const struct store *st, size_t process, size_t lane, uint64_t from_ns,
                          uint64_t to_ns, const struct store_sample **out)
{
	const struct cpu_lane *cl = lane_cpu(st, process, lane);
	if (!cl || from_ns >= to_ns) {
		*out = NULL;
		return 0;
	}
	size_t lo = sample_lower_bound(cl->samples, 0, cl->sample_count, from_ns);
	size_t hi = sample_lower_bound(cl->samples, lo, cl->sample_count, to_ns);
	*out = cl->samples + lo;
	return hi - lo;
}

uint64_t store_lane_sample_density(const struct store *st, size_t process, size_t lane, uint64_t from_ns,
                                   uint64_t to_ns, size_t buckets, uint32_t *out_counts)
{
	if (buckets)
		memset(out_counts, 0, buckets * sizeof *out_counts);
	const struct cpu_lane *cl = lane_cpu(st, process, lane);
	if (!cl || !buckets || from_ns >= to_ns)
		return 0;
	const struct store_sample *v = cl->samples;
	size_t n = cl->sample_count;
	size_t first = sample_lower_bound(v, 0, n, from_ns);
	size_t last = sample_lower_bound(v, first, n, to_ns);
	if (first == last)
		return 0;
	unsigned __int128 span = to_ns - from_ns;
	size_t at = first;
	for (size_t b = 0; b < buckets && at < last; b++) {
		uint64_t end = from_ns + (uint64_t)(span * (b + 1) / buckets);
		size_t next = b + 1 == buckets ? last : sample_lower_bound(v, at, last, end);
		uint64_t c = next - at;
		out_counts[b] = c > UINT32_MAX ? UINT32_MAX : (uint32_t)c;
		at = next;
	}
	return last - first;
}

size_t store_lane_osrt_query(const struct store *st, size_t process, size_t lane, size_t row,
                             uint64_t from_ns, uint64_t to_ns, const struct store_call **out)
{
	const struct cpu_lane *cl = lane_cpu(st, process, lane);
	if (!cl) {
		*out = NULL;
		return 0;
	}
	return calls_query(&cl->osrt, row, from_ns, to_ns, out);
}

size_t store_lane_gc_query(const struct store *st, size_t process, size_t lane, size_t row, uint64_t from_ns,
                           uint64_t to_ns, const struct store_call **out)
{
	const struct cpu_lane *cl = lane_cpu(st, process, lane);
	if (!cl) {
		*out = NULL;
		return 0;
	}
	return calls_query(&cl->gc, row, from_ns, to_ns, out);
}

size_t store_stack_frames(const struct store *st, uint32_t stack_id, const uint32_t **frames)
{
	const struct cpu_store *c = st->cpu;
	if (!c || !stack_id || stack_id >= c->stack_count) {
		*frames = NULL;
		return 0;
	}
	*frames = c->pool + c->stacks[stack_id].off;
	return c->stacks[stack_id].depth;
}

void store_frame_get(const struct store *st, uint32_t frame_id, struct store_frame *out)
{
	const struct cpu_store *c = st->cpu;
	if (!c || !frame_id || frame_id >= c->frame_count)
		memset(out, 0, sizeof *out);
	else
		*out = c->frames[frame_id];
}

const char *store_frame_function(const struct store *st, uint32_t frame_id)
{
	struct store_frame f;
	store_frame_get(st, frame_id, &f);
	return store_string(st, f.function_id);
}

const char *store_frame_module(const struct store *st, uint32_t frame_id)
{
	struct store_frame f;
	store_frame_get(st, frame_id, &f);
	return store_string(st, f.module_id);
}

static uint64_t overlap(uint64_t a0, uint64_t a1, uint64_t b0, uint64_t b1)
{
	uint64_t s = a0 > b0 ? a0 : b0, e = a1 < b1 ? a1 : b1;
	return e > s ? e - s : 0;
}

/* The call of cr overlapping [t0,t1) the most (longer call on a tie); 1 if any. *sum = all overlap. */
static int longest_call(const struct call_rows *cr, uint64_t t0, uint64_t t1, struct store_call *best,
                        uint64_t *best_ov, uint64_t *sum)
{
	int found = 0;
	*best_ov = 0;
	if (sum)
		*sum = 0;
	for (size_t row = 0; row < cr->count; row++) {
		const struct store_call *c;
		size_t n = calls_query(cr, row, t0, t1, &c);
		for (size_t i = 0; i < n; i++) {
			uint64_t ov = overlap(c[i].start_ns, c[i].end_ns, t0, t1);
			if (sum)
				*sum += ov;
			if (!found || ov > *best_ov ||
			    (ov == *best_ov && c[i].end_ns - c[i].start_ns > best->end_ns - best->start_ns)) {
				*best = c[i];
				*best_ov = ov;
				found = 1;
			}
		}
	}
	return found;
}

void store_thread_activity(const struct store *st, size_t process, pid_t tid, uint64_t from_ns,
                           uint64_t to_ns, struct store_thread_activity *out)
{
	memset(out, 0, sizeof *out);
	size_t lane = store_thread_lane_find(st, process, tid);
	out->lane = lane;
	if (lane == SIZE_MAX || from_ns >= to_ns)
		return;
	const struct lane *l = &st->procs[process].lanes[lane];
	/* Samples: the most frequent leaf and whole stack. */
	const struct store_sample *v;
	size_t n = store_lane_samples(st, process, lane, from_ns, to_ns, &v);
	out->samples = n;
	if (n) {
		size_t distinct;
		struct stack_count *sc = store_cpu_count_stacks(v, n, &distinct);
		uint64_t best = 0;
		for (size_t i = 0; i < distinct; i++) {
			if (sc[i].count > best || (sc[i].count == best && sc[i].stack_id < out->top_stack)) {
				best = sc[i].count;
				out->top_stack = sc[i].stack_id;
			}
		}
		struct store_hot_function top;
		if (store_hot_functions(st, process, lane, from_ns, to_ns, 1, &top, NULL) && top.self) {
			out->top_frame = top.frame_id;
			out->top_samples = top.self;
		}
		free(sc);
	}
	if (l->cpu) {
		out->has_blocking = longest_call(&l->cpu->osrt, from_ns, to_ns, &out->blocking,
		                                 &out->blocking_overlap_ns, NULL);
		uint64_t ov;
		out->has_gc = longest_call(&l->cpu->gc, from_ns, to_ns, &out->gc, &ov, &out->gc_overlap_ns);
	}
	/* Innermost push/pop range: the deepest row with a range overlapping the interval. */
	uint64_t best_ov = 0;
	for (size_t k = 0; k < l->open_count; k++) {
		const struct open_range *o = &l->open[k];
		if (o->range.start_ns >= to_ns)
			continue;
		uint64_t ov = overlap(o->range.start_ns, UINT64_MAX, from_ns, to_ns);
		if (!out->has_nvtx || o->row > out->nvtx_depth ||
		    (o->row == out->nvtx_depth && ov > best_ov)) {
			out->has_nvtx = 1;
			out->nvtx = o->range;
			out->nvtx_depth = o->row;
			best_ov = ov;
		}
	}
	for (size_t row = l->row_count; row-- > 0;) {
		if (out->has_nvtx && out->nvtx_depth >= row)
			break;
		const struct store_range *r;
		size_t m = store_lane_row_query(st, process, lane, row, from_ns, to_ns, &r);
		for (size_t i = 0; i < m; i++) {
			uint64_t ov = overlap(r[i].start_ns, r[i].end_ns, from_ns, to_ns);
			if (!out->has_nvtx || out->nvtx_depth < row || ov > best_ov) {
				out->has_nvtx = 1;
				out->nvtx = r[i];
				out->nvtx_depth = row;
				best_ov = ov;
			}
		}
		if (out->has_nvtx)
			break;
	}
}

size_t store_counter_count(const struct store *st, size_t process)
{
	if (process >= st->proc_count || !st->procs[process].cpu)
		return 0;
	return st->procs[process].cpu->n;
}

void store_counter_get(const struct store *st, size_t process, size_t index, struct store_counter *out)
{
	const struct cpu_counter *c = &st->procs[process].cpu->v[index];
	*out = (struct store_counter){c->tid, c->event_id, c->value, c->time_ns};
}
