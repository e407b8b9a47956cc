/*
 * The overhead floor for tests/gpu/bench.sh: the least a CUPTI-based tracer can do. A CUDA
 * injection library (CUDA_INJECTION64_PATH) that enables only CONCURRENT_KERNEL activity records,
 * with cuscope's default buffer size (4 MiB) and flush period (a thread calling
 * cuptiActivityFlushAll every 20 ms), walks every completed buffer and counts its records. No API
 * records, no NVTX, no sampling, no socket. Like cuscope, it hands CUPTI buffers that are already
 * zero (CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER), zeroing a used one on CUPTI's completion
 * thread before reuse, so no program thread zeroes 4 MiB per buffer. At exit it prints "floor_injector: N
 * kernel records, M dropped" to stderr so a run can be checked for having traced at all. Environment:
 * FLOOR_FLUSH_MS (default 20).
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
	fprintf(stderr, "floor_injector: %llu kernel records, %llu dropped\n",
	        (unsigned long long)atomic_load(&kernel_records),
	        (unsigned long long)atomic_load(&dropped_records));
}

/* Called by the CUDA driver at its first API call (CUDA_INJECTION64_PATH). */
__attribute__((visibility("default"))) int InitializeInjection(void)
{
	uint8_t zeroed = 1;
	size_t zeroed_size = sizeof zeroed;
	zeroed_by_us = cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, &zeroed_size,
	                                         &zeroed) == CUPTI_SUCCESS;
	if (cuptiActivityRegisterCallbacks(floor_buffer_requested, floor_buffer_completed) != CUPTI_SUCCESS ||
	    cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS) {
		fprintf(stderr, "floor_injector: CUPTI refused; not tracing\n");
		return 1;
	}
	pthread_create(&flush_thread, NULL, floor_flush_main, NULL);
	pthread_detach(flush_thread);
	atexit(floor_at_exit);
	return 1;
}
