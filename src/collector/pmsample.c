/*
 * GPU hardware metrics, live (an event source): one sampler per physical GPU across the user's
 * processes (gpulock.c), all work on the sender thread (never an application thread). Where
 * CUPTI's PM sampling is usable (CUDA >= 12.6, Hopper and later, profiling permitted, counters
 * free) the GPU samples the metrics pmconfig.c configured into a hardware buffer, which poll
 * decodes every PMSAMPLE_DECODE_NS and evaluates into WIRE_FRAME_GPU_METRICS samples. When refused
 * (privileges, counters held by another profiler such as DCGM or a second rank, virtualised,
 * older CUDA) it falls back to NVML GPM, then to plain NVML utilisation, and says once why.
 */
#include "collector.h"
#include "gpulock.h"
#include "pmconfig.h"
#include "source.h"

#include "cuscope/clock.h"
#include "cuscope/safefs.h"
#include "cuscope/session.h"
#include "cuscope/wire.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/prctl.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cupti_pmsampling.h>
#include <cupti_profiler_target.h>
#include <cupti_result.h>
#include <cupti_target.h>

#define PMSAMPLE_GPUS_MAX    16
#define PMSAMPLE_DECODE_NS   100000000ull  /* decode the hardware buffer this often */
#define PMSAMPLE_RETRY_NS    2000000000ull /* a GPU another process samples: try its lock again */
#define PMSAMPLE_NVML_NS     200000000ull  /* plain NVML utilisation: read this often */
#define PMSAMPLE_HW_BUFFER   (32ull << 20) /* device memory for raw samples (newest kept) */
#define PMSAMPLE_MAX_SAMPLES 512u          /* samples one decode holds */
#define PMSAMPLE_BATCH       64u           /* samples per wire frame */

/* NVML, declared here: the toolkit ships no nvml.h (the driver's library is loaded with dlopen). */
typedef struct pmsample_nvml_device *pmsample_nvml_device_t;
typedef struct pmsample_nvml_sample *pmsample_nvml_sample_t;
struct pmsample_nvml_util {
	unsigned int gpu, memory;
};
struct pmsample_gpm_support {
	unsigned int version, supported;
};
struct pmsample_gpm_metric {
	unsigned int id;
	int status;
	double value;
	struct {
		char *short_name, *long_name, *unit;
	} info;
};
#define PMSAMPLE_GPM_SLOTS 210 /* NVML's NVML_GPM_METRIC_MAX: the array's size in the struct */
struct pmsample_gpm_get {
	unsigned int version, count;
	pmsample_nvml_sample_t sample1, sample2;
	struct pmsample_gpm_metric metrics[PMSAMPLE_GPM_SLOTS];
};

/* The NVML GPM metrics kept (SM, occupancy, tensor, DRAM, PCIe, NVLink) and their names. */
static const struct {
	unsigned id;
	const char *name;
} pmsample_gpm_metrics[] = {
    {2, "nvml:gpm_sm_util"},          {3, "nvml:gpm_sm_occupancy"},     {5, "nvml:gpm_tensor_util"},
    {10, "nvml:gpm_dram_bw_util"},    {20, "nvml:gpm_pcie_tx_mib_s"},   {21, "nvml:gpm_pcie_rx_mib_s"},
    {60, "nvml:gpm_nvlink_rx_mib_s"}, {61, "nvml:gpm_nvlink_tx_mib_s"},
};
#define PMSAMPLE_GPM_COUNT (sizeof pmsample_gpm_metrics / sizeof pmsample_gpm_metrics[0])

enum pmsample_mode { PMSAMPLE_NONE = 0, PMSAMPLE_PM, PMSAMPLE_GPM, PMSAMPLE_NVML, PMSAMPLE_ELSEWHERE };

struct pmsample_gpu {
	int ordinal;
	uint8_t uuid[16];
	char uuid_text[48]; /* "GPU-..." as NVML takes it */
	int lock_fd;        /* held while we sample it, -1 otherwise */
	enum pmsample_mode mode;
	uint64_t retry_ns; /* PMSAMPLE_ELSEWHERE: when to try the lock again */
	/* PM sampling */
	CUpti_PmSampling_Object *obj;
	struct pmconfig *cfg;
	uint8_t *data;
	size_t data_size;
	uint32_t ids[PMCONFIG_METRICS_MAX];
	/* What to say about it, "HEAD<GPU list>TAIL" (GPUs with the same words are said together). */
	const char *note_head;
	char note_tail[400];
	uint32_t note_level;
	int decode_said;      /* a decode or evaluation failure was said (once per GPU) */
	int64_t clock_offset; /* GPU timestamp -> CLOCK_MONOTONIC */
	int clock_known;
	/* NVML */
	pmsample_nvml_device_t nvml;
	pmsample_nvml_sample_t gpm[2];
	int gpm_have; /* a previous sample is in gpm[gpm_prev] */
	int gpm_prev;
	uint64_t prev_ns;
	uint32_t nvml_ids[PMSAMPLE_GPM_COUNT];
};

