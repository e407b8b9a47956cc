/*
 * Perfetto protobuf export (a Trace of TracePackets: the native input of ui.perfetto.dev and
 * trace_processor) with the tracks, names, args, flows and counters of the Chrome JSON export (export.c):
 *   process (pid)       track with a ProcessDescriptor, process_name = command line
 *   OS thread (tid)     track with a ThreadDescriptor: NVTX push/pop ranges, open ranges (a begin, no end),
 *                       marks (instants), CUDA API calls and host syncs
 *   NVTX async row      child track of the process: "NVTX async", "NVTX async #2", ...
 *   GPU stream row      child track of the process named like the UI label, "GPU0 s7": kernels, copies,
 * memsets thread counter      counter track under its thread named by the event ("task-clock"): the newest
 * value Flows: the launching API call's slice carries flow id (process index << 32 | correlation id) and the
 * GPU op's slice terminates it (flow ids are global within a trace), where the JSON draws an arrow.
 *
 * Every track is a packet sequence of its own (trusted_packet_sequence_id) written in time order, so a
 * reader never reorders a track's begin and end events. A thread's rows are merged by start time into
 * properly nested begin/end pairs; a slice that would end after its parent (never for push/pop ranges)
 * is cut at the parent's end. The first packet of a sequence clears the incremental state and sets the
 * defaults (CLOCK_MONOTONIC timestamps, the track). Names, categories and argument keys and string values
 * are interned per sequence; when the table passes a bound it is cleared with a new
 * SEQ_INCREMENTAL_STATE_CLEARED packet, so the writer's memory stays bounded (by the largest packet, the
 * table and a thread's nesting) whatever the capture holds. Timestamps are CLOCK_MONOTONIC ns; a
 * ClockSnapshot first makes MONOTONIC the trace clock and pairs it with REALTIME (the first process's
 * clock anchor). Field numbers are those of the official perfetto/protos/perfetto/trace protos.
 */
#include "pb.h"

#include "cuscope/export.h"
#include "cuscope/safefs.h"
#include "cuscope/store.h"
#include "cuscope/wire.h"
#include "cuscope/xalloc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

/* Field numbers (perfetto.protos). */
enum {
	F_TRACE_PACKET = 1,
	/* TracePacket */
	F_PKT_CLOCK_SNAPSHOT = 6,
	F_PKT_TIMESTAMP = 8,
	F_PKT_SEQUENCE_ID = 10, /* trusted_packet_sequence_id */
	F_PKT_TRACK_EVENT = 11,
	F_PKT_INTERNED_DATA = 12,
	F_PKT_SEQUENCE_FLAGS = 13,
	F_PKT_DEFAULTS = 59, /* trace_packet_defaults */
	F_PKT_TRACK_DESCRIPTOR = 60,
	/* TracePacketDefaults */
	F_DEF_TIMESTAMP_CLOCK_ID = 58,
	F_DEF_TRACK_EVENT_DEFAULTS = 11,
	/* TrackEventDefaults, TrackEvent */
	F_TE_CATEGORY_IIDS = 3,
	F_TE_DEBUG_ANNOTATIONS = 4,
	F_TE_TYPE = 9,
	F_TE_NAME_IID = 10,
	F_TE_TRACK_UUID = 11,
	F_TE_COUNTER_VALUE = 30,
	F_TE_FLOW_IDS = 47,
	F_TE_TERMINATING_FLOW_IDS = 48,
	/* DebugAnnotation */
	F_DA_NAME_IID = 1,
	F_DA_BOOL = 2,
	F_DA_UINT = 3,
	F_DA_INT = 4,
	F_DA_STRING_IID = 17,
	F_DA_ARRAY = 12,
	/* InternedData: EventCategory, EventName, DebugAnnotationName ({iid 1, name 2}), InternedString */
	F_INTERNED_CATEGORIES = 1,
	F_INTERNED_NAMES = 2,
	F_INTERNED_ARG_NAMES = 3,
	F_INTERNED_ARG_STRINGS = 29,
	F_INTERNED_IID = 1,
	F_INTERNED_TEXT = 2,
	/* TrackDescriptor, ProcessDescriptor, ThreadDescriptor */
	F_TD_UUID = 1,
	F_TD_NAME = 2,
	F_TD_PROCESS = 3,
	F_TD_THREAD = 4,
	F_TD_PARENT_UUID = 5,
	F_TD_COUNTER = 8,
	F_TD_SIBLING_ORDER_RANK = 12,
	F_PD_PID = 1,
	F_PD_PROCESS_NAME = 6,
	F_TH_PID = 1,
	F_TH_TID = 2,
	F_TH_THREAD_NAME = 5,
	/* ClockSnapshot, ClockSnapshot.Clock */
	F_CS_CLOCKS = 1,
	F_CS_PRIMARY_TRACE_CLOCK = 2,
	F_CLOCK_ID = 1,
	F_CLOCK_TIMESTAMP = 2,
};

