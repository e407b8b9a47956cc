// A CUDA graph of GRAPH_NODES kernels, captured from a stream and launched GRAPH_LAUNCHES times,
// plus PLAIN plain launches. Graph kernels have no per-node API record, so the collector must not
// drop them for lack of a correlation match. Prints "TRUTH {json}".
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define CK(x)                                                                                     \
	do {                                                                                      \
		cudaError_t e_ = (x);                                                             \
		if (e_ != cudaSuccess) {                                                          \
			fprintf(stderr, "cuda_graph: %s failed: %s (line %d)\n", #x,              \
				cudaGetErrorString(e_), __LINE__);                                \
			exit(2);                                                                  \
		}                                                                                 \
	} while (0)

extern "C" __global__ void graphKernel(float *p, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		p[i] += 1.0f;
}

extern "C" __global__ void plainKernel(float *p, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		p[i] *= 0.5f;
}

enum { GRAPH_NODES = 12, GRAPH_LAUNCHES = 40, PLAIN = 7 };

int main(void)
{
	const int n = 1 << 14;
	float *d;
	cudaStream_t s;
	cudaGraph_t graph;
	cudaGraphExec_t exec;

	CK(cudaSetDevice(0));
	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CK(cudaMalloc(&d, n * sizeof(float)));
	CK(cudaMemsetAsync(d, 0, n * sizeof(float), s));
	CK(cudaStreamSynchronize(s));

	CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
	for (int i = 0; i < GRAPH_NODES; i++)
		graphKernel<<<(n + 255) / 256, 256, 0, s>>>(d, n);
	CK(cudaStreamEndCapture(s, &graph));
	CK(cudaGraphInstantiate(&exec, graph, 0));
	for (int i = 0; i < GRAPH_LAUNCHES; i++)
		CK(cudaGraphLaunch(exec, s));
	for (int i = 0; i < PLAIN; i++)
		plainKernel<<<(n + 255) / 256, 256, 0, s>>>(d, n);
	CK(cudaGetLastError());
	CK(cudaStreamSynchronize(s));

	float h = 0;
	CK(cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost));
	printf("pid %d\n", (int)getpid());
	printf("value %.1f\n", h);
	printf("TRUTH {\"kernels\": {\"graphKernel\": %d, \"plainKernel\": %d}, \"graph_nodes\": %d, "
	       "\"graph_launches\": %d, \"api\": {\"cudaGraphLaunch\": %d, \"cudaLaunchKernel\": %d}}\n",
	       GRAPH_NODES * GRAPH_LAUNCHES, PLAIN, GRAPH_NODES, GRAPH_LAUNCHES, GRAPH_LAUNCHES,
	       GRAPH_NODES + PLAIN);
	fflush(stdout);
	return 0;
}