/* The start: its thread looks at the GPUs (slow: libnvperf_host, configs), the sender then samples. */
enum { PMSAMPLE_IDLE = 0, PMSAMPLE_STARTING = 1, PMSAMPLE_STARTED = 2 };

static struct {
	int enabled; /* not --gpu-metrics off */
	int started; /* the GPUs were looked at (start_state reached STARTED) */
	_Atomic int start_state;
	pthread_t start_thread;
	int start_joinable;            /* start_thread is ours to join */
	_Atomic uint64_t start_cpu_ns; /* its CPU time */
	int named;                     /* the metric names were interned (sender thread) */
	pid_t pid;                     /* the process that started (a forked child starts again) */
	unsigned hz;                   /* samples per second */
	char list[2048];
	const char *metrics[PMCONFIG_METRICS_MAX];
	size_t metric_count;
	struct pmsample_gpu gpu[PMSAMPLE_GPUS_MAX];
	size_t gpu_count;
	uint64_t next_ns;
	uint64_t samples; /* sent */
	struct wire_gpu_metric batch[PMSAMPLE_BATCH];
	size_t batch_n;
	/* libcupti (the one GPU tracing loaded), its PM-sampling entry points */
	struct {
		__typeof__(cuptiProfilerInitialize) *profiler_init;
		__typeof__(cuptiDeviceGetChipName) *chip_name;
		__typeof__(cuptiPmSamplingEnable) *enable;
		__typeof__(cuptiPmSamplingDisable) *disable;
		__typeof__(cuptiPmSamplingSetConfig) *set_config;
		__typeof__(cuptiPmSamplingStart) *start;
		__typeof__(cuptiPmSamplingStop) *stop;
		__typeof__(cuptiPmSamplingDecodeData) *decode;
		__typeof__(cuptiPmSamplingGetCounterAvailability) *availability;
		__typeof__(cuptiPmSamplingGetCounterDataSize) *data_size;
		__typeof__(cuptiPmSamplingCounterDataImageInitialize) *data_init;
		__typeof__(cuptiPmSamplingGetCounterDataInfo) *data_info;
		__typeof__(cuptiPmSamplingCounterDataGetSampleInfo) *sample_info;
		__typeof__(cuptiGetResultString) *result_string;
		int profiler_ready;
	} cu;
	/* libnvidia-ml */
	struct {
		void *lib;
		int ready;
		int (*by_uuid)(const char *, pmsample_nvml_device_t *);
		int (*utilization)(pmsample_nvml_device_t, struct pmsample_nvml_util *);
		int (*gpm_support)(pmsample_nvml_device_t, struct pmsample_gpm_support *);
		int (*gpm_alloc)(pmsample_nvml_sample_t *);
		int (*gpm_free)(pmsample_nvml_sample_t);
		int (*gpm_get)(pmsample_nvml_device_t, pmsample_nvml_sample_t);
		int (*gpm_metrics)(struct pmsample_gpm_get *);
		char why[160];
	} nv;
	uint32_t util_id;
} pms = {.gpu_count = 0};

/* ---- settings ---- */

int pmsample_init(const struct collector_config *config)
{
	memset(&pms, 0, sizeof pms);
	/* Without GPU tracing (--no-gpu, no CUDA) it never starts: it waits for tracing to run. */
	pms.enabled = strcmp(config->gpu_metrics, "off") != 0;
	pms.hz = config->gpu_metrics_hz ? config->gpu_metrics_hz : 50;
	if (!config->gpu_metrics[0]) {
		for (size_t i = 0; i < pmconfig_default_count && i < PMCONFIG_METRICS_MAX; i++)
			pms.metrics[pms.metric_count++] = pmconfig_default_metrics[i];
		return 0;
	}
	snprintf(pms.list, sizeof pms.list, "%s", config->gpu_metrics);
	for (char *save = NULL, *m = strtok_r(pms.list, ",", &save);
	     m && pms.metric_count < PMCONFIG_METRICS_MAX; m = strtok_r(NULL, ",", &save))
		pms.metrics[pms.metric_count++] = m;
	pms.enabled = pms.enabled && pms.metric_count > 0;
	return 0;
}

/* ---- output ---- */

static void pmsample_flush(void)
{
	sender_gpu_metrics(pms.batch, pms.batch_n);
	pms.samples += pms.batch_n;
	pms.batch_n = 0;
}

static void pmsample_emit(const struct pmsample_gpu *g, uint32_t id, uint16_t source, uint64_t start,
                          uint64_t end, double value)
{
	if (!id || value != value || end < start || !start)
		return;
	struct wire_gpu_metric *m = &pms.batch[pms.batch_n++];
	memset(m, 0, sizeof *m);
	m->start_ns = start;
	m->end_ns = end;
	m->value = value;
	memcpy(m->uuid, g->uuid, 16);
	m->metric_id = id;
	m->device = (uint16_t)g->ordinal;
	m->source = source;
	if (pms.batch_n == PMSAMPLE_BATCH)
		pmsample_flush();
}

