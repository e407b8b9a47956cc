/*
 * GPU side of the event store: WIRE_FRAME_GPU records onto per-(device, stream) lanes and onto the
 * calling thread's lane (CUDA API calls, host syncs), the correlation join between them, devices.
 */
#include "store_impl.h"

#include "cuscope/xalloc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BYTES_BIG 0x80000000u /* aux flag: the byte count lives in big_bytes[aux & ~BYTES_BIG] */
#define NO_STREAM 0xffffffffu /* CUPTI's "invalid" stream of a non-stream sync */

/* ---- the GPU parts of a process and a lane ---- */

/* One row of GPU operations (stream lanes) or CUDA API calls and syncs (thread lanes). */
struct gpu_row {
	struct store_gpu_op *v; /* sorted by start, never overlapping */
	size_t n, cap;
};

/* The API call behind a correlation id. */
struct corr_entry {
	uint32_t correlation_id; /* 0 = empty slot */
	uint32_t tid;
	uint32_t name_id; /* global */
	uint16_t kind;    /* WIRE_GPU_API_RUNTIME or _DRIVER */
	uint16_t pad;
	uint64_t start_ns, end_ns;
};

/*
 * API calls by correlation id: open addressing on a hash of the id, at most a quarter full (the
 * longest probe stays near 10 slots, far below CORR_PROBE_MAX, on 200 000 ids), sized by
 * the calls stored and never by the ids. Ids are sparse (every CUDA call takes one, recorded or
 * not: 8 cheap calls a launch are common) and arrive out of order (calls recorded by callback
 * reach the store a drain ahead of their kernels, thread by thread), and a crafted id must not
 * size the table.
 */
struct corr_table {
	struct corr_entry *v;
	size_t cap, count; /* cap a power of two (or 0); count <= cap / 4 */
};

/* A sync placed on a stream lane while its API record (and so its thread) was unknown. */
struct pending_sync {
	uint32_t correlation_id; /* 0 = empty */
	uint32_t lane;
	uint64_t start_ns;
};

/* GPU part of a lane: ops on a stream lane, API calls and syncs on a thread lane. */
struct gpu_lane {
	struct gpu_row *rows;
	size_t row_count, row_cap;
	uint64_t ops;
	/* stream lanes only */
	uint32_t device, stream;
	uint64_t kernels, copies; /* kernels; memcpy + memset */
	int is_default;
	char label[48];
};

/* GPU part of a process. */
struct gpu_process {
	uint64_t events;
	struct hashmap stream_map;  /* stream lanes by (device, stream): lane index + 1 */
	struct corr_table corr;     /* the API calls behind correlation ids, newest */
	struct corr_table corr_old; /* the previous generation, once corr filled at its largest */
	struct pending_sync *psync; /* PENDING_SYNC_SLOTS, direct-mapped */
	struct gpu_context *ctx;
	size_t ctx_count, ctx_cap;
	struct store_kernel_config *kcfg;
	size_t kcfg_count, kcfg_cap;
	struct hashmap kcfg_map; /* kcfg by value: index + 1 */
	uint64_t *big_bytes;     /* byte counts that do not fit an op's aux field */
	size_t big_count, big_cap;
	struct gpu_device *devices;
	size_t device_count, device_cap;
};

/* What a lane or a process without GPU activity reads as. */
static const struct gpu_lane gpu_lane_none;
static const struct gpu_process gpu_process_none;

/* The GPU part of a lane, made on first use. */
static struct gpu_lane *gpu_lane(struct lane *l)
{
	if (!l->gpu)
		l->gpu = xcalloc(1, sizeof *l->gpu);
	return l->gpu;
}

static const struct gpu_lane *gpu_lane_of(const struct lane *l)
{
	return l->gpu ? l->gpu : &gpu_lane_none;
}

/* The GPU part of a process, made with its first GPU frame. */
static struct gpu_process *gpu_process(struct process *pr)
{
	if (!pr->gpu)
		pr->gpu = xcalloc(1, sizeof *pr->gpu);
	return pr->gpu;
}

static const struct gpu_process *gpu_process_of(const struct process *pr)
{
	return pr->gpu ? pr->gpu : &gpu_process_none;
}

