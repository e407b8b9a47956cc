/*
 * A stand-in libnvidia-ml.so.1 for the CPU-only GPU metrics test (t293): NVML answers for the fake
 * devices of tests/support/fake_cupti.c (UUIDs f0+i..) with a utilisation of 40 % and no GPM, so
 * the collector's last fallback (NVML utilisation) samples, holding the GPU's lock, without a GPU.
 * Loaded by name through LD_LIBRARY_PATH.
 */
#include <stdio.h>
#include <string.h>

#define FAKE_EXPORT __attribute__((visibility("default")))

struct fake_nvml_util {
	unsigned int gpu, memory;
};

FAKE_EXPORT int nvmlInit_v2(void)
{
	return 0;
}

FAKE_EXPORT int nvmlShutdown(void)
{
	return 0;
}

/* "GPU-f0f1f2f3-..." for device 0 as fake_cupti.c makes it: the first byte says which device. */
FAKE_EXPORT int nvmlDeviceGetHandleByUUID(const char *uuid, void **device)
{
	unsigned first;
	if (strncmp(uuid, "GPU-", 4) != 0 || sscanf(uuid + 4, "%2x", &first) != 1 || first < 0xf0)
		return 13; /* NVML_ERROR_NOT_FOUND */
	*device = (void *)(unsigned long)(first - 0xf0 + 1);
	return 0;
}

FAKE_EXPORT int nvmlDeviceGetUtilizationRates(void *device, struct fake_nvml_util *u)
{
	if (!device)
		return 2; /* NVML_ERROR_INVALID_ARGUMENT */
	u->gpu = 40;
	u->memory = 10;
	return 0;
}