static uint64_t pmsample_real_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The GPU timestamps' offset to CLOCK_MONOTONIC, from the newest sample's end (pmconfig_clock_offset). */
static void pmsample_clock(struct pmsample_gpu *g, uint64_t newest_end)
{
	g->clock_offset = pmconfig_clock_offset(newest_end, clock_mono_ns(), pmsample_real_ns(),
	                                        g->clock_known ? &g->clock_offset : NULL);
	g->clock_known = 1;
}

/* ---- PM sampling ---- */

static const char *pmsample_cupti_error(CUptiResult rc)
{
	const char *text = NULL;
	if (pms.cu.result_string && pms.cu.result_string(rc, &text) == CUPTI_SUCCESS && text)
		return text;
	return "CUPTI error";
}

/* What a refusal means for the user, beyond CUPTI's words. */
static const char *pmsample_cupti_hint(CUptiResult rc)
{
	switch (rc) {
	case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
		return " (profiling is for admins: NVreg_RestrictProfilingToAdminUsers=1)";
	case CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED:
	case CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES:
		return " (virtualised GPU)";
	case CUPTI_ERROR_NOT_SUPPORTED:
		return " (this GPU or driver has no PM sampling)";
	default:
		return " (counters may be held by another profiler: DCGM profiling, Nsight, torch.profiler)";
	}
}

/* Resolves libcupti's PM-sampling entry points; 0, or -ENOENT with why (CUDA before 12.6). */
static int pmsample_cupti_resolve(char *why, size_t why_size)
{
	void *lib = cupti_library();
	if (!lib) {
		snprintf(why, why_size, "GPU tracing is not running");
		return -ENOENT;
	}
	struct {
		void **slot;
		const char *name;
	} table[] = {
	    {(void **)&pms.cu.profiler_init, "cuptiProfilerInitialize"},
	    {(void **)&pms.cu.chip_name, "cuptiDeviceGetChipName"},
	    {(void **)&pms.cu.enable, "cuptiPmSamplingEnable"},
	    {(void **)&pms.cu.disable, "cuptiPmSamplingDisable"},
	    {(void **)&pms.cu.set_config, "cuptiPmSamplingSetConfig"},
	    {(void **)&pms.cu.start, "cuptiPmSamplingStart"},
	    {(void **)&pms.cu.stop, "cuptiPmSamplingStop"},
	    {(void **)&pms.cu.decode, "cuptiPmSamplingDecodeData"},
	    {(void **)&pms.cu.availability, "cuptiPmSamplingGetCounterAvailability"},
	    {(void **)&pms.cu.data_size, "cuptiPmSamplingGetCounterDataSize"},
	    {(void **)&pms.cu.data_init, "cuptiPmSamplingCounterDataImageInitialize"},
	    {(void **)&pms.cu.data_info, "cuptiPmSamplingGetCounterDataInfo"},
	    {(void **)&pms.cu.sample_info, "cuptiPmSamplingCounterDataGetSampleInfo"},
	};
	pms.cu.result_string = (__typeof__(cuptiGetResultString) *)dlsym(lib, "cuptiGetResultString");
	for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
		*table[i].slot = dlsym(lib, table[i].name);
		if (!*table[i].slot) {
			snprintf(why, why_size, "libcupti lacks %s (PM sampling needs CUDA 12.6 or later)",
			         table[i].name);
			return -ENOENT;
		}
	}
	return 0;
}

static void pmsample_pm_release(struct pmsample_gpu *g)
{
	if (g->obj) {
		CUpti_PmSampling_Stop_Params stop = {.structSize = CUpti_PmSampling_Stop_Params_STRUCT_SIZE,
		                                     .pPmSamplingObject = g->obj};
		pms.cu.stop(&stop);
		CUpti_PmSampling_Disable_Params off = {
		    .structSize = CUpti_PmSampling_Disable_Params_STRUCT_SIZE, .pPmSamplingObject = g->obj};
		pms.cu.disable(&off);
		g->obj = NULL;
	}
	pmconfig_free(g->cfg);
	g->cfg = NULL;
	free(g->data);
	g->data = NULL;
}

