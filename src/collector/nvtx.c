/*
 * Our own NVTX injection: fills the CORE (nvtxRangePushA, ...) and CORE2 (nvtxDomain*, registered
 * strings) function tables so that torch.cuda.nvtx, the `nvtx` Python package and C/C++ NVTX3
 * users all reach the collector. Works without any GPU.
 */
#include "collector.h"
#include "cuscope/wire.h"
#include "emit.h"
#include "nvtxpayload.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtPayload.h>

static _Atomic uint64_t nvtx_next_range_id = 1;

/* Encodes a wide string (UTF-32 on Linux) as UTF-8 into out; returns bytes written. */
static size_t nvtx_wide_to_utf8(const wchar_t *in, char *out, size_t cap)
{
	size_t n = 0;
	for (; in && *in; in++) {
		uint32_t c = (uint32_t)*in;
		char buf[4];
		size_t len;
		if (c < 0x80) {
			buf[0] = (char)c;
			len = 1;
		} else if (c < 0x800) {
			buf[0] = (char)(0xC0 | (c >> 6));
			buf[1] = (char)(0x80 | (c & 0x3F));
			len = 2;
		} else if (c < 0x10000) {
			buf[0] = (char)(0xE0 | (c >> 12));
			buf[1] = (char)(0x80 | ((c >> 6) & 0x3F));
			buf[2] = (char)(0x80 | (c & 0x3F));
			len = 3;
		} else if (c < 0x110000) {
			buf[0] = (char)(0xF0 | (c >> 18));
			buf[1] = (char)(0x80 | ((c >> 12) & 0x3F));
			buf[2] = (char)(0x80 | ((c >> 6) & 0x3F));
			buf[3] = (char)(0x80 | (c & 0x3F));
			len = 4;
		} else {
			continue;
		}
		if (n + len > cap)
			break;
		memcpy(out + n, buf, len);
		n += len;
	}
	return n;
}

/* Emits an event (not a push or pop) whose message is an ASCII C string. */
static int nvtx_emit_ascii(uint16_t kind, uint64_t value, const struct collector_string *domain,
                           const char *msg)
{
	return collector_emit(kind, 0, value, NULL, domain, msg, msg ? strlen(msg) : 0);
}

/* Emits an event (not a push or pop) whose message is a wide string, converted to UTF-8 here. */
static int nvtx_emit_wide(uint16_t kind, uint64_t value, const struct collector_string *domain,
                          const wchar_t *msg)
{
	char utf8[1024];
	size_t len = nvtx_wide_to_utf8(msg, utf8, sizeof utf8);
	return collector_emit(kind, 0, value, NULL, domain, utf8, len);
}

/*
 * After a push, start or mark that was written: the fields of its extended payload
 * (NVTX_PAYLOAD_TYPE_EXT), decoded by its registered schema, as one record that the sender turns
 * into WIRE_EV_NVTX_ARG events right behind it. Nothing is written for other payloads; payloads
 * that cannot be decoded are counted (nvtxpayload_undecoded).
 */
static void nvtx_emit_args(const struct collector_string *domain, const nvtxEventAttributes_t *attr)
{
	if (__builtin_expect(!attr || attr->payloadType != NVTX_PAYLOAD_TYPE_EXT, 1))
		return;
	struct nvtxpayload_arg args[WIRE_ARGS_MAX];
	size_t n = nvtxpayload_decode(domain, (const void *)(uintptr_t)attr->payload.ullValue,
	                              (uint32_t)attr->reserved0, args, WIRE_ARGS_MAX);
	if (n)
		collector_emit(COLLECTOR_REC_NVTX_ARGS, 0, 0, NULL, NULL, (const char *)args,
		               n * sizeof args[0]);
}

