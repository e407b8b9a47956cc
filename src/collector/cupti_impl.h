/*
 * What the CUPTI code shares between its files, private to them: the entry points resolved from
 * libcupti (cupti.c) and the recording of CUDA API calls (cupti_api.c).
 */
#ifndef CUSCOPE_COLLECTOR_CUPTI_IMPL_H
#define CUSCOPE_COLLECTOR_CUPTI_IMPL_H

#include <stdint.h>

#include <cupti.h>

/* The CUPTI entry points we use, resolved from whichever libcupti is loaded. */
struct cupti_fns {
	CUptiResult (*get_version)(uint32_t *);
	CUptiResult (*subscribe_v2)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *,
	                            CUpti_SubscriberParams *);
	CUptiResult (*subscribe)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *);
	CUptiResult (*enable_callback)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain,
	                               CUpti_CallbackId);
	CUptiResult (*activity_enable)(CUpti_ActivityKind);
	CUptiResult (*enable_runtime_api)(CUpti_CallbackId, uint8_t);
	CUptiResult (*enable_driver_api)(CUpti_CallbackId, uint8_t);
	CUptiResult (*register_callbacks)(CUpti_BuffersCallbackRequestFunc,
	                                  CUpti_BuffersCallbackCompleteFunc);
	CUptiResult (*register_timestamp)(CUpti_TimestampCallbackFunc);
	CUptiResult (*get_timestamp)(uint64_t *);
	CUptiResult (*flush_all)(uint32_t);
	CUptiResult (*next_record)(uint8_t *, size_t, CUpti_Activity **);
	CUptiResult (*dropped_records)(CUcontext, uint32_t, size_t *);
	CUptiResult (*callback_name)(CUpti_CallbackDomain, uint32_t, const char **);
	CUptiResult (*result_string)(CUptiResult, const char **);
	CUptiResult (*set_thread_id_type)(CUpti_ActivityThreadIdType);
	CUptiResult (*enable_and_dump)(CUpti_ActivityKind);
	CUptiResult (*enable_domain)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain);
	CUptiResult (*finalize)(void);
	CUptiResult (*set_attribute)(CUpti_ActivityAttribute, size_t *, void *);
};

/*
 * Turns on the records of the CUDA API calls worth one (launches, copies, memsets,
 * synchronisation, graph launches, allocation): by default as CUPTI callbacks written to the
 * calling thread's ring (cupti_api_callback; the driver's launches once needed), else as CUPTI
 * activity records of those calls.
 */
void cupti_api_enable(const struct cupti_fns *fn, CUpti_SubscriberHandle subscriber);
/* Whether host waits become sync events from the API calls recorded by callback (the default), so
 * that CUPTI's SYNCHRONIZATION activity kind stays off; decided once, before cupti_api_enable. */
int cupti_api_sync_by_callback(const struct cupti_fns *fn);
/* Callback recording only: turns the callbacks on again (after a detach turned the domains off). */
void cupti_api_enable_callbacks(const struct cupti_fns *fn, CUpti_SubscriberHandle subscriber);
/* A runtime or driver API callback of subscriber, on the program's thread, while tracing. */
void cupti_api_callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void *data);
/*
 * Sender thread, for each kernel record (its launch's correlation id): in the adaptive mode, a kernel
 * no recorded runtime call launched turns the driver's launch callbacks on.
 */
void cupti_api_kernel_seen(uint32_t correlation_id);
/* Sender thread: the string id of an API function's name, cached by domain and cbid. */
uint32_t cupti_api_name(const struct cupti_fns *fn, CUpti_CallbackDomain domain, uint32_t cbid);

#endif