/* Starts PM sampling of one GPU; 0, or -errno with why filled (the reason for the fallback). */
static int pmsample_pm_start(struct pmsample_gpu *g, char *why, size_t why_size)
{
	if (pmsample_cupti_resolve(why, why_size) != 0)
		return -ENOENT;
	CUptiResult rc;
	if (!pms.cu.profiler_ready) {
		CUpti_Profiler_Initialize_Params init = {.structSize =
		                                             CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
		rc = pms.cu.profiler_init(&init);
		if (rc != CUPTI_SUCCESS) {
			snprintf(why, why_size, "CUPTI profiler: %s%s", pmsample_cupti_error(rc),
			         pmsample_cupti_hint(rc));
			return -EPERM;
		}
		pms.cu.profiler_ready = 1;
	}
	CUpti_Device_GetChipName_Params chip = {.structSize = CUpti_Device_GetChipName_Params_STRUCT_SIZE,
	                                        .deviceIndex = (size_t)g->ordinal};
	rc = pms.cu.chip_name(&chip);
	if (rc != CUPTI_SUCCESS || !chip.pChipName) {
		snprintf(why, why_size, "chip name: %s", pmsample_cupti_error(rc));
		return -EIO;
	}
	/* The counters this device offers, asked before enabling (as CUPTI's own sample does). */
	CUpti_PmSampling_GetCounterAvailability_Params av = {
	    .structSize = CUpti_PmSampling_GetCounterAvailability_Params_STRUCT_SIZE,
	    .deviceIndex = (size_t)g->ordinal};
	uint8_t *image = NULL;
	if (pms.cu.availability(&av) == CUPTI_SUCCESS && av.counterAvailabilityImageSize &&
	    (image = malloc(av.counterAvailabilityImageSize)) != NULL) {
		av.pCounterAvailabilityImage = image;
		if (pms.cu.availability(&av) != CUPTI_SUCCESS) {
			free(image);
			image = NULL;
		}
	}
	CUpti_PmSampling_Enable_Params en = {.structSize = CUpti_PmSampling_Enable_Params_STRUCT_SIZE,
	                                     .deviceIndex = (size_t)g->ordinal};
	rc = pms.cu.enable(&en);
	if (rc != CUPTI_SUCCESS) {
		snprintf(why, why_size, "PM sampling on %s: %s%s", chip.pChipName, pmsample_cupti_error(rc),
		         pmsample_cupti_hint(rc));
		free(image);
		return -EPERM;
	}
	g->obj = en.pPmSamplingObject;
	/* Refused (the common case) costs nothing more: libnvperf_host loads only now. */
	Dl_info info;
	char dir[PATH_MAX] = "";
	if (dladdr((void *)pms.cu.enable, &info) && info.dli_fname) {
		snprintf(dir, sizeof dir, "%s", info.dli_fname);
		char *slash = strrchr(dir, '/');
		if (slash)
			*slash = '\0';
		else
			dir[0] = '\0';
	}
	if (pmconfig_load(NULL, dir[0] ? dir : NULL, why, why_size) != 0) {
		free(image);
		pmsample_pm_release(g);
		return -ENOENT;
	}
	int err = pmconfig_new(chip.pChipName, image, pms.metrics, pms.metric_count, &g->cfg, why, why_size);
	free(image);
	if (err != 0)
		goto fail;
	size_t image_size = 0;
	const uint8_t *config = pmconfig_image(g->cfg, &image_size);
	CUpti_PmSampling_SetConfig_Params set = {
	    .structSize = CUpti_PmSampling_SetConfig_Params_STRUCT_SIZE,
	    .pPmSamplingObject = g->obj,
	    .configSize = image_size,
	    .pConfig = config,
	    .hardwareBufferSize = PMSAMPLE_HW_BUFFER,
	    .samplingInterval = 1000000000ull / pms.hz,
	    .triggerMode = CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL,
	    .hwBufferAppendMode = CUPTI_PM_SAMPLING_HARDWARE_BUFFER_APPEND_MODE_KEEP_LATEST,
	};
	rc = pms.cu.set_config(&set);
	if (rc != CUPTI_SUCCESS) {
		snprintf(why, why_size, "PM sampling config: %s", pmsample_cupti_error(rc));
		err = -EIO;
		goto fail;
	}
	const char *names[PMCONFIG_METRICS_MAX];
	size_t used = pmconfig_used(g->cfg);
	for (size_t i = 0; i < used; i++)
		names[i] = pmconfig_used_name(g->cfg, i);
	CUpti_PmSampling_GetCounterDataSize_Params ds = {
	    .structSize = CUpti_PmSampling_GetCounterDataSize_Params_STRUCT_SIZE,
	    .pPmSamplingObject = g->obj,
	    .pMetricNames = names,
	    .numMetrics = used,
	    .maxSamples = PMSAMPLE_MAX_SAMPLES,
	};
	rc = pms.cu.data_size(&ds);
	if (rc != CUPTI_SUCCESS || !ds.counterDataSize || !(g->data = malloc(ds.counterDataSize))) {
		snprintf(why, why_size, "PM sampling counter data: %s", pmsample_cupti_error(rc));
		err = -EIO;
		goto fail;
	}
	g->data_size = ds.counterDataSize;
	CUpti_PmSampling_CounterDataImage_Initialize_Params di = {
	    .structSize = CUpti_PmSampling_CounterDataImage_Initialize_Params_STRUCT_SIZE,
	    .pPmSamplingObject = g->obj,
	    .counterDataSize = g->data_size,
	    .pCounterData = g->data,
	};
	CUpti_PmSampling_Start_Params start = {.structSize = CUpti_PmSampling_Start_Params_STRUCT_SIZE,
	                                       .pPmSamplingObject = g->obj};
	if ((rc = pms.cu.data_init(&di)) != CUPTI_SUCCESS || (rc = pms.cu.start(&start)) != CUPTI_SUCCESS) {
		snprintf(why, why_size, "PM sampling start: %s%s", pmsample_cupti_error(rc),
		         pmsample_cupti_hint(rc));
		err = -EIO;
		goto fail;
	}
	/* Metrics left out are said once, with the chip's name: the user asked for them. */
	char left[512] = "";
	size_t off = 0;
	for (size_t i = 0; i < pmconfig_asked(g->cfg) && off < sizeof left; i++) {
		enum pmconfig_state st = pmconfig_asked_state(g->cfg, i);
		if (st == PMCONFIG_USED || st == PMCONFIG_DUPLICATE)
			continue;
		int w = snprintf(left + off, sizeof left - off, "%s%s (%s)", off ? ", " : "",
		                 pmconfig_asked_name(g->cfg, i),
		                 st == PMCONFIG_UNKNOWN   ? "unknown"
		                 : st == PMCONFIG_NO_PASS ? "not in one pass"
		                                          : "not sampled");
		off += w > 0 ? (size_t)w : 0;
	}
	if (left[0])
		collector_notice(WIRE_NOTICE_WARNING, "GPU metrics on GPU%d (%s): left out %s", g->ordinal,
		                 chip.pChipName, left);
	return 0;
fail:
	pmsample_pm_release(g);
	return err;
}

/* Decodes what the GPU sampled since the last call and sends it. */
static void pmsample_pm_decode(struct pmsample_gpu *g)
{
	CUpti_PmSampling_DecodeData_Params dec = {
	    .structSize = CUpti_PmSampling_DecodeData_Params_STRUCT_SIZE,
	    .pPmSamplingObject = g->obj,
	    .pCounterDataImage = g->data,
	    .counterDataImageSize = g->data_size,
	};
	CUptiResult rc = pms.cu.decode(&dec);
	if (rc != CUPTI_SUCCESS) {
		if (!g->decode_said++)
			collector_notice(WIRE_NOTICE_WARNING,
			                 "GPU metrics on GPU%d: decoding the samples failed: %s", g->ordinal,
			                 pmsample_cupti_error(rc));
		return;
	}
	CUpti_PmSampling_GetCounterDataInfo_Params info = {
	    .structSize = CUpti_PmSampling_GetCounterDataInfo_Params_STRUCT_SIZE,
	    .pCounterDataImage = g->data,
	    .counterDataImageSize = g->data_size,
	};
	if (pms.cu.data_info(&info) != CUPTI_SUCCESS)
		return;
	size_t used = pmconfig_used(g->cfg), failed = 0;
	for (size_t i = 0; i < info.numCompletedSamples; i++) {
		CUpti_PmSampling_CounterData_GetSampleInfo_Params si = {
		    .structSize = CUpti_PmSampling_CounterData_GetSampleInfo_Params_STRUCT_SIZE,
		    .pPmSamplingObject = g->obj,
		    .pCounterDataImage = g->data,
		    .counterDataImageSize = g->data_size,
		    .sampleIndex = i,
		};
		double values[PMCONFIG_METRICS_MAX];
		if (pms.cu.sample_info(&si) != CUPTI_SUCCESS ||
		    pmconfig_evaluate(g->cfg, g->data, g->data_size, i, values) != 0) {
			failed++;
			continue;
		}
		if (!g->clock_known || i + 1 == info.numCompletedSamples)
			pmsample_clock(g, si.endTimestamp);
		uint64_t start = (uint64_t)((int64_t)si.startTimestamp + g->clock_offset);
		uint64_t end = (uint64_t)((int64_t)si.endTimestamp + g->clock_offset);
		for (size_t k = 0; k < used; k++)
			pmsample_emit(g, g->ids[k], WIRE_GPU_METRIC_PM, start, end, values[k]);
	}
	if (failed && failed == info.numCompletedSamples && !g->decode_said++)
		collector_notice(WIRE_NOTICE_WARNING,
		                 "GPU metrics on GPU%d: %zu samples could not be evaluated", g->ordinal,
		                 failed);
	/* Each decode starts on an empty image: completed samples were sent. */
	CUpti_PmSampling_CounterDataImage_Initialize_Params di = {
	    .structSize = CUpti_PmSampling_CounterDataImage_Initialize_Params_STRUCT_SIZE,
	    .pPmSamplingObject = g->obj,
	    .counterDataSize = g->data_size,
	    .pCounterData = g->data,
	};
	pms.cu.data_init(&di);
}

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
static int pmsample_gpm_start(struct pmsample_gpu *g, char *why, size_t why_size)
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

static void pmsample_gpm_poll(struct pmsample_gpu *g, uint64_t now)
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

static int pmsample_util_start(struct pmsample_gpu *g, char *why, size_t why_size)
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

static void pmsample_util_poll(struct pmsample_gpu *g, uint64_t now)
{
	struct pmsample_nvml_util u;
	if (now - g->prev_ns < PMSAMPLE_NVML_NS || pms.nv.utilization(g->nvml, &u) != 0)
		return;
	pmsample_emit(g, pms.util_id, WIRE_GPU_METRIC_NVML, g->prev_ns, now, (double)u.gpu);
	g->prev_ns = now;
}

/* ---- GPUs ---- */

/* The user's private session root as a verified directory fd, or -1. */
static int pmsample_root_fd(void)
{
	char root[PATH_MAX];
	if (session_base_dir(root, sizeof root) != 0)
		return -1;
	/* An fd of the collector's table (the program may take any number meanwhile), checked private. */
	int dir = collector_fd_open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0);
	if (dir < 0)
		return -1;
	if (!collector_fd_check(dir) || safefs_check_dir(dir, getuid(), SAFEFS_PRIVATE) != 0) {
		collector_fd_close(dir);
		return -1;
	}
	return dir;
}