/* ---- per-process maps ---- */

static uint64_t stream_key(uint32_t device, uint32_t stream)
{
	return (uint64_t)device << 32 | stream;
}

/* The stream map finds a stream lane by (device, stream) (map references are lane index + 1). */
struct stream_lookup {
	const struct process *pr;
	uint32_t device, stream;
};

static uint64_t stream_hash(uint32_t device, uint32_t stream)
{
	return (stream_key(device, stream) * 0x9e3779b97f4a7c15ull) >> 32;
}

static int stream_eq(const void *key, uint32_t ref)
{
	const struct stream_lookup *k = key;
	const struct lane *l = &k->pr->lanes[ref - 1];
	return l->gpu->device == k->device && l->gpu->stream == k->stream;
}

static uint64_t stream_rehash(const void *ctx, uint32_t ref)
{
	const struct process *pr = ctx;
	return stream_hash(pr->lanes[ref - 1].gpu->device, pr->lanes[ref - 1].gpu->stream);
}

static const struct gpu_context *context_find(const struct process *pr, uint32_t context)
{
	for (size_t i = 0; i < pr->gpu->ctx_count; i++)
		if (pr->gpu->ctx[i].context == context)
			return &pr->gpu->ctx[i];
	return NULL;
}

static int stream_is_default(const struct process *pr, uint32_t device, uint32_t stream)
{
	for (size_t i = 0; i < pr->gpu->ctx_count; i++)
		if (pr->gpu->ctx[i].device == device && pr->gpu->ctx[i].null_stream == stream)
			return 1;
	return 0;
}

static void lane_relabel(struct lane *l)
{
	char s[24];
	if (l->gpu->is_default)
		snprintf(s, sizeof s, "default");
	else
		snprintf(s, sizeof s, "s%u", l->gpu->stream);
	snprintf(l->gpu->label, sizeof l->gpu->label, "GPU%u %s%s", l->gpu->device, s,
	         !l->gpu->kernels && l->gpu->copies ? " cpy" : "");
}

/* Index of the lane of (device, stream), created (first seen at t) if new. */
static size_t stream_lane(struct process *pr, uint32_t device, uint32_t stream, uint64_t t)
{
	struct stream_lookup key = {pr, device, stream};
	uint32_t ref = hashmap_find(&pr->gpu->stream_map, stream_hash(device, stream), stream_eq, &key);
	if (ref)
		return ref - 1;
	/* More lanes than a real process has: a crafted stream must not grow a lane per record. */
	if (pr->lane_count >= THREAD_LANES_MAX && !(device == UINT32_MAX && stream == UINT32_MAX))
		return stream_lane(pr, UINT32_MAX, UINT32_MAX, t);
	size_t index = pr->lane_count;
	struct lane *l = store_lane_append(pr, STORE_LANE_GPU_STREAM, 0, t);
	gpu_lane(l);
	l->gpu->device = device;
	l->gpu->stream = stream;
	l->gpu->is_default = stream_is_default(pr, device, stream);
	lane_relabel(l);
	hashmap_reserve(&pr->gpu->stream_map, 32, stream_rehash, pr, xcalloc);
	hashmap_fill(&pr->gpu->stream_map,
	             hashmap_slot(&pr->gpu->stream_map, stream_hash(device, stream), stream_eq, &key),
	             (uint32_t)index + 1);
	return index;
}

static void context_record(struct process *pr, uint32_t context, uint32_t device, uint32_t null_stream)
{
	/* A context is announced once; the table is searched per GPU op, so it stays small and a
	 * repeated or excess record (only a crafted stream sends one) changes nothing. */
	if (context_find(pr, context) || pr->gpu->ctx_count >= GPU_CONTEXTS_MAX)
		return;
	xgrow((void **)&pr->gpu->ctx, &pr->gpu->ctx_cap, pr->gpu->ctx_count + 1, sizeof *pr->gpu->ctx);
	struct gpu_context *c = &pr->gpu->ctx[pr->gpu->ctx_count++];
	*c = (struct gpu_context){context, device, null_stream};
	/* Lanes made before the context record learn that they are the default stream now. */
	for (size_t i = 0; i < pr->lane_count; i++) {
		struct lane *l = &pr->lanes[i];
		if (l->kind == STORE_LANE_GPU_STREAM && !l->gpu->is_default && l->gpu->device == device &&
		    l->gpu->stream == null_stream) {
			l->gpu->is_default = 1;
			lane_relabel(l);
		}
	}
}

