/*
 * GPU activity through CUPTI, loaded with dlopen (the collector never links libcupti, so it runs
 * where CUDA is missing). CUPTI's callbacks only hand buffers over; a flush thread calls
 * cuptiActivityFlushAll every 20 ms (delivery of partly filled buffers otherwise takes up to
 * seconds); decoding happens on the sender thread (cupti_drain).
 */
#include "cuscope/clock.h"
#include "collector.h"
#include "cuscope/wire.h"
#include "cupti_impl.h"
#include "source.h"

#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#define CUPTI_BUFFER_BYTES    (4u << 20)
#define CUPTI_FLUSH_PERIOD_NS 20000000L
#define CUPTI_ZERO_MARGIN     (64u << 10) /* bytes past `valid` zeroed before a buffer is reused */

/* A buffer CUPTI filled, queued for the sender (Treiber stack; the sender reverses it to FIFO). */
struct cupti_buffer {
	struct cupti_buffer *next;
	size_t valid;
	uint8_t *data; /* CUPTI_BUFFER_BYTES, 8-byte aligned */
};

static struct {
	void *lib;
	struct cupti_fns fn;
	_Atomic int active; /* tracing runs in this process */
	pid_t pid;          /* the process CUPTI was initialised in (a forked child must not touch it) */
	CUpti_SubscriberHandle subscriber;
	pthread_t flush_thread;
	int flush_started;
	_Atomic int flush_stop;
	struct cupti_buffer *_Atomic completed;
	struct cupti_buffer *_Atomic spare;
	_Atomic size_t buffers_allocated;
	size_t buffers_max;
	_Atomic uint64_t buffers_refused;
	uint64_t dropped_records;
	int late;                      /* started after CUDA was initialised (attach) */
	int buffers_zeroed_by_us;      /* CUPTI takes our buffers as zeroed (see cupti_start) */
	_Atomic int detach_requested;  /* finalize at the next API exit (cuptiFinalize's rule) */
	_Atomic uint64_t flush_cpu_ns; /* CPU time of flush threads so far (the GPU cost entry) */
	int native_clock;              /* records carry CUPTI's own clock, converted at decoding */
	uint64_t native_minus_mono;    /* CUPTI's clock - CLOCK_MONOTONIC, taken at each drain */
} cu;

static uint64_t CUPTIAPI cupti_timestamp(void)
{
	return clock_mono_ns();
}

/*
 * CUPTI's own clock is CLOCK_REALTIME ns (DESIGN.md). A timestamp callback would put every record
 * in CLOCK_MONOTONIC, but CUPTI calls it on the program's thread for each start and end of each
 * record (an indirect call and a clock read each, measured ~16 points of the launch loop's cost on
 * the GPU host). So records keep CUPTI's clock and are moved to MONOTONIC here, on our thread, by
 * the difference of the two clocks taken before each drain. The two run at one rate (NTP slews
 * both), so the difference only changes when the wall clock is stepped; records written before a
 * step and drained after it are off by the step.
 */
static void cupti_clock_sample(void)
{
	if (!cu.native_clock)
		return;
	uint64_t best_gap = UINT64_MAX;
	for (int attempt = 0; attempt < 5; attempt++) {
		uint64_t native = 0;
		uint64_t before = clock_mono_ns();
		int ok = cu.fn.get_timestamp(&native) == CUPTI_SUCCESS;
		uint64_t after = clock_mono_ns();
		if (ok && after - before < best_gap) {
			best_gap = after - before;
			cu.native_minus_mono = native - (before + (after - before) / 2);
		}
	}
}

/* A record's timestamp in CLOCK_MONOTONIC ns; 0 (not known) stays 0. */
static uint64_t cupti_mono(uint64_t t)
{
	return t && cu.native_clock ? t - cu.native_minus_mono : t;
}

/* Buffer bookkeeping lives in a header in front of the data so completion can find it. */
static struct cupti_buffer *cupti_buffer_of(uint8_t *data)
{
	return (struct cupti_buffer *)(data - 64);
}

/* Spare buffers: a lock, because a lock-free pop could hand one buffer out twice (ABA) when
 * CUPTI asks from two threads while the sender returns one. Held for a few instructions. */
static atomic_flag spare_lock = ATOMIC_FLAG_INIT;

