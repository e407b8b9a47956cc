/*
 * The Perfetto export's packets and events (the tracks are export_perfetto.c's): buffered output,
 * per-sequence interning of names, categories and argument keys and values, packet sequences,
 * track events with their args, NVTX ranges and GPU ops with flows.
 */
#include "export_perfetto.h"

#include "cuscope/hashmap.h"
#include "cuscope/steps.h"
#include "cuscope/wire.h"
#include "cuscope/xalloc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const uint32_t intern_field[] = {F_INTERNED_CATEGORIES, F_INTERNED_NAMES, F_INTERNED_ARG_NAMES,
                                        F_INTERNED_ARG_STRINGS};

void pf_out_flush(struct pf_out *o)
{
	export_sink_write(&o->sink, o->buf, o->n);
	o->n = 0;
}

static void pf_out_mem(struct pf_out *o, const void *p, size_t len)
{
	const uint8_t *c = p;
	while (len) {
		if (o->n == OUT_BUF)
			pf_out_flush(o);
		size_t k = OUT_BUF - o->n < len ? OUT_BUF - o->n : len;
		memcpy(o->buf + o->n, c, k);
		o->n += k;
		c += k;
		len -= k;
	}
}

static uint64_t intern_hash(uint32_t kind, const char *s, size_t len)
{
	uint64_t h = 1469598103934665603ull ^ kind;
	for (size_t i = 0; i < len; i++)
		h = (h ^ (uint8_t)s[i]) * 1099511628211ull;
	return h;
}

static void intern_clear(struct intern *in)
{
	if (in->slots)
		memset(in->slots, 0, in->cap * sizeof *in->slots);
	in->count = 0;
	in->arena_len = 0;
	memset(in->next_iid, 0, sizeof in->next_iid);
}

void pf_intern_fini(struct intern *in)
{
	free(in->slots);
	free(in->arena);
}

/* The text looked for in an intern table, for hashmap_probe. */
struct intern_key {
	const struct intern *in;
	uint64_t hash;
	uint32_t kind;
	const char *s;
	size_t len;
};

static enum hashmap_look intern_look(const void *ctx, size_t slot)
{
	const struct intern_key *k = ctx;
	const struct intern_slot *e = &k->in->slots[slot];
	if (!e->iid)
		return HASHMAP_EMPTY;
	return e->hash == k->hash && e->kind == k->kind && e->len == k->len &&
	               memcmp(k->in->arena + e->off, k->s, k->len) == 0
	           ? HASHMAP_MATCH
	           : HASHMAP_OTHER;
}

/* The slot of s, or the empty one where it goes (the table is at most half full: there is one). */
static struct intern_slot *intern_find(struct intern *in, uint64_t hash, uint32_t kind, const char *s,
                                       size_t len)
{
	struct intern_key k = {in, hash, kind, s, len};
	int matched;
	return &in->slots[hashmap_probe(in->cap, hash, in->cap, intern_look, &k, &matched)];
}

/* Interned id of s of a kind on this sequence; a new one is also added to the packet's InternedData. */
static uint64_t pf_intern(struct pf *x, enum intern_kind kind, const char *s)
{
	struct intern *in = &x->in;
	size_t len = strlen(s);
	if ((in->count + 1) * 2 > in->cap) {
		size_t old_cap = in->cap;
		struct intern_slot *old = in->slots;
		in->cap = old_cap ? old_cap * 2 : 1024;
		in->slots = xcalloc(in->cap, sizeof *in->slots);
		for (size_t i = 0; i < old_cap; i++)
			if (old[i].iid)
				*intern_find(in, old[i].hash, old[i].kind, in->arena + old[i].off,
				             old[i].len) = old[i];
		free(old);
	}
	uint64_t hash = intern_hash(kind, s, len);
	struct intern_slot *e = intern_find(in, hash, kind, s, len);
	if (e->iid)
		return e->iid;
	xgrow((void **)&in->arena, &in->arena_cap, in->arena_len + len + 1, 1);
	memcpy(in->arena + in->arena_len, s, len);
	*e = (struct intern_slot){hash, (uint32_t)in->arena_len, (uint32_t)len, ++in->next_iid[kind], kind};
	in->arena_len += len;
	in->count++;
	size_t m = pb_open(&x->interned, intern_field[kind]);
	pb_uint(&x->interned, F_INTERNED_IID, e->iid);
	pb_string(&x->interned, F_INTERNED_TEXT, s);
	pb_close(&x->interned, m);
	return e->iid;
}

