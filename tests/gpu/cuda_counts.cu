// Known counts of GPU activity for tests/gpu/run.sh (check "counts"). Prints the truth it used as
// one line "TRUTH {json}" so the checker reads the numbers from here instead of duplicating them.
// Exit 0 on success, 2 on any CUDA error (with the error on stderr).
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CK(x)                                                                                     \
	do {                                                                                      \
		cudaError_t e_ = (x);                                                             \
		if (e_ != cudaSuccess) {                                                          \
			fprintf(stderr, "cuda_counts: %s failed: %s (line %d)\n", #x,             \
				cudaGetErrorString(e_), __LINE__);                                \
			exit(2);                                                                  \
		}                                                                                 \
	} while (0)

// kernelA has C linkage (name "kernelA"); kernelB is in a namespace so its name must be demangled
// ("cs_test::kernelB(float*, int)" or similar) by the collector or the stats.
extern "C" __global__ void kernelA(float *p, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		p[i] = p[i] * 1.0001f + 1.0f;
}

namespace cs_test {
__global__ void kernelB(float *p, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		p[i] = p[i] * 0.5f + 2.0f;
}
} // namespace cs_test

enum {
	N_A = 100,	     // kernelA on s1
	N_B = 50,	     // kernelB on s2
	N_H2D_PAGEABLE = 10, // cudaMemcpy, pageable -> device, sync
	N_H2D_PINNED = 20,   // cudaMemcpyAsync on s1, pinned -> device
	N_D2H_PINNED = 20,   // cudaMemcpyAsync on s2, device -> pinned
	N_D2H_PAGEABLE = 10, // cudaMemcpy, device -> pageable, sync
	N_D2D = 4,	     // cudaMemcpyAsync on s1, device -> device
	N_MEMSET = 5,	     // cudaMemset (sync)
	N_MEMSET_ASYNC = 7,  // cudaMemsetAsync on s2
	N_STREAM_SYNC = 6,   // cudaStreamSynchronize
	N_DEVICE_SYNC = 4,   // cudaDeviceSynchronize (the last one before exit included)
	N_EVENT_SYNC = 3,    // cudaEventSynchronize
	N_STREAM_WAIT = 2,   // cudaStreamWaitEvent
};
static const size_t B_H2D_PAGEABLE = 1 << 20, B_H2D_PINNED = 256 << 10, B_D2H_PINNED = 128 << 10,
		    B_D2H_PAGEABLE = 512 << 10, B_D2D = 64 << 10, B_MEMSET = 4096, B_MEMSET_ASYNC = 8192;