/* Emits an event (not a push or pop) described by NVTX event attributes. */
static int nvtx_emit_attr_only(uint16_t kind, uint64_t value, const struct collector_string *domain,
                               const nvtxEventAttributes_t *attr)
{
	if (!attr)
		return collector_emit(kind, 0, value, NULL, domain, NULL, 0);
	/* Range ids travel in value for start events; category only for marks. */
	if (kind == WIRE_EV_NVTX_MARK)
		value = attr->category;
	switch (attr->messageType) {
	case NVTX_MESSAGE_TYPE_ASCII:
		return nvtx_emit_ascii(kind, value, domain, attr->message.ascii);
	case NVTX_MESSAGE_TYPE_UNICODE:
		return nvtx_emit_wide(kind, value, domain, attr->message.unicode);
	case NVTX_MESSAGE_TYPE_REGISTERED:
		return collector_emit(kind, 0, value,
		                      (const struct collector_string *)attr->message.registered, domain, NULL,
		                      0);
	default:
		return collector_emit(kind, 0, value, NULL, domain, NULL, 0);
	}
}

/* Emits an event described by NVTX event attributes, followed by its payload's fields. */
static int nvtx_emit_attr(uint16_t kind, uint64_t value, const struct collector_string *domain,
                          const nvtxEventAttributes_t *attr)
{
	int written = nvtx_emit_attr_only(kind, value, domain, attr);
	if (written)
		nvtx_emit_args(domain, attr);
	return written;
}

/*
 * Pushes and pops keep the recorded nesting exact: once a push is not recorded (ring full), every
 * push nested inside it and the pops closing them are dropped too, each counted, so no recorded
 * pop can close the wrong range. Returns 1 if the push must be dropped without trying.
 */
static inline int nvtx_push_dropped(struct thread_ring *tr)
{
	if (!tr->drop_from)
		return 0;
	collector_count_drop(tr);
	return 1;
}

/* Completes a push that was written (or not); returns the NVTX result (the range's depth). */
static inline int nvtx_push_done(struct thread_ring *tr, int written)
{
	/* depth first: a handler's push and pop between the two stores must not find drop_from
	 * already naming the level it is about to pop and clear it. */
	int depth = tr->depth++;
	atomic_signal_fence(memory_order_seq_cst);
	if (!written && !tr->drop_from)
		tr->drop_from = depth + 1;
	return depth;
}

/* Pushes a range described by NVTX event attributes. */
static int nvtx_push_attr(const struct collector_string *domain, const nvtxEventAttributes_t *attr)
{
	struct thread_ring *tr = collector_thread_ring();
	if (!tr)
		return 0;
	int written = 0;
	if (!nvtx_push_dropped(tr)) {
		uint32_t category = attr ? attr->category : 0;
		char utf8[1024];
		size_t len;
		switch (attr ? attr->messageType : NVTX_MESSAGE_UNKNOWN) {
		case NVTX_MESSAGE_TYPE_ASCII:
			written = (!category && !domain && emit_push_cached(tr, attr->message.ascii)) ||
			          collector_nvtx_push(tr, attr->message.ascii, category, domain);
			break;
		case NVTX_MESSAGE_TYPE_UNICODE:
			len = nvtx_wide_to_utf8(attr->message.unicode, utf8, sizeof utf8);
			written = collector_nvtx_push_text(tr, utf8, len, category, domain, NULL);
			break;
		case NVTX_MESSAGE_TYPE_REGISTERED:
			written = collector_nvtx_push_text(
			    tr, NULL, 0, category, domain,
			    (const struct collector_string *)attr->message.registered);
			break;
		default:
			written = collector_nvtx_push(tr, NULL, category, domain);
			break;
		}
		/* Only behind a recorded push: the fields belong to the range it opens. */
		if (written)
			nvtx_emit_args(domain, attr);
	}
	return nvtx_push_done(tr, written);
}

/* Emits a pop unless it closes or sits inside a dropped push; returns the NVTX depth result. */
static __attribute__((noinline)) int nvtx_pop(const struct collector_string *domain)
{
	struct thread_ring *tr = collector_thread_ring();
	if (!tr)
		return -1;
	if (tr->drop_from && tr->depth >= tr->drop_from) {
		if (tr->depth == tr->drop_from)
			tr->drop_from = 0; /* this pop closes the outermost dropped push */
		collector_count_drop(tr);
	} else if (domain || !emit_pop_small(tr)) {
		collector_nvtx_pop(tr, domain);
	}
	if (tr->depth == 0)
		return -1;
	return --tr->depth;
}