/* Writes the packet built in x->pkt as one Trace.packet field. */
void pf_packet_write(struct pf *x)
{
	uint8_t head[11];
	size_t k = pb_varint_encode(head + 1, x->pkt.len);
	head[0] = F_TRACE_PACKET << 3 | PB_LEN;
	pf_out_mem(x->o, head, k + 1);
	pf_out_mem(x->o, x->pkt.buf, x->pkt.len);
}

/* Starts a new packet sequence whose events default to track uuid. */
void pf_sequence(struct pf *x, uint64_t uuid)
{
	x->seq++;
	x->seq_track = uuid;
	x->seq_fresh = 1;
	intern_clear(&x->in);
}

/* A packet of its own holding the track descriptor in x->frame. */
void pf_descriptor_write(struct pf *x)
{
	pb_reset(&x->pkt);
	pb_uint(&x->pkt, F_PKT_SEQUENCE_ID, x->seq);
	pb_bytes(&x->pkt, F_PKT_TRACK_DESCRIPTOR, x->frame.buf, x->frame.len);
	pf_packet_write(x);
}

/* Begins an event: empties the event and interned-data buffers (clearing a full intern table first). */
void pf_event_start(struct pf *x, int type)
{
	if (x->in.count >= INTERN_MAX_ENTRIES || x->in.arena_len >= INTERN_MAX_BYTES) {
		intern_clear(&x->in);
		x->seq_fresh = 1;
	}
	pb_reset(&x->te);
	pb_reset(&x->interned);
	pb_uint(&x->te, F_TE_TYPE, (uint64_t)type);
}

/* Writes the event built in x->te at t_ns as a packet on the current sequence. */
void pf_event_finish(struct pf *x, uint64_t t_ns)
{
	struct pb *p = &x->pkt;
	pb_reset(p);
	pb_uint(p, F_PKT_TIMESTAMP, t_ns);
	pb_uint(p, F_PKT_SEQUENCE_ID, x->seq);
	if (x->seq_fresh) {
		pb_uint(p, F_PKT_SEQUENCE_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED | SEQ_NEEDS_INCREMENTAL_STATE);
		size_t d = pb_open(p, F_PKT_DEFAULTS);
		pb_uint(p, F_DEF_TIMESTAMP_CLOCK_ID, CLOCK_MONOTONIC_ID);
		size_t t = pb_open(p, F_DEF_TRACK_EVENT_DEFAULTS);
		pb_uint(p, F_TE_TRACK_UUID, x->seq_track);
		pb_close(p, t);
		pb_close(p, d);
		x->seq_fresh = 0;
	} else {
		pb_uint(p, F_PKT_SEQUENCE_FLAGS, SEQ_NEEDS_INCREMENTAL_STATE);
	}
	if (x->interned.len)
		pb_bytes(p, F_PKT_INTERNED_DATA, x->interned.buf, x->interned.len);
	pb_bytes(p, F_PKT_TRACK_EVENT, x->te.buf, x->te.len);
	pf_packet_write(x);
}

static void pf_event_name_cat(struct pf *x, const char *name, const char *cat)
{
	pb_uint(&x->te, F_TE_NAME_IID, pf_intern(x, IK_NAME, name));
	pb_uint(&x->te, F_TE_CATEGORY_IIDS, pf_intern(x, IK_CATEGORY, cat));
}

static void arg_u64(struct pf *x, const char *key, uint64_t v)
{
	size_t m = pb_open(&x->te, F_TE_DEBUG_ANNOTATIONS);
	pb_uint(&x->te, F_DA_NAME_IID, pf_intern(x, IK_ARG_NAME, key));
	pb_uint(&x->te, F_DA_UINT, v);
	pb_close(&x->te, m);
}

