/*
 * One rank of a "data-parallel job" for the CPU-only clock alignment test (t228): it launches the
 * same sequence of NCCL-named kernels as its peer, in lock-step, through the stand-in libcupti
 * (tests/support/fake_cupti.c, at CUSCOPE_CUPTI_PATH), which stamps each kernel from the host clock
 * right after its launch. Before each launch the two ranks meet at a barrier (a byte each way
 * through two FIFOs), so the k-th kernels of both end together, as the k-th collective of a
 * communicator does on every rank.
 *
 * usage: fake_nccl_ranks COLLECTIVES MY_FIFO PEER_FIFO [KERNEL_NAME [EXTRA]]
 *   MY_FIFO is read, PEER_FIFO written (the peer swaps them). KERNEL_NAME defaults to
 *   ncclDevKernel_AllReduce_Sum_f32_RING_LL. EXTRA more kernels of that name follow without a
 *   barrier (a rank whose capture holds more collectives than its peer's). Prints "rank RANK pid
 *   PID" (RANK from the environment) and the stand-in's report line. Gives up after 120 s (a peer
 *   that never came).
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Writes one byte to the peer, then waits for the peer's: both pass once both arrived. */
static int barrier(int mine, int peer)
{
	char c = 'k';
	ssize_t n;
	while ((n = write(peer, &c, 1)) < 0 && errno == EINTR)
		;
	if (n != 1)
		return -1;
	while ((n = read(mine, &c, 1)) < 0 && errno == EINTR)
		;
	return n == 1 ? 0 : -1;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr,
		        "usage: fake_nccl_ranks COLLECTIVES MY_FIFO PEER_FIFO [KERNEL_NAME [EXTRA]]\n");
		return 2;
	}
	int collectives = atoi(argv[1]);
	const char *kernel = argc > 4 ? argv[4] : "ncclDevKernel_AllReduce_Sum_f32_RING_LL";
	int extra = argc > 5 ? atoi(argv[5]) : 0;
	alarm(120);
	/* O_RDWR: opening a FIFO so never waits for the other end. */
	int mine = open(argv[2], O_RDWR | O_CLOEXEC);
	int peer = open(argv[3], O_RDWR | O_CLOEXEC);
	if (mine < 0 || peer < 0) {
		fprintf(stderr, "fake_nccl_ranks: cannot open the FIFOs %s, %s: %s\n", argv[2], argv[3],
		        strerror(errno));
		return 3;
	}
	const char *cudart = getenv("CUSCOPE_CUPTI_PATH");
	void *h = cudart && *cudart ? dlopen(cudart, RTLD_NOW) : NULL;
	void (*launch)(const char *) = h ? (void (*)(const char *))dlsym(h, "fake_cuda_launch_kernel") : NULL;
	void (*init)(void) = h ? (void (*)(void))dlsym(h, "fake_cuda_init") : NULL;
	void (*report)(void) = h ? (void (*)(void))dlsym(h, "fake_cuda_report") : NULL;
	if (!launch || !init || !report) {
		fprintf(stderr, "fake_nccl_ranks: no stand-in CUDA at CUSCOPE_CUPTI_PATH=%s\n",
		        cudart ? cudart : "");
		return 3;
	}
	init(); /* cudaFree(0): the collector is injected here */
	const char *rank = getenv("RANK");
	printf("rank %s pid %ld\n", rank ? rank : "?", (long)getpid());
	fflush(stdout);
	for (int k = 0; k < collectives; k++) {
		if (barrier(mine, peer) != 0) {
			fprintf(stderr, "fake_nccl_ranks: the peer went away at collective %d\n", k);
			return 4;
		}
		launch(kernel);
		/* The compute between collectives; lets the collector's threads run on a busy machine. */
		struct timespec pause = {0, 2000000};
		nanosleep(&pause, NULL);
	}
	for (int k = 0; k < extra; k++) {
		launch(kernel);
		struct timespec pause = {0, 2000000};
		nanosleep(&pause, NULL);
	}
	report();
	return 0;
}