/* ---- CORE ---- */

static void nvtx_mark_ex(const nvtxEventAttributes_t *attr)
{
	nvtx_emit_attr(WIRE_EV_NVTX_MARK, 0, NULL, attr);
}

static void nvtx_mark_a(const char *msg)
{
	nvtx_emit_ascii(WIRE_EV_NVTX_MARK, 0, NULL, msg);
}

static void nvtx_mark_w(const wchar_t *msg)
{
	nvtx_emit_wide(WIRE_EV_NVTX_MARK, 0, NULL, msg);
}

static nvtxRangeId_t nvtx_range_start_ex(const nvtxEventAttributes_t *attr)
{
	uint64_t id = atomic_fetch_add_explicit(&nvtx_next_range_id, 1, memory_order_relaxed);
	nvtx_emit_attr(WIRE_EV_NVTX_START, id, NULL, attr);
	return id;
}

static nvtxRangeId_t nvtx_range_start_a(const char *msg)
{
	uint64_t id = atomic_fetch_add_explicit(&nvtx_next_range_id, 1, memory_order_relaxed);
	nvtx_emit_ascii(WIRE_EV_NVTX_START, id, NULL, msg);
	return id;
}

static nvtxRangeId_t nvtx_range_start_w(const wchar_t *msg)
{
	uint64_t id = atomic_fetch_add_explicit(&nvtx_next_range_id, 1, memory_order_relaxed);
	nvtx_emit_wide(WIRE_EV_NVTX_START, id, NULL, msg);
	return id;
}

static void nvtx_range_end(nvtxRangeId_t id)
{
	collector_emit(WIRE_EV_NVTX_END, 0, id, NULL, NULL, NULL, 0);
}

static int nvtx_range_push_ex(const nvtxEventAttributes_t *attr)
{
	return nvtx_push_attr(NULL, attr);
}

/* nvtxRangePushA beyond its common case (not running yet, a dropped range open, a new message). */
static __attribute__((noinline)) int nvtx_push_a_general(const char *msg)
{
	struct thread_ring *tr = collector_thread_ring();
	if (!tr)
		return 0;
	return nvtx_push_done(tr, !nvtx_push_dropped(tr) && collector_nvtx_push(tr, msg, 0, NULL));
}

static int nvtx_range_push_a(const char *msg)
{
	struct thread_ring *tr = collector_ring_self;
	/* The common case calls nothing, so it needs no stack frame of its own. */
	if (__builtin_expect(tr && atomic_load_explicit(&collector_running, memory_order_acquire) &&
	                         !tr->drop_from && emit_push_cached(tr, msg),
	                     1))
		return tr->depth++;
	return nvtx_push_a_general(msg);
}

static int nvtx_range_push_w(const wchar_t *msg)
{
	struct thread_ring *tr = collector_thread_ring();
	if (!tr)
		return 0;
	int written = 0;
	if (!nvtx_push_dropped(tr)) {
		char utf8[1024];
		size_t len = nvtx_wide_to_utf8(msg, utf8, sizeof utf8);
		written = collector_nvtx_push_text(tr, utf8, len, 0, NULL, NULL);
	}
	return nvtx_push_done(tr, written);
}

static int nvtx_range_pop(void)
{
	struct thread_ring *tr = collector_ring_self;
	if (__builtin_expect(tr && atomic_load_explicit(&collector_running, memory_order_acquire) &&
	                         !tr->drop_from && tr->depth > 0 && emit_pop_small(tr),
	                     1))
		return --tr->depth;
	return nvtx_pop(NULL);
}

static void nvtx_name_category_a(uint32_t category, const char *name)
{
	nvtx_emit_ascii(WIRE_EV_NVTX_CATEGORY, category, NULL, name);
}

static void nvtx_name_category_w(uint32_t category, const wchar_t *name)
{
	nvtx_emit_wide(WIRE_EV_NVTX_CATEGORY, category, NULL, name);
}

static void nvtx_name_os_thread_a(uint32_t tid, const char *name)
{
	collector_emit(WIRE_EV_THREAD_NAME, tid, 0, NULL, NULL, name, name ? strlen(name) : 0);
}