static size_t corr_hash(uint32_t corr)
{
	return (size_t)(((uint64_t)corr * 0x9E3779B97F4A7C15ull) >> 20);
}

/* Slots probed for an id at most: crafted ids that collide cost bounded work each. */
#define CORR_PROBE_MAX 64

/* The slot of corr in t: its entry, else the first empty slot of its probe window, else (a run of
 * colliding ids) the window's first slot, whose older call is forgotten. Entries are never
 * removed, so a window never loses an entry to a later empty slot. */
struct corr_probe {
	const struct corr_table *t;
	uint32_t corr;
};

static enum hashmap_look corr_probe_look(const void *ctx, size_t slot)
{
	const struct corr_probe *p = ctx;
	uint32_t id = p->t->v[slot].correlation_id;
	return id == p->corr ? HASHMAP_MATCH : id ? HASHMAP_OTHER : HASHMAP_EMPTY;
}

static struct corr_entry *corr_table_slot(const struct corr_table *t, uint32_t corr)
{
	struct corr_probe p = {t, corr};
	int matched;
	size_t slot = hashmap_probe(t->cap, corr_hash(corr), CORR_PROBE_MAX, corr_probe_look, &p, &matched);
	return &t->v[slot != SIZE_MAX ? slot : corr_hash(corr) & (t->cap - 1)];
}

static struct corr_entry *corr_table_find(const struct corr_table *t, uint32_t corr)
{
	if (!t->cap)
		return NULL;
	struct corr_entry *e = corr_table_slot(t, corr);
	return e->correlation_id == corr ? e : NULL;
}

/* Doubles t (256 slots to start), keeping its entries. */
static void corr_table_grow(struct corr_table *t)
{
	struct corr_table bigger = {NULL, t->cap ? 2 * t->cap : 256, t->count};
	bigger.v = xcalloc(bigger.cap, sizeof *bigger.v);
	for (size_t i = 0; i < t->cap; i++) {
		if (!t->v[i].correlation_id)
			continue;
		struct corr_entry *e = corr_table_slot(&bigger, t->v[i].correlation_id);
		bigger.count -= e->correlation_id != 0; /* a collision run forgot one */
		*e = t->v[i];
	}
	free(t->v);
	*t = bigger;
}

static struct corr_entry *corr_get(const struct process *pr, uint32_t corr)
{
	const struct gpu_process *g = gpu_process_of(pr);
	if (!corr)
		return NULL;
	struct corr_entry *e = corr_table_find(&g->corr, corr);
	return e ? e : corr_table_find(&g->corr_old, corr);
}

static void corr_put(struct process *pr, const struct corr_entry *in)
{
	struct gpu_process *g = pr->gpu;
	/* A runtime call and the driver call inside it may share the id: the runtime one names it. */
	struct corr_entry *e = corr_get(pr, in->correlation_id);
	if (e && e->kind == WIRE_GPU_API_RUNTIME && in->kind != WIRE_GPU_API_RUNTIME)
		return;
	e = corr_table_find(&g->corr, in->correlation_id);
	if (!e) {
		if (g->corr.count + 1 > g->corr.cap / 4) {
			/* Full at its largest (CORR_MAP_MAX slots in both): the newest calls, 128 Ki
			 * or more, are kept, the older generation is forgotten. */
			if (g->corr.cap >= CORR_MAP_MAX / 2) {
				free(g->corr_old.v);
				g->corr_old = g->corr;
				g->corr = (struct corr_table){NULL, 0, 0};
			}
			corr_table_grow(&g->corr);
		}
		e = corr_table_slot(&g->corr, in->correlation_id);
		g->corr.count += e->correlation_id == 0;
	}
	*e = *in;
}

/* The kernel configurations of a process, by value (map references are index + 1). */
struct kcfg_key {
	const struct process *pr;
	const struct store_kernel_config *k;
};

