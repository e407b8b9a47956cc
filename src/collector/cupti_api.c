/*
 * Which CUDA API calls get a record, and how. Launch records link each kernel to the thread that
 * launched it (the gap explanation needs them); copies, memsets, synchronisation, graph launches
 * and allocation show what a thread waited on. By default ("adaptive") they are recorded by CUPTI
 * callback, a 32-byte record written to the calling thread's ring like an NVTX range: the runtime
 * calls from the start, and the driver's launch calls once a kernel shows up that no recorded
 * runtime call launched (cuBLAS, NCCL, Triton and other JITs launch through the driver). Until then
 * CUPTI makes no driver callback inside each runtime launch, which was the largest cost left on a
 * launch loop (README.md "Overhead (GPU side)"); the kernels launched before the switch, within one
 * flush period, are not linked to their thread. Host waits (the synchronize calls) are recorded from
 * the same callbacks as sync events, not with CUPTI's SYNCHRONIZATION activity kind: enabled, that
 * kind cost a launch-bound PyTorch step ~15 points on the GPU host although the step makes no
 * synchronize call (README.md "Overhead (GPU side)"). CUSCOPE_CUDA_API=activity records the same calls as
 * CUPTI activity records (the former default), =callback records both domains by callback from the
 * start; the other modes are measurements.
 */
#include "collector.h"
#include "cupti_impl.h"
#include "emit.h"
#include "cuscope/wire.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CUPTI_NAME_CACHE 4096

static const struct cupti_fns *api_fn;
enum { API_ACTIVITY, API_CALLBACK, API_CALLBACK_DRIVER_ONLY, API_CALLBACK_RUNTIME_ONLY, API_ADAPTIVE };
static int api_by_callback; /* one of the above */
static CUpti_SubscriberHandle api_subscriber;
/* Adaptive: the driver's launch callbacks are on (sender thread). */
static int api_driver_on;
/*
 * Adaptive: the correlation id of each recorded runtime call, by its low bits (written on the calling
 * thread, read on the sender): a kernel whose id is not there was launched through the driver. An id
 * overwritten before its kernel's record arrived (API_MARKS later calls) only turns the driver
 * callbacks on early.
 */
#define API_MARKS 65536u
static _Atomic uint32_t api_marks[API_MARKS];
/* Inside a recorded runtime call on this thread: the driver calls it makes are not recorded again. */
static __thread int api_in_runtime_call __attribute__((tls_model("initial-exec")));
/* Host waits become sync events from the API records (cupti_api_sync_by_callback). */
static int api_sync_by_callback = -1; /* -1: not decided yet */
/* By domain and cbid: 0 not looked up, else 1 + the sync type (WIRE_SYNC_TYPE_MAX: not a wait);
 * sender thread only. */
static uint8_t runtime_sync_types[CUPTI_NAME_CACHE];
static uint8_t driver_sync_types[CUPTI_NAME_CACHE];
/* API function name ids by domain and cbid (sender thread only). */
static uint32_t runtime_names[CUPTI_NAME_CACHE];
static uint32_t driver_names[CUPTI_NAME_CACHE];
static uint32_t names_generation;

/* API calls worth a record: launches, copies, memsets, synchronisation, graph launches, allocation. */
static int cupti_api_wanted(const char *name)
{
	static const char *const prefixes[] = {
	    "cudaLaunch",
	    "cudaMemcpy",
	    "cudaMemset",
	    "cudaDeviceSynchronize",
	    "cudaStreamSynchronize",
	    "cudaEventSynchronize",
	    "cudaStreamWaitEvent",
	    "cudaGraphLaunch",
	    "cudaMalloc",
	    "cudaFree",
	    "cudaHostAlloc",
	};
	for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
		if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0)
			return 1;
	return 0;
}

/* The calls recorded as sync events, as CUPTI's SYNCHRONIZATION kind types them (a stream wait
 * on an event makes the GPU wait, not the host), by the prefix of their API's name (CUPTI's names carry a
 * version suffix, e.g. cudaStreamSynchronize_v3020, and per-thread-stream variants end in _ptsz). */
static const struct {
	const char *prefix;
	uint16_t type; /* enum wire_sync_type */
} sync_calls[] = {
    {"cudaStreamSynchronize", WIRE_SYNC_STREAM}, {"cudaDeviceSynchronize", WIRE_SYNC_CONTEXT},
    {"cudaEventSynchronize", WIRE_SYNC_EVENT},   {"cudaStreamWaitEvent", WIRE_SYNC_STREAM_WAIT_EVENT},
    {"cuStreamSynchronize", WIRE_SYNC_STREAM},   {"cuCtxSynchronize", WIRE_SYNC_CONTEXT},
    {"cuEventSynchronize", WIRE_SYNC_EVENT},     {"cuStreamWaitEvent", WIRE_SYNC_STREAM_WAIT_EVENT},
};

