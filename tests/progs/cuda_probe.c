/*
 * Loads the CUDA runtime with dlopen (no link-time CUDA dependency) and asks for the device count,
 * as a CUDA program on a machine without a GPU or driver would. Prints "devices N err E".
 *   cuda_probe [PATH_TO_LIBCUDART]
 * Exits 3 if the runtime cannot be loaded at all.
 */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : "libcudart.so";
	void *rt = dlopen(path, RTLD_NOW);
	if (!rt) {
		printf("no cuda runtime: %s\n", dlerror());
		return 3;
	}
	int (*get_count)(int *) = (int (*)(int *))dlsym(rt, "cudaGetDeviceCount");
	int count = 0;
	int err = get_count ? get_count(&count) : -1;
	printf("devices %d err %d\n", count, err);
	return 0;
}