static void nvtx_name_os_thread_w(uint32_t tid, const wchar_t *name)
{
	char utf8[256];
	size_t len = nvtx_wide_to_utf8(name, utf8, sizeof utf8);
	collector_emit(WIRE_EV_THREAD_NAME, tid, 0, NULL, NULL, utf8, len);
}

/* ---- CORE2: domains ---- */

static const struct collector_string *nvtx_domain(nvtxDomainHandle_t domain)
{
	return (const struct collector_string *)domain;
}

static void nvtx_domain_mark_ex(nvtxDomainHandle_t domain, const nvtxEventAttributes_t *attr)
{
	nvtx_emit_attr(WIRE_EV_NVTX_MARK, 0, nvtx_domain(domain), attr);
}

static nvtxRangeId_t nvtx_domain_range_start_ex(nvtxDomainHandle_t domain, const nvtxEventAttributes_t *attr)
{
	uint64_t id = atomic_fetch_add_explicit(&nvtx_next_range_id, 1, memory_order_relaxed);
	nvtx_emit_attr(WIRE_EV_NVTX_START, id, nvtx_domain(domain), attr);
	return id;
}

static void nvtx_domain_range_end(nvtxDomainHandle_t domain, nvtxRangeId_t id)
{
	collector_emit(WIRE_EV_NVTX_END, 0, id, NULL, nvtx_domain(domain), NULL, 0);
}

static int nvtx_domain_range_push_ex(nvtxDomainHandle_t domain, const nvtxEventAttributes_t *attr)
{
	return nvtx_push_attr(nvtx_domain(domain), attr);
}

static int nvtx_domain_range_pop(nvtxDomainHandle_t domain)
{
	return nvtx_pop(nvtx_domain(domain));
}

/* Resources (named pointers/handles) are not shown yet; a unique non-NULL handle keeps callers happy. */
static nvtxResourceHandle_t nvtx_domain_resource_create(nvtxDomainHandle_t domain,
                                                        nvtxResourceAttributes_t *attr)
{
	(void)domain;
	(void)attr;
	static _Atomic uintptr_t next = 1;
	return (nvtxResourceHandle_t)(atomic_fetch_add(&next, 1) << 4);
}

static void nvtx_domain_resource_destroy(nvtxResourceHandle_t resource)
{
	(void)resource;
}

static void nvtx_domain_name_category_a(nvtxDomainHandle_t domain, uint32_t category, const char *name)
{
	nvtx_emit_ascii(WIRE_EV_NVTX_CATEGORY, category, nvtx_domain(domain), name);
}

static void nvtx_domain_name_category_w(nvtxDomainHandle_t domain, uint32_t category, const wchar_t *name)
{
	nvtx_emit_wide(WIRE_EV_NVTX_CATEGORY, category, nvtx_domain(domain), name);
}

/* Registered strings and domains are heap copies; the handle is the copy (kept for the process life). */
static nvtxStringHandle_t nvtx_domain_register_string_a(nvtxDomainHandle_t domain, const char *text)
{
	(void)domain;
	return (nvtxStringHandle_t)collector_string_new(text ? text : "", text ? strlen(text) : 0);
}

static nvtxStringHandle_t nvtx_domain_register_string_w(nvtxDomainHandle_t domain, const wchar_t *text)
{
	char utf8[1024];
	(void)domain;
	size_t len = nvtx_wide_to_utf8(text, utf8, sizeof utf8);
	return (nvtxStringHandle_t)collector_string_new(utf8, len);
}

static nvtxDomainHandle_t nvtx_domain_create_a(const char *name)
{
	return (nvtxDomainHandle_t)collector_string_new(name ? name : "", name ? strlen(name) : 0);
}

static nvtxDomainHandle_t nvtx_domain_create_w(const wchar_t *name)
{
	char utf8[1024];
	size_t len = nvtx_wide_to_utf8(name, utf8, sizeof utf8);
	return (nvtxDomainHandle_t)collector_string_new(utf8, len);
}