static struct cupti_buffer *spare_pop(void)
{
	while (atomic_flag_test_and_set_explicit(&spare_lock, memory_order_acquire))
		;
	struct cupti_buffer *b = atomic_load_explicit(&cu.spare, memory_order_relaxed);
	if (b)
		atomic_store_explicit(&cu.spare, b->next, memory_order_relaxed);
	atomic_flag_clear_explicit(&spare_lock, memory_order_release);
	return b;
}

static void spare_push(struct cupti_buffer *b)
{
	while (atomic_flag_test_and_set_explicit(&spare_lock, memory_order_acquire))
		;
	b->next = atomic_load_explicit(&cu.spare, memory_order_relaxed);
	atomic_store_explicit(&cu.spare, b, memory_order_relaxed);
	atomic_flag_clear_explicit(&spare_lock, memory_order_release);
}

static void CUPTIAPI cupti_buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
	*max_records = 0;
	struct cupti_buffer *b = spare_pop();
	if (!b) {
		if (atomic_fetch_add(&cu.buffers_allocated, 1) >= cu.buffers_max) {
			atomic_fetch_sub(&cu.buffers_allocated, 1);
			atomic_fetch_add(&cu.buffers_refused, 1);
			*buffer = NULL;
			*size = 0; /* CUPTI drops the records and counts them */
			return;
		}
		void *mem = mmap(NULL, CUPTI_BUFFER_BYTES + 64, PROT_READ | PROT_WRITE,
		                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (mem == MAP_FAILED) {
			atomic_fetch_sub(&cu.buffers_allocated, 1);
			atomic_fetch_add(&cu.buffers_refused, 1);
			*buffer = NULL;
			*size = 0;
			return;
		}
		b = mem;
		b->data = (uint8_t *)mem + 64;
	}
	b->next = NULL;
	b->valid = 0;
	*buffer = b->data;
	*size = CUPTI_BUFFER_BYTES;
}

static void CUPTIAPI cupti_buffer_completed(CUcontext context, uint32_t stream, uint8_t *buffer, size_t size,
                                            size_t valid)
{
	(void)context;
	(void)stream;
	(void)size;
	if (!buffer)
		return;
	struct cupti_buffer *b = cupti_buffer_of(buffer);
	b->valid = valid;
	struct cupti_buffer *head = atomic_load(&cu.completed);
	do
		b->next = head;
	while (!atomic_compare_exchange_weak(&cu.completed, &head, b));
}

/* Resource callback: flush before a context goes away, or its last records are lost. */
static void CUPTIAPI cupti_callback(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                    const void *data)
{
	(void)userdata;
	/* Detach: CUPTI may only be finalized from inside a callback, at an API exit. */
	if (atomic_load(&cu.detach_requested) &&
	    (domain == CUPTI_CB_DOMAIN_RUNTIME_API || domain == CUPTI_CB_DOMAIN_DRIVER_API) &&
	    ((const CUpti_CallbackData *)data)->callbackSite == CUPTI_API_EXIT) {
		atomic_store(&cu.detach_requested, 0);
		cu.fn.finalize();
		return;
	}
	if ((domain == CUPTI_CB_DOMAIN_RUNTIME_API || domain == CUPTI_CB_DOMAIN_DRIVER_API) &&
	    atomic_load_explicit(&cu.active, memory_order_relaxed)) {
		cupti_api_callback(domain, cbid, data);
		return;
	}
	if (domain == CUPTI_CB_DOMAIN_RESOURCE && cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING &&
	    atomic_load(&cu.active) && cu.pid == getpid())
		cu.fn.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
}

static void *cupti_flush_main(void *arg)
{
	(void)arg;
	collector_mark_own_thread();
	collector_register_own_tid(collector_gettid());
	prctl(PR_SET_NAME, "cuscope-flush");
	long period_ns = CUPTI_FLUSH_PERIOD_NS;
	const char *ms = getenv("CUSCOPE_FLUSH_MS");
	if (ms && atol(ms) > 0 && atol(ms) <= 10000)
		period_ns = atol(ms) * 1000000L;
	uint64_t cpu_seen = 0;
	while (!atomic_load(&cu.flush_stop)) {
		/* In slices of the default period: a stop (the program's exit joins this thread) waits
		 * for one slice, not for a long CUSCOPE_FLUSH_MS. */
		for (long left = period_ns; left > 0 && !atomic_load(&cu.flush_stop);
		     left -= CUPTI_FLUSH_PERIOD_NS) {
			long ns = left < CUPTI_FLUSH_PERIOD_NS ? left : CUPTI_FLUSH_PERIOD_NS;
			struct timespec slice = {0, ns};
			nanosleep(&slice, NULL);
		}
		if (atomic_load(&cu.active))
			cu.fn.flush_all(0);
		/* One thread-CPU clock reading per period: the flush thread's own cost. */
		struct timespec ts;
		if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0) {
			uint64_t cpu = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
			atomic_fetch_add(&cu.flush_cpu_ns, cpu - cpu_seen);
			cpu_seen = cpu;
		}
	}
	return NULL;
}