/*
 * Takes the GPU's lock and starts the best way of sampling it that works; what to say about it
 * (why it fell back, who samples it) goes to its note, said by pmsample_say.
 */
static void pmsample_gpu_begin(struct pmsample_gpu *g, int root, uint64_t now)
{
	pid_t holder = 0;
	int fd = root >= 0 ? gpulock_take(root, g->uuid, &holder) : -ENOENT;
	g->note_head = NULL;
	if (fd == -EBUSY) {
		if (g->mode != PMSAMPLE_ELSEWHERE) {
			g->note_head = "GPU metrics of ";
			g->note_level = WIRE_NOTICE_INFO;
			if (holder)
				snprintf(g->note_tail, sizeof g->note_tail,
				         " come from pid %d (one sampler per GPU)", (int)holder);
			else
				snprintf(g->note_tail, sizeof g->note_tail,
				         " come from another process (one sampler per GPU)");
		}
		g->mode = PMSAMPLE_ELSEWHERE;
		g->retry_ns = now + PMSAMPLE_RETRY_NS;
		return;
	}
	/* Without the root (not ours, or missing) we sample unlocked rather than not at all. */
	/* Registered as ours: it is closed only while the number still is (the program may take it). */
	g->lock_fd = fd >= 0 ? collector_fd_own(fd, S_IFREG) : -1;
	char why_pm[256] = "", why_gpm[160] = "", why_nvml[160] = "";
	g->note_level = WIRE_NOTICE_WARNING;
	if (pmsample_pm_start(g, why_pm, sizeof why_pm) == 0) {
		g->mode = PMSAMPLE_PM;
		return;
	}
	if (pmsample_gpm_start(g, why_gpm, sizeof why_gpm) == 0) {
		g->mode = PMSAMPLE_GPM;
		g->note_head = "GPU metrics from NVML GPM on ";
		snprintf(g->note_tail, sizeof g->note_tail, ": %s", why_pm);
		return;
	}
	if (pmsample_util_start(g, why_nvml, sizeof why_nvml) == 0) {
		g->mode = PMSAMPLE_NVML;
		g->note_head = "GPU metrics from NVML utilisation only on ";
		snprintf(g->note_tail, sizeof g->note_tail, ": %s; %s", why_pm, why_gpm);
		return;
	}
	g->mode = PMSAMPLE_NONE;
	g->note_head = "GPU metrics unavailable on ";
	snprintf(g->note_tail, sizeof g->note_tail, ": %s; %s", why_pm, why_gpm[0] ? why_gpm : why_nvml);
	if (g->lock_fd >= 0) {
		collector_fd_close(g->lock_fd);
		g->lock_fd = -1;
	}
}