/* Domains stay allocated: events naming them may still sit in a ring. */
static void nvtx_domain_destroy(nvtxDomainHandle_t domain)
{
	(void)domain;
}

static void nvtx_initialize(const void *reserved)
{
	(void)reserved;
}

struct nvtx_slot {
	unsigned int id;
	NvtxFunctionPointer fn;
};

#define NVTX_SLOT(id, fn)                                                                                    \
	{                                                                                                    \
		id, (NvtxFunctionPointer)(fn)                                                                \
	}

static const struct nvtx_slot nvtx_core_slots[] = {
    NVTX_SLOT(NVTX_CBID_CORE_MarkEx, nvtx_mark_ex),
    NVTX_SLOT(NVTX_CBID_CORE_MarkA, nvtx_mark_a),
    NVTX_SLOT(NVTX_CBID_CORE_MarkW, nvtx_mark_w),
    NVTX_SLOT(NVTX_CBID_CORE_RangeStartEx, nvtx_range_start_ex),
    NVTX_SLOT(NVTX_CBID_CORE_RangeStartA, nvtx_range_start_a),
    NVTX_SLOT(NVTX_CBID_CORE_RangeStartW, nvtx_range_start_w),
    NVTX_SLOT(NVTX_CBID_CORE_RangeEnd, nvtx_range_end),
    NVTX_SLOT(NVTX_CBID_CORE_RangePushEx, nvtx_range_push_ex),
    NVTX_SLOT(NVTX_CBID_CORE_RangePushA, nvtx_range_push_a),
    NVTX_SLOT(NVTX_CBID_CORE_RangePushW, nvtx_range_push_w),
    NVTX_SLOT(NVTX_CBID_CORE_RangePop, nvtx_range_pop),
    NVTX_SLOT(NVTX_CBID_CORE_NameCategoryA, nvtx_name_category_a),
    NVTX_SLOT(NVTX_CBID_CORE_NameCategoryW, nvtx_name_category_w),
    NVTX_SLOT(NVTX_CBID_CORE_NameOsThreadA, nvtx_name_os_thread_a),
    NVTX_SLOT(NVTX_CBID_CORE_NameOsThreadW, nvtx_name_os_thread_w),
};

static const struct nvtx_slot nvtx_core2_slots[] = {
    NVTX_SLOT(NVTX_CBID_CORE2_DomainMarkEx, nvtx_domain_mark_ex),
    NVTX_SLOT(NVTX_CBID_CORE2_DomainRangeStartEx, nvtx_domain_range_start_ex),
    NVTX_SLOT(NVTX_CBID_CORE2_DomainRangeEnd, nvtx_domain_range_end),
    NVTX_SLOT(NVTX_CBID_CORE2_DomainRangePushEx, nvtx_domain_range_push_ex),
    NVTX_SLOT(NVTX_CBID_CORE2_DomainRangePop, nvtx_domain_range_pop),
    NVTX_SLOT(NVTX_CBID_CORE2_DomainResourceCreate, nvtx_domain_resource_create),
    NVTX_SLOT(NVTX_CBID_CORE2_DomainResourceDestroy, nvtx_domain_resource_destroy),
    NVTX_SLOT(NVTX_CBID_CORE2_DomainNameCategoryA, nvtx_domain_name_category_a),
    NVTX_SLOT(NVTX_CBID_CORE2_DomainNameCategoryW, nvtx_domain_name_category_w),
    NVTX_SLOT(NVTX_CBID_CORE2_DomainRegisterStringA, nvtx_domain_register_string_a),
    NVTX_SLOT(NVTX_CBID_CORE2_DomainRegisterStringW, nvtx_domain_register_string_w),
    NVTX_SLOT(NVTX_CBID_CORE2_DomainCreateA, nvtx_domain_create_a),
    NVTX_SLOT(NVTX_CBID_CORE2_DomainCreateW, nvtx_domain_create_w),
    NVTX_SLOT(NVTX_CBID_CORE2_DomainDestroy, nvtx_domain_destroy),
    NVTX_SLOT(NVTX_CBID_CORE2_Initialize, nvtx_initialize),
};

