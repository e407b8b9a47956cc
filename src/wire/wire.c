#include "cuscope/wire.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char *const loss_cause_names[WIRE_LOSS_CAUSE_MAX] = {
    [WIRE_LOSS_RING_FULL] = "ring_full",         [WIRE_LOSS_NO_VIEWER] = "no_viewer_evicted",
    [WIRE_LOSS_VIEWER_SLOW] = "viewer_slow",     [WIRE_LOSS_STRING_CAP] = "string_table_full",
    [WIRE_LOSS_NO_MEMORY] = "no_memory",         [WIRE_LOSS_UNMATCHED_POP] = "unmatched_pop",
    [WIRE_LOSS_CUPTI_DROPPED] = "cupti_dropped", [WIRE_LOSS_GPU_BUFFER] = "gpu_buffer_refused",
    [WIRE_LOSS_SAMPLE_BUSY] = "samples_skipped", [WIRE_LOSS_PAYLOAD_UNDECODED] = "payload_undecoded",
};

static const char *const memcpy_kind_names[WIRE_MEMCPY_KIND_MAX] = {
    [WIRE_MEMCPY_UNKNOWN] = "unknown", [WIRE_MEMCPY_HTOD] = "HtoD", [WIRE_MEMCPY_DTOH] = "DtoH",
    [WIRE_MEMCPY_HTOA] = "HtoA",       [WIRE_MEMCPY_ATOH] = "AtoH", [WIRE_MEMCPY_ATOA] = "AtoA",
    [WIRE_MEMCPY_ATOD] = "AtoD",       [WIRE_MEMCPY_DTOA] = "DtoA", [WIRE_MEMCPY_DTOD] = "DtoD",
    [WIRE_MEMCPY_HTOH] = "HtoH",       [WIRE_MEMCPY_PTOP] = "PtoP",
};

static const char *const mem_kind_names[WIRE_MEM_KIND_MAX] = {
    [WIRE_MEM_UNKNOWN] = "unknown",
    [WIRE_MEM_PAGEABLE] = "pageable",
    [WIRE_MEM_PINNED] = "pinned",
    [WIRE_MEM_DEVICE] = "device",
    [WIRE_MEM_ARRAY] = "array",
    [WIRE_MEM_MANAGED] = "managed",
    [WIRE_MEM_DEVICE_STATIC] = "device_static",
    [WIRE_MEM_MANAGED_STATIC] = "managed_static",
};

static const char *const sync_type_names[WIRE_SYNC_TYPE_MAX] = {
    [WIRE_SYNC_UNKNOWN] = "unknown",
    [WIRE_SYNC_EVENT] = "event",
    [WIRE_SYNC_STREAM_WAIT_EVENT] = "stream_wait_event",
    [WIRE_SYNC_STREAM] = "stream",
    [WIRE_SYNC_CONTEXT] = "context",
};

const char *wire_memcpy_kind_name(uint32_t kind)
{
	return kind < WIRE_MEMCPY_KIND_MAX ? memcpy_kind_names[kind] : "unknown";
}

const char *wire_mem_kind_name(uint32_t kind)
{
	return kind < WIRE_MEM_KIND_MAX ? mem_kind_names[kind] : "unknown";
}

const char *wire_sync_type_name(uint32_t type)
{
	return type < WIRE_SYNC_TYPE_MAX ? sync_type_names[type] : "unknown";
}

static const char *const frame_type_names[WIRE_FRAME_TYPE_MAX] = {
    [WIRE_FRAME_HELLO] = "hello",
    [WIRE_FRAME_STRING] = "string",
    [WIRE_FRAME_EVENTS] = "events",
    [WIRE_FRAME_LOSSES] = "losses",
    [WIRE_FRAME_BYE] = "bye",
    [WIRE_FRAME_GPU] = "gpu",
    [WIRE_FRAME_GPU_DEVICE] = "gpu_device",
    [WIRE_FRAME_NOTICE] = "notice",
    [WIRE_FRAME_STACKS] = "stacks",
    [WIRE_FRAME_COUNTERS] = "counters",
    [WIRE_FRAME_EXIT] = "exit",
    [WIRE_FRAME_COST] = "cost",
    [WIRE_FRAME_GPU_METRICS] = "gpu_metrics",
};