/* The sync type of an API function's name, or WIRE_SYNC_TYPE_MAX when it is not a host wait. */
static uint16_t sync_type_of(const char *name)
{
	for (size_t i = 0; i < sizeof sync_calls / sizeof sync_calls[0]; i++)
		if (strncmp(name, sync_calls[i].prefix, strlen(sync_calls[i].prefix)) == 0)
			return sync_calls[i].type;
	return WIRE_SYNC_TYPE_MAX;
}

/* Driver launches worth a record: Triton and other JITs launch through the driver; a runtime launch
 * does not add a driver record of its own. */
static int cupti_api_driver_launch_wanted(const char *name)
{
	return strncmp(name, "cuLaunch", 8) == 0 || strncmp(name, "cuGraphLaunch", 13) == 0;
}

/* Driver waits recorded by callback (the sync events come from them): a program calling the driver
 * directly waits there. Inside a recorded runtime call the driver's own is skipped, so they cost
 * one skipped callback per runtime wait; the driver's launches have no callback until needed. */
static int cupti_api_driver_sync_wanted(const char *name)
{
	return strncmp(name, "cu", 2) == 0 && sync_type_of(name) != WIRE_SYNC_TYPE_MAX;
}

/* Driver calls recorded by callback: launches and waits. */
static int cupti_api_driver_wanted(const char *name)
{
	return cupti_api_driver_launch_wanted(name) || cupti_api_driver_sync_wanted(name);
}

/* The driver calls a runtime call of the wanted set makes, for recording the driver domain only
 * (CUSCOPE_CUDA_API=driver): CUPTI calls back the driver calls the runtime makes inside its own. */
static int cupti_api_driver_all_wanted(const char *name)
{
	static const char *const prefixes[] = {
	    "cuLaunch",         "cuGraphLaunch",       "cuMemcpy",           "cuMemset",
	    "cuCtxSynchronize", "cuStreamSynchronize", "cuEventSynchronize", "cuStreamWaitEvent",
	    "cuMemAlloc",       "cuMemFree",           "cuMemHostAlloc",
	};
	for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
		if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0)
			return 1;
	return 0;
}

/* Calls enable(domain, cbid) for every cbid of domain whose name passes wanted. */
static void cupti_api_each(const struct cupti_fns *fn, CUpti_CallbackDomain domain, uint32_t cbid_end,
                           int (*wanted)(const char *),
                           void (*enable)(const struct cupti_fns *, CUpti_SubscriberHandle,
                                          CUpti_CallbackDomain, uint32_t),
                           CUpti_SubscriberHandle subscriber)
{
	for (uint32_t cbid = 1; cbid < cbid_end; cbid++) {
		const char *name = NULL;
		if (fn->callback_name(domain, cbid, &name) == CUPTI_SUCCESS && name && wanted(name))
			enable(fn, subscriber, domain, cbid);
	}
}

static void enable_as_activity(const struct cupti_fns *fn, CUpti_SubscriberHandle subscriber,
                               CUpti_CallbackDomain domain, uint32_t cbid)
{
	(void)subscriber;
	if (domain == CUPTI_CB_DOMAIN_RUNTIME_API)
		fn->enable_runtime_api(cbid, 1);
	else
		fn->enable_driver_api(cbid, 1);
}

static void enable_as_callback(const struct cupti_fns *fn, CUpti_SubscriberHandle subscriber,
                               CUpti_CallbackDomain domain, uint32_t cbid)
{
	fn->enable_callback(1, subscriber, domain, cbid);
}

static int is_launch(const char *name)
{
	return strncmp(name, "cudaLaunch", 10) == 0;
}

void cupti_api_enable_callbacks(const struct cupti_fns *fn, CUpti_SubscriberHandle subscriber)
{
	if (api_by_callback == API_CALLBACK_DRIVER_ONLY) {
		cupti_api_each(fn, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE,
		               cupti_api_driver_all_wanted, enable_as_callback, subscriber);
		return;
	}
	if (!api_by_callback)
		return;
	cupti_api_each(fn, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE, cupti_api_wanted,
	               enable_as_callback, subscriber);
	/* Without the driver's launch callbacks, CUPTI has no callback to make inside each runtime
	 * launch (the adaptive mode until a kernel needs them; callback-runtime, the benchmark's
	 * question, for good: kernels launched through the driver alone are then not linked). Its
	 * waits are recorded from the start all the same: no activity kind records them any more. */
	if ((api_by_callback == API_ADAPTIVE && !api_driver_on) ||
	    api_by_callback == API_CALLBACK_RUNTIME_ONLY) {
		cupti_api_each(fn, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE,
		               cupti_api_driver_sync_wanted, enable_as_callback, subscriber);
		return;
	}
	cupti_api_each(fn, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE, cupti_api_driver_wanted,
	               enable_as_callback, subscriber);
}

