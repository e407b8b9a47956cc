/*
 * A stand-in libcupti for CPU-only tests of the collector's CUPTI code (tests/runtime/t210-t214;
 * t228 launches NCCL-named kernels through fake_cuda_launch_kernel): the entry points cupti.c
 * resolves, with the semantics the collector relies on, and a fake CUDA runtime (fake_cuda_launch)
 * that plays what the real one does around each call: API enter and exit callbacks with a per-call
 * correlationData slot and a correlation id, an API activity record when that call's activity is
 * enabled, and the kernel's CONCURRENT_KERNEL record with the same correlation id, delivered
 * through the buffer callbacks. Full buffers are handed back on a thread of this library (as
 * CUPTI's own worker thread does), flushed ones on the flushing thread.
 *
 * The test program loads it (as a CUDA program loads libcudart) and the collector loads it again
 * through CUSCOPE_CUPTI_PATH; the program's first call (fake_cuda_init: cudaFree(0)) injects the
 * collector as the CUDA driver does. Built with the soname libcuda.so.1, so that a collector
 * attached later finds "CUDA" loaded and starts GPU tracing (cupti_start_late).
 */
#include <cupti.h>

#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define FAKE_EXPORT __attribute__((visibility("default")))

/* A call this fake plays: its real callback id and CUPTI's name for it. */
struct fake_call_name {
	CUpti_CallbackId cbid;
	const char *name;
};

/* The runtime calls this fake plays (cupti_runtime_cbid.h). */
static const struct fake_call_name fake_runtime_names[] = {
    {CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020, "cudaGetDevice_v3020"},
    {CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, "cudaMalloc_v3020"},
    {CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020, "cudaFree_v3020"},
    {CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, "cudaMemcpyAsync_v3020"},
    {CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020, "cudaStreamSynchronize_v3020"},
    {CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020, "cudaDeviceSynchronize_v3020"},
    {CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, "cudaLaunchKernel_v7000"},
};
/* The driver calls this fake plays (it launches only through the runtime; cuLaunchKernel names a
 * driver cbid that the collector may enable). */
static const struct fake_call_name fake_driver_names[] = {
    {CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, "cuLaunchKernel"},
    {CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize, "cuStreamSynchronize"},
    {CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize, "cuCtxSynchronize"},
};

#define FAKE_DEVICE  0
#define FAKE_CONTEXT 1
#define FAKE_STREAM  7

struct CUpti_Subscriber_st {
	CUpti_CallbackFunc callback;
	void *userdata;
};

static struct {
	pthread_mutex_t lock; /* the buffer state below and the completion queue */
	pthread_cond_t cond;
	struct CUpti_Subscriber_st subscriber;
	_Atomic int subscribed;
	/* Callbacks enabled, by domain and cbid. */
	_Atomic uint8_t runtime_cb[CUPTI_RUNTIME_TRACE_CBID_SIZE];
	_Atomic uint8_t driver_cb[CUPTI_DRIVER_TRACE_CBID_SIZE];
	_Atomic uint8_t resource_cb[CUPTI_CBID_RESOURCE_SIZE];
	/* Activity kinds enabled, and runtime API activity by cbid (the RUNTIME kind sets them all). */
	_Atomic uint8_t kind_on[CUPTI_ACTIVITY_KIND_COUNT];
	_Atomic uint8_t runtime_activity[CUPTI_RUNTIME_TRACE_CBID_SIZE];
	CUpti_BuffersCallbackRequestFunc request;
	CUpti_BuffersCallbackCompleteFunc complete;
	CUpti_TimestampCallbackFunc timestamp;
	int system_tids;
	int zeroed_by_client;
	/* The buffer being filled. */
	uint8_t *buf;
	size_t buf_size, buf_valid;
	/* Buffers filled, waiting for the worker thread (a short FIFO). */
	struct {
		uint8_t *buf;
		size_t size, valid;
	} queue[64];
	size_t queue_len;
	int delivering; /* buffers being handed back outside the lock */
	pthread_t worker;
	int worker_started;
	int context_sent;
	uint64_t dropped;        /* since the last cuptiActivityGetNumDroppedRecords */
	uint64_t dropped_all;    /* over the run (fake_cuda_stats) */
	uint64_t dirty_bytes;    /* bytes of a buffer that should have come zeroed but did not */
	uint64_t buffers;        /* buffers handed back */
	uint64_t worker_buffers; /* of which by the worker thread */
	uint64_t records;        /* records written */
	uint64_t gpu_clock_ns;   /* the fake stream's end of work */
} fc = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};

static _Atomic uint32_t fake_correlation;