static void arg_bool(struct pf *x, const char *key, int v)
{
	size_t m = pb_open(&x->te, F_TE_DEBUG_ANNOTATIONS);
	pb_uint(&x->te, F_DA_NAME_IID, pf_intern(x, IK_ARG_NAME, key));
	pb_uint(&x->te, F_DA_BOOL, v != 0);
	pb_close(&x->te, m);
}

static void arg_str(struct pf *x, const char *key, const char *v)
{
	size_t m = pb_open(&x->te, F_TE_DEBUG_ANNOTATIONS);
	pb_uint(&x->te, F_DA_NAME_IID, pf_intern(x, IK_ARG_NAME, key));
	pb_uint(&x->te, F_DA_STRING_IID, pf_intern(x, IK_ARG_STRING, v));
	pb_close(&x->te, m);
}

/* An array of three ints ("grid", "block"). */
static void arg_dim3(struct pf *x, const char *key, const int32_t v[3])
{
	size_t m = pb_open(&x->te, F_TE_DEBUG_ANNOTATIONS);
	pb_uint(&x->te, F_DA_NAME_IID, pf_intern(x, IK_ARG_NAME, key));
	for (int i = 0; i < 3; i++) {
		size_t a = pb_open(&x->te, F_DA_ARRAY);
		pb_int(&x->te, F_DA_INT, v[i]);
		pb_close(&x->te, a);
	}
	pb_close(&x->te, m);
}

static const char *const style_names[] = {"PushPop", "StartEnd", "Mark"};

/* An NVTX range begin (open: never ended) or mark: name = message, category = domain ("nvtx" for the
 * default). */
void pf_event_nvtx(struct pf *x, size_t lane, const struct store_range *r, int style, int open)
{
	const char *name = store_string(x->st, r->name_id), *domain = store_string(x->st, r->domain_id);
	pf_event_start(x, style == STORE_STYLE_MARK ? TYPE_INSTANT : TYPE_SLICE_BEGIN);
	pf_event_name_cat(x, name, *domain ? domain : "nvtx");
	arg_str(x, "domain", domain);
	arg_str(x, "style", style_names[style]);
	if (open)
		arg_bool(x, "unfinished", 1);
	/* The fields of its NVTX extended payload, typed as sent. */
	struct store_arg a[WIRE_ARGS_MAX];
	size_t n = store_range_args(x->st, x->process, lane, r, a, WIRE_ARGS_MAX);
	for (size_t i = 0; i < n; i++) {
		size_t m = pb_open(&x->te, F_TE_DEBUG_ANNOTATIONS);
		pb_uint(&x->te, F_DA_NAME_IID, pf_intern(x, IK_ARG_NAME, store_string(x->st, a[i].name_id)));
		if (a[i].type == WIRE_ARG_INT)
			pb_int(&x->te, F_DA_INT, (int64_t)a[i].value);
		else if (a[i].type == WIRE_ARG_DOUBLE)
			pb_fixed64(&x->te, F_DA_DOUBLE, a[i].value);
		else if (a[i].type == WIRE_ARG_ENUM)
			pb_uint(&x->te, F_DA_STRING_IID,
			        pf_intern(x, IK_ARG_STRING, store_string(x->st, a[i].text_id)));
		else
			pb_uint(&x->te, F_DA_UINT, a[i].value);
		pb_close(&x->te, m);
	}
	pf_event_finish(x, r->start_ns);
	if (style == STORE_STYLE_MARK)
		x->counts->instant++;
	else if (open)
		x->counts->open++;
	else
		x->counts->complete++;
}

/* Flow id of a correlation id: unique across processes (as in the JSON). */
static uint64_t flow_id(const struct pf *x, uint32_t correlation)
{
	return (uint64_t)x->process << 32 | correlation;
}