/* The API mode a callback records in (CUSCOPE_CUDA_API), else API_ACTIVITY. */
static int cupti_api_callback_mode(const struct cupti_fns *fn, const char *mode)
{
	if (!fn->callback_name || (mode && strcmp(mode, "none") == 0))
		return API_ACTIVITY;
	if (!mode || strcmp(mode, "adaptive") == 0)
		return API_ADAPTIVE;
	if (strcmp(mode, "driver") == 0)
		return API_CALLBACK_DRIVER_ONLY;
	if (strcmp(mode, "callback") == 0)
		return API_CALLBACK;
	if (strcmp(mode, "callback-runtime") == 0)
		return API_CALLBACK_RUNTIME_ONLY;
	return API_ACTIVITY;
}

int cupti_api_sync_by_callback(const struct cupti_fns *fn)
{
	if (api_sync_by_callback < 0) {
		/* CUSCOPE_GPU_SYNC=activity: CUPTI's SYNCHRONIZATION records instead (a benchmark knob). */
		const char *sync = getenv("CUSCOPE_GPU_SYNC");
		api_sync_by_callback =
		    !(sync && strcmp(sync, "activity") == 0) &&
		    cupti_api_callback_mode(fn, getenv("CUSCOPE_CUDA_API")) != API_ACTIVITY;
	}
	return api_sync_by_callback;
}

void cupti_api_enable(const struct cupti_fns *fn, CUpti_SubscriberHandle subscriber)
{
	api_fn = fn;
	api_subscriber = subscriber;
	api_by_callback = API_ACTIVITY;
	/* CUSCOPE_CUDA_API: a benchmark knob (README.md "Overhead (GPU side)"). */
	const char *mode = getenv("CUSCOPE_CUDA_API");
	if (mode && strcmp(mode, "none") == 0)
		return;
	if (!fn->callback_name) {
		fn->activity_enable(CUPTI_ACTIVITY_KIND_RUNTIME);
		return;
	}
	int by_callback = cupti_api_callback_mode(fn, mode);
	if (by_callback != API_ACTIVITY) {
		api_by_callback = by_callback;
		cupti_api_enable_callbacks(fn, subscriber);
		return;
	}
	if (!fn->enable_runtime_api || !fn->enable_driver_api) {
		fn->activity_enable(CUPTI_ACTIVITY_KIND_RUNTIME);
		return;
	}
	if (mode && strcmp(mode, "runtime-launch") == 0) {
		cupti_api_each(fn, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE, is_launch,
		               enable_as_activity, subscriber);
		return;
	}
	if (!(mode && strcmp(mode, "driver-launch") == 0))
		cupti_api_each(fn, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE,
		               cupti_api_wanted, enable_as_activity, subscriber);
	/* Launches only: with API activity records, CUPTI's SYNCHRONIZATION kind records the waits. */
	if (!(mode && strcmp(mode, "runtime") == 0))
		cupti_api_each(fn, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE,
		               cupti_api_driver_launch_wanted, enable_as_activity, subscriber);
}

/* The entry's stamp travels in CUPTI's per-call slot, with the tick flag in its top bit and a mark
 * that the entry was seen below it (ticks and ns both stay far below 2^62). */
#define CUPTI_API_TICKS_BIT   (1ull << 63)
#define CUPTI_API_ENTERED_BIT (1ull << 62)

void cupti_api_callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void *data)
{
	const CUpti_CallbackData *call = data;
	if (!api_by_callback || !call->correlationData)
		return;
	if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
		api_in_runtime_call = call->callbackSite == CUPTI_API_ENTER;
		/* At the entry, before the kernel exists; at the exit too (a call without an entry). */
		if (api_by_callback == API_ADAPTIVE)
			atomic_store_explicit(&api_marks[call->correlationId % API_MARKS],
			                      call->correlationId, memory_order_relaxed);
	} else if (api_in_runtime_call) {
		return;
	}
	if (call->callbackSite == CUPTI_API_ENTER) {
		uint16_t flags = 0;
		uint64_t start = emit_stamp(&flags);
		*call->correlationData =
		    start | CUPTI_API_ENTERED_BIT | ((flags & COLLECTOR_REC_TICKS) ? CUPTI_API_TICKS_BIT : 0);
		return;
	}
	/* A call under way when its callback was enabled has an exit but no entry: the program's first
	 * CUDA call, inside which the driver injects us, or one during a re-attach. Its start is not
	 * known (the slot holds whatever CUPTI put there), so it is not recorded. */
	uint64_t start = *call->correlationData;
	if (!(start & CUPTI_API_ENTERED_BIT))
		return;
	uint16_t flags = (start & CUPTI_API_TICKS_BIT) ? COLLECTOR_REC_TICKS : 0;
	collector_emit_cuda_api(start & ~(CUPTI_API_TICKS_BIT | CUPTI_API_ENTERED_BIT), flags,
	                        call->correlationId, (uint16_t)cbid, (uint32_t)domain);
}

