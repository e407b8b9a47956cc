/*
 * A "training loop" without NVTX for the inferred-steps test (t280): it launches, through the stand-in
 * libcupti (tests/support/fake_cupti.c, at CUSCOPE_CUPTI_PATH), the kernel sequence of a small model's
 * iterations: a forward pass (gemm, relu per layer, then the loss), a backward pass, an optimizer, after
 * a data-loading pause. The first two iterations are warm-up (an autotuner's extra kernels first), every
 * 7th step runs an eval (forward kernels again and an argmax), every 10th a logging kernel; each step has
 * 3 to 6 layers (a data-dependent kernel count).
 *
 * usage: fake_train_loop STEPS [PAUSE_US]
 *   Prints "pid PID", "steps STEPS" and the stand-in's report line.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static void (*launch)(const char *);

static void pause_us(long us)
{
	struct timespec t = {us / 1000000, (us % 1000000) * 1000};
	nanosleep(&t, NULL);
}

static void forward(int layers)
{
	for (int l = 0; l < layers; l++) {
		launch("ampere_sgemm_128x64_tn");
		launch("relu_kernel");
	}
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: fake_train_loop STEPS [PAUSE_US]\n");
		return 2;
	}
	int steps = atoi(argv[1]);
	long pause = argc > 2 ? atol(argv[2]) : 2000;
	const char *cudart = getenv("CUSCOPE_CUPTI_PATH");
	void *h = cudart && *cudart ? dlopen(cudart, RTLD_NOW) : NULL;
	launch = h ? (void (*)(const char *))dlsym(h, "fake_cuda_launch_kernel") : NULL;
	void (*init)(void) = h ? (void (*)(void))dlsym(h, "fake_cuda_init") : NULL;
	void (*report)(void) = h ? (void (*)(void))dlsym(h, "fake_cuda_report") : NULL;
	if (!launch || !init || !report) {
		fprintf(stderr, "fake_train_loop: no stand-in CUDA at CUSCOPE_CUPTI_PATH=%s\n",
		        cudart ? cudart : "");
		return 3;
	}
	init(); /* cudaFree(0): the collector is injected here */
	printf("pid %ld\n", (long)getpid());
	fflush(stdout);
	unsigned seed = 1;
	for (int s = 0; s < steps; s++) {
		pause_us(pause); /* the data loader */
		if (s < 2)
			for (int k = 0; k < 25; k++)
				launch(k % 2 ? "autotune_candidate_a" : "autotune_candidate_b");
		seed = seed * 1103515245u + 12345u;
		int layers = 3 + (int)(seed >> 16) % 4;
		forward(layers);
		launch("cross_entropy_loss");
		for (int l = 0; l < layers; l++) {
			launch("relu_backward");
			launch("ampere_sgemm_128x64_nn");
			launch("ampere_sgemm_128x64_nt");
		}
		launch("multi_tensor_apply_sgd");
		launch("zero_grad_fill");
		if (s % 7 == 6) {
			forward(3);
			launch("argmax_kernel");
		}
		if (s % 10 == 9)
			launch("loss_item_reduce");
	}
	printf("steps %d\n", steps);
	report();
	return 0;
}