enum {
	TYPE_SLICE_BEGIN = 1,
	TYPE_SLICE_END = 2,
	TYPE_INSTANT = 3,
	TYPE_COUNTER = 4,
	SEQ_INCREMENTAL_STATE_CLEARED = 1,
	SEQ_NEEDS_INCREMENTAL_STATE = 2,
	CLOCK_REALTIME_ID = 1,  /* BUILTIN_CLOCK_REALTIME */
	CLOCK_MONOTONIC_ID = 3, /* BUILTIN_CLOCK_MONOTONIC */
};

#define OUT_BUF            (256u << 10)
#define INTERN_MAX_ENTRIES 65536u       /* then the sequence's incremental state is cleared */
#define INTERN_MAX_BYTES   (8u << 20)   /* key bytes held by the table, the same */
#define EXTRA_UUID_BASE    (1ull << 48) /* uuids of row and counter tracks (lane tracks count from 1) */
#define GPU_SORT_BASE      1000000

/* Buffered output to a FILE or a gzip stream (as export.c writes JSON). */
struct pf_out {
	FILE *file;
	gzFile gz;
	int err; /* first write error, -errno */
	uint64_t bytes;
	size_t n;
	uint8_t buf[OUT_BUF];
};

static void pf_out_flush(struct pf_out *o)
{
	if (!o->n)
		return;
	if (!o->err) {
		if (o->gz) {
			if (gzwrite(o->gz, o->buf, (unsigned)o->n) != (int)o->n)
				o->err = -EIO;
		} else if (fwrite(o->buf, 1, o->n, o->file) != o->n) {
			o->err = errno ? -errno : -EIO;
		}
	}
	o->bytes += o->n;
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

/* One interned text: key bytes at off in the arena. */
struct intern_slot {
	uint64_t hash;
	uint32_t off, len;
	uint32_t iid; /* 0 = empty slot */
	uint32_t kind;
};

/* Interning of one sequence: texts of four kinds (one iid space each). */
struct intern {
	struct intern_slot *slots;
	size_t cap, count; /* cap: power of two, at most half full */
	char *arena;
	size_t arena_len, arena_cap;
	uint32_t next_iid[4];
};

enum intern_kind { IK_CATEGORY, IK_NAME, IK_ARG_NAME, IK_ARG_STRING };
static const uint32_t intern_field[] = {F_INTERNED_CATEGORIES, F_INTERNED_NAMES, F_INTERNED_ARG_NAMES,
                                        F_INTERNED_ARG_STRINGS};

struct pf {
	const struct store *st;
	struct pf_out *o;
	uint64_t from, to;
	struct export_counts *counts;
	size_t process;
	pid_t pid;
	uint64_t process_uuid, lane_uuid0; /* lane l's track is lane_uuid0 + l */
	uint64_t next_uuid, next_extra_uuid;
	uint32_t seq;       /* sequence being written */
	uint64_t seq_track; /* its default track */
	int seq_fresh;      /* its next packet clears the incremental state */
	struct intern in;
	struct pb pkt, te, interned, frame;
};

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

static void pf_intern_fini(struct intern *in)
{
	free(in->slots);
	free(in->arena);
}

static struct intern_slot *intern_find(struct intern *in, uint64_t hash, uint32_t kind, const char *s,
                                       size_t len)
{
	size_t i = hash & (in->cap - 1);
	for (;; i = (i + 1) & (in->cap - 1)) {
		struct intern_slot *e = &in->slots[i];
		if (!e->iid || (e->hash == hash && e->kind == kind && e->len == len &&
		                memcmp(in->arena + e->off, s, len) == 0))
			return e;
	}
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
static void pf_packet_write(struct pf *x)
{
	uint8_t head[11];
	size_t k = pb_varint_encode(head + 1, x->pkt.len);
	head[0] = F_TRACE_PACKET << 3 | PB_LEN;
	pf_out_mem(x->o, head, k + 1);
	pf_out_mem(x->o, x->pkt.buf, x->pkt.len);
}

/* Starts a new packet sequence whose events default to track uuid. */
static void pf_sequence(struct pf *x, uint64_t uuid)
{
	x->seq++;
	x->seq_track = uuid;
	x->seq_fresh = 1;
	intern_clear(&x->in);
}

/* A packet of its own holding the track descriptor in x->frame. */
static void pf_descriptor_write(struct pf *x)
{
	pb_reset(&x->pkt);
	pb_uint(&x->pkt, F_PKT_SEQUENCE_ID, x->seq);
	pb_bytes(&x->pkt, F_PKT_TRACK_DESCRIPTOR, x->frame.buf, x->frame.len);
	pf_packet_write(x);
}

/* Begins an event: empties the event and interned-data buffers (clearing a full intern table first). */
static void pf_event_start(struct pf *x, int type)
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
static void pf_event_finish(struct pf *x, uint64_t t_ns)
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
static void pf_event_nvtx(struct pf *x, const struct store_range *r, int style, int open)
{
	const char *name = store_string(x->st, r->name_id), *domain = store_string(x->st, r->domain_id);
	pf_event_start(x, style == STORE_STYLE_MARK ? TYPE_INSTANT : TYPE_SLICE_BEGIN);
	pf_event_name_cat(x, name, *domain ? domain : "nvtx");
	arg_str(x, "domain", domain);
	arg_str(x, "style", style_names[style]);
	if (open)
		arg_bool(x, "unfinished", 1);
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
static void pf_event_gpu(struct pf *x, const struct store_lane_info *li, const struct store_gpu_op *op)
{
	const struct store *st = x->st;
	char name[96];
	const char *nm = name, *cat;
	switch (op->kind) {
	case WIRE_GPU_KERNEL:
		nm = op->name_id ? store_string(st, op->name_id) : "kernel";
		cat = "kernel";
		break;
	case WIRE_GPU_MEMCPY:
		snprintf(name, sizeof name, "Memcpy %s", wire_memcpy_kind_name(op->subkind));
		cat = "memcpy";
		break;
	case WIRE_GPU_MEMSET:
		nm = "Memset";
		cat = "memset";
		break;
	case WIRE_GPU_SYNC:
		snprintf(name, sizeof name, "Sync %s", wire_sync_type_name(op->subkind));
		cat = "sync";
		break;
	case WIRE_GPU_API_RUNTIME:
	case WIRE_GPU_API_DRIVER:
		nm = op->name_id ? store_string(st, op->name_id) : "CUDA API";
		cat = op->kind == WIRE_GPU_API_RUNTIME ? "cuda_runtime" : "cuda_driver";
		break;
	default:
		snprintf(name, sizeof name, "GPU op %u", op->kind);
		cat = "gpu";
		break;
	}
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

static void pf_event_end(struct pf *x, uint64_t t_ns)
{
	pf_event_start(x, TYPE_SLICE_END);
	pf_event_finish(x, t_ns);
}

/* ---- merging a track's rows into nested begin/end events ---- */

enum src_kind { SRC_RANGE, SRC_OPEN, SRC_GPU, SRC_MARK };

/* One row of a track: events sorted by start, each starting with start_ns, end_ns. */
struct src {
	const uint8_t *v;
	size_t n, i, stride;
	enum src_kind kind;
	int style; /* ranges and opens */
};

struct merge {
	struct src *src;
	size_t n, cap;
	uint64_t *ends; /* open slices, innermost last (ends never increase towards the top) */
	size_t depth, ends_cap;
	struct store_range *opens; /* copies of open ranges, sorted by start */
	size_t open_n, open_cap;
};

static void merge_add(struct merge *m, const void *v, size_t n, size_t stride, enum src_kind kind, int style)
{
	if (!n)
		return;
	xgrow((void **)&m->src, &m->cap, m->n + 1, sizeof *m->src);
	m->src[m->n++] = (struct src){v, n, 0, stride, kind, style};
}

static uint64_t src_start(const struct src *s)
{
	uint64_t t;
	memcpy(&t, s->v + s->i * s->stride, sizeof t);
	return t;
}

static uint64_t src_end(const struct src *s)
{
	uint64_t t;
	if (s->kind == SRC_OPEN)
		return UINT64_MAX;
	memcpy(&t, s->v + s->i * s->stride + sizeof t, sizeof t);
	return s->kind == SRC_MARK ? src_start(s) : t;
}

static int cmp_range_start(const void *a, const void *b)
{
	const struct store_range *x = a, *y = b;
	return x->start_ns < y->start_ns ? -1 : x->start_ns > y->start_ns;
}

/*
 * Writes the rows added to m (already a sequence of its own) in time order: at each step the row whose
 * next event starts first (the longest on a tie, then the row added first), after the ends of every
 * slice finished by then. Resets m.
 */
static void merge_run(struct pf *x, struct merge *m, const struct store_lane_info *li)
{
	xgrow((void **)&m->ends, &m->ends_cap, m->n + 1, sizeof *m->ends);
	m->depth = 0;
	for (;;) {
		struct src *best = NULL;
		uint64_t bs = 0, be = 0;
		for (size_t i = 0; i < m->n; i++) {
			struct src *s = &m->src[i];
			if (s->i == s->n)
				continue;
			uint64_t st = src_start(s), en = src_end(s);
			if (!best || st < bs || (st == bs && en > be)) {
				best = s;
				bs = st;
				be = en;
			}
		}
		while (m->depth && m->ends[m->depth - 1] != UINT64_MAX &&
		       (!best || m->ends[m->depth - 1] <= bs))
			pf_event_end(x, m->ends[--m->depth]);
		if (!best)
			break;
		const void *item = best->v + best->i * best->stride;
		best->i++;
		switch (best->kind) {
		case SRC_MARK:
			pf_event_nvtx(x, item, STORE_STYLE_MARK, 0);
			continue;
		case SRC_RANGE:
			pf_event_nvtx(x, item, best->style, 0);
			break;
		case SRC_OPEN:
			pf_event_nvtx(x, item, best->style, 1);
			break;
		case SRC_GPU:
			pf_event_gpu(x, li, item);
			break;
		}
		if (m->depth && be > m->ends[m->depth - 1])
			be = m->ends[m->depth - 1]; /* cut at the parent's end: begin/end pairs must nest */
		/* A row holds one slice at a time and open ranges stay: the depth stays within rows + opens.
		 */
		xgrow((void **)&m->ends, &m->ends_cap, m->depth + 1, sizeof *m->ends);
		m->ends[m->depth++] = be;
	}
	m->n = 0;
	m->open_n = 0;
}

/* Sorted copies of a lane's open ranges on `row` (any row when row is SIZE_MAX) that begin before the
 * window's end. */
static void merge_opens(struct pf *x, struct merge *m, size_t l, const struct store_lane_info *li, size_t row,
                        int style)
{
	m->open_n = 0;
	for (size_t i = 0; i < li->open_count; i++) {
		struct store_range r;
		size_t r_row;
		store_lane_open_get(x->st, x->process, l, i, &r, &r_row);
		if (r.start_ns >= x->to || (row != SIZE_MAX && r_row != row))
			continue;
		xgrow((void **)&m->opens, &m->open_cap, m->open_n + 1, sizeof *m->opens);
		m->opens[m->open_n++] = r;
	}
	if (m->open_n > 1)
		qsort(m->opens, m->open_n, sizeof *m->opens, cmp_range_start);
	merge_add(m, m->opens, m->open_n, sizeof *m->opens, SRC_OPEN, style);
}

/* ---- tracks ---- */

/* A child track of the process named label (JSON: a pseudo-thread), ordered by rank; starts its sequence. */
static void pf_child_track(struct pf *x, const char *label, uint64_t rank)
{
	uint64_t uuid = x->next_extra_uuid++;
	pf_sequence(x, uuid);
	pb_reset(&x->frame);
	pb_uint(&x->frame, F_TD_UUID, uuid);
	pb_uint(&x->frame, F_TD_PARENT_UUID, x->process_uuid);
	pb_string(&x->frame, F_TD_NAME, label);
	pb_int(&x->frame, F_TD_SIBLING_ORDER_RANK, (int64_t)rank);
	pf_descriptor_write(x);
}

static void pf_lane(struct pf *x, struct merge *m, size_t l)
{
	struct store_lane_info li;
	store_lane_get(x->st, x->process, l, &li);
	char label[160];
	if (li.kind == STORE_LANE_THREAD) {
		uint64_t uuid = x->lane_uuid0 + l;
		pf_sequence(x, uuid);
		pb_reset(&x->frame);
		pb_uint(&x->frame, F_TD_UUID, uuid);
		size_t t = pb_open(&x->frame, F_TD_THREAD);
		pb_int(&x->frame, F_TH_PID, x->pid);
		pb_int(&x->frame, F_TH_TID, li.tid);
		if (!*li.name)
			snprintf(label, sizeof label, "thread %d", (int)li.tid);
		pb_string(&x->frame, F_TH_THREAD_NAME, *li.name ? li.name : label);
		pb_close(&x->frame, t);
		pf_descriptor_write(x);
		for (size_t row = 0; row < li.row_count; row++) {
			const struct store_range *r;
			size_t n = store_lane_row_query(x->st, x->process, l, row, x->from, x->to, &r);
			merge_add(m, r, n, sizeof *r, SRC_RANGE, STORE_STYLE_PUSHPOP);
		}
		merge_opens(x, m, l, &li, SIZE_MAX, STORE_STYLE_PUSHPOP);
		for (size_t row = 0; row < li.gpu_row_count; row++) {
			const struct store_gpu_op *v;
			size_t n = store_lane_gpu_query(x->st, x->process, l, row, x->from, x->to, &v);
			merge_add(m, v, n, sizeof *v, SRC_GPU, 0);
		}
		const struct store_range *mk;
		size_t n = store_lane_mark_query(x->st, x->process, l, x->from, x->to, &mk);
		merge_add(m, mk, n, sizeof *mk, SRC_MARK, STORE_STYLE_MARK);
		merge_run(x, m, &li);
		return;
	}
	if (li.kind == STORE_LANE_NVTX_ASYNC) {
		size_t rows = li.row_count;
		for (size_t i = 0; i < li.open_count; i++) {
			struct store_range r;
			size_t row;
			store_lane_open_get(x->st, x->process, l, i, &r, &row);
			if (row + 1 > rows && row < 4096)
				rows = row + 1;
		}
		for (size_t row = 0; row < rows; row++) {
			if (row == 0)
				snprintf(label, sizeof label, "NVTX async");
			else
				snprintf(label, sizeof label, "NVTX async #%zu", row + 1);
			pf_child_track(x, label, GPU_SORT_BASE / 2 + row);
			if (row < li.row_count) {
				const struct store_range *r;
				size_t n =
				    store_lane_row_query(x->st, x->process, l, row, x->from, x->to, &r);
				merge_add(m, r, n, sizeof *r, SRC_RANGE, STORE_STYLE_STARTEND);
			}
			merge_opens(x, m, l, &li, row, STORE_STYLE_STARTEND);
			merge_run(x, m, &li);
		}
		return;
	}
	if (li.kind == STORE_LANE_GPU_STREAM) {
		const char *gl = store_lane_gpu_label(x->st, x->process, l);
		for (size_t row = 0; row < li.gpu_row_count; row++) {
			if (row == 0)
				snprintf(label, sizeof label, "%s", gl);
			else
				snprintf(label, sizeof label, "%s #%zu", gl, row + 1);
			pf_child_track(x, label,
			               GPU_SORT_BASE + (uint64_t)li.device * 100000 +
			                   (uint64_t)li.stream % 100000);
			const struct store_gpu_op *v;
			size_t n = store_lane_gpu_query(x->st, x->process, l, row, x->from, x->to, &v);
			merge_add(m, v, n, sizeof *v, SRC_GPU, 0);
			merge_run(x, m, &li);
		}
	}
}

/* Counters of the process: a counter track under the thread (the process when the thread is unknown). */
static void pf_counters(struct pf *x)
{
	for (size_t i = 0; i < store_counter_count(x->st, x->process); i++) {
		struct store_counter c;
		store_counter_get(x->st, x->process, i, &c);
		if (c.time_ns < x->from || c.time_ns >= x->to)
			continue;
		size_t l = store_thread_lane_find(x->st, x->process, c.tid);
		uint64_t uuid = x->next_extra_uuid++;
		pf_sequence(x, uuid);
		pb_reset(&x->frame);
		pb_uint(&x->frame, F_TD_UUID, uuid);
		pb_uint(&x->frame, F_TD_PARENT_UUID, l == SIZE_MAX ? x->process_uuid : x->lane_uuid0 + l);
		pb_string(&x->frame, F_TD_NAME, store_string(x->st, c.event_id));
		pb_bytes(&x->frame, F_TD_COUNTER, NULL, 0);
		pf_descriptor_write(x);
		pf_event_start(x, TYPE_COUNTER);
		pb_int(&x->te, F_TE_COUNTER_VALUE, (int64_t)c.value);
		pf_event_finish(x, c.time_ns);
		x->counts->counters++;
	}
}

/* The first packet: CLOCK_MONOTONIC is the trace clock, paired with REALTIME where a process has an anchor.
 */
static void pf_clock_snapshot(struct pf *x, uint64_t base)
{
	uint64_t mono = base, real = 0;
	for (size_t p = 0; p < store_process_count(x->st); p++) {
		struct store_process_info pi;
		store_process_get(x->st, p, &pi);
		if (pi.anchor_mono_ns && pi.anchor_real_ns) {
			mono = pi.anchor_mono_ns;
			real = pi.anchor_real_ns;
			break;
		}
	}
	struct pb *p = &x->pkt;
	pb_reset(p);
	pb_uint(p, F_PKT_SEQUENCE_ID, ++x->seq);
	size_t cs = pb_open(p, F_PKT_CLOCK_SNAPSHOT);
	size_t c = pb_open(p, F_CS_CLOCKS);
	pb_uint(p, F_CLOCK_ID, CLOCK_MONOTONIC_ID);
	pb_uint(p, F_CLOCK_TIMESTAMP, mono);
	pb_close(p, c);
	if (real) {
		c = pb_open(p, F_CS_CLOCKS);
		pb_uint(p, F_CLOCK_ID, CLOCK_REALTIME_ID);
		pb_uint(p, F_CLOCK_TIMESTAMP, real);
		pb_close(p, c);
	}
	pb_uint(p, F_CS_PRIMARY_TRACE_CLOCK, CLOCK_MONOTONIC_ID);
	pb_close(p, cs);
	pf_packet_write(x);
}

int export_perfetto(const struct store *st, const char *path, const struct export_options *opt,
                    struct export_counts *counts, char *msg_buf, size_t msg_size, const char **cause)
{
	struct pf_out *o = calloc(1, sizeof *o);
	if (!o) {
		*cause = "out of memory";
		return -ENOMEM;
	}
	size_t plen = path ? strlen(path) : 0;
	int to_stdout = !path || strcmp(path, "-") == 0;
	/* A file is written as PATH.partial and renamed when complete (see safefs.h). */
	struct safefs_output target = {.fd = -1, .dir_fd = -1, .hold_fd = -1, .in_place = 1};
	if (to_stdout) {
		o->file = stdout;
	} else {
		const char *why = NULL;
		int err = safefs_output_open(&target, path, 0, &why);
		if (err) {
			snprintf(msg_buf, msg_size, "%s %s: %s", why, path, strerror(-err));
			*cause = msg_buf;
			free(o);
			return err;
		}
		if (plen > 3 && strcmp(path + plen - 3, ".gz") == 0) {
			o->gz = gzdopen(target.fd, "wb1");
			if (o->gz)
				gzbuffer(o->gz, 256u << 10);
		} else {
			o->file = fdopen(target.fd, "wb");
		}
		if (!o->gz && !o->file) {
			close(target.fd);
			safefs_output_discard(&target);
			snprintf(msg_buf, msg_size, "cannot create %s: %s", path, strerror(ENOMEM));
			*cause = msg_buf;
			free(o);
			return -ENOMEM;
		}
	}
	memset(counts, 0, sizeof *counts);
	struct pf x = {.st = st, .o = o, .from = opt->from_ns, .to = opt->to_ns, .counts = counts};
	x.next_uuid = 1;
	x.next_extra_uuid = EXTRA_UUID_BASE;
	struct merge m = {0};
	pf_clock_snapshot(&x, export_time_base(st));
	for (size_t p = 0; p < store_process_count(st); p++) {
		struct store_process_info pi;
		store_process_get(st, p, &pi);
		x.process = p;
		x.pid = pi.pid;
		x.process_uuid = x.next_uuid;
		x.lane_uuid0 = x.next_uuid + 1;
		x.next_uuid += 1 + pi.lane_count;
		char label[64];
		snprintf(label, sizeof label, "pid %d", (int)pi.pid);
		pf_sequence(&x, x.process_uuid);
		pb_reset(&x.frame);
		pb_uint(&x.frame, F_TD_UUID, x.process_uuid);
		size_t d = pb_open(&x.frame, F_TD_PROCESS);
		pb_int(&x.frame, F_PD_PID, pi.pid);
		pb_string(&x.frame, F_PD_PROCESS_NAME, pi.cmdline && *pi.cmdline ? pi.cmdline : label);
		pb_close(&x.frame, d);
		pf_descriptor_write(&x);
		for (size_t l = 0; l < pi.lane_count; l++)
			pf_lane(&x, &m, l);
		pf_counters(&x);
	}
	pf_out_flush(o);
	counts->bytes = o->bytes;
	free(m.src);
	free(m.ends);
	free(m.opens);
	pf_intern_fini(&x.in);
	pb_fini(&x.pkt);
	pb_fini(&x.te);
	pb_fini(&x.interned);
	pb_fini(&x.frame);
	int rc = o->err;
	if (o->gz) {
		int zrc = gzclose(o->gz);
		if (!rc && zrc != Z_OK)
			rc = -EIO;
	} else if (to_stdout) {
		if (fflush(stdout) != 0 && !rc)
			rc = errno ? -errno : -EIO;
	} else if (fclose(o->file) != 0 && !rc) {
		rc = errno ? -errno : -EIO;
	}
	free(o);
	/* Complete: it replaces PATH; failed: PATH stays as it was. */
	if (!rc && !to_stdout)
		rc = safefs_output_commit(&target);
	else if (!to_stdout)
		safefs_output_discard(&target);
	if (rc) {
		if (to_stdout)
			snprintf(msg_buf, msg_size, "writing output: %s", strerror(-rc));
		else
			snprintf(msg_buf, msg_size, "cannot write %s: %s", path, strerror(-rc));
		*cause = msg_buf;
	}
	return rc;
}