int main(void)
{
	const int n = 1 << 16;
	float *dA, *dB, *dBuf, *dBuf2, *hPinned;
	char *hPageable;
	cudaStream_t s1, s2;
	cudaEvent_t ev;
	int dev = 0;

	CK(cudaSetDevice(dev));
	// The span of the work on CLOCK_MONOTONIC, for the clock check (tests/gpu/clock_check.py).
	struct timespec span_start, span_end;
	clock_gettime(CLOCK_MONOTONIC, &span_start);
	CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
	CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
	CK(cudaEventCreate(&ev));
	CK(cudaMalloc(&dA, n * sizeof(float)));
	CK(cudaMalloc(&dB, n * sizeof(float)));
	CK(cudaMalloc(&dBuf, 1 << 20));
	CK(cudaMalloc(&dBuf2, 1 << 20));
	CK(cudaMallocHost(&hPinned, 1 << 20));
	hPageable = (char *)malloc(1 << 20);
	if (!hPageable)
		return 2;
	memset(hPageable, 1, 1 << 20);
	memset(hPinned, 0, 1 << 20);

	for (int i = 0; i < N_MEMSET; i++)
		CK(cudaMemset(dA, 0, B_MEMSET));
	for (int i = 0; i < N_MEMSET_ASYNC; i++)
		CK(cudaMemsetAsync(dB, 1, B_MEMSET_ASYNC, s2));
	CK(cudaStreamSynchronize(s2)); // stream sync 1

	for (int i = 0; i < N_H2D_PAGEABLE; i++)
		CK(cudaMemcpy(dBuf, hPageable, B_H2D_PAGEABLE, cudaMemcpyHostToDevice));
	for (int i = 0; i < N_H2D_PINNED; i++)
		CK(cudaMemcpyAsync(dBuf, hPinned, B_H2D_PINNED, cudaMemcpyHostToDevice, s1));
	for (int i = 0; i < N_D2D; i++)
		CK(cudaMemcpyAsync(dBuf2, dBuf, B_D2D, cudaMemcpyDeviceToDevice, s1));
	for (int i = 0; i < N_A; i++)
		kernelA<<<(n + 255) / 256, 256, 0, s1>>>(dA, n);
	CK(cudaGetLastError());
	CK(cudaEventRecord(ev, s1));
	for (int i = 0; i < N_STREAM_WAIT; i++)
		CK(cudaStreamWaitEvent(s2, ev, 0));
	for (int i = 0; i < N_B; i++)
		cs_test::kernelB<<<(n + 255) / 256, 256, 0, s2>>>(dB, n);
	CK(cudaGetLastError());
	for (int i = 0; i < N_D2H_PINNED; i++)
		CK(cudaMemcpyAsync(hPinned, dBuf, B_D2H_PINNED, cudaMemcpyDeviceToHost, s2));
	CK(cudaEventSynchronize(ev)); // event sync 1
	CK(cudaStreamSynchronize(s1)); // stream sync 2
	CK(cudaStreamSynchronize(s2)); // stream sync 3
	CK(cudaDeviceSynchronize()); // device sync 1
	for (int i = 0; i < N_D2H_PAGEABLE; i++)
		CK(cudaMemcpy(hPageable, dBuf, B_D2H_PAGEABLE, cudaMemcpyDeviceToHost));
	for (int i = 1; i < N_EVENT_SYNC; i++) {
		CK(cudaEventRecord(ev, s1));
		CK(cudaEventSynchronize(ev)); // event syncs 2..N
	}
	for (int i = 3; i < N_STREAM_SYNC; i++)
		CK(cudaStreamSynchronize(i & 1 ? s1 : s2)); // stream syncs 4..N
	for (int i = 1; i < N_DEVICE_SYNC; i++)
		CK(cudaDeviceSynchronize()); // device syncs 2..N

	clock_gettime(CLOCK_MONOTONIC, &span_end);
	printf("SPAN_NS %lld %lld\n", span_start.tv_sec * 1000000000ll + span_start.tv_nsec,
	       span_end.tv_sec * 1000000000ll + span_end.tv_nsec);
	printf("pid %d\n", (int)getpid());
	printf("TRUTH {\"device\": %d,"
	       " \"kernels\": {\"kernelA\": %d, \"cs_test::kernelB\": %d},"
	       " \"streams\": [%d, %d],"
	       " \"memcpy\": ["
	       "{\"kind\": \"HtoD\", \"src_mem\": \"pageable\", \"dst_mem\": \"device\", \"async\": false, \"count\": %d, \"bytes\": %zu},"
	       " {\"kind\": \"HtoD\", \"src_mem\": \"pinned\", \"dst_mem\": \"device\", \"async\": true, \"count\": %d, \"bytes\": %zu},"
	       " {\"kind\": \"DtoD\", \"src_mem\": \"device\", \"dst_mem\": \"device\", \"async\": true, \"count\": %d, \"bytes\": %zu},"
	       " {\"kind\": \"DtoH\", \"src_mem\": \"device\", \"dst_mem\": \"pinned\", \"async\": true, \"count\": %d, \"bytes\": %zu},"
	       " {\"kind\": \"DtoH\", \"src_mem\": \"device\", \"dst_mem\": \"pageable\", \"async\": false, \"count\": %d, \"bytes\": %zu}],"
	       " \"memset\": {\"count\": %d, \"bytes\": %zu},"
	       " \"sync\": {\"stream\": %d, \"context\": %d, \"event\": %d, \"stream_wait_event\": %d},"
	       " \"api\": {\"cudaLaunchKernel\": %d, \"cudaMemcpy\": %d, \"cudaMemcpyAsync\": %d, \"cudaMemset\": %d,"
	       " \"cudaMemsetAsync\": %d, \"cudaStreamSynchronize\": %d, \"cudaDeviceSynchronize\": %d,"
	       " \"cudaEventSynchronize\": %d, \"cudaStreamWaitEvent\": %d}}\n",
	       dev, N_A, N_B, N_A, N_B, N_H2D_PAGEABLE, N_H2D_PAGEABLE * B_H2D_PAGEABLE, N_H2D_PINNED,
	       N_H2D_PINNED * B_H2D_PINNED, N_D2D, N_D2D * B_D2D, N_D2H_PINNED, N_D2H_PINNED * B_D2H_PINNED,
	       N_D2H_PAGEABLE, N_D2H_PAGEABLE * B_D2H_PAGEABLE, N_MEMSET + N_MEMSET_ASYNC,
	       N_MEMSET * B_MEMSET + N_MEMSET_ASYNC * B_MEMSET_ASYNC, N_STREAM_SYNC, N_DEVICE_SYNC, N_EVENT_SYNC,
	       N_STREAM_WAIT, N_A + N_B, N_H2D_PAGEABLE + N_D2H_PAGEABLE, N_H2D_PINNED + N_D2D + N_D2H_PINNED,
	       N_MEMSET, N_MEMSET_ASYNC, N_STREAM_SYNC, N_DEVICE_SYNC, N_EVENT_SYNC, N_STREAM_WAIT);
	fflush(stdout);
	return 0;
}
