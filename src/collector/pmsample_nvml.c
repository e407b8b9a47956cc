/* The GPU metrics fallbacks through NVML: GPM (Hopper+), then plain utilisation. */
#include "pmsample_impl.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The NVML GPM metrics kept (SM, occupancy, tensor, DRAM, PCIe, NVLink) and their names. */
const struct pmsample_gpm_name pmsample_gpm_metrics[PMSAMPLE_GPM_COUNT] = {
    {2, "nvml:gpm_sm_util"},          {3, "nvml:gpm_sm_occupancy"},     {5, "nvml:gpm_tensor_util"},
    {10, "nvml:gpm_dram_bw_util"},    {20, "nvml:gpm_pcie_tx_mib_s"},   {21, "nvml:gpm_pcie_rx_mib_s"},
    {60, "nvml:gpm_nvlink_rx_mib_s"}, {61, "nvml:gpm_nvlink_tx_mib_s"},
};

/* ---- NVML ---- */

static int pmsample_nvml_load(char *why, size_t why_size)
{
	if (pms.nv.ready)
		return 0;
	if (pms.nv.why[0]) {
		snprintf(why, why_size, "%s", pms.nv.why);
		return -ENOENT;
	}
	pms.nv.lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
	int (*init)(void) = pms.nv.lib ? (int (*)(void))dlsym(pms.nv.lib, "nvmlInit_v2") : NULL;
	pms.nv.by_uuid = pms.nv.lib ? dlsym(pms.nv.lib, "nvmlDeviceGetHandleByUUID") : NULL;
	pms.nv.utilization = pms.nv.lib ? dlsym(pms.nv.lib, "nvmlDeviceGetUtilizationRates") : NULL;
	if (!init || !pms.nv.by_uuid || !pms.nv.utilization || init() != 0) {
		snprintf(pms.nv.why, sizeof pms.nv.why, "%s",
		         pms.nv.lib ? "NVML does not initialise" : "libnvidia-ml.so.1 not found");
		snprintf(why, why_size, "%s", pms.nv.why);
		return -ENOENT;
	}
	/* GPM is optional (driver 520+, Hopper+). */
	pms.nv.gpm_support = dlsym(pms.nv.lib, "nvmlGpmQueryDeviceSupport");
	pms.nv.gpm_alloc = dlsym(pms.nv.lib, "nvmlGpmSampleAlloc");
	pms.nv.gpm_free = dlsym(pms.nv.lib, "nvmlGpmSampleFree");
	pms.nv.gpm_get = dlsym(pms.nv.lib, "nvmlGpmSampleGet");
	pms.nv.gpm_metrics = dlsym(pms.nv.lib, "nvmlGpmMetricsGet");
	pms.nv.ready = 1;
	return 0;
}

/* NVML GPM for one GPU: 0, or -errno with why. */
int pmsample_gpm_start(struct pmsample_gpu *g, char *why, size_t why_size)
{
	if (pmsample_nvml_load(why, why_size) != 0)
		return -ENOENT;
	if (!g->nvml && pms.nv.by_uuid(g->uuid_text, &g->nvml) != 0) {
		g->nvml = NULL;
		snprintf(why, why_size, "NVML does not know %s", g->uuid_text);
		return -ENOENT;
	}
	struct pmsample_gpm_support sup = {.version = 1};
	if (!pms.nv.gpm_support || !pms.nv.gpm_metrics || pms.nv.gpm_support(g->nvml, &sup) != 0 ||
	    !sup.supported) {
		snprintf(why, why_size, "NVML GPM unsupported (Hopper or later, driver 520+)");
		return -ENOTSUP;
	}
	if (pms.nv.gpm_alloc(&g->gpm[0]) != 0 || pms.nv.gpm_alloc(&g->gpm[1]) != 0) {
		snprintf(why, why_size, "NVML GPM: no sample buffers");
		return -ENOMEM;
	}
	g->gpm_have = 0;
	return 0;
}

void pmsample_gpm_poll(struct pmsample_gpu *g, uint64_t now)
{
	int cur = g->gpm_have ? !g->gpm_prev : 0;
	if (pms.nv.gpm_get(g->nvml, g->gpm[cur]) != 0)
		return;
	if (g->gpm_have) {
		static struct pmsample_gpm_get get; /* sender thread only; 10 KiB off its stack */
		memset(&get, 0, sizeof get);
		get.version = 1;
		get.count = PMSAMPLE_GPM_COUNT;
		get.sample1 = g->gpm[g->gpm_prev];
		get.sample2 = g->gpm[cur];
		for (size_t i = 0; i < PMSAMPLE_GPM_COUNT; i++)
			get.metrics[i].id = pmsample_gpm_metrics[i].id;
		if (pms.nv.gpm_metrics(&get) == 0)
			for (size_t i = 0; i < PMSAMPLE_GPM_COUNT; i++)
				if (get.metrics[i].status == 0)
					pmsample_emit(g, g->nvml_ids[i], WIRE_GPU_METRIC_GPM, g->prev_ns, now,
					              get.metrics[i].value);
	}
	g->gpm_prev = cur;
	g->gpm_have = 1;
	g->prev_ns = now;
}

int pmsample_util_start(struct pmsample_gpu *g, char *why, size_t why_size)
{
	if (pmsample_nvml_load(why, why_size) != 0)
		return -ENOENT;
	struct pmsample_nvml_util u;
	if ((!g->nvml && pms.nv.by_uuid(g->uuid_text, &g->nvml) != 0) ||
	    pms.nv.utilization(g->nvml, &u) != 0) {
		snprintf(why, why_size, "NVML utilisation of %s unreadable", g->uuid_text);
		return -EIO;
	}
	g->prev_ns = clock_mono_ns();
	return 0;
}

void pmsample_util_poll(struct pmsample_gpu *g, uint64_t now)
{
	struct pmsample_nvml_util u;
	if (now - g->prev_ns < PMSAMPLE_NVML_NS || pms.nv.utilization(g->nvml, &u) != 0)
		return;
	pmsample_emit(g, pms.util_id, WIRE_GPU_METRIC_NVML, g->prev_ns, now, (double)u.gpu);
	g->prev_ns = now;
}