static const char *const cost_source_names[WIRE_COST_SOURCE_MAX] = {
    [WIRE_COST_SENDER] = "sender",           [WIRE_COST_GPU] = "gpu",   [WIRE_COST_NVTX] = "nvtx",
    [WIRE_COST_SAMPLING] = "sampling",       [WIRE_COST_OSRT] = "osrt", [WIRE_COST_COUNTERS] = "counters",
    [WIRE_COST_GPU_METRICS] = "gpu_metrics",
};

const char *wire_cost_source_name(uint32_t source)
{
	return source < WIRE_COST_SOURCE_MAX ? cost_source_names[source] : NULL;
}

const char *wire_loss_cause_name(uint32_t cause)
{
	return cause < WIRE_LOSS_CAUSE_MAX ? loss_cause_names[cause] : NULL;
}

const char *wire_frame_type_name(uint32_t type)
{
	if (type < WIRE_FRAME_TYPE_MAX && frame_type_names[type])
		return frame_type_names[type];
	return "unknown";
}

int wire_hello_check(const void *payload, uint32_t length, const char **cause)
{
	struct wire_hello hello;
	/* Magic and version come first so that any future layout can still be told apart. */
	if (length < 16 || memcmp(payload, WIRE_MAGIC, 8) != 0) {
		*cause = "peer is not a cuscope collector (bad handshake magic)";
		return -EPROTO;
	}
	memcpy(&hello, payload, 16);
	if (hello.version != WIRE_VERSION) {
		*cause = hello.version > WIRE_VERSION
		             ? "protocol mismatch: the collector is newer than this viewer"
		             : "protocol mismatch: the collector is older than this viewer";
		return -EPROTO;
	}
	if (length < sizeof hello) {
		*cause = "truncated handshake";
		return -EPROTO;
	}
	memcpy(&hello, payload, sizeof hello);
	if (hello.hello_size != sizeof hello || hello.cmdline_len != length - sizeof hello) {
		*cause = "malformed handshake";
		return -EPROTO;
	}
	return 0;
}

int wire_frame_check(uint32_t type, const void *payload, uint32_t length, const char **cause)
{
	switch (type) {
	case WIRE_FRAME_HELLO:
		return wire_hello_check(payload, length, cause);
	case WIRE_FRAME_STRING: {
		struct wire_string s;
		if (length < sizeof s)
			break;
		memcpy(&s, payload, sizeof s);
		if (s.length != length - sizeof s || s.length > WIRE_MAX_STRING || s.id == 0)
			break;
		return 0;
	}
	case WIRE_FRAME_EVENTS:
		if (length % sizeof(struct wire_event) == 0)
			return 0;
		break;
	case WIRE_FRAME_LOSSES:
		if (length % sizeof(struct wire_loss) == 0)
			return 0;
		break;
	case WIRE_FRAME_BYE:
		if (length == sizeof(struct wire_bye))
			return 0;
		break;
	case WIRE_FRAME_EXIT:
		if (length == sizeof(struct wire_exit))
			return 0;
		break;
	case WIRE_FRAME_GPU:
		if (length % sizeof(struct wire_gpu_event) == 0)
			return 0;
		break;
	case WIRE_FRAME_GPU_DEVICE:
		if (length == sizeof(struct wire_gpu_device))
			return 0;
		break;
	case WIRE_FRAME_STACKS: {
		/* A sequence of variable-size records: each must fit exactly. */
		const uint8_t *p = payload;
		uint32_t off = 0;
		while (off < length) {
			struct wire_stack st;
			if (length - off < sizeof st)
				break;
			memcpy(&st, p + off, sizeof st);
			if (st.depth > WIRE_STACK_MAX_DEPTH ||
			    length - off - sizeof st < (uint32_t)st.depth * 4u)
				break;
			off += (uint32_t)sizeof st + (uint32_t)st.depth * 4u;
		}
		if (off == length)
			return 0;
		break;
	}
	case WIRE_FRAME_COUNTERS:
		if (length % sizeof(struct wire_counter) == 0)
			return 0;
		break;
	case WIRE_FRAME_COST:
		if (length % sizeof(struct wire_cost) == 0)
			return 0;
		break;
	case WIRE_FRAME_GPU_METRICS:
		if (length % sizeof(struct wire_gpu_metric) == 0)
			return 0;
		break;
	case WIRE_FRAME_NOTICE: {
		struct wire_notice n;
		if (length < sizeof n)
			break;
		memcpy(&n, payload, sizeof n);
		if (n.length == length - sizeof n && n.length <= WIRE_MAX_STRING &&
		    n.topic < WIRE_NOTICE_TOPIC_MAX)
			return 0;
		break;
	}
	default:
		*cause = "unknown frame type";
		return -EPROTO;
	}
	*cause = "malformed frame";
	return -EPROTO;
}