static uint64_t kcfg_hash(const struct store_kernel_config *k)
{
	uint32_t h = 2166136261u;
	const unsigned char *b = (const unsigned char *)k;
	for (size_t i = 0; i < sizeof *k; i++)
		h = (h ^ b[i]) * 16777619u;
	return h;
}

static int kcfg_eq(const void *key, uint32_t ref)
{
	const struct kcfg_key *q = key;
	return memcmp(&q->pr->gpu->kcfg[ref - 1], q->k, sizeof *q->k) == 0;
}

static uint64_t kcfg_rehash(const void *ctx, uint32_t ref)
{
	const struct process *pr = ctx;
	return kcfg_hash(&pr->gpu->kcfg[ref - 1]);
}

static uint32_t kernel_config(struct process *pr, const struct wire_gpu_event *ev)
{
	struct store_kernel_config k;
	memset(&k, 0, sizeof k);
	memcpy(k.grid, ev->grid, sizeof k.grid);
	memcpy(k.block, ev->block, sizeof k.block);
	k.registers = ev->registers;
	k.shared_static = ev->shared_static;
	k.shared_dynamic = ev->shared_dynamic;
	k.graph_id = ev->graph_id;
	hashmap_reserve(&pr->gpu->kcfg_map, 256, kcfg_rehash, pr, xcalloc);
	struct kcfg_key key = {pr, &k};
	uint32_t *slot = hashmap_slot(&pr->gpu->kcfg_map, kcfg_hash(&k), kcfg_eq, &key);
	if (*slot)
		return *slot - 1;
	xgrow((void **)&pr->gpu->kcfg, &pr->gpu->kcfg_cap, pr->gpu->kcfg_count + 1, sizeof *pr->gpu->kcfg);
	pr->gpu->kcfg[pr->gpu->kcfg_count] = k;
	hashmap_fill(&pr->gpu->kcfg_map, slot, (uint32_t)pr->gpu->kcfg_count + 1);
	return (uint32_t)pr->gpu->kcfg_count++;
}

static uint32_t bytes_aux(struct process *pr, uint64_t bytes)
{
	if (bytes < BYTES_BIG)
		return (uint32_t)bytes;
	xgrow((void **)&pr->gpu->big_bytes, &pr->gpu->big_cap, pr->gpu->big_count + 1,
	      sizeof *pr->gpu->big_bytes);
	pr->gpu->big_bytes[pr->gpu->big_count] = bytes;
	return BYTES_BIG | (uint32_t)pr->gpu->big_count++;
}

/* ---- rows ---- */

/* First index whose start_ns >= t. */
static size_t op_lower_bound(const struct store_gpu_op *v, size_t n, uint64_t t)
{
	return timerow_bound(v, n, sizeof *v, TIMEROW_START, t, 0);
}

/* First index whose end_ns > t (ends are sorted too on a row without overlaps). */
static size_t op_first_ending_after(const struct store_gpu_op *v, size_t n, uint64_t t)
{
	return timerow_bound(v, n, sizeof *v, TIMEROW_END, t, 1);
}

/*
 * Puts op on the lowest gpu row of l where it overlaps nothing, keeping the row sorted. Real
 * lanes need a few rows (nested API calls); an op that would need more than GPU_ROWS_MAX (only a
 * crafted stream overlaps that much) is counted as unmatched instead, so each op costs bounded work.
 */
static void lane_gpu_insert(struct process *pr, struct lane *l, const struct store_gpu_op *op)
{
	gpu_lane(l);
	for (size_t row = 0;; row++) {
		if (row == GPU_ROWS_MAX) {
			pr->unmatched++;
			return;
		}
		if (row == l->gpu->row_count) {
			xgrow((void **)&l->gpu->rows, &l->gpu->row_cap, row + 1, sizeof *l->gpu->rows);
			memset(&l->gpu->rows[row], 0, sizeof *l->gpu->rows);
			l->gpu->row_count++;
		}
		struct gpu_row *r = &l->gpu->rows[row];
		size_t pos = timerow_fit(r->v, r->n, sizeof *r->v, op->start_ns, op->end_ns);
		if (pos == SIZE_MAX)
			continue;
		store_grow((void **)&r->v, &r->cap, r->n + 1, sizeof *r->v);
		timerow_insert(r->v, &r->n, sizeof *r->v, pos, op);
		l->gpu->ops++;
		if (!l->first_ns || op->start_ns < l->first_ns)
			l->first_ns = op->start_ns;
		return;
	}
}

