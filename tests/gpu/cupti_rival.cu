// Another CUPTI client in the traced process: subscribes to CUPTI *before* the first CUDA call,
// then launches RIVAL_KERNELS kernels inside RIVAL_RANGES NVTX ranges "rival_c" and exits with
// RIVAL_EXIT. Prints "rival_subscribe RC" (0: this program won; 39 =
// CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED: cuscope's injection subscribed first).
// libcupti is dlopened so the binary runs on any host with CUDA 13's libcupti.so.13.
#include <cuda_runtime.h>
#include <cupti.h>
#include <dlfcn.h>
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

enum { RIVAL_KERNELS = 20, RIVAL_RANGES = 5, RIVAL_EXIT = 5 };

extern "C" __global__ void rivalKernel(float *p, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		p[i] += 1.0f;
}

static void CUPTIAPI rival_callback(void *, CUpti_CallbackDomain, CUpti_CallbackId, const void *)
{
}

typedef CUptiResult (*subscribe_fn)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *);
typedef CUptiResult (*enable_domain_fn)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain);

int main(void)
{
	const char *names[] = {"libcupti.so.13", "libcupti.so", "/usr/local/cuda/lib64/libcupti.so.13",
			       "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13"};
	void *lib = NULL;
	for (unsigned i = 0; i < sizeof names / sizeof names[0] && !lib; i++)
		lib = dlopen(names[i], RTLD_NOW | RTLD_GLOBAL);
	if (!lib) {
		printf("rival_subscribe none (no libcupti: %s)\n", dlerror());
		return 3;
	}
	subscribe_fn subscribe = (subscribe_fn)dlsym(lib, "cuptiSubscribe");
	enable_domain_fn enable_domain = (enable_domain_fn)dlsym(lib, "cuptiEnableDomain");
	if (!subscribe) {
		printf("rival_subscribe none (no cuptiSubscribe)\n");
		return 3;
	}
	CUpti_SubscriberHandle h;
	CUptiResult rc = subscribe(&h, (CUpti_CallbackFunc)rival_callback, NULL);
	if (rc == CUPTI_SUCCESS && enable_domain)
		enable_domain(1, h, CUPTI_CB_DOMAIN_RUNTIME_API);
	printf("rival_subscribe %d\n", (int)rc);
	fflush(stdout);

	const int n = 1 << 12;
	float *d;
	if (cudaMalloc(&d, n * sizeof(float)) != cudaSuccess) {
		fprintf(stderr, "cupti_rival: cudaMalloc failed\n");
		return 2;
	}
	for (int r = 0; r < RIVAL_RANGES; r++) {
		nvtxRangePushA("rival_c");
		for (int i = 0; i < RIVAL_KERNELS / RIVAL_RANGES; i++)
			rivalKernel<<<(n + 255) / 256, 256>>>(d, n);
		cudaDeviceSynchronize();
		nvtxRangePop();
	}
	printf("pid %d\n", (int)getpid());
	printf("TRUTH {\"kernels\": {\"rivalKernel\": %d}, \"nvtx\": {\"rival_c\": %d}, \"exit\": %d}\n",
	       RIVAL_KERNELS, RIVAL_RANGES, RIVAL_EXIT);
	fflush(stdout);
	return RIVAL_EXIT;
}