void wire_decoder_init(struct wire_decoder *dec)
{
	memset(dec, 0, sizeof *dec);
}

void wire_decoder_fini(struct wire_decoder *dec)
{
	free(dec->buf);
	memset(dec, 0, sizeof *dec);
}

int wire_decoder_push(struct wire_decoder *dec, const void *data, size_t len)
{
	if (len == 0)
		return 0;
	/* Compact before growing so a long-lived stream keeps a bounded buffer. */
	if (dec->off > 0 && (dec->off == dec->len || dec->off > dec->cap / 2)) {
		memmove(dec->buf, dec->buf + dec->off, dec->len - dec->off);
		dec->len -= dec->off;
		dec->off = 0;
	}
	if (dec->len + len > dec->cap) {
		size_t cap = dec->cap ? dec->cap : 65536;
		while (cap < dec->len + len)
			cap *= 2;
		uint8_t *buf = realloc(dec->buf, cap);
		if (!buf)
			return -ENOMEM;
		dec->buf = buf;
		dec->cap = cap;
	}
	memcpy(dec->buf + dec->len, data, len);
	dec->len += len;
	return 0;
}

int wire_decoder_next(struct wire_decoder *dec, uint32_t *type, const void **payload, uint32_t *length,
                      const char **cause)
{
	struct wire_frame_header hdr;
	size_t avail = dec->len - dec->off;
	if (avail < sizeof hdr)
		return 0;
	memcpy(&hdr, dec->buf + dec->off, sizeof hdr);
	if (hdr.type == 0 || hdr.type >= WIRE_FRAME_TYPE_MAX || hdr.length > WIRE_MAX_FRAME) {
		*cause = "malformed frame header";
		return -EPROTO;
	}
	if (avail < sizeof hdr + hdr.length)
		return 0;
	*type = hdr.type;
	*length = hdr.length;
	*payload = dec->buf + dec->off + sizeof hdr;
	dec->off += sizeof hdr + hdr.length;
	return 1;
}

/* A notice as protocol version 1 had it: no topic. */
struct wire_notice_v1 {
	uint32_t level;
	uint32_t length;
};
_Static_assert(sizeof(struct wire_notice) - sizeof(struct wire_notice_v1) <= WIRE_UPGRADE_GROWTH,
               "WIRE_UPGRADE_GROWTH covers a version 1 notice");
_Static_assert(sizeof(struct wire_hello) - WIRE_HELLO_V2_SIZE <= WIRE_UPGRADE_GROWTH,
               "WIRE_UPGRADE_GROWTH covers a version 1 or 2 hello");

/*
 * The topic of a version 1 notice, from the words the version 1 collector used for the notices
 * a viewer acts on (what that viewer matched): the only place that reads a notice's words.
 */