/* Takes the sync with this correlation id and start out of lane l; 1 if found. */
static int lane_sync_take(struct lane *l, uint32_t corr, uint64_t start, struct store_gpu_op *out)
{
	if (!l->gpu)
		return 0;
	for (size_t row = 0; row < l->gpu->row_count; row++) {
		struct gpu_row *r = &l->gpu->rows[row];
		for (size_t i = op_lower_bound(r->v, r->n, start); i < r->n && r->v[i].start_ns == start;
		     i++) {
			if (r->v[i].kind == WIRE_GPU_SYNC && r->v[i].correlation_id == corr) {
				*out = r->v[i];
				memmove(&r->v[i], &r->v[i + 1], (r->n - i - 1) * sizeof *r->v);
				r->n--;
				l->gpu->ops--;
				return 1;
			}
		}
	}
	return 0;
}

/* ---- ingest ---- */

static uint32_t map_string(const struct source *src, uint32_t id)
{
	return id < src->strmap_cap ? src->strmap[id] : 0;
}

static void ingest_sync(struct process *pr, const struct wire_gpu_event *ev, struct store_gpu_op *op)
{
	const struct corr_entry *api = corr_get(pr, ev->correlation_id);
	if (api) {
		lane_gpu_insert(pr, store_thread_lane(pr, (pid_t)api->tid, op->start_ns), op);
		return;
	}
	/* A sync made from a recorded call names its thread (CUPTI's own records do not). */
	if (ev->tid) {
		lane_gpu_insert(pr, store_thread_lane(pr, (pid_t)ev->tid, op->start_ns), op);
		return;
	}
	/* No thread known (yet): the stream it waited for, else its context's default stream. Sync
	 * records name a context, not a device: the context record says which device. */
	uint32_t device = ev->device, stream = ev->stream;
	const struct gpu_context *c = context_find(pr, ev->context);
	if (c)
		device = c->device;
	if (stream == NO_STREAM)
		stream = c ? c->null_stream : 0;
	size_t lane = stream_lane(pr, device, stream, op->start_ns);
	lane_gpu_insert(pr, &pr->lanes[lane], op);
	if (ev->correlation_id) {
		if (!pr->gpu->psync)
			pr->gpu->psync = xcalloc(PENDING_SYNC_SLOTS, sizeof *pr->gpu->psync);
		/* A collision leaves the older sync where it is: shown on its stream, never lost. */
		pr->gpu->psync[ev->correlation_id % PENDING_SYNC_SLOTS] =
		    (struct pending_sync){ev->correlation_id, (uint32_t)lane, op->start_ns};
	}
}

static void ingest_api(struct process *pr, const struct wire_gpu_event *ev, struct store_gpu_op *op)
{
	lane_gpu_insert(pr, store_thread_lane(pr, (pid_t)ev->tid, op->start_ns), op);
	if (!ev->correlation_id)
		return;
	struct corr_entry e = {ev->correlation_id, ev->tid,   op->name_id, ev->kind, 0,
	                       op->start_ns,       op->end_ns};
	corr_put(pr, &e);
	if (!pr->gpu->psync)
		return;
	struct pending_sync *ps = &pr->gpu->psync[ev->correlation_id % PENDING_SYNC_SLOTS];
	if (ps->correlation_id != ev->correlation_id)
		return;
	struct store_gpu_op sync;
	if (ps->lane < pr->lane_count &&
	    lane_sync_take(&pr->lanes[ps->lane], ps->correlation_id, ps->start_ns, &sync))
		lane_gpu_insert(pr, store_thread_lane(pr, (pid_t)ev->tid, sync.start_ns), &sync);
	ps->correlation_id = 0;
}