void cupti_api_kernel_seen(uint32_t correlation_id)
{
	if (api_by_callback != API_ADAPTIVE || api_driver_on || !correlation_id ||
	    atomic_load_explicit(&api_marks[correlation_id % API_MARKS], memory_order_relaxed) ==
	        correlation_id)
		return;
	api_driver_on = 1;
	cupti_api_each(api_fn, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE,
	               cupti_api_driver_wanted, enable_as_callback, api_subscriber);
}

uint32_t cupti_api_name(const struct cupti_fns *fn, CUpti_CallbackDomain domain, uint32_t cbid)
{
	uint32_t *cache = domain == CUPTI_CB_DOMAIN_RUNTIME_API ? runtime_names : driver_names;
	uint32_t generation = sender_string_generation();
	if (names_generation != generation) {
		memset(runtime_names, 0, sizeof runtime_names);
		memset(driver_names, 0, sizeof driver_names);
		names_generation = generation;
	}
	if (cbid < CUPTI_NAME_CACHE && cache[cbid])
		return cache[cbid];
	const char *name = NULL;
	char fallback[32];
	if (!fn || !fn->callback_name || fn->callback_name(domain, cbid, &name) != CUPTI_SUCCESS || !name) {
		snprintf(fallback, sizeof fallback, "cbid %u", cbid);
		name = fallback;
	}
	uint32_t id = sender_intern(name, strlen(name));
	if (cbid < CUPTI_NAME_CACHE)
		cache[cbid] = id;
	return id;
}

/* The sync type of a recorded call (sender thread), WIRE_SYNC_TYPE_MAX when it is not a wait. */
static uint16_t cupti_api_sync_type(CUpti_CallbackDomain domain, uint32_t cbid)
{
	uint8_t *cache = domain == CUPTI_CB_DOMAIN_RUNTIME_API ? runtime_sync_types : driver_sync_types;
	if (cbid < CUPTI_NAME_CACHE && cache[cbid])
		return (uint16_t)(cache[cbid] - 1);
	const char *name = NULL;
	uint16_t type = WIRE_SYNC_TYPE_MAX;
	if (api_fn && api_fn->callback_name && api_fn->callback_name(domain, cbid, &name) == CUPTI_SUCCESS &&
	    name)
		type = sync_type_of(name);
	if (cbid < CUPTI_NAME_CACHE)
		cache[cbid] = (uint8_t)(type + 1);
	return type;
}

void cupti_api_ring_record(const struct collector_rec_cuda_api *rec, uint32_t tid)
{
	int runtime = rec->domain == CUPTI_CB_DOMAIN_RUNTIME_API;
	struct wire_gpu_event ev;
	memset(&ev, 0, sizeof ev);
	ev.kind = runtime ? WIRE_GPU_API_RUNTIME : WIRE_GPU_API_DRIVER;
	ev.start_ns = rec->start;
	ev.end_ns = rec->end;
	ev.correlation_id = rec->correlation_id;
	ev.tid = tid;
	ev.subkind = rec->cbid;
	ev.name_id = cupti_api_name(api_fn, (CUpti_CallbackDomain)rec->domain, rec->cbid);
	sender_gpu_event(&ev);
	if (api_sync_by_callback != 1)
		return;
	/* A wait: also the sync event CUPTI's SYNCHRONIZATION kind would have made, after its
	 * call so that it lands on the calling thread's lane. The stream or event it waited for is
	 * not known here (the call's parameters are gone by now). */
	uint16_t type = cupti_api_sync_type((CUpti_CallbackDomain)rec->domain, rec->cbid);
	if (type == WIRE_SYNC_TYPE_MAX)
		return;
	ev.kind = WIRE_GPU_SYNC;
	ev.subkind = type;
	ev.name_id = 0;
	ev.context = 0;
	ev.stream = UINT32_MAX; /* CUPTI's "not a stream" */
	sender_gpu_event(&ev);
}