/* Points every slot of one module's table at our implementation; returns 0 if the table is missing. */
static int nvtx_fill_module(const NvtxExportTableCallbacks *callbacks, NvtxCallbackModule module,
                            const struct nvtx_slot *slots, size_t slot_count)
{
	NvtxFunctionTable table = NULL;
	unsigned int size = 0;
	if (!callbacks->GetModuleFunctionTable(module, &table, &size) || !table)
		return 0;
	for (size_t i = 0; i < slot_count; i++) {
		if (slots[i].id < size && table[slots[i].id])
			*table[slots[i].id] = slots[i].fn;
	}
	return 1;
}

int nvtx_inject(void *get_export_table)
{
	NvtxGetExportTableFunc_t get = (NvtxGetExportTableFunc_t)get_export_table;
	if (!get)
		return 0;
	const NvtxExportTableCallbacks *callbacks = get(NVTX_ETID_CALLBACKS);
	if (!callbacks || callbacks->struct_size < sizeof *callbacks)
		return 0;
	const NvtxExportTableVersionInfo *version = get(NVTX_ETID_VERSIONINFO);
	if (version && version->struct_size >= sizeof *version && version->SetInjectionNvtxVersion)
		version->SetInjectionNvtxVersion(NVTX_VERSION);
	int core = nvtx_fill_module(callbacks, NVTX_CB_MODULE_CORE, nvtx_core_slots,
	                            sizeof nvtx_core_slots / sizeof nvtx_core_slots[0]);
	nvtx_fill_module(callbacks, NVTX_CB_MODULE_CORE2, nvtx_core2_slots,
	                 sizeof nvtx_core2_slots / sizeof nvtx_core2_slots[0]);
	return core;
}

/* ---- The payload extension (nvtxPayloadSchemaRegister and friends) ---- */

static uint64_t nvtx_payload_schema_register(nvtxDomainHandle_t domain, const nvtxPayloadSchemaAttr_t *attr)
{
	return nvtxpayload_schema_register(domain, attr);
}

static uint64_t nvtx_payload_enum_register(nvtxDomainHandle_t domain, const nvtxPayloadEnumAttr_t *attr)
{
	return nvtxpayload_enum_register(domain, attr);
}

/* Every domain is recorded: NCCL skips building its payloads when this says 0. */
static uint8_t nvtx_payload_domain_enabled(nvtxDomainHandle_t domain)
{
	(void)domain;
	return 1;
}

/*
 * The NVTX extension entry point, found by name in the library NVTX_INJECTION64_PATH names, once
 * per extension module the program uses. Only the payload module is taken (schemas, enums); its
 * own push/pop/mark calls and the other modules stay NVTX no-ops. Returns 0 to refuse a module.
 */
COLLECTOR_EXPORT int InitializeInjectionNvtxExtension(nvtxExtModuleInfo_t *info)
{
	if (!info || !atomic_load(&collector_running) || getenv("CUSCOPE_NO_NVTX"))
		return 0;
	if (info->structSize < sizeof *info || info->moduleId != NVTX_EXT_PAYLOAD_MODULEID ||
	    info->segmentsCount < 1 || !info->segments || !info->segments[0].functionSlots)
		return 0;
	static const struct nvtx_slot slots[] = {
	    NVTX_SLOT(NVTX3EXT_CBID_nvtxPayloadSchemaRegister, nvtx_payload_schema_register),
	    NVTX_SLOT(NVTX3EXT_CBID_nvtxPayloadEnumRegister, nvtx_payload_enum_register),
	    NVTX_SLOT(NVTX3EXT_CBID_nvtxDomainIsEnabled, nvtx_payload_domain_enabled),
	};
	nvtxExtModuleSegment_t *segment = &info->segments[0];
	for (size_t i = 0; i < sizeof slots / sizeof slots[0]; i++)
		if (slots[i].id < segment->slotCount)
			segment->functionSlots[slots[i].id] = (intptr_t)slots[i].fn;
	return 1;
}

uint64_t nvtx_payload_lost(uint32_t cause)
{
	return cause == WIRE_LOSS_PAYLOAD_UNDECODED ? nvtxpayload_undecoded() : 0;
}