static void ingest_gpu_event(struct store *st, struct process *pr, const struct source *src,
                             const struct wire_gpu_event *ev)
{
	pr->gpu->events++;
	pr->events++;
	st->gpu_events++;
	st->events++;
	struct store_gpu_op op = {
	    .start_ns = ev->start_ns,
	    .end_ns = ev->end_ns > ev->start_ns ? ev->end_ns : ev->start_ns,
	    .correlation_id = ev->correlation_id,
	    .kind = (uint8_t)ev->kind,
	    .flags = ev->flags,
	};
	switch (ev->kind) {
	case WIRE_GPU_KERNEL:
	case WIRE_GPU_MEMCPY:
	case WIRE_GPU_MEMSET: {
		store_note_time(st, op.start_ns);
		store_note_time(st, op.end_ns);
		/* stream_lane may move pr->lanes: index it only after the call. */
		size_t lane_index = stream_lane(pr, ev->device, ev->stream, op.start_ns);
		struct lane *l = &pr->lanes[lane_index];
		uint64_t kernels = l->gpu->kernels, copies = l->gpu->copies;
		if (ev->kind == WIRE_GPU_KERNEL) {
			op.name_id = store_kernel_name(st, map_string(src, ev->name_id));
			op.aux = kernel_config(pr, ev);
			l->gpu->kernels++;
		} else {
			op.subkind = ev->kind == WIRE_GPU_MEMCPY ? (uint8_t)ev->subkind : 0;
			op.mem = ev->kind == WIRE_GPU_MEMCPY
			             ? (uint8_t)((ev->src_mem & 15) << 4 | (ev->dst_mem & 15))
			             : (uint8_t)(ev->dst_mem & 15);
			op.aux = bytes_aux(pr, ev->bytes);
			l->gpu->copies++;
		}
		lane_gpu_insert(pr, l, &op);
		if (!kernels != !l->gpu->kernels || !copies != !l->gpu->copies)
			lane_relabel(l);
		break;
	}
	case WIRE_GPU_SYNC:
		store_note_time(st, op.start_ns);
		store_note_time(st, op.end_ns);
		op.subkind = (uint8_t)ev->subkind;
		ingest_sync(pr, ev, &op);
		break;
	case WIRE_GPU_API_RUNTIME:
	case WIRE_GPU_API_DRIVER:
		store_note_time(st, op.start_ns);
		store_note_time(st, op.end_ns);
		op.name_id = map_string(src, ev->name_id);
		ingest_api(pr, ev, &op);
		break;
	case WIRE_GPU_CONTEXT:
		context_record(pr, ev->context, ev->device, ev->stream);
		break;
	default:
		/* Streams appear with their first op; overhead and newer kinds are only counted. */
		break;
	}
}

int store_gpu_ingest(struct store *st, struct process *pr, struct source *src, uint32_t type,
                     const void *payload, uint32_t length)
{
	gpu_process(pr);
	if (type == WIRE_FRAME_GPU_DEVICE) {
		struct wire_gpu_device wd;
		memcpy(&wd, payload, sizeof wd);
		struct gpu_device *d = NULL;
		for (size_t i = 0; i < pr->gpu->device_count; i++)
			if (pr->gpu->devices[i].device == wd.device)
				d = &pr->gpu->devices[i];
		if (!d) {
			xgrow((void **)&pr->gpu->devices, &pr->gpu->device_cap, pr->gpu->device_count + 1,
			      sizeof *pr->gpu->devices);
			d = &pr->gpu->devices[pr->gpu->device_count++];
		}
		d->device = wd.device;
		d->name_id = map_string(src, wd.name_id);
		memcpy(d->uuid, wd.uuid, sizeof d->uuid);
		d->global_memory_bytes = wd.global_memory_bytes;
		d->sm_count = wd.sm_count;
		d->cc_major = wd.cc_major;
		d->cc_minor = wd.cc_minor;
		return 0;
	}
	size_t count = length / sizeof(struct wire_gpu_event);
	const char *bytes = payload;
	for (size_t i = 0; i < count; i++) {
		struct wire_gpu_event ev;
		memcpy(&ev, bytes + i * sizeof ev, sizeof ev);
		ingest_gpu_event(st, pr, src, &ev);
	}
	return 0;
}