static uint32_t wire_notice_v1_topic(uint32_t level, const char *text, size_t len)
{
	static const char gpu[] = "GPU tracing", budget[] = "overhead budget ", runtime[] = "cupti_version=";
	if (level == WIRE_NOTICE_WARNING && len >= sizeof gpu - 1 && memcmp(text, gpu, sizeof gpu - 1) == 0)
		return WIRE_NOTICE_TOPIC_GPU_UNAVAILABLE;
	if (len >= sizeof budget - 1 && memcmp(text, budget, sizeof budget - 1) == 0)
		return WIRE_NOTICE_TOPIC_BUDGET;
	if (level == WIRE_NOTICE_INFO && len >= sizeof runtime - 1 &&
	    memcmp(text, runtime, sizeof runtime - 1) == 0)
		return WIRE_NOTICE_TOPIC_RUNTIME;
	return WIRE_NOTICE_TOPIC_GENERAL;
}

int wire_frame_upgrade(uint32_t version, uint32_t type, const void *payload, uint32_t length, void *out,
                       uint32_t *out_length, const char **cause)
{
	if (version == WIRE_VERSION)
		return 0;
	if (version == 3) {
		/* Version 4 only added a frame type: a version 3 hello differs by its version alone. */
		if (type != WIRE_FRAME_HELLO)
			return 0;
		struct wire_hello hello;
		if (length < sizeof hello || memcmp(payload, WIRE_MAGIC, 8) != 0) {
			*cause = "malformed handshake";
			return -EPROTO;
		}
		memcpy(&hello, payload, sizeof hello);
		if (hello.version != 3) {
			*cause = "handshake of another protocol version";
			return -EPROTO;
		}
		hello.version = WIRE_VERSION;
		memcpy(out, &hello, sizeof hello);
		memcpy((char *)out + sizeof hello, (const char *)payload + sizeof hello,
		       length - sizeof hello);
		*out_length = length;
		return 1;
	}
	if (version != 1 && version != 2) {
		*cause = version > WIRE_VERSION ? "frames of a newer protocol version"
		                                : "frames of an unknown protocol version";
		return -EPROTO;
	}
	switch (type) {
	case WIRE_FRAME_HELLO: {
		/* Versions 1 and 2: today's fields up to cmdline_len, then a reserved 0; no labels. */
		struct wire_hello hello;
		if (length < WIRE_HELLO_V2_SIZE || memcmp(payload, WIRE_MAGIC, 8) != 0) {
			*cause = "malformed handshake";
			return -EPROTO;
		}
		memset(&hello, 0, sizeof hello);
		memcpy(&hello, payload, WIRE_HELLO_V2_SIZE);
		if (hello.version != version || hello.hello_size != WIRE_HELLO_V2_SIZE) {
			*cause = "handshake of another protocol version";
			return -EPROTO;
		}
		hello.version = WIRE_VERSION;
		hello.hello_size = sizeof hello;
		hello.ids = 0;
		memcpy(out, &hello, sizeof hello);
		memcpy((char *)out + sizeof hello, (const char *)payload + WIRE_HELLO_V2_SIZE,
		       length - WIRE_HELLO_V2_SIZE);
		*out_length = length + (uint32_t)(sizeof hello - WIRE_HELLO_V2_SIZE);
		return 1;
	}
	case WIRE_FRAME_NOTICE: {
		if (version != 1)
			return 0;
		struct wire_notice_v1 old;
		if (length < sizeof old) {
			*cause = "malformed frame";
			return -EPROTO;
		}
		memcpy(&old, payload, sizeof old);
		if (old.length != length - sizeof old || old.length > WIRE_MAX_STRING) {
			*cause = "malformed frame";
			return -EPROTO;
		}
		const char *text = (const char *)payload + sizeof old;
		struct wire_notice n = {.level = old.level,
		                        .topic = wire_notice_v1_topic(old.level, text, old.length),
		                        .length = old.length};
		memcpy(out, &n, sizeof n);
		memcpy((char *)out + sizeof n, text, old.length);
		*out_length = (uint32_t)(sizeof n + old.length);
		return 1;
	}
	default:
		return 0;
	}
}
