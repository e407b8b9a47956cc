/*
 * The overhead floor for tests/gpu/bench.sh: the least a CUPTI-based tracer can do. A CUDA
 * injection library (CUDA_INJECTION64_PATH) that enables only CONCURRENT_KERNEL activity records,
 * with cuscope's default buffer size (4 MiB) and flush period (a thread calling
 * cuptiActivityFlushAll every 20 ms), walks every completed buffer and counts its records. No API
 * records, no NVTX, no sampling, no socket. Like cuscope, it hands CUPTI buffers that are already
 * zero (CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER), zeroing a used one on CUPTI's completion
 * thread before reuse, so no program thread zeroes 4 MiB per buffer. At exit it prints "floor_injector: N
 * kernel records, M dropped" to stderr so a run can be checked for having traced at all. Environment:
 * FLOOR_FLUSH_MS (default 20), FLOOR_KINDS (the activity kinds enabled at start, comma-separated
 * from kernel,memcpy,memset,sync,overhead,device,context,stream; default kernel). The pseudo-kind
 * "cb" subscribes to CUPTI's callbacks (once) and enables an empty callback on the runtime's kernel
 * launches, as a tracer recording each launch on the calling thread does (cuscope's default).
 *
 * For tests/gpu/kind_cost.py, which measures what each activity kind costs the program inside one
 * process: floor_injector_set_kinds(list) enables the kinds listed and disables the others (a
 * diagnostic only: cuscope itself never disables a kind mid-run).
 */
#include <cupti.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define FLOOR_BUFFER_BYTES (4u << 20)

static _Atomic unsigned long long kernel_records;
static _Atomic unsigned long long dropped_records;
static _Atomic int flush_stop;
static pthread_t flush_thread;
static int zeroed_by_us;

/* Used buffers, zeroed, for the next request (a lock: requests come from any thread). */
struct floor_spare {
	struct floor_spare *next;
};
static struct floor_spare *spares;
static pthread_mutex_t spares_lock = PTHREAD_MUTEX_INITIALIZER;

static void CUPTIAPI floor_buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
	*max_records = 0;
	*size = FLOOR_BUFFER_BYTES;
	pthread_mutex_lock(&spares_lock);
	struct floor_spare *b = spares;
	if (b)
		spares = b->next;
	pthread_mutex_unlock(&spares_lock);
	if (b) {
		b->next = NULL; /* zero again, as the rest */
		*buffer = (uint8_t *)b;
		return;
	}
	void *mem =
	    mmap(NULL, FLOOR_BUFFER_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	*buffer = mem == MAP_FAILED ? NULL : mem;
	if (!*buffer)
		*size = 0;
}

static void CUPTIAPI floor_buffer_completed(CUcontext context, uint32_t stream, uint8_t *buffer, size_t size,
                                            size_t valid)
{
	(void)size;
	(void)stream;
	CUpti_Activity *record = NULL;
	unsigned long long n = 0;
	while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS)
		if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
			n++;
	atomic_fetch_add(&kernel_records, n);
	size_t dropped = 0;
	if (cuptiActivityGetNumDroppedRecords(context, stream, &dropped) == CUPTI_SUCCESS)
		atomic_fetch_add(&dropped_records, dropped);
	if (zeroed_by_us) {
		size_t dirty = (valid + (64u << 10) + 4095) & ~(size_t)4095;
		memset(buffer, 0, dirty < FLOOR_BUFFER_BYTES ? dirty : FLOOR_BUFFER_BYTES);
	}
	struct floor_spare *b = (struct floor_spare *)buffer;
	pthread_mutex_lock(&spares_lock);
	b->next = spares;
	spares = b;
	pthread_mutex_unlock(&spares_lock);
}

/* The kinds FLOOR_KINDS and floor_injector_set_kinds name. */
static const struct {
	const char *name;
	CUpti_ActivityKind kind;
} floor_kinds[] = {
    {"kernel", CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL},
    {"memcpy", CUPTI_ACTIVITY_KIND_MEMCPY},
    {"memset", CUPTI_ACTIVITY_KIND_MEMSET},
    {"sync", CUPTI_ACTIVITY_KIND_SYNCHRONIZATION},
    {"overhead", CUPTI_ACTIVITY_KIND_OVERHEAD},
    {"device", CUPTI_ACTIVITY_KIND_DEVICE},
    {"context", CUPTI_ACTIVITY_KIND_CONTEXT},
    {"stream", CUPTI_ACTIVITY_KIND_STREAM},
};
#define FLOOR_KIND_COUNT (sizeof floor_kinds / sizeof floor_kinds[0])
static int floor_kind_on[FLOOR_KIND_COUNT];

