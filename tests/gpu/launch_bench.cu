// Launch-rate benchmark: LAUNCHES empty-ish kernel launches on one stream (default 200000, or
// argv[1]), after 2000 warm-up launches. With argv[2] = N, each launch also makes N cheap runtime
// calls (cudaGetDevice and cudaGetLastError in turn), as a framework's dispatcher does around
// every operator: what a tracer costs calls it does not record shows there. Prints "launches_per_s X" (timed
// on the host around the loop and the final synchronize), then "gpu_used_mb X" (device memory in use, all
// processes) and "rss_mb X" (this process's peak resident set, where an injected collector lives too).
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

extern "C" __global__ void tinyKernel(int *p)
{
	if (threadIdx.x == 0 && p)
		p[blockIdx.x] += 1;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	long launches = argc > 1 ? atol(argv[1]) : 200000;
	int extra_calls = argc > 2 ? atoi(argv[2]) : 0;
	int device = 0;
	int *d;
	cudaStream_t s;
	if (launches <= 0 || cudaMalloc(&d, sizeof(int)) != cudaSuccess ||
	    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) {
		fprintf(stderr, "launch_bench: CUDA setup failed\n");
		return 2;
	}
	for (int i = 0; i < 2000; i++)
		tinyKernel<<<1, 32, 0, s>>>(d);
	cudaStreamSynchronize(s);
	double t0 = now_s();
	for (long i = 0; i < launches; i++) {
		for (int c = 0; c < extra_calls; c++)
			if (c & 1)
				(void)cudaGetLastError();
			else
				(void)cudaGetDevice(&device);
		tinyKernel<<<1, 32, 0, s>>>(d);
	}
	cudaError_t e = cudaStreamSynchronize(s);
	double t1 = now_s();
	if (e != cudaSuccess || cudaGetLastError() != cudaSuccess) {
		fprintf(stderr, "launch_bench: %s\n", cudaGetErrorString(e));
		return 2;
	}
	printf("extra_calls_per_launch %d\n", extra_calls);
	printf("launches %ld seconds %.6f\n", launches, t1 - t0);
	printf("launches_per_s %.0f\n", launches / (t1 - t0));
	size_t free_bytes = 0, total_bytes = 0;
	if (cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess)
		printf("gpu_used_mb %.0f\n", (double)(total_bytes - free_bytes) / (1 << 20));
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru) == 0)
		printf("rss_mb %.0f\n", ru.ru_maxrss / 1024.0);
	return 0;
}