/* CUPTI's timestamps: the client's callback once registered, else a clock of our own. */
static uint64_t fake_now(void)
{
	if (fc.timestamp)
		return fc.timestamp();
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint32_t fake_thread_id(void)
{
	if (fc.system_tids)
		return (uint32_t)syscall(SYS_gettid);
	return (uint32_t)(uintptr_t)pthread_self();
}

/* ---- entry points the collector resolves ---- */

FAKE_EXPORT CUptiResult cuptiGetVersion(uint32_t *version)
{
	*version = CUPTI_API_VERSION;
	return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiGetResultString(CUptiResult result, const char **str)
{
	*str = result == CUPTI_SUCCESS ? "CUPTI_SUCCESS" : "fake CUPTI error";
	return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *subscriber, CUpti_CallbackFunc callback,
                                       void *userdata)
{
	int expected = 0;
	if (!atomic_compare_exchange_strong(&fc.subscribed, &expected, 1))
		return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
	fc.subscriber.callback = callback;
	fc.subscriber.userdata = userdata;
	*subscriber = &fc.subscriber;
	return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiSubscribe_v2(CUpti_SubscriberHandle *subscriber, CUpti_CallbackFunc callback,
                                          void *userdata, CUpti_SubscriberParams *params)
{
	if (!params || params->structSize < CUpti_SubscriberParams_STRUCT_SIZE)
		return CUPTI_ERROR_INVALID_PARAMETER;
	return cuptiSubscribe(subscriber, callback, userdata);
}

/* The enable flag of (domain, cbid), or NULL where this fake has none. */
static _Atomic uint8_t *fake_cb_slot(CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
	if (domain == CUPTI_CB_DOMAIN_RUNTIME_API && cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE)
		return &fc.runtime_cb[cbid];
	if (domain == CUPTI_CB_DOMAIN_DRIVER_API && cbid < CUPTI_DRIVER_TRACE_CBID_SIZE)
		return &fc.driver_cb[cbid];
	if (domain == CUPTI_CB_DOMAIN_RESOURCE && cbid < CUPTI_CBID_RESOURCE_SIZE)
		return &fc.resource_cb[cbid];
	return NULL;
}

FAKE_EXPORT CUptiResult cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                            CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
	_Atomic uint8_t *slot = fake_cb_slot(domain, cbid);
	if (subscriber != &fc.subscriber || !slot)
		return CUPTI_ERROR_INVALID_PARAMETER;
	atomic_store(slot, enable ? 1 : 0);
	return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                          CUpti_CallbackDomain domain)
{
	if (subscriber != &fc.subscriber)
		return CUPTI_ERROR_INVALID_PARAMETER;
	size_t n = domain == CUPTI_CB_DOMAIN_RUNTIME_API  ? CUPTI_RUNTIME_TRACE_CBID_SIZE
	           : domain == CUPTI_CB_DOMAIN_DRIVER_API ? CUPTI_DRIVER_TRACE_CBID_SIZE
	           : domain == CUPTI_CB_DOMAIN_RESOURCE   ? CUPTI_CBID_RESOURCE_SIZE
	                                                  : 0;
	if (!n)
		return CUPTI_ERROR_INVALID_PARAMETER;
	for (size_t i = 0; i < n; i++)
		atomic_store(fake_cb_slot(domain, (CUpti_CallbackId)i), enable ? 1 : 0);
	return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiGetCallbackName(CUpti_CallbackDomain domain, uint32_t cbid, const char **name)
{
	if (!name)
		return CUPTI_ERROR_INVALID_PARAMETER;
	const struct fake_call_name *table = NULL;
	size_t n = 0;
	if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
		table = fake_runtime_names;
		n = sizeof fake_runtime_names / sizeof fake_runtime_names[0];
	} else if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
		table = fake_driver_names;
		n = sizeof fake_driver_names / sizeof fake_driver_names[0];
	}
	for (size_t i = 0; i < n; i++)
		if (table[i].cbid == cbid) {
			*name = table[i].name;
			return CUPTI_SUCCESS;
		}
	return CUPTI_ERROR_INVALID_PARAMETER;
}

FAKE_EXPORT CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind)
{
	if ((unsigned)kind >= CUPTI_ACTIVITY_KIND_COUNT)
		return CUPTI_ERROR_INVALID_KIND;
	atomic_store(&fc.kind_on[kind], 1);
	/* The RUNTIME kind means every runtime call, overriding earlier per-call settings. */
	if (kind == CUPTI_ACTIVITY_KIND_RUNTIME)
		for (size_t i = 0; i < CUPTI_RUNTIME_TRACE_CBID_SIZE; i++)
			atomic_store(&fc.runtime_activity[i], 1);
	return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiActivityEnableAndDump(CUpti_ActivityKind kind)
{
	return cuptiActivityEnable(kind);
}

FAKE_EXPORT CUptiResult cuptiActivityEnableRuntimeApi(CUpti_CallbackId cbid, uint8_t enable)
{
	if (cbid >= CUPTI_RUNTIME_TRACE_CBID_SIZE)
		return CUPTI_ERROR_INVALID_PARAMETER;
	atomic_store(&fc.runtime_activity[cbid], enable ? 1 : 0);
	return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiActivityEnableDriverApi(CUpti_CallbackId cbid, uint8_t enable)
{
	(void)enable;
	/* The driver calls this fake makes are waits, which CUPTI records as API activity only when
	 * asked; no test asks: nothing to record. */
	return cbid < CUPTI_DRIVER_TRACE_CBID_SIZE ? CUPTI_SUCCESS : CUPTI_ERROR_INVALID_PARAMETER;
}

FAKE_EXPORT CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc request,
                                                       CUpti_BuffersCallbackCompleteFunc complete)
{
	if (!request || !complete)
		return CUPTI_ERROR_INVALID_PARAMETER;
	fc.request = request;
	fc.complete = complete;
	return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc callback)
{
	fc.timestamp = callback;
	return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiGetTimestamp(uint64_t *timestamp)
{
	if (!timestamp)
		return CUPTI_ERROR_INVALID_PARAMETER;
	*timestamp = fake_now();
	return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiSetThreadIdType(CUpti_ActivityThreadIdType type)
{
	fc.system_tids = type == CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM;
	return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiActivitySetAttribute(CUpti_ActivityAttribute attr, size_t *size, void *value)
{
	if (attr != CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER || !size || *size != sizeof(uint8_t))
		return CUPTI_ERROR_NOT_SUPPORTED;
	fc.zeroed_by_client = *(const uint8_t *)value != 0;
	return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext context, uint32_t stream, size_t *dropped)
{
	(void)context;
	(void)stream;
	if (!dropped)
		return CUPTI_ERROR_INVALID_PARAMETER;
	pthread_mutex_lock(&fc.lock);
	*dropped = fc.dropped;
	fc.dropped = 0; /* reset by each call, as CUPTI's */
	pthread_mutex_unlock(&fc.lock);
	return CUPTI_SUCCESS;
}

/* Bytes a record of kind takes in a buffer (8-byte aligned), 0 for kinds this fake never writes. */
static size_t fake_record_size(CUpti_ActivityKind kind)
{
	size_t size = kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL ? sizeof(CUpti_ActivityKernel10)
	              : kind == CUPTI_ACTIVITY_KIND_RUNTIME         ? sizeof(CUpti_ActivityAPI)
	              : kind == CUPTI_ACTIVITY_KIND_MEMCPY          ? sizeof(CUpti_ActivityMemcpy6)
	              : kind == CUPTI_ACTIVITY_KIND_CONTEXT         ? sizeof(CUpti_ActivityContext3)
	              : kind == CUPTI_ACTIVITY_KIND_DEVICE          ? sizeof(CUpti_ActivityDevice5)
	              : kind == CUPTI_ACTIVITY_KIND_SYNCHRONIZATION ? sizeof(CUpti_ActivitySynchronization2)
	                                                            : 0;
	return (size + 7) & ~(size_t)7;
}

FAKE_EXPORT CUptiResult cuptiActivityGetNextRecord(uint8_t *buffer, size_t valid, CUpti_Activity **record)
{
	if (!buffer || !record)
		return CUPTI_ERROR_INVALID_PARAMETER;
	size_t pos = 0;
	if (*record) {
		size_t size = fake_record_size((*record)->kind);
		if (!size)
			return CUPTI_ERROR_INVALID_KIND;
		pos = (size_t)((uint8_t *)*record - buffer) + size;
	}
	if (pos + sizeof(CUpti_Activity) > valid)
		return CUPTI_ERROR_MAX_LIMIT_REACHED;
	CUpti_Activity *next = (CUpti_Activity *)(buffer + pos);
	size_t size = fake_record_size(next->kind);
	if (!size || pos + size > valid)
		return CUPTI_ERROR_INVALID_KIND;
	*record = next;
	return CUPTI_SUCCESS;
}

/* Hands every queued buffer back, outside the lock; called with it held, returns with it held. */
static void fake_deliver_queue_locked(int worker)
{
	while (fc.queue_len) {
		uint8_t *buf = fc.queue[0].buf;
		size_t size = fc.queue[0].size, valid = fc.queue[0].valid;
		memmove(&fc.queue[0], &fc.queue[1], (fc.queue_len - 1) * sizeof fc.queue[0]);
		fc.queue_len--;
		fc.delivering++;
		pthread_mutex_unlock(&fc.lock);
		fc.complete(NULL, 0, buf, size, valid);
		pthread_mutex_lock(&fc.lock);
		fc.delivering--;
		fc.buffers++;
		fc.worker_buffers += worker;
	}
	pthread_cond_broadcast(&fc.cond);
}

/* CUPTI's worker thread: hands full buffers back, on a thread the collector does not own. */
static void *fake_worker_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&fc.lock);
	for (;;) {
		while (!fc.queue_len)
			pthread_cond_wait(&fc.cond, &fc.lock);
		fake_deliver_queue_locked(1);
	}
	return NULL;
}

/* Queues the buffer being filled for the worker (lock held); waits while the queue is full. */
static void fake_queue_current_locked(void)
{
	if (!fc.buf)
		return;
	if (!fc.worker_started) {
		sigset_t all, old;
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		fc.worker_started = pthread_create(&fc.worker, NULL, fake_worker_main, NULL) == 0;
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		if (fc.worker_started)
			pthread_setname_np(fc.worker, "fake-cupti");
	}
	while (fc.queue_len == sizeof fc.queue / sizeof fc.queue[0])
		pthread_cond_wait(&fc.cond, &fc.lock);
	fc.queue[fc.queue_len].buf = fc.buf;
	fc.queue[fc.queue_len].size = fc.buf_size;
	fc.queue[fc.queue_len].valid = fc.buf_valid;
	fc.queue_len++;
	fc.buf = NULL;
	pthread_cond_broadcast(&fc.cond);
	if (!fc.worker_started)
		fake_deliver_queue_locked(0);
}

/* Room for one record of size bytes (lock held), a fresh buffer asked for when needed; NULL when the
 * client gave none (the record is dropped and counted). */
static void *fake_reserve_locked(size_t size)
{
	if (fc.buf && fc.buf_valid + size > fc.buf_size)
		fake_queue_current_locked();
	if (!fc.buf) {
		if (!fc.request)
			return NULL;
		uint8_t *buf = NULL;
		size_t buf_size = 0, max_records = 0;
		fc.request(&buf, &buf_size, &max_records);
		if (!buf || buf_size < size || ((uintptr_t)buf & 7)) {
			fc.dropped++;
			fc.dropped_all++;
			return NULL;
		}
		fc.buf = buf;
		fc.buf_size = buf_size;
		fc.buf_valid = 0;
	}
	uint8_t *p = fc.buf + fc.buf_valid;
	/* A client that said its buffers come zeroed is taken at its word, as CUPTI does: check it. */
	if (fc.zeroed_by_client)
		for (size_t i = 0; i < size; i++)
			fc.dirty_bytes += p[i] != 0;
	memset(p, 0, size);
	fc.buf_valid += size;
	fc.records++;
	return p;
}

/* Writes one activity record of kind (its first size bytes from rec) into the current buffer. */
static void fake_write(CUpti_ActivityKind kind, const void *rec)
{
	size_t size = fake_record_size(kind);
	pthread_mutex_lock(&fc.lock);
	void *p = fake_reserve_locked(size);
	if (p)
		memcpy(p, rec, size);
	pthread_mutex_unlock(&fc.lock);
}

FAKE_EXPORT CUptiResult cuptiActivityFlushAll(uint32_t flag)
{
	(void)flag; /* every record of this fake is complete when written */
	pthread_mutex_lock(&fc.lock);
	if (fc.buf && fc.buf_valid) {
		while (fc.queue_len == sizeof fc.queue / sizeof fc.queue[0])
			pthread_cond_wait(&fc.cond, &fc.lock);
		fc.queue[fc.queue_len].buf = fc.buf;
		fc.queue[fc.queue_len].size = fc.buf_size;
		fc.queue[fc.queue_len].valid = fc.buf_valid;
		fc.queue_len++;
		fc.buf = NULL;
	}
	/* On return every record written so far has been handed back, some perhaps by the worker. */
	fake_deliver_queue_locked(0);
	while (fc.delivering)
		pthread_cond_wait(&fc.cond, &fc.lock);
	pthread_mutex_unlock(&fc.lock);
	return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiFinalize(void)
{
	cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	for (size_t i = 0; i < CUPTI_RUNTIME_TRACE_CBID_SIZE; i++) {
		atomic_store(&fc.runtime_cb[i], 0);
		atomic_store(&fc.runtime_activity[i], 0);
	}
	for (size_t i = 0; i < CUPTI_DRIVER_TRACE_CBID_SIZE; i++)
		atomic_store(&fc.driver_cb[i], 0);
	for (size_t i = 0; i < CUPTI_CBID_RESOURCE_SIZE; i++)
		atomic_store(&fc.resource_cb[i], 0);
	for (size_t i = 0; i < CUPTI_ACTIVITY_KIND_COUNT; i++)
		atomic_store(&fc.kind_on[i], 0);
	atomic_store(&fc.subscribed, 0);
	return CUPTI_SUCCESS;
}

/* ---- devices and PM sampling (t291): FAKE_CUDA_DEVICES devices (default none), PM sampling
 * enabled with the result FAKE_CUPTI_PM_ENABLE (default CUPTI_ERROR_INSUFFICIENT_PRIVILEGES), and
 * whatever follows refused as unsupported: the collector's fallback path without a GPU. ---- */

static int fake_env_int(const char *name, int fallback)
{
	const char *v = getenv(name);
	return v && *v ? atoi(v) : fallback;
}

FAKE_EXPORT CUresult cuDeviceGetCount(int *count)
{
	*count = fake_env_int("FAKE_CUDA_DEVICES", 0);
	return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
	*device = ordinal;
	return ordinal < fake_env_int("FAKE_CUDA_DEVICES", 0) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

FAKE_EXPORT CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice device)
{
	for (int i = 0; i < 16; i++)
		uuid->bytes[i] = (char)(0xf0 + device + i);
	return CUDA_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiProfilerInitialize(void *params)
{
	(void)params;
	return CUPTI_SUCCESS;
}

struct fake_chip_params {
	size_t size;
	void *priv;
	size_t device;
	const char *chip;
};

FAKE_EXPORT CUptiResult cuptiDeviceGetChipName(struct fake_chip_params *p)
{
	p->chip = "GH100";
	return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiPmSamplingEnable(void *params)
{
	static int fake_pm_object;
	struct {
		size_t size;
		void *priv;
		size_t device;
		void *object;
	} *p = params;
	int rc = fake_env_int("FAKE_CUPTI_PM_ENABLE", CUPTI_ERROR_INSUFFICIENT_PRIVILEGES);
	if (rc == CUPTI_SUCCESS)
		p->object = &fake_pm_object;
	fprintf(stderr, "fake_cupti pm_enable device %zu -> %d\n", p->device, rc);
	return (CUptiResult)rc;
}

#define FAKE_PM_UNSUPPORTED(name)                                                                            \
	FAKE_EXPORT CUptiResult name(void *params)                                                           \
	{                                                                                                    \
		(void)params;                                                                                \
		return CUPTI_ERROR_NOT_SUPPORTED;                                                            \
	}
FAKE_PM_UNSUPPORTED(cuptiPmSamplingDisable)
FAKE_PM_UNSUPPORTED(cuptiPmSamplingSetConfig)
FAKE_PM_UNSUPPORTED(cuptiPmSamplingStart)
FAKE_PM_UNSUPPORTED(cuptiPmSamplingStop)
FAKE_PM_UNSUPPORTED(cuptiPmSamplingDecodeData)
FAKE_PM_UNSUPPORTED(cuptiPmSamplingGetCounterAvailability)
FAKE_PM_UNSUPPORTED(cuptiPmSamplingGetCounterDataSize)
FAKE_PM_UNSUPPORTED(cuptiPmSamplingCounterDataImageInitialize)
FAKE_PM_UNSUPPORTED(cuptiPmSamplingGetCounterDataInfo)
FAKE_PM_UNSUPPORTED(cuptiPmSamplingCounterDataGetSampleInfo)

/*
 * CUPTI's profiler host API needs no GPU: these forward to the real libcupti of the toolkit
 * ($CUDA_HOME, else /usr/local/cuda), so the collector's PM-sampling config is built by the real
 * host API for the fake "GH100" and then refused by the fake cuptiPmSamplingSetConfig. Without
 * the toolkit they answer CUPTI_ERROR_NOT_SUPPORTED.
 */
static void *fake_real_cupti;
static pthread_once_t fake_real_cupti_once = PTHREAD_ONCE_INIT;

static void fake_real_cupti_open(void)
{
	char path[512];
	const char *home = getenv("CUDA_HOME");
	snprintf(path, sizeof path, "%s/lib64/libcupti.so", home && *home ? home : "/usr/local/cuda");
	fake_real_cupti = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!fake_real_cupti)
		fake_real_cupti =
		    dlopen("/usr/local/cuda/extras/CUPTI/lib64/libcupti.so", RTLD_NOW | RTLD_LOCAL);
}

static void *fake_real_cupti_symbol(const char *name)
{
	pthread_once(&fake_real_cupti_once, fake_real_cupti_open);
	return fake_real_cupti ? dlsym(fake_real_cupti, name) : NULL;
}

#define FAKE_HOST_FORWARD(name)                                                                              \
	FAKE_EXPORT CUptiResult name(void *params)                                                           \
	{                                                                                                    \
		CUptiResult (*real_fn)(void *) = (CUptiResult(*)(void *))fake_real_cupti_symbol(#name);      \
		return real_fn ? real_fn(params) : CUPTI_ERROR_NOT_SUPPORTED;                                \
	}
FAKE_HOST_FORWARD(cuptiProfilerHostInitialize)
FAKE_HOST_FORWARD(cuptiProfilerHostDeinitialize)
FAKE_HOST_FORWARD(cuptiProfilerHostConfigAddMetrics)
FAKE_HOST_FORWARD(cuptiProfilerHostGetConfigImageSize)
FAKE_HOST_FORWARD(cuptiProfilerHostGetConfigImage)
FAKE_HOST_FORWARD(cuptiProfilerHostGetNumOfPasses)
FAKE_HOST_FORWARD(cuptiProfilerHostEvaluateToGpuValues)

/* ---- the fake CUDA runtime ---- */

/* The GPU work a call queues: a kernel, or a copy of `bytes`. */
struct fake_op {
	CUpti_ActivityKind kind; /* CONCURRENT_KERNEL or MEMCPY */
	const char *kernel_name; /* lives as long as the process (decoded later, on another thread) */
	uint64_t bytes;
};

/* The device and context records, once, before the first GPU op. */
static void fake_first_op(void)
{
	pthread_mutex_lock(&fc.lock);
	int first = !fc.context_sent;
	fc.context_sent = 1;
	pthread_mutex_unlock(&fc.lock);
	if (!first)
		return;
	if (atomic_load(&fc.kind_on[CUPTI_ACTIVITY_KIND_DEVICE])) {
		CUpti_ActivityDevice5 d;
		memset(&d, 0, sizeof d);
		d.kind = CUPTI_ACTIVITY_KIND_DEVICE;
		d.id = FAKE_DEVICE;
		d.name = "Fake GPU";
		d.globalMemorySize = 1ull << 30;
		d.numMultiprocessors = 4;
		d.computeCapabilityMajor = 9;
		fake_write(CUPTI_ACTIVITY_KIND_DEVICE, &d);
	}
	if (atomic_load(&fc.kind_on[CUPTI_ACTIVITY_KIND_CONTEXT])) {
		CUpti_ActivityContext3 c;
		memset(&c, 0, sizeof c);
		c.kind = CUPTI_ACTIVITY_KIND_CONTEXT;
		c.contextId = FAKE_CONTEXT;
		c.deviceId = FAKE_DEVICE;
		c.nullStreamId = FAKE_STREAM;
		fake_write(CUPTI_ACTIVITY_KIND_CONTEXT, &c);
	}
}

/* The op's record, timed as a GPU would run it: on the one stream, after the call that queued it. */
static void fake_gpu_op(const struct fake_op *op, uint32_t correlation, uint64_t call_end)
{
	if (!atomic_load(&fc.kind_on[op->kind]))
		return;
	fake_first_op();
	pthread_mutex_lock(&fc.lock);
	uint64_t start = (call_end > fc.gpu_clock_ns ? call_end : fc.gpu_clock_ns) + 500;
	fc.gpu_clock_ns = start + 2000;
	pthread_mutex_unlock(&fc.lock);
	if (op->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
		CUpti_ActivityKernel10 k;
		memset(&k, 0, sizeof k);
		k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
		k.start = start;
		k.end = start + 2000;
		k.correlationId = correlation;
		k.name = op->kernel_name;
		k.deviceId = FAKE_DEVICE;
		k.contextId = FAKE_CONTEXT;
		k.streamId = FAKE_STREAM;
		k.gridX = k.gridY = k.gridZ = 1;
		k.blockX = 128;
		k.blockY = k.blockZ = 1;
		k.registersPerThread = 32;
		fake_write(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, &k);
	} else {
		CUpti_ActivityMemcpy6 m;
		memset(&m, 0, sizeof m);
		m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
		m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
		m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
		m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
		m.bytes = op->bytes;
		m.start = start;
		m.end = start + 2000;
		m.deviceId = FAKE_DEVICE;
		m.contextId = FAKE_CONTEXT;
		m.streamId = FAKE_STREAM;
		m.correlationId = correlation;
		m.flags = CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC;
		fake_write(CUPTI_ACTIVITY_KIND_MEMCPY, &m);
	}
}

/* CUDA's first launch is slow (it loads the module, lazily): FAKE_CUPTI_FIRST_CALL_MS says how
 * slow. */
static void fake_first_launch_wait(void)
{
	static atomic_flag done = ATOMIC_FLAG_INIT;
	if (atomic_flag_test_and_set(&done))
		return;
	const char *ms = getenv("FAKE_CUPTI_FIRST_CALL_MS");
	long n = ms ? atol(ms) : 0;
	if (n > 0 && n < 10000) {
		struct timespec ts = {n / 1000, (n % 1000) * 1000000L};
		nanosleep(&ts, NULL);
	}
}

/*
 * What the CUDA driver does in the program's first CUDA call (cuInit): loads CUDA_INJECTION64_PATH
 * and calls its InitializeInjection, which subscribes and enables callbacks while that call is
 * under way: its exit callback comes without the entry callback.
 */
static void fake_first_call_injects(void)
{
	static atomic_flag done = ATOMIC_FLAG_INIT;
	if (atomic_flag_test_and_set(&done))
		return;
	const char *path = getenv("CUDA_INJECTION64_PATH");
	void *h = path && *path ? dlopen(path, RTLD_NOW) : NULL;
	int (*initialize)(void) = h ? (int (*)(void))dlsym(h, "InitializeInjection") : NULL;
	if (initialize)
		initialize();
}

/* The SYNCHRONIZATION record CUPTI writes for a wait when that kind is on (once, for the outermost
 * call: a runtime wait's own driver wait makes none). */
static void fake_sync_record(CUpti_ActivitySynchronizationType type, uint32_t stream, uint32_t correlation,
                             uint64_t start, uint64_t end)
{
	if (!atomic_load(&fc.kind_on[CUPTI_ACTIVITY_KIND_SYNCHRONIZATION]))
		return;
	CUpti_ActivitySynchronization2 r;
	memset(&r, 0, sizeof r);
	r.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
	r.type = type;
	r.start = start;
	r.end = end;
	r.correlationId = correlation;
	r.contextId = FAKE_CONTEXT;
	r.streamId = stream;
	r.cudaEventId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
	fake_write(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, &r);
}

/* The correlation ids of a thread's calls in progress: a driver call inside a runtime call shares
 * its id, as in CUDA. */
static __thread uint32_t fake_outer_correlation;

/* The callback data CUPTI hands both sites of one call: its name, the fake context, its
 * correlation id and per-call slot. */
static void fake_callback_data(CUpti_CallbackData *data, const char *name, uint32_t correlation,
                               uint64_t *slot)
{
	memset(data, 0, sizeof *data);
	data->functionName = name;
	data->context = (CUcontext)(uintptr_t)0x1000;
	data->contextUid = FAKE_CONTEXT;
	data->correlationData = slot;
	data->correlationId = correlation;
}

/* One driver wait as CUDA makes it (cuStreamSynchronize or cuCtxSynchronize): its callbacks when
 * enabled, and a sync record when it is not inside a runtime call. */
static void fake_driver_wait(CUpti_CallbackId cbid, const char *name)
{
	uint32_t outer = fake_outer_correlation;
	uint32_t correlation = outer ? outer : atomic_fetch_add(&fake_correlation, 1) + 1;
	uint64_t slot = 0;
	CUpti_CallbackData data;
	fake_callback_data(&data, name, correlation, &slot);
	int traced = atomic_load(&fc.subscribed) && atomic_load(&fc.driver_cb[cbid]);
	if (traced) {
		data.callbackSite = CUPTI_API_ENTER;
		fc.subscriber.callback(fc.subscriber.userdata, CUPTI_CB_DOMAIN_DRIVER_API, cbid, &data);
	}
	uint64_t start = fake_now();
	struct timespec wait = {0, 200000}; /* the GPU catching up */
	nanosleep(&wait, NULL);
	uint64_t end = fake_now();
	if (traced) {
		data.callbackSite = CUPTI_API_EXIT;
		fc.subscriber.callback(fc.subscriber.userdata, CUPTI_CB_DOMAIN_DRIVER_API, cbid, &data);
	}
	if (!outer)
		fake_sync_record(cbid == CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize
		                     ? CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE
		                     : CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE,
		                 cbid == CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize
		                     ? CUPTI_SYNCHRONIZATION_INVALID_VALUE
		                     : FAKE_STREAM,
		                 correlation, start, end);
}

/* One runtime call as CUDA makes it: the enter callback, the call (which may queue GPU work), the
 * exit callback with the same correlationData slot and correlation id, the call's API activity
 * record when that call's activity is on, then the GPU op's record with the same correlation id. */
static void fake_runtime_call(CUpti_CallbackId cbid, const char *name, const struct fake_op *op)
{
	uint32_t correlation = atomic_fetch_add(&fake_correlation, 1) + 1;
	uint64_t slot = 0; /* CUPTI's per-call correlationData: the subscriber's from enter to exit */
	CUpti_CallbackData data;
	fake_callback_data(&data, name, correlation, &slot);
	if (atomic_load(&fc.subscribed) && atomic_load(&fc.runtime_cb[cbid])) {
		data.callbackSite = CUPTI_API_ENTER;
		fc.subscriber.callback(fc.subscriber.userdata, CUPTI_CB_DOMAIN_RUNTIME_API, cbid, &data);
	}
	/* An API record only for a call that began traced. */
	int activity = atomic_load(&fc.runtime_activity[cbid]);
	uint64_t start = fake_now();
	fake_first_call_injects();
	if (op)
		fake_first_launch_wait();
	/* cudaStreamSynchronize waits in the driver's cuStreamSynchronize. */
	int wait = cbid == CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020;
	if (wait) {
		fake_outer_correlation = correlation;
		fake_driver_wait(CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize, "cuStreamSynchronize");
		fake_outer_correlation = 0;
	}
	uint64_t end = fake_now();
	if (atomic_load(&fc.subscribed) && atomic_load(&fc.runtime_cb[cbid])) {
		data.callbackSite = CUPTI_API_EXIT;
		fc.subscriber.callback(fc.subscriber.userdata, CUPTI_CB_DOMAIN_RUNTIME_API, cbid, &data);
	}
	if (activity) {
		CUpti_ActivityAPI api;
		memset(&api, 0, sizeof api);
		api.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
		api.cbid = cbid;
		api.start = start;
		api.end = end;
		api.processId = (uint32_t)getpid();
		api.threadId = fake_thread_id();
		api.correlationId = correlation;
		fake_write(CUPTI_ACTIVITY_KIND_RUNTIME, &api);
	}
	if (op)
		fake_gpu_op(op, correlation, end);
	if (wait)
		fake_sync_record(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, FAKE_STREAM,
		                 correlation, start, end);
}

/* Kernel names, kept for the life of the process (CUPTI's names live as long); "fake_kernel" when
 * the table is full. */
static const char *fake_intern(const char *name)
{
	static char *names[64];
	static size_t count;
	const char *found = "fake_kernel";
	pthread_mutex_lock(&fc.lock);
	for (size_t i = 0; i < count; i++)
		if (strcmp(names[i], name) == 0) {
			found = names[i];
			goto out;
		}
	if (count < sizeof names / sizeof names[0] && (names[count] = strdup(name)) != NULL)
		found = names[count++];
out:
	pthread_mutex_unlock(&fc.lock);
	return found;
}

/* The kernel name of a launching thread's label: "fake_kernel_LABEL". */
static const char *fake_kernel_name(const char *label)
{
	char buf[128];
	snprintf(buf, sizeof buf, "fake_kernel_%s", label);
	return fake_intern(buf);
}

/*
 * The test program's CUDA work: n kernel launches (cudaLaunchKernel, kernel "fake_kernel_LABEL"),
 * each after `extra` cheap calls (cudaGetDevice) the collector must not record; then one
 * cudaMemcpyAsync (a copy of 4096 bytes) and one cudaStreamSynchronize.
 */
FAKE_EXPORT void fake_cuda_launch(unsigned n, unsigned extra, const char *label)
{
	struct fake_op kernel = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, fake_kernel_name(label), 0};
	struct fake_op copy = {CUPTI_ACTIVITY_KIND_MEMCPY, NULL, 4096};
	for (unsigned i = 0; i < n; i++) {
		for (unsigned e = 0; e < extra; e++)
			fake_runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020, "cudaGetDevice",
			                  NULL);
		fake_runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, "cudaLaunchKernel",
		                  &kernel);
	}
	fake_runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, "cudaMemcpyAsync", &copy);
	fake_runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020, "cudaStreamSynchronize",
	                  NULL);
}

