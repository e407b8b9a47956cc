/*
 * Optional NVML: SM utilisation per GPU from libnvidia-ml.so.1, loaded with dlopen so cuscope runs
 * where it is missing. Each device is polled at most twice a second.
 */
#ifndef CUSCOPE_NVML_H
#define CUSCOPE_NVML_H

#include <stdint.h>

struct nvml;

/* Loads and initialises NVML; NULL when the library or a GPU is not there (nothing to show). */
struct nvml *nvml_open(void);
void nvml_close(struct nvml *nv);
/* SM utilisation (0-100) of the GPU with this UUID ("GPU-..."): 0, or -1 when unknown. */
int nvml_sm_util(struct nvml *nv, const char *uuid, uint64_t now_ns, unsigned *percent);

#endif