/* The begin of a GPU op, API call or host sync with its args; flows where the JSON has them. */
void pf_event_gpu(struct pf *x, const struct store_lane_info *li, const struct store_gpu_op *op)
{
	const struct store *st = x->st;
	char name[96];
	const char *cat;
	const char *nm = export_gpu_op_label(st, op, name, sizeof name, &cat);
	pf_event_start(x, TYPE_SLICE_BEGIN);
	pf_event_name_cat(x, nm, cat);
	arg_u64(x, "correlation", op->correlation_id);
	int on_stream = li->kind == STORE_LANE_GPU_STREAM;
	if (on_stream) {
		arg_u64(x, "device", li->device);
		arg_u64(x, "stream", li->stream);
	}
	struct store_kernel_config k;
	switch (op->kind) {
	case WIRE_GPU_KERNEL:
		if (store_gpu_op_kernel(st, x->process, op, &k) == 0) {
			arg_dim3(x, "grid", k.grid);
			arg_dim3(x, "block", k.block);
			arg_u64(x, "registers", k.registers);
			arg_u64(x, "shared_static", k.shared_static);
			arg_u64(x, "shared_dynamic", k.shared_dynamic);
			if (k.graph_id)
				arg_u64(x, "graph_id", k.graph_id);
		}
		break;
	case WIRE_GPU_MEMCPY:
		arg_u64(x, "bytes", store_gpu_op_bytes(st, x->process, op));
		arg_str(x, "kind", wire_memcpy_kind_name(op->subkind));
		arg_str(x, "src_mem", wire_mem_kind_name(op->mem >> 4));
		arg_str(x, "dst_mem", wire_mem_kind_name(op->mem & 15));
		arg_bool(x, "async", op->flags & WIRE_GPU_FLAG_ASYNC);
		break;
	case WIRE_GPU_MEMSET:
		arg_u64(x, "bytes", store_gpu_op_bytes(st, x->process, op));
		arg_str(x, "mem", wire_mem_kind_name(op->mem & 15));
		arg_bool(x, "async", op->flags & WIRE_GPU_FLAG_ASYNC);
		break;
	case WIRE_GPU_SYNC:
		arg_str(x, "type", wire_sync_type_name(op->subkind));
		break;
	default:
		break;
	}
	/*
	 * The launching call's slice starts the flow (a call that launched nothing leaves an id no
	 * event ends, which readers ignore); the op ends it when the JSON would draw the arrow.
	 */
	if ((op->kind == WIRE_GPU_API_RUNTIME || op->kind == WIRE_GPU_API_DRIVER) && op->correlation_id) {
		pb_fixed64(&x->te, F_TE_FLOW_IDS, flow_id(x, op->correlation_id));
	} else if (on_stream && op->kind != WIRE_GPU_SYNC && op->correlation_id) {
		struct store_gpu_launch launch;
		if (store_gpu_op_get_launch(st, x->process, op, &launch) == 0 && launch.end_ns > x->from &&
		    launch.start_ns < x->to) {
			pb_fixed64(&x->te, F_TE_TERMINATING_FLOW_IDS, flow_id(x, op->correlation_id));
			x->counts->flows++;
		}
	}
	pf_event_finish(x, op->start_ns);
	x->counts->complete++;
}

void pf_event_step(struct pf *x, const struct steps_result *r, size_t i)
{
	const struct steps_range *s = &r->v[i];
	pf_event_start(x, TYPE_SLICE_BEGIN);
	pf_event_name_cat(x, "step", "inferred");
	arg_u64(x, "step", i + 1);
	arg_u64(x, r->api ? "api_calls" : "kernels", s->size);
	arg_str(x, "start", r->gpu_time ? "gpu" : "launch");
	arg_u64(x, "tid", (uint64_t)s->tid);
	pf_event_finish(x, s->start_ns);
	pf_event_end(x, s->end_ns);
	x->counts->complete++;
}

void pf_event_end(struct pf *x, uint64_t t_ns)
{
	pf_event_start(x, TYPE_SLICE_END);
	pf_event_finish(x, t_ns);
}