static const char *cupti_error(CUptiResult rc)
{
	const char *text = NULL;
	if (cu.fn.result_string && cu.fn.result_string(rc, &text) == CUPTI_SUCCESS && text)
		return text;
	return "unknown CUPTI error";
}

/* Opens libcupti, preferring a copy already in the process (PyTorch ships its own). */
static void *cupti_open(char *why, size_t why_size)
{
	static const char *const names[] = {"libcupti.so.13", "libcupti.so.12", "libcupti.so"};
	const char *override = getenv("CUSCOPE_CUPTI_PATH");
	if (override && *override) {
		void *h = dlopen(override, RTLD_NOW | RTLD_GLOBAL);
		if (!h)
			snprintf(why, why_size, "cannot load CUSCOPE_CUPTI_PATH=%s: %s", override, dlerror());
		return h;
	}
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		void *h = dlopen(names[i], RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL);
		if (h)
			return h;
	}
	const char *cuda_home = getenv("CUDA_HOME");
	char path[512];
	const char *const dirs[] = {cuda_home, "/usr/local/cuda"};
	for (size_t d = 0; d < 2; d++) {
		if (!dirs[d])
			continue;
		snprintf(path, sizeof path, "%s/extras/CUPTI/lib64/libcupti.so", dirs[d]);
		void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
		if (h)
			return h;
		snprintf(path, sizeof path, "%s/lib64/libcupti.so", dirs[d]);
		h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
		if (h)
			return h;
	}
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		void *h = dlopen(names[i], RTLD_NOW | RTLD_GLOBAL);
		if (h)
			return h;
	}
	snprintf(why, why_size,
	         "libcupti not found (install the CUDA toolkit's CUPTI or set CUSCOPE_CUPTI_PATH)");
	return NULL;
}

static int cupti_resolve(char *why, size_t why_size)
{
	struct {
		void **slot;
		const char *name;
		int optional;
	} table[] = {
	    {(void **)&cu.fn.get_version, "cuptiGetVersion", 0},
	    {(void **)&cu.fn.subscribe_v2, "cuptiSubscribe_v2", 1},
	    {(void **)&cu.fn.subscribe, "cuptiSubscribe", 0},
	    {(void **)&cu.fn.enable_callback, "cuptiEnableCallback", 0},
	    {(void **)&cu.fn.activity_enable, "cuptiActivityEnable", 0},
	    {(void **)&cu.fn.enable_runtime_api, "cuptiActivityEnableRuntimeApi", 1},
	    {(void **)&cu.fn.enable_driver_api, "cuptiActivityEnableDriverApi", 1},
	    {(void **)&cu.fn.register_callbacks, "cuptiActivityRegisterCallbacks", 0},
	    {(void **)&cu.fn.register_timestamp, "cuptiActivityRegisterTimestampCallback", 1},
	    {(void **)&cu.fn.get_timestamp, "cuptiGetTimestamp", 1},
	    {(void **)&cu.fn.flush_all, "cuptiActivityFlushAll", 0},
	    {(void **)&cu.fn.next_record, "cuptiActivityGetNextRecord", 0},
	    {(void **)&cu.fn.dropped_records, "cuptiActivityGetNumDroppedRecords", 0},
	    {(void **)&cu.fn.callback_name, "cuptiGetCallbackName", 1},
	    {(void **)&cu.fn.result_string, "cuptiGetResultString", 1},
	    {(void **)&cu.fn.set_thread_id_type, "cuptiSetThreadIdType", 1},
	    {(void **)&cu.fn.enable_and_dump, "cuptiActivityEnableAndDump", 1},
	    {(void **)&cu.fn.enable_domain, "cuptiEnableDomain", 1},
	    {(void **)&cu.fn.finalize, "cuptiFinalize", 1},
	    {(void **)&cu.fn.set_attribute, "cuptiActivitySetAttribute", 1},
	};
	for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
		*table[i].slot = dlsym(cu.lib, table[i].name);
		if (!*table[i].slot && !table[i].optional) {
			snprintf(why, why_size, "libcupti lacks %s (too old for this collector)",
			         table[i].name);
			return -1;
		}
	}
	return 0;
}