void store_gpu_lane_fini(struct lane *l)
{
	if (!l->gpu)
		return;
	for (size_t r = 0; r < l->gpu->row_count; r++)
		free(l->gpu->rows[r].v);
	free(l->gpu->rows);
	free(l->gpu);
	l->gpu = NULL;
}

void store_gpu_process_fini(struct process *pr)
{
	struct gpu_process *g = pr->gpu;
	if (!g)
		return;
	hashmap_fini(&g->stream_map);
	free(g->corr.v);
	free(g->corr_old.v);
	free(g->psync);
	free(g->ctx);
	free(g->kcfg);
	hashmap_fini(&g->kcfg_map);
	free(g->big_bytes);
	free(g->devices);
	free(g);
	pr->gpu = NULL;
}

void store_gpu_lane_info(const struct lane *l, struct store_lane_info *out)
{
	const struct gpu_lane *g = gpu_lane_of(l);
	out->gpu_row_count = g->row_count;
	out->gpu_ops = g->ops;
	out->device = g->device;
	out->stream = g->stream;
	out->is_default = g->is_default;
	out->kernels = g->kernels;
	if (l->kind == STORE_LANE_GPU_STREAM)
		out->name = g->label;
}

size_t store_gpu_lane_event_bytes(const struct lane *l)
{
	const struct gpu_lane *g = gpu_lane_of(l);
	size_t bytes = 0;
	for (size_t r = 0; r < g->row_count; r++)
		bytes += g->rows[r].cap * sizeof *g->rows[r].v;
	return bytes;
}

uint64_t store_gpu_lane_evict(struct lane *l, uint64_t t)
{
	if (!l->gpu)
		return 0;
	uint64_t dropped = 0;
	for (size_t r = 0; r < l->gpu->row_count; r++) {
		struct gpu_row *row = &l->gpu->rows[r];
		size_t k = store_evict_count(row->v, row->n, sizeof *row->v, TIMEROW_END, t);
		row->n = store_evict_prefix((void **)&row->v, row->n, &row->cap, k, sizeof *row->v);
		dropped += k;
	}
	return dropped;
}

const struct gpu_device *store_gpu_devices(const struct process *pr, size_t *n)
{
	*n = gpu_process_of(pr)->device_count;
	return gpu_process_of(pr)->devices;
}

const struct gpu_context *store_gpu_contexts(const struct process *pr, size_t *n)
{
	*n = gpu_process_of(pr)->ctx_count;
	return gpu_process_of(pr)->ctx;
}

size_t store_gpu_memory_bytes(const struct store *st)
{
	size_t bytes = st->name_cache_cap * (sizeof *st->demangled + sizeof *st->short_name);
	for (size_t p = 0; p < st->proc_count; p++) {
		const struct process *pr = &st->procs[p];
		const struct gpu_process *g = gpu_process_of(pr);
		if (pr->gpu)
			bytes += sizeof *pr->gpu;
		bytes += hashmap_bytes(&g->stream_map);
		bytes += (g->corr.cap + g->corr_old.cap) * sizeof(struct corr_entry) +
		         (g->psync ? PENDING_SYNC_SLOTS * sizeof *g->psync : 0);
		bytes += g->ctx_cap * sizeof *g->ctx + g->kcfg_cap * sizeof *g->kcfg;
		bytes += hashmap_bytes(&g->kcfg_map) + g->big_cap * sizeof *g->big_bytes;
		bytes += g->device_cap * sizeof *g->devices;
		for (size_t l = 0; l < pr->lane_count; l++) {
			const struct gpu_lane *gl = gpu_lane_of(&pr->lanes[l]);
			if (pr->lanes[l].gpu)
				bytes += sizeof *gl;
			bytes += gl->row_cap * sizeof *gl->rows + store_gpu_lane_event_bytes(&pr->lanes[l]);
		}
	}
	return bytes;
}

/* ---- queries ---- */

uint64_t store_gpu_event_count(const struct store *st)
{
	return st->gpu_events;
}

uint64_t store_process_gpu_events(const struct store *st, size_t process)
{
	return gpu_process_of(&st->procs[process])->events;
}