/* Says the GPUs' notes, once each: GPUs with the same words in one line ("on GPU0,1,2: ..."). */
static void pmsample_say(void)
{
	for (size_t i = 0; i < pms.gpu_count; i++) {
		struct pmsample_gpu *g = &pms.gpu[i];
		if (!g->note_head)
			continue;
		char list[128];
		int n = snprintf(list, sizeof list, "GPU%d", g->ordinal);
		for (size_t j = i + 1; j < pms.gpu_count; j++) {
			struct pmsample_gpu *h = &pms.gpu[j];
			if (h->note_head != g->note_head || h->note_level != g->note_level ||
			    strcmp(h->note_tail, g->note_tail) != 0)
				continue;
			if (n > 0 && (size_t)n < sizeof list)
				n += snprintf(list + n, sizeof list - (size_t)n, ",%d", h->ordinal);
			h->note_head = NULL;
		}
		collector_notice(g->note_level, "%s%s%s", g->note_head, list, g->note_tail);
		g->note_head = NULL;
	}
}

/* The CUDA devices of the process and their UUIDs (the driver is loaded: tracing runs). */
static int pmsample_devices(char *why, size_t why_size)
{
	void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD | RTLD_LOCAL);
	int (*count)(int *) = cuda ? (int (*)(int *))dlsym(cuda, "cuDeviceGetCount") : NULL;
	int (*get)(int *, int) = cuda ? (int (*)(int *, int))dlsym(cuda, "cuDeviceGet") : NULL;
	int (*uuid)(uint8_t *, int) =
	    cuda ? (int (*)(uint8_t *, int))dlsym(cuda, "cuDeviceGetUuid_v2") : NULL;
	if (cuda && !uuid)
		uuid = (int (*)(uint8_t *, int))dlsym(cuda, "cuDeviceGetUuid");
	int n = 0;
	if (!count || !get || !uuid || count(&n) != 0 || n <= 0) {
		snprintf(why, why_size, "the CUDA driver lists no devices here");
		if (cuda)
			dlclose(cuda);
		return -ENOENT;
	}
	for (int i = 0; i < n && pms.gpu_count < PMSAMPLE_GPUS_MAX; i++) {
		int dev;
		struct pmsample_gpu *g = &pms.gpu[pms.gpu_count];
		memset(g, 0, sizeof *g);
		g->lock_fd = -1;
		if (get(&dev, i) != 0 || uuid(g->uuid, dev) != 0)
			continue;
		g->ordinal = i;
		char *p = g->uuid_text + sprintf(g->uuid_text, "GPU-");
		for (int b = 0; b < 16; b++) {
			if (b == 4 || b == 6 || b == 8 || b == 10)
				*p++ = '-';
			p += sprintf(p, "%02x", g->uuid[b]);
		}
		pms.gpu_count++;
	}
	dlclose(cuda);
	return 0;
}