/* Whether a comma-separated list names this optional activity kind (a benchmark knob). */
static int cupti_kind_listed(const char *list, CUpti_ActivityKind kind)
{
	const char *name = kind == CUPTI_ACTIVITY_KIND_MEMCPY            ? "memcpy"
	                   : kind == CUPTI_ACTIVITY_KIND_MEMSET          ? "memset"
	                   : kind == CUPTI_ACTIVITY_KIND_SYNCHRONIZATION ? "sync"
	                                                                 : NULL;
	size_t len = name ? strlen(name) : 0;
	for (const char *p = list; name && *p;) {
		if (strncmp(p, name, len) == 0 && (p[len] == ',' || p[len] == 0))
			return 1;
		p = strchr(p, ',');
		if (!p)
			break;
		p++;
	}
	return 0;
}

/* Path of the libcupti actually in use, for the manifest. */
static const char *cupti_library_path(void)
{
	Dl_info info;
	if (cu.fn.get_version && dladdr((void *)cu.fn.get_version, &info) && info.dli_fname)
		return info.dli_fname;
	return "unknown";
}

int cupti_start(void)
{
	char why[512] = "";
	if (atomic_load(&cu.active))
		return 0;
	/* Detached, and CUPTI not finalized yet (no CUDA call since): the subscription still holds,
	 * with every kind enabled; just resume. */
	int expected = 1;
	if (atomic_compare_exchange_strong(&cu.detach_requested, &expected, 0)) {
		if (cu.fn.enable_domain) {
			cu.fn.enable_domain(0, cu.subscriber, CUPTI_CB_DOMAIN_RUNTIME_API);
			cu.fn.enable_domain(0, cu.subscriber, CUPTI_CB_DOMAIN_DRIVER_API);
			/* That also turned off the API calls recorded by callback: on again. */
			cupti_api_enable_callbacks(&cu.fn, cu.subscriber);
		}
		atomic_store(&cu.active, 1);
		atomic_store(&cu.flush_stop, 0);
		cu.flush_started = pthread_create(&cu.flush_thread, NULL, cupti_flush_main, NULL) == 0;
		return 0;
	}
	cu.lib = cupti_open(why, sizeof why);
	if (!cu.lib || cupti_resolve(why, sizeof why) != 0) {
		collector_notice_about(WIRE_NOTICE_WARNING, WIRE_NOTICE_TOPIC_GPU_UNAVAILABLE,
		                       "GPU tracing unavailable: %s; CPU and NVTX lanes continue", why);
		return -1;
	}
	uint32_t version = 0;
	cu.fn.get_version(&version);
	if (version && version < CUPTI_API_VERSION / 10000 * 10000) {
		collector_notice_about(
		    WIRE_NOTICE_WARNING, WIRE_NOTICE_TOPIC_GPU_UNAVAILABLE,
		    "GPU tracing unavailable: CUPTI API %u is older than the %u this collector "
		    "was built for; "
		    "CPU and NVTX lanes continue",
		    version, (unsigned)CUPTI_API_VERSION);
		return -1;
	}
	CUptiResult rc;
	char incumbent[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN + 64] = "";
	/*
	 * Benchmark knob (README "Overhead (GPU side)", cu-kon-nosub): with no API recording asked
	 * (CUSCOPE_CUDA_API=none), CUSCOPE_CUPTI_NO_SUBSCRIBE=1 leaves out the callback subscription,
	 * as the floor injector does, to measure what subscribing costs the program. No flush at a
	 * context's destruction then, and no detach: a benchmark run only.
	 */
	const char *api_mode = getenv("CUSCOPE_CUDA_API");
	int subscribe = !(getenv("CUSCOPE_CUPTI_NO_SUBSCRIBE") && api_mode && strcmp(api_mode, "none") == 0);
	if (!subscribe) {
		rc = CUPTI_SUCCESS;
	} else if (cu.fn.subscribe_v2) {
		CUpti_SubscriberParams params;
		memset(&params, 0, sizeof params);
		params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
		params.subscriberName = "cuscope";
		params.oldSubscriberName = incumbent;
		params.oldSubscriberSize = sizeof incumbent;
		rc = cu.fn.subscribe_v2(&cu.subscriber, cupti_callback, NULL, &params);
	} else {
		rc = cu.fn.subscribe(&cu.subscriber, cupti_callback, NULL);
	}
	if (rc != CUPTI_SUCCESS) {
		if (rc == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
			collector_notice_about(
			    WIRE_NOTICE_WARNING, WIRE_NOTICE_TOPIC_GPU_UNAVAILABLE,
			    "GPU tracing unavailable: another CUPTI client is active (%s); only "
			    "one can trace "
			    "at a time before CUDA 13.3; CPU and NVTX lanes continue",
			    incumbent[0] ? incumbent : "e.g. Nsight Systems or torch.profiler");
		else
			collector_notice_about(
			    WIRE_NOTICE_WARNING, WIRE_NOTICE_TOPIC_GPU_UNAVAILABLE,
			    "GPU tracing unavailable: CUPTI subscribe failed (%s); CPU and NVTX "
			    "lanes continue",
			    cupti_error(rc));
		return -1;
	}
	cu.pid = getpid();
	cu.buffers_max = collector_config.gpu_buffer_bytes / CUPTI_BUFFER_BYTES;
	if (cu.buffers_max < 4)
		cu.buffers_max = 4;
	if (subscribe)
		cu.fn.enable_callback(1, cu.subscriber, CUPTI_CB_DOMAIN_RESOURCE,
		                      CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING);
	/* API records must name OS thread ids (gettid), like every other lane, not pthread_t values. */
	if (cu.fn.set_thread_id_type && !getenv("CUSCOPE_CUPTI_PTHREAD_IDS"))
		cu.fn.set_thread_id_type(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
	/* One clock for every source: CUPTI timestamps become CLOCK_MONOTONIC, converted as records
	 * are decoded (cupti_clock_sample), or where libcupti cannot tell its clock, by a timestamp
	 * callback. CUSCOPE_CUPTI_MONO_CLOCK=1 asks for the callback (a benchmark knob). */
	cu.native_clock = cu.fn.get_timestamp && !getenv("CUSCOPE_CUPTI_MONO_CLOCK");
	cupti_clock_sample();
	if (!cu.native_clock && cu.fn.register_timestamp)
		cu.fn.register_timestamp(cupti_timestamp);
	/* Otherwise CUPTI zeroes each buffer we hand it on the program's thread that asked for it:
	 * 4 MiB every flush period on every thread that launches. Ours come zeroed instead: fresh
	 * anonymous pages, and the sender zeroes what CUPTI wrote before a buffer is reused. */
	uint8_t zeroed = 1;
	size_t zeroed_size = sizeof zeroed;
	cu.buffers_zeroed_by_us =
	    cu.fn.set_attribute && cu.fn.set_attribute(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER,
	                                               &zeroed_size, &zeroed) == CUPTI_SUCCESS;
	rc = cu.fn.register_callbacks(cupti_buffer_requested, cupti_buffer_completed);
	if (rc != CUPTI_SUCCESS) {
		collector_notice_about(WIRE_NOTICE_WARNING, WIRE_NOTICE_TOPIC_GPU_UNAVAILABLE,
		                       "GPU tracing unavailable: %s; CPU and NVTX lanes continue",
		                       cupti_error(rc));
		return -1;
	}
	static const CUpti_ActivityKind kinds_min[] = {
	    CUPTI_ACTIVITY_KIND_DEVICE, CUPTI_ACTIVITY_KIND_CONTEXT, CUPTI_ACTIVITY_KIND_STREAM,
	    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL};
	/* No OVERHEAD kind: nothing downstream read CUPTI's overhead records (the store dropped
	 * them), so they were work for CUPTI and the sender for nothing. */
	static const CUpti_ActivityKind kinds_all[] = {
	    CUPTI_ACTIVITY_KIND_DEVICE,          CUPTI_ACTIVITY_KIND_CONTEXT,
	    CUPTI_ACTIVITY_KIND_STREAM,          CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
	    CUPTI_ACTIVITY_KIND_MEMCPY,          CUPTI_ACTIVITY_KIND_MEMSET,
	    CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
	};
	const CUpti_ActivityKind *kinds = getenv("CUSCOPE_KERNELS_ONLY") ? kinds_min : kinds_all;
	size_t n_kinds = getenv("CUSCOPE_KERNELS_ONLY") ? sizeof kinds_min / sizeof kinds_min[0]
	                                                : sizeof kinds_all / sizeof kinds_all[0];
	/* Benchmark knob: CUSCOPE_GPU_KINDS_OFF=memcpy,memset,sync leaves those kinds off,
	 * to measure what each costs the program. */
	const char *kinds_off = getenv("CUSCOPE_GPU_KINDS_OFF");
	for (size_t i = 0; i < n_kinds; i++) {
		if (kinds_off && cupti_kind_listed(kinds_off, kinds[i]))
			continue;
		/* Host waits come from the API callbacks instead (cupti_api.c says why). */
		if (kinds[i] == CUPTI_ACTIVITY_KIND_SYNCHRONIZATION && subscribe &&
		    cupti_api_sync_by_callback(&cu.fn))
			continue;
		/* Late start: the devices, contexts and streams that exist already are dumped at once. */
		int dump =
		    cu.late && cu.fn.enable_and_dump &&
		    (kinds[i] == CUPTI_ACTIVITY_KIND_DEVICE || kinds[i] == CUPTI_ACTIVITY_KIND_CONTEXT ||
		     kinds[i] == CUPTI_ACTIVITY_KIND_STREAM);
		rc = dump ? cu.fn.enable_and_dump(kinds[i]) : cu.fn.activity_enable(kinds[i]);
		if (rc != CUPTI_SUCCESS && kinds[i] == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
			collector_notice_about(
			    WIRE_NOTICE_WARNING, WIRE_NOTICE_TOPIC_GPU_UNAVAILABLE,
			    "GPU tracing unavailable: cannot enable kernel tracing (%s); CPU and NVTX lanes "
			    "continue",
			    cupti_error(rc));
			return -1;
		}
	}
	if (subscribe)
		cupti_api_enable(&cu.fn, cu.subscriber);
	int driver_version = 0;
	int (*driver_get_version)(int *) = (int (*)(int *))dlsym(RTLD_DEFAULT, "cuDriverGetVersion");
	if (driver_get_version)
		driver_get_version(&driver_version);
	collector_notice_about(WIRE_NOTICE_INFO, WIRE_NOTICE_TOPIC_RUNTIME,
	                       "cupti_version=%u\ncuda_driver_api_version=%d\ncupti_library=%s", version,
	                       driver_version, cupti_library_path());
	atomic_store(&cu.active, 1);
	atomic_store(&cu.flush_stop, 0);
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	cu.flush_started = pthread_create(&cu.flush_thread, NULL, cupti_flush_main, NULL) == 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return 0;
}

int cupti_start_late(void)
{
	cu.late = 1;
	return cupti_start();
}

void cupti_detach(void)
{
	if (!atomic_load(&cu.active) || cu.pid != getpid())
		return;
	if (cu.flush_started) {
		atomic_store(&cu.flush_stop, 1);
		pthread_join(cu.flush_thread, NULL);
		cu.flush_started = 0;
	}
	cu.fn.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	cupti_drain();
	atomic_store(&cu.active, 0);
	if (cu.fn.finalize && cu.fn.enable_domain && cu.subscriber) {
		atomic_store(&cu.detach_requested, 1);
		cu.fn.enable_domain(1, cu.subscriber, CUPTI_CB_DOMAIN_RUNTIME_API);
		cu.fn.enable_domain(1, cu.subscriber, CUPTI_CB_DOMAIN_DRIVER_API);
	}
}

void cupti_flush(void)
{
	if (!cupti_running())
		return;
	/* Not forced: records still in flight stay with CUPTI (tracing goes on) and come later. */
	cu.fn.flush_all(0);
	cupti_drain();
}

void cupti_stop(void)
{
	if (!atomic_load(&cu.active) || cu.pid != getpid())
		return;
	if (cu.flush_started) {
		atomic_store(&cu.flush_stop, 1);
		pthread_join(cu.flush_thread, NULL);
		cu.flush_started = 0;
	}
	/* Forced: also delivers buffers with records still in flight. */
	cu.fn.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
}

void cupti_forget_after_fork(void)
{
	/* CUPTI's threads and state belong to the parent; a flush here could hang. */
	atomic_store(&cu.active, 0);
	cu.flush_started = 0;
	atomic_store(&cu.completed, NULL);
}

uint64_t cupti_flush_cpu_ns(void)
{
	return atomic_load(&cu.flush_cpu_ns);
}

void *cupti_library(void)
{
	return cupti_running() ? cu.lib : NULL;
}

int cupti_running(void)
{
	return atomic_load(&cu.active) && cu.pid == getpid();
}

uint64_t cupti_loss(uint32_t cause)
{
	if (cause == WIRE_LOSS_GPU_BUFFER)
		return atomic_load(&cu.buffers_refused);
	if (cause == WIRE_LOSS_CUPTI_DROPPED)
		return cu.dropped_records;
	return 0;
}

/* ---- decoding (sender thread) ---- */

static void cupti_decode(const CUpti_Activity *record)
{
	struct wire_gpu_event ev;
	memset(&ev, 0, sizeof ev);
	switch (record->kind) {
	case CUPTI_ACTIVITY_KIND_KERNEL:
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
		const CUpti_ActivityKernel10 *k = (const void *)record;
		ev.kind = WIRE_GPU_KERNEL;
		ev.start_ns = cupti_mono(k->start);
		ev.end_ns = cupti_mono(k->end);
		ev.correlation_id = k->correlationId;
		ev.name_id = k->name ? sender_intern(k->name, strlen(k->name)) : 0;
		ev.device = k->deviceId;
		ev.context = k->contextId;
		ev.stream = k->streamId;
		ev.grid[0] = k->gridX;
		ev.grid[1] = k->gridY;
		ev.grid[2] = k->gridZ;
		ev.block[0] = k->blockX;
		ev.block[1] = k->blockY;
		ev.block[2] = k->blockZ;
		ev.registers = k->registersPerThread;
		ev.shared_static = (uint32_t)k->staticSharedMemory;
		ev.shared_dynamic = (uint32_t)k->dynamicSharedMemory;
		ev.graph_id = k->graphId;
		ev.flags = k->isDeviceLaunched ? WIRE_GPU_FLAG_DEVICE_LAUNCH : 0;
		if (!k->isDeviceLaunched)
			cupti_api_kernel_seen(k->correlationId);
		break;
	}
	case CUPTI_ACTIVITY_KIND_MEMCPY: {
		const CUpti_ActivityMemcpy6 *m = (const void *)record;
		ev.kind = WIRE_GPU_MEMCPY;
		ev.start_ns = cupti_mono(m->start);
		ev.end_ns = cupti_mono(m->end);
		ev.bytes = m->bytes;
		ev.correlation_id = m->correlationId;
		ev.device = m->deviceId;
		ev.context = m->contextId;
		ev.stream = m->streamId;
		ev.subkind = m->copyKind < WIRE_MEMCPY_KIND_MAX ? m->copyKind : WIRE_MEMCPY_UNKNOWN;
		ev.src_mem = m->srcKind < WIRE_MEM_KIND_MAX ? m->srcKind : WIRE_MEM_UNKNOWN;
		ev.dst_mem = m->dstKind < WIRE_MEM_KIND_MAX ? m->dstKind : WIRE_MEM_UNKNOWN;
		ev.flags = (m->flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC) ? WIRE_GPU_FLAG_ASYNC : 0;
		ev.graph_id = m->graphId;
		break;
	}
	case CUPTI_ACTIVITY_KIND_MEMSET: {
		const CUpti_ActivityMemset4 *m = (const void *)record;
		ev.kind = WIRE_GPU_MEMSET;
		ev.start_ns = cupti_mono(m->start);
		ev.end_ns = cupti_mono(m->end);
		ev.bytes = m->bytes;
		ev.correlation_id = m->correlationId;
		ev.device = m->deviceId;
		ev.context = m->contextId;
		ev.stream = m->streamId;
		ev.dst_mem = m->memoryKind < WIRE_MEM_KIND_MAX ? (uint8_t)m->memoryKind : WIRE_MEM_UNKNOWN;
		ev.flags = (m->flags & CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC) ? WIRE_GPU_FLAG_ASYNC : 0;
		ev.graph_id = m->graphId;
		break;
	}
	case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
		const CUpti_ActivitySynchronization2 *s = (const void *)record;
		ev.kind = WIRE_GPU_SYNC;
		ev.start_ns = cupti_mono(s->start);
		ev.end_ns = cupti_mono(s->end);
		ev.correlation_id = s->correlationId;
		ev.context = s->contextId;
		ev.stream = s->streamId;
		ev.subkind = (uint32_t)s->type < WIRE_SYNC_TYPE_MAX ? (uint16_t)s->type : WIRE_SYNC_UNKNOWN;
		break;
	}
	case CUPTI_ACTIVITY_KIND_RUNTIME:
	case CUPTI_ACTIVITY_KIND_DRIVER: {
		const CUpti_ActivityAPI *a = (const void *)record;
		int runtime = record->kind == CUPTI_ACTIVITY_KIND_RUNTIME;
		ev.kind = runtime ? WIRE_GPU_API_RUNTIME : WIRE_GPU_API_DRIVER;
		ev.start_ns = cupti_mono(a->start);
		ev.end_ns = cupti_mono(a->end);
		ev.correlation_id = a->correlationId;
		ev.tid = a->threadId;
		ev.subkind = (uint16_t)a->cbid;
		ev.name_id = cupti_api_name(
		    &cu.fn, runtime ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API, a->cbid);
		break;
	}
	case CUPTI_ACTIVITY_KIND_CONTEXT: {
		const CUpti_ActivityContext3 *c = (const void *)record;
		ev.kind = WIRE_GPU_CONTEXT;
		ev.device = c->deviceId;
		ev.context = c->contextId;
		ev.stream = c->nullStreamId;
		sender_gpu_context(&ev);
		return;
	}
	case CUPTI_ACTIVITY_KIND_STREAM: {
		const CUpti_ActivityStream *s = (const void *)record;
		ev.kind = WIRE_GPU_STREAM;
		ev.context = s->contextId;
		ev.stream = s->streamId;
		ev.subkind = s->flag == CUPTI_ACTIVITY_STREAM_CREATE_FLAG_NON_BLOCKING ? 1
		             : s->flag == CUPTI_ACTIVITY_STREAM_CREATE_FLAG_NULL       ? 2
		                                                                       : 0;
		ev.correlation_id = s->correlationId;
		break;
	}
	case CUPTI_ACTIVITY_KIND_DEVICE: {
		const CUpti_ActivityDevice5 *d = (const void *)record;
		struct wire_gpu_device dev;
		memset(&dev, 0, sizeof dev);
		dev.device = d->id;
		dev.name_id = d->name ? sender_intern(d->name, strlen(d->name)) : 0;
		memcpy(dev.uuid, &d->uuid, sizeof dev.uuid);
		dev.global_memory_bytes = d->globalMemorySize;
		dev.sm_count = d->numMultiprocessors;
		dev.cc_major = d->computeCapabilityMajor;
		dev.cc_minor = d->computeCapabilityMinor;
		sender_gpu_device(&dev);
		return;
	}
	default:
		return;
	}
	sender_gpu_event(&ev);
}