/*
 * One cudaLaunchKernel of a kernel called name (as CUPTI reports a kernel's mangled or plain name),
 * e.g. NCCL's "ncclDevKernel_AllReduce_Sum_f32_RING_LL", for tests of what cuscope does with kernels
 * by name (matching collectives across captures, t228).
 */
FAKE_EXPORT void fake_cuda_launch_kernel(const char *name)
{
	struct fake_op kernel = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, fake_intern(name), 0};
	fake_runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, "cudaLaunchKernel", &kernel);
}

/* cuCtxSynchronize, called directly: a program waiting through the driver API. */
FAKE_EXPORT void fake_cuda_driver_sync(void)
{
	fake_driver_wait(CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize, "cuCtxSynchronize");
}

/* cudaFree(0): what programs call first to create CUDA's context. */
FAKE_EXPORT void fake_cuda_init(void)
{
	fake_runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020, "cudaFree", NULL);
}

/* What the fake saw, for the test's checks: one line on stdout. */
FAKE_EXPORT void fake_cuda_report(void)
{
	pthread_mutex_lock(&fc.lock);
	printf("fake_cupti records %llu buffers %llu worker_buffers %llu dropped %llu dirty_bytes %llu "
	       "zeroed %d system_tids %d timestamp %d sync_kind %d\n",
	       (unsigned long long)fc.records, (unsigned long long)fc.buffers,
	       (unsigned long long)fc.worker_buffers, (unsigned long long)fc.dropped_all,
	       (unsigned long long)fc.dirty_bytes, fc.zeroed_by_client, fc.system_tids, fc.timestamp != NULL,
	       atomic_load(&fc.kind_on[CUPTI_ACTIVITY_KIND_SYNCHRONIZATION]));
	pthread_mutex_unlock(&fc.lock);
	fflush(stdout);
}
