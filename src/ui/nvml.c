#include "cuscope/nvml.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NVML_POLL_NS  500000000ull /* at most 2 polls a second per device */
#define NVML_MAX_DEVS 16

typedef struct nvml_device_st *nvml_device_t;
struct nvml_utilization {
	unsigned int gpu, memory;
};

struct nvml_dev {
	char uuid[48];
	nvml_device_t handle;
	int ok;
	uint64_t polled_ns;
	unsigned percent;
};

struct nvml {
	void *lib;
	int (*shutdown)(void);
	int (*by_uuid)(const char *, nvml_device_t *);
	int (*utilization)(nvml_device_t, struct nvml_utilization *);
	struct nvml_dev devs[NVML_MAX_DEVS];
	int ndevs;
};

struct nvml *nvml_open(void)
{
	const char *off = getenv("CUSCOPE_NO_NVML");
	if (off && *off == '1')
		return NULL;
	void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!lib)
		return NULL;
	int (*init)(void) = (int (*)(void))dlsym(lib, "nvmlInit_v2");
	struct nvml *nv = calloc(1, sizeof *nv);
	if (!nv || !init) {
		free(nv);
		dlclose(lib);
		return NULL;
	}
	nv->lib = lib;
	nv->shutdown = (int (*)(void))dlsym(lib, "nvmlShutdown");
	nv->by_uuid = (int (*)(const char *, nvml_device_t *))dlsym(lib, "nvmlDeviceGetHandleByUUID");
	nv->utilization =
	    (int (*)(nvml_device_t, struct nvml_utilization *))dlsym(lib, "nvmlDeviceGetUtilizationRates");
	if (!nv->by_uuid || !nv->utilization || init() != 0) {
		dlclose(lib);
		free(nv);
		return NULL;
	}
	return nv;
}

void nvml_close(struct nvml *nv)
{
	if (!nv)
		return;
	if (nv->shutdown)
		nv->shutdown();
	dlclose(nv->lib);
	free(nv);
}

int nvml_sm_util(struct nvml *nv, const char *uuid, uint64_t now_ns, unsigned *percent)
{
	if (!nv || !uuid || !*uuid)
		return -1;
	struct nvml_dev *d = NULL;
	for (int i = 0; i < nv->ndevs; i++)
		if (strcmp(nv->devs[i].uuid, uuid) == 0)
			d = &nv->devs[i];
	if (!d) {
		if (nv->ndevs == NVML_MAX_DEVS)
			return -1;
		d = &nv->devs[nv->ndevs++];
		snprintf(d->uuid, sizeof d->uuid, "%s", uuid);
		d->ok = nv->by_uuid(uuid, &d->handle) == 0;
	}
	if (!d->ok)
		return -1;
	if (!d->polled_ns || now_ns - d->polled_ns >= NVML_POLL_NS) {
		struct nvml_utilization u;
		d->polled_ns = now_ns;
		if (nv->utilization(d->handle, &u) != 0) {
			d->ok = 0;
			return -1;
		}
		d->percent = u.gpu;
	}
	*percent = d->percent;
	return 0;
}