size_t cupti_drain(void)
{
	if (!cupti_running())
		return 0;
	struct cupti_buffer *list = atomic_exchange(&cu.completed, NULL);
	/* The stack is newest first: reverse so buffers decode in completion order. */
	struct cupti_buffer *fifo = NULL;
	while (list) {
		struct cupti_buffer *next = list->next;
		list->next = fifo;
		fifo = list;
		list = next;
	}
	size_t records = 0;
	if (fifo)
		cupti_clock_sample();
	while (fifo) {
		struct cupti_buffer *b = fifo;
		fifo = b->next;
		CUpti_Activity *record = NULL;
		while (cu.fn.next_record(b->data, b->valid, &record) == CUPTI_SUCCESS) {
			cupti_decode(record);
			records++;
		}
		size_t dropped = 0;
		if (cu.fn.dropped_records(NULL, 0, &dropped) == CUPTI_SUCCESS)
			cu.dropped_records += dropped;
		if (cu.buffers_zeroed_by_us) {
			/* CUPTI appends records and hands a buffer back only after the last one it
			 * counts in valid; a margin covers anything it may have begun past that. */
			size_t dirty = (b->valid + CUPTI_ZERO_MARGIN + 4095) & ~(size_t)4095;
			memset(b->data, 0, dirty < CUPTI_BUFFER_BYTES ? dirty : CUPTI_BUFFER_BYTES);
		}
		spare_push(b);
	}
	return records;
}
