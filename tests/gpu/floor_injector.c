/*
 * The overhead floor for tests/gpu/bench.sh: the least a CUPTI-based tracer can do. A CUDA
 * injection library (CUDA_INJECTION64_PATH) that enables only CONCURRENT_KERNEL activity records,
 * with cuscope's default buffer size (4 MiB) and flush period (a thread calling
 * cuptiActivityFlushAll every 20 ms), walks every completed buffer and counts its records. No API
 * records, no NVTX, no sampling, no socket. At exit it prints "floor_injector: N kernel records,
 * M dropped" to stderr so a run can be checked for having traced at all.
 * Environment: FLOOR_FLUSH_MS (default 20).
 */
#include <cupti.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define FLOOR_BUFFER_BYTES (4u << 20)

static _Atomic unsigned long long kernel_records;
static _Atomic unsigned long long dropped_records;
static _Atomic int flush_stop;
static pthread_t flush_thread;

static void CUPTIAPI floor_buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
	*max_records = 0;
	*size = FLOOR_BUFFER_BYTES;
	*buffer = aligned_alloc(8, FLOOR_BUFFER_BYTES);
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
	free(buffer);
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