static void pmsample_start(uint64_t now)
{
	char why[160];
	if (pmsample_devices(why, sizeof why) != 0) {
		collector_notice(WIRE_NOTICE_WARNING, "GPU metrics unavailable: %s", why);
		return;
	}
	int root = pmsample_root_fd();
	for (size_t i = 0; i < pms.gpu_count; i++)
		pmsample_gpu_begin(&pms.gpu[i], root, now);
	if (root >= 0)
		collector_fd_close(root);
	pmsample_say();
}

static uint64_t pmsample_thread_cpu(void)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The start thread: what would hold the sender up for a few hundred ms, off its back. */
static void *pmsample_start_main(void *arg)
{
	(void)arg;
	collector_mark_own_thread();
	collector_register_own_tid(collector_gettid());
	prctl(PR_SET_NAME, "cuscope-gpumet");
	pmsample_start(clock_mono_ns());
	atomic_store(&pms.start_cpu_ns, pmsample_thread_cpu());
	atomic_store(&pms.start_state, PMSAMPLE_STARTED);
	return NULL;
}

/* Sender thread: waits for the start thread (a stop or detach while it runs). */
static void pmsample_join_start(void)
{
	if (pms.start_joinable) {
		pthread_join(pms.start_thread, NULL);
		pms.start_joinable = 0;
	}
}

/* Sender thread: the names of what each GPU samples, interned once the start is done. */
static void pmsample_name(void)
{
	for (size_t i = 0; i < pms.gpu_count; i++) {
		struct pmsample_gpu *g = &pms.gpu[i];
		if (g->mode == PMSAMPLE_PM)
			for (size_t k = 0; k < pmconfig_used(g->cfg); k++) {
				const char *n = pmconfig_used_name(g->cfg, k);
				g->ids[k] = sender_intern(n, strlen(n));
			}
		if (g->mode == PMSAMPLE_GPM)
			for (size_t k = 0; k < PMSAMPLE_GPM_COUNT; k++)
				g->nvml_ids[k] = sender_intern(pmsample_gpm_metrics[k].name,
				                               strlen(pmsample_gpm_metrics[k].name));
		if (g->mode == PMSAMPLE_NVML && !pms.util_id)
			pms.util_id = sender_intern("nvml:gpu_util", strlen("nvml:gpu_util"));
	}
	pms.named = 1;
}

/* Sender thread: starts the start thread once the program initialised CUDA; 1 once it is done. */
static int pmsample_ready(uint64_t now_ns)
{
	if (pms.started)
		return 1;
	int state = atomic_load(&pms.start_state);
	if (state == PMSAMPLE_IDLE) {
		/* The GPUs exist for us once the program initialised CUDA (GPU tracing started). */
		if (!now_ns || !cupti_running())
			return 0;
		pms.pid = getpid();
		atomic_store(&pms.start_state, PMSAMPLE_STARTING);
		sigset_t all, old;
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		pms.start_joinable = pthread_create(&pms.start_thread, NULL, pmsample_start_main, NULL) == 0;
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		if (!pms.start_joinable) /* no thread: here, then */
			pmsample_start_main(NULL);
		return 0;
	}
	if (state != PMSAMPLE_STARTED)
		return 0;
	pmsample_join_start();
	pms.started = 1;
	return 1;
}