static int floor_listed(const char *list, const char *name)
{
	size_t len = strlen(name);
	for (const char *p = list; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
		if (strncmp(p, name, len) == 0 && (p[len] == ',' || p[len] == 0))
			return 1;
	return 0;
}

/* The "cb" pseudo-kind: a callback on each runtime launch that only counts it. */
static CUpti_SubscriberHandle floor_subscriber;
static int floor_subscribed, floor_cb_on;
static _Atomic unsigned long long launch_callbacks;

static void CUPTIAPI floor_callback(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                    const void *data)
{
	(void)userdata;
	(void)domain;
	(void)cbid;
	if (((const CUpti_CallbackData *)data)->callbackSite == CUPTI_API_ENTER)
		atomic_fetch_add_explicit(&launch_callbacks, 1, memory_order_relaxed);
}

static int floor_set_callbacks(int on)
{
	if (on == floor_cb_on)
		return 0;
	if (!floor_subscribed) {
		if (cuptiSubscribe(&floor_subscriber, floor_callback, NULL) != CUPTI_SUCCESS)
			return 1;
		floor_subscribed = 1;
	}
	static const CUpti_CallbackId launches[] = {CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
	                                            CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
	                                            CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
	                                            CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060};
	int refused = 0;
	for (size_t i = 0; i < sizeof launches / sizeof launches[0]; i++)
		refused += cuptiEnableCallback((uint32_t)on, floor_subscriber, CUPTI_CB_DOMAIN_RUNTIME_API,
		                               launches[i]) != CUPTI_SUCCESS;
	floor_cb_on = on;
	return refused;
}

/* Enables the kinds listed, disables the rest; returns how many calls CUPTI refused. */
__attribute__((visibility("default"))) int floor_injector_set_kinds(const char *list)
{
	int refused = 0;
	for (size_t i = 0; i < FLOOR_KIND_COUNT; i++) {
		int want = floor_listed(list, floor_kinds[i].name);
		if (want == floor_kind_on[i])
			continue;
		CUptiResult rc = want ? cuptiActivityEnable(floor_kinds[i].kind)
		                      : cuptiActivityDisable(floor_kinds[i].kind);
		if (rc == CUPTI_SUCCESS)
			floor_kind_on[i] = want;
		else
			refused++;
	}
	refused += floor_set_callbacks(floor_listed(list, "cb"));
	cuptiActivityFlushAll(0);
	return refused;
}

static void *floor_flush_main(void *arg)
{
	(void)arg;
	const char *ms = getenv("FLOOR_FLUSH_MS");
	long period_ms = ms && atol(ms) > 0 ? atol(ms) : 20;
	struct timespec period = {period_ms / 1000, (period_ms % 1000) * 1000000L};
	while (!atomic_load(&flush_stop)) {
		nanosleep(&period, NULL);
		cuptiActivityFlushAll(0);
	}
	return NULL;
}

static void floor_at_exit(void)
{
	atomic_store(&flush_stop, 1);
	cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	fprintf(stderr, "floor_injector: %llu kernel records, %llu dropped, %llu launch callbacks\n",
	        (unsigned long long)atomic_load(&kernel_records),
	        (unsigned long long)atomic_load(&dropped_records),
	        (unsigned long long)atomic_load(&launch_callbacks));
}

/* Called by the CUDA driver at its first API call (CUDA_INJECTION64_PATH). */
__attribute__((visibility("default"))) int InitializeInjection(void)
{
	uint8_t zeroed = 1;
	size_t zeroed_size = sizeof zeroed;
	zeroed_by_us = cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, &zeroed_size,
	                                         &zeroed) == CUPTI_SUCCESS;
	const char *kinds = getenv("FLOOR_KINDS");
	if (cuptiActivityRegisterCallbacks(floor_buffer_requested, floor_buffer_completed) != CUPTI_SUCCESS ||
	    floor_injector_set_kinds(kinds && *kinds ? kinds : "kernel") != 0) {
		fprintf(stderr, "floor_injector: CUPTI refused; not tracing\n");
		return 1;
	}
	pthread_create(&flush_thread, NULL, floor_flush_main, NULL);
	pthread_detach(flush_thread);
	atexit(floor_at_exit);
	return 1;
}