size_t store_lane_gpu_query(const struct store *st, size_t process, size_t lane, size_t row, uint64_t from_ns,
                            uint64_t to_ns, const struct store_gpu_op **out)
{
	const struct gpu_lane *g = gpu_lane_of(&st->procs[process].lanes[lane]);
	if (row >= g->row_count || from_ns >= to_ns) {
		*out = NULL;
		return 0;
	}
	const struct gpu_row *r = &g->rows[row];
	size_t lo = op_first_ending_after(r->v, r->n, from_ns);
	size_t hi = op_lower_bound(r->v, r->n, to_ns);
	/* A zero-length op at from_ns ends "at" from_ns: keep it visible. */
	while (lo > 0 && r->v[lo - 1].end_ns == from_ns && r->v[lo - 1].start_ns == from_ns)
		lo--;
	*out = hi > lo ? r->v + lo : NULL; /* an empty row may have no array: never NULL + 0 */
	return hi > lo ? hi - lo : 0;
}

size_t store_lane_gpu_all(const struct store *st, size_t process, size_t lane, size_t row,
                          const struct store_gpu_op **out)
{
	const struct gpu_lane *g = gpu_lane_of(&st->procs[process].lanes[lane]);
	if (row >= g->row_count) {
		*out = NULL;
		return 0;
	}
	*out = g->rows[row].v;
	return g->rows[row].n;
}

const char *store_lane_gpu_label(const struct store *st, size_t process, size_t lane)
{
	const struct lane *l = &st->procs[process].lanes[lane];
	return l->kind == STORE_LANE_GPU_STREAM ? gpu_lane_of(l)->label : "";
}

uint64_t store_gpu_op_bytes(const struct store *st, size_t process, const struct store_gpu_op *op)
{
	if (op->kind != WIRE_GPU_MEMCPY && op->kind != WIRE_GPU_MEMSET)
		return 0;
	if (!(op->aux & BYTES_BIG))
		return op->aux;
	const struct gpu_process *g = gpu_process_of(&st->procs[process]);
	size_t i = op->aux & ~BYTES_BIG;
	return i < g->big_count ? g->big_bytes[i] : 0;
}

int store_gpu_op_kernel(const struct store *st, size_t process, const struct store_gpu_op *op,
                        struct store_kernel_config *out)
{
	const struct gpu_process *g = gpu_process_of(&st->procs[process]);
	if (op->kind != WIRE_GPU_KERNEL || op->aux >= g->kcfg_count)
		return -EINVAL;
	*out = g->kcfg[op->aux];
	return 0;
}

int store_gpu_op_get_launch(const struct store *st, size_t process, const struct store_gpu_op *op,
                            struct store_gpu_launch *out)
{
	const struct corr_entry *e = corr_get(&st->procs[process], op->correlation_id);
	if (!e)
		return -ENOENT;
	out->tid = (pid_t)e->tid;
	out->name_id = e->name_id;
	out->kind = e->kind;
	out->start_ns = e->start_ns;
	out->end_ns = e->end_ns;
	return 0;
}

size_t store_gpu_device_count(const struct store *st, size_t process)
{
	return gpu_process_of(&st->procs[process])->device_count;
}

void store_gpu_device_get(const struct store *st, size_t process, size_t index,
                          struct store_gpu_device_info *out)
{
	const struct gpu_device *d = &gpu_process_of(&st->procs[process])->devices[index];
	const uint8_t *u = d->uuid;
	out->device = d->device;
	out->name = store_string(st, d->name_id);
	out->short_name = strncmp(out->name, "NVIDIA ", 7) == 0 ? out->name + 7 : out->name;
	snprintf(out->uuid, sizeof out->uuid,
	         "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1], u[2],
	         u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
	out->global_memory_bytes = d->global_memory_bytes;
	out->sm_count = d->sm_count;
	out->cc_major = d->cc_major;
	out->cc_minor = d->cc_minor;
}

int store_gpu_device_find(const struct store *st, size_t process, uint32_t device,
                          struct store_gpu_device_info *out)
{
	const struct gpu_process *g = gpu_process_of(&st->procs[process]);
	for (size_t i = 0; i < g->device_count; i++) {
		if (g->devices[i].device == device) {
			store_gpu_device_get(st, process, i, out);
			return 0;
		}
	}
	return -ENOENT;
}
