/*
 * The Perfetto export's private parts (export_perfetto.c writes the tracks, export_perfetto_events.c
 * the packets and events): the protos' field numbers, the writer's state and the event writers.
 */
#ifndef CUSCOPE_DUMP_EXPORT_PERFETTO_H
#define CUSCOPE_DUMP_EXPORT_PERFETTO_H

#include "export_sink.h"
#include "pb.h"

#include "cuscope/export.h"
#include "cuscope/store.h"

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
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
	F_TE_DOUBLE_COUNTER_VALUE = 44,
	F_TE_FLOW_IDS = 47,
	F_TE_TERMINATING_FLOW_IDS = 48,
	/* DebugAnnotation */
	F_DA_NAME_IID = 1,
	F_DA_BOOL = 2,
	F_DA_UINT = 3,
	F_DA_INT = 4,
	F_DA_DOUBLE = 5,
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
	struct export_sink sink;
	size_t n;
	uint8_t buf[OUT_BUF];
};

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

/* Writes out what the output buffer holds. */
void pf_out_flush(struct pf_out *o);
/* Frees a sequence's intern table. */
void pf_intern_fini(struct intern *in);
/* Writes the packet built in x->pkt as one Trace.packet field. */
void pf_packet_write(struct pf *x);
/* Starts a new packet sequence whose events default to track uuid. */
void pf_sequence(struct pf *x, uint64_t uuid);
/* A packet of its own holding the track descriptor in x->frame. */
void pf_descriptor_write(struct pf *x);
/* Begins an event: empties the event and interned-data buffers (clearing a full intern table first). */
void pf_event_start(struct pf *x, int type);
/* Writes the event built in x->te at t_ns as a packet on the current sequence. */
void pf_event_finish(struct pf *x, uint64_t t_ns);
/* An NVTX range begin (open: never ended) or mark: name = message, category = domain ("nvtx" for the
 * default). */
void pf_event_nvtx(struct pf *x, size_t lane, const struct store_range *r, int style, int open);
/* The begin of a GPU op, API call or host sync with its args; flows where the JSON has them. */
void pf_event_gpu(struct pf *x, const struct store_lane_info *li, const struct store_gpu_op *op);
/* The end of the innermost open slice of the sequence's track at t_ns. */
void pf_event_end(struct pf *x, uint64_t t_ns);
/* Inferred step i of r (steps.h) as a slice "step", category "inferred", begun and ended. */
struct steps_result;
void pf_event_step(struct pf *x, const struct steps_result *r, size_t i);

#endif