void pmsample_poll(uint64_t now_ns)
{
	if (!pms.enabled)
		return;
	if (!now_ns && atomic_load(&pms.start_state) == PMSAMPLE_STARTING)
		pmsample_join_start(); /* final: what it starts is decoded once */
	if (!pmsample_ready(now_ns))
		return;
	if (!pms.named)
		pmsample_name();
	uint64_t now = now_ns ? now_ns : clock_mono_ns();
	if (now_ns && now < pms.next_ns)
		return;
	pms.next_ns = now + 1000000000ull / pms.hz;
	int root = -2;
	for (size_t i = 0; i < pms.gpu_count; i++) {
		struct pmsample_gpu *g = &pms.gpu[i];
		switch (g->mode) {
		case PMSAMPLE_PM:
			if (!now_ns || now - g->prev_ns >= PMSAMPLE_DECODE_NS) {
				pmsample_pm_decode(g);
				g->prev_ns = now;
			}
			break;
		case PMSAMPLE_GPM:
			pmsample_gpm_poll(g, now);
			break;
		case PMSAMPLE_NVML:
			pmsample_util_poll(g, now);
			break;
		case PMSAMPLE_ELSEWHERE:
			/* The sampling process may have ended: its lock went with it. */
			if (now_ns && now >= g->retry_ns) {
				if (root == -2)
					root = pmsample_root_fd();
				pmsample_gpu_begin(g, root, now);
				pmsample_say();
				pms.named = 0; /* a GPU it takes over needs its names */
			}
			break;
		case PMSAMPLE_NONE:
			break;
		}
	}
	if (root >= 0)
		collector_fd_close(root);
	pmsample_flush();
}

/* Lets go of every GPU (detach, or the process is done with us); a later attach starts again. */
void pmsample_detach(void)
{
	if (pms.pid == getpid()) {
		pmsample_join_start();
		if (atomic_load(&pms.start_state) == PMSAMPLE_STARTED)
			pms.started = 1;
	}
	if (pms.started && pms.pid == getpid()) {
		for (size_t i = 0; i < pms.gpu_count; i++) {
			struct pmsample_gpu *g = &pms.gpu[i];
			if (g->mode == PMSAMPLE_PM)
				pmsample_pm_release(g);
			if (g->gpm[0] && pms.nv.gpm_free)
				pms.nv.gpm_free(g->gpm[0]);
			if (g->gpm[1] && pms.nv.gpm_free)
				pms.nv.gpm_free(g->gpm[1]);
			if (g->lock_fd >= 0)
				collector_fd_close(g->lock_fd);
			memset(g, 0, sizeof *g);
			g->lock_fd = -1;
		}
	}
	pms.gpu_count = 0;
	pms.started = 0;
	pms.named = 0;
	pms.batch_n = 0;
	atomic_store(&pms.start_state, PMSAMPLE_IDLE);
}

/* Final flush: what the GPU sampled up to now, then no more. */
void pmsample_stop(void)
{
	if (atomic_load(&pms.start_state) == PMSAMPLE_IDLE || pms.pid != getpid())
		return;
	pmsample_poll(0);
	pmsample_detach();
	pms.enabled = 0;
}

/*
 * A forked child: the parent's CUPTI and NVML state is not ours; its copies of the lock fds are
 * closed (while still ours: nothing of the program ran yet) so that the lock ends with the sampler.
 */
void pmsample_after_fork(void)
{
	for (size_t i = 0; i < pms.gpu_count; i++)
		if (pms.gpu[i].lock_fd >= 0)
			collector_fd_close(pms.gpu[i].lock_fd);
	int enabled = pms.enabled;
	unsigned hz = pms.hz;
	memset(pms.gpu, 0, sizeof pms.gpu);
	pms.gpu_count = 0;
	pms.started = 0;
	pms.named = 0;
	/* A start thread of the parent does not exist here. */
	pms.start_joinable = 0;
	atomic_store(&pms.start_state, PMSAMPLE_IDLE);
	atomic_store(&pms.start_cpu_ns, 0);
	pms.batch_n = 0;
	pms.samples = 0;
	pms.cu.profiler_ready = 0;
	pms.enabled = enabled;
	pms.hz = hz;
}

int pmsample_running(void)
{
	return pms.started && pms.gpu_count > 0;
}

uint64_t pmsample_start_cpu_ns(void)
{
	return atomic_load(&pms.start_cpu_ns);
}

void pmsample_cost(struct wire_cost *cost)
{
	cost->events = pms.samples;
	cost->level = pmsample_running() ? pms.hz : 0;
}
