/*
 * The PM-sampling configuration through libnvperf_host (see pmconfig.h). The library is opened
 * with dlopen so that the collector has no link-time dependency on it: where it is missing the
 * sampler falls back to NVML and says why.
 */
#include "pmconfig.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nvperf_common.h>
#include <nvperf_cuda_host.h>
#include <nvperf_host.h>

const char *const pmconfig_default_metrics[] = {
    "gr__cycles_active.avg",
    "sm__cycles_active.avg",
    "sm__warps_active_realtime.avg.pct_of_peak_sustained_elapsed",
    /* GH100 has the realtime tensor-pipe counter only under its triage group's name (CUDA 13.0). */
    "TPC.TriageCompute.sm__pipe_tensor_cycles_active_realtime.avg.pct_of_peak_sustained_elapsed",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "pcie__read_bytes.sum",
    "pcie__write_bytes.sum",
    "nvlrx__bytes.sum",
    "nvltx__bytes.sum",
    /* Every tensor pipe (HMMA, HGMMA: cuBLAS bf16 GEMMs on Hopper run on wgmma), non-realtime. */
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
};
const size_t pmconfig_default_count = sizeof pmconfig_default_metrics / sizeof pmconfig_default_metrics[0];

/* The entry points we use, typed by the library's own declarations. */
#define PMCONFIG_FNS(X)                                                                                      \
	X(NVPW_InitializeHost)                                                                               \
	X(NVPW_CUDA_MetricsEvaluator_CalculateScratchBufferSize)                                             \
	X(NVPW_CUDA_MetricsEvaluator_Initialize)                                                             \
	X(NVPW_MetricsEvaluator_Destroy)                                                                     \
	X(NVPW_MetricsEvaluator_ConvertMetricNameToMetricEvalRequest)                                        \
	X(NVPW_MetricsEvaluator_GetMetricRawDependencies)                                                    \
	X(NVPW_MetricsEvaluator_SetDeviceAttributes)                                                         \
	X(NVPW_MetricsEvaluator_EvaluateToGpuValues)                                                         \
	X(NVPW_CUDA_RawMetricsConfig_Create_V2)                                                              \
	X(NVPW_RawMetricsConfig_Destroy)                                                                     \
	X(NVPW_RawMetricsConfig_BeginPassGroup)                                                              \
	X(NVPW_RawMetricsConfig_EndPassGroup)                                                                \
	X(NVPW_RawMetricsConfig_AddMetrics)                                                                  \
	X(NVPW_RawMetricsConfig_GenerateConfigImage)                                                         \
	X(NVPW_RawMetricsConfig_GetConfigImage)                                                              \
	X(NVPW_RawMetricsConfig_GetNumPasses_V2)

static struct {
	void *lib;
#define PMCONFIG_SLOT(name) __typeof__(name) *name;
	PMCONFIG_FNS(PMCONFIG_SLOT)
#undef PMCONFIG_SLOT
} nv;

/* Raw counters one config may depend on (the default set needs a few dozen). */
#define PMCONFIG_RAW_MAX 512

struct pmconfig {
	uint8_t *image;
	size_t image_size;
	size_t passes;
	uint8_t *scratch; /* the evaluator lives in it */
	NVPW_MetricsEvaluator *evaluator;
	const uint8_t *attributes_of; /* the counter data image the evaluator last took attributes from */
	size_t n_used;
	NVPW_MetricEvalRequest requests[PMCONFIG_METRICS_MAX];
	char used[PMCONFIG_METRICS_MAX][PMCONFIG_NAME_MAX];
	size_t n_asked;
	char asked[PMCONFIG_METRICS_MAX][PMCONFIG_NAME_MAX];
	enum pmconfig_state state[PMCONFIG_METRICS_MAX];
};

int64_t pmconfig_clock_offset(uint64_t gpu_ns, uint64_t mono_ns, uint64_t real_ns, const int64_t *prev)
{
	if (gpu_ns + PMCONFIG_REALTIME_NEAR > real_ns && gpu_ns < real_ns + PMCONFIG_REALTIME_NEAR)
		return (int64_t)(mono_ns - real_ns);
	return prev ? *prev : (int64_t)(mono_ns - gpu_ns);
}

const char *pmconfig_status_name(int status)
{
	switch (status) {
	case NVPA_STATUS_SUCCESS:
		return "success";
	case NVPA_STATUS_NOT_SUPPORTED:
		return "not supported";
	case NVPA_STATUS_INVALID_ARGUMENT:
		return "invalid argument";
	case NVPA_STATUS_INVALID_METRIC_ID:
		return "unknown metric";
	case NVPA_STATUS_DRIVER_NOT_LOADED:
		return "driver not loaded";
	case NVPA_STATUS_OUT_OF_MEMORY:
		return "out of memory";
	case NVPA_STATUS_UNSUPPORTED_GPU:
		return "unsupported GPU";
	case NVPA_STATUS_INSUFFICIENT_DRIVER_VERSION:
		return "driver too old";
	case NVPA_STATUS_INSUFFICIENT_PRIVILEGE:
		return "insufficient privilege";
	case NVPA_STATUS_RESOURCE_UNAVAILABLE:
		return "counters in use by another profiler";
	case NVPA_STATUS_INSUFFICIENT_SPACE:
		return "insufficient space";
	case NVPA_STATUS_VIRTUALIZED_DEVICE_NOT_SUPPORTED:
		return "virtualised device not supported";
	case NVPA_STATUS_PROFILING_NOT_ALLOWED:
		return "profiling not allowed";
	default:
		return "error";
	}
}

/* Resolves every entry point of an opened library; 0 or -ENOENT naming the missing one. */
static int pmconfig_resolve(void *lib, char *why, size_t why_size)
{
#define PMCONFIG_RESOLVE(name)                                                                               \
	if (!(nv.name = (__typeof__(name) *)dlsym(lib, #name))) {                                            \
		snprintf(why, why_size, "libnvperf_host lacks " #name);                                      \
		return -ENOENT;                                                                              \
	}
	PMCONFIG_FNS(PMCONFIG_RESOLVE)
#undef PMCONFIG_RESOLVE
	return 0;
}

int pmconfig_load(const char *path, const char *dir_hint, char *why, size_t why_size)
{
	if (nv.lib)
		return 0;
	char buf[512];
	const char *env = getenv("CUSCOPE_NVPERF_PATH");
	const char *cuda_home = getenv("CUDA_HOME");
	const char *dirs[] = {dir_hint, cuda_home, "/usr/local/cuda"};
	void *lib = NULL;
	if (path || (env && *env)) {
		const char *p = path ? path : env;
		lib = dlopen(p, RTLD_NOW | RTLD_LOCAL);
		if (!lib) {
			snprintf(why, why_size, "cannot load %s: %s", p, dlerror());
			return -ENOENT;
		}
	}
	for (size_t d = 0; !lib && d < sizeof dirs / sizeof dirs[0]; d++) {
		static const char *const subdirs[] = {"", "/lib64", "/extras/CUPTI/lib64"};
		for (size_t s = 0; !lib && dirs[d] && *dirs[d] && s < 3; s++) {
			/* The hint is the libcupti directory itself: only its own folder. */
			if (d == 0 && s > 0)
				break;
			if (d > 0 && s == 0)
				continue;
			snprintf(buf, sizeof buf, "%s%s/libnvperf_host.so", dirs[d], subdirs[s]);
			lib = dlopen(buf, RTLD_NOW | RTLD_LOCAL);
		}
	}
	if (!lib)
		lib = dlopen("libnvperf_host.so", RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		snprintf(why, why_size,
		         "libnvperf_host.so not found (CUDA toolkit; or set CUSCOPE_NVPERF_PATH)");
		return -ENOENT;
	}
	int rc = pmconfig_resolve(lib, why, why_size);
	if (rc == 0) {
		NVPW_InitializeHost_Params p = {.structSize = NVPW_InitializeHost_Params_STRUCT_SIZE};
		NVPA_Status st = nv.NVPW_InitializeHost(&p);
		if (st != NVPA_STATUS_SUCCESS) {
			snprintf(why, why_size, "NVPW_InitializeHost: %s", pmconfig_status_name(st));
			rc = -EIO;
		}
	}
	if (rc != 0) {
		dlclose(lib);
		memset(&nv, 0, sizeof nv);
		return rc;
	}
	nv.lib = lib;
	return 0;
}

/* A metrics evaluator for the chip or the availability image, in cfg->scratch. */
static int pmconfig_evaluator(struct pmconfig *cfg, const char *chip, const uint8_t *availability, char *why,
                              size_t why_size)
{
	NVPW_CUDA_MetricsEvaluator_CalculateScratchBufferSize_Params sz = {
	    .structSize = NVPW_CUDA_MetricsEvaluator_CalculateScratchBufferSize_Params_STRUCT_SIZE,
	    .pChipName = availability ? NULL : chip,
	    .pCounterAvailabilityImage = availability,
	};
	NVPA_Status st = nv.NVPW_CUDA_MetricsEvaluator_CalculateScratchBufferSize(&sz);
	if (st != NVPA_STATUS_SUCCESS) {
		snprintf(why, why_size, "metrics evaluator for %s: %s", chip ? chip : "this GPU",
		         pmconfig_status_name(st));
		return -ENOTSUP;
	}
	cfg->scratch = malloc(sz.scratchBufferSize);
	if (!cfg->scratch) {
		snprintf(why, why_size, "no memory for the metrics evaluator");
		return -ENOMEM;
	}
	NVPW_CUDA_MetricsEvaluator_Initialize_Params init = {
	    .structSize = NVPW_CUDA_MetricsEvaluator_Initialize_Params_STRUCT_SIZE,
	    .pScratchBuffer = cfg->scratch,
	    .scratchBufferSize = sz.scratchBufferSize,
	    .pChipName = availability ? NULL : chip,
	    .pCounterAvailabilityImage = availability,
	};
	st = nv.NVPW_CUDA_MetricsEvaluator_Initialize(&init);
	if (st != NVPA_STATUS_SUCCESS) {
		snprintf(why, why_size, "metrics evaluator for %s: %s", chip ? chip : "this GPU",
		         pmconfig_status_name(st));
		return -ENOTSUP;
	}
	cfg->evaluator = init.pMetricsEvaluator;
	return 0;
}

/* The raw counters requests[0..n) depend on, appended to raw[*n_raw..] (deduplicated). */
static int pmconfig_raw_deps(struct pmconfig *cfg, const NVPW_MetricEvalRequest *requests, size_t n,
                             const char **raw, size_t *n_raw)
{
	NVPW_MetricsEvaluator_GetMetricRawDependencies_Params p = {
	    .structSize = NVPW_MetricsEvaluator_GetMetricRawDependencies_Params_STRUCT_SIZE,
	    .pMetricsEvaluator = cfg->evaluator,
	    .pMetricEvalRequests = requests,
	    .numMetricEvalRequests = n,
	    .metricEvalRequestStructSize = NVPW_MetricEvalRequest_STRUCT_SIZE,
	    .metricEvalRequestStrideSize = sizeof(NVPW_MetricEvalRequest),
	};
	if (nv.NVPW_MetricsEvaluator_GetMetricRawDependencies(&p) != NVPA_STATUS_SUCCESS)
		return -EINVAL;
	if (p.numRawDependencies > PMCONFIG_RAW_MAX - *n_raw)
		return -E2BIG;
	const char *deps[PMCONFIG_RAW_MAX];
	p.ppRawDependencies = deps;
	p.numOptionalRawDependencies = 0;
	if (nv.NVPW_MetricsEvaluator_GetMetricRawDependencies(&p) != NVPA_STATUS_SUCCESS)
		return -EINVAL;
	for (size_t i = 0; i < p.numRawDependencies; i++) {
		size_t j = 0;
		while (j < *n_raw && strcmp(raw[j], deps[i]) != 0)
			j++;
		if (j == *n_raw)
			raw[(*n_raw)++] = deps[i];
	}
	return 0;
}

/*
 * A PM-sampling raw metrics config of the first n used metrics: *passes set, and when image is
 * not NULL the config image copied into a new buffer. 0 or -errno.
 */
static int pmconfig_try(struct pmconfig *cfg, const char *chip, const uint8_t *availability,
                        const NVPW_MetricEvalRequest *requests, size_t n, size_t *passes, uint8_t **image,
                        size_t *image_size)
{
	const char *raw[PMCONFIG_RAW_MAX];
	size_t n_raw = 0;
	int rc = pmconfig_raw_deps(cfg, requests, n, raw, &n_raw);
	if (rc != 0)
		return rc;
	NVPA_RawMetricRequest req[PMCONFIG_RAW_MAX];
	for (size_t i = 0; i < n_raw; i++)
		req[i] = (NVPA_RawMetricRequest){.structSize = NVPA_RAW_METRIC_REQUEST_STRUCT_SIZE,
		                                 .pMetricName = raw[i],
		                                 .isolated = 1,
		                                 .keepInstances = 1};
	NVPW_CUDA_RawMetricsConfig_Create_V2_Params create = {
	    .structSize = NVPW_CUDA_RawMetricsConfig_Create_V2_Params_STRUCT_SIZE,
	    .activityKind = NVPA_ACTIVITY_KIND_REALTIME_SAMPLED,
	    .pChipName = availability ? NULL : chip,
	    .pCounterAvailabilityImage = availability,
	};
	if (nv.NVPW_CUDA_RawMetricsConfig_Create_V2(&create) != NVPA_STATUS_SUCCESS)
		return -ENOTSUP;
	NVPA_RawMetricsConfig *raw_cfg = create.pRawMetricsConfig;
	rc = -EINVAL;
	NVPW_RawMetricsConfig_BeginPassGroup_Params begin = {
	    .structSize = NVPW_RawMetricsConfig_BeginPassGroup_Params_STRUCT_SIZE,
	    .pRawMetricsConfig = raw_cfg,
	    .maxPassCount = 1,
	};
	NVPW_RawMetricsConfig_AddMetrics_Params add = {
	    .structSize = NVPW_RawMetricsConfig_AddMetrics_Params_STRUCT_SIZE,
	    .pRawMetricsConfig = raw_cfg,
	    .pRawMetricRequests = req,
	    .numMetricRequests = n_raw,
	};
	NVPW_RawMetricsConfig_EndPassGroup_Params end = {
	    .structSize = NVPW_RawMetricsConfig_EndPassGroup_Params_STRUCT_SIZE,
	    .pRawMetricsConfig = raw_cfg,
	};
	NVPW_RawMetricsConfig_GenerateConfigImage_Params gen = {
	    .structSize = NVPW_RawMetricsConfig_GenerateConfigImage_Params_STRUCT_SIZE,
	    .pRawMetricsConfig = raw_cfg,
	};
	NVPW_RawMetricsConfig_GetNumPasses_V2_Params np = {
	    .structSize = NVPW_RawMetricsConfig_GetNumPasses_V2_Params_STRUCT_SIZE,
	    .pRawMetricsConfig = raw_cfg,
	};
	/* A pass group of at most one pass refuses counters that need more: that is the check. */
	if (nv.NVPW_RawMetricsConfig_BeginPassGroup(&begin) != NVPA_STATUS_SUCCESS)
		goto out;
	if (nv.NVPW_RawMetricsConfig_AddMetrics(&add) != NVPA_STATUS_SUCCESS) {
		nv.NVPW_RawMetricsConfig_EndPassGroup(&end);
		rc = -E2BIG;
		goto out;
	}
	if (nv.NVPW_RawMetricsConfig_EndPassGroup(&end) != NVPA_STATUS_SUCCESS ||
	    nv.NVPW_RawMetricsConfig_GenerateConfigImage(&gen) != NVPA_STATUS_SUCCESS ||
	    nv.NVPW_RawMetricsConfig_GetNumPasses_V2(&np) != NVPA_STATUS_SUCCESS)
		goto out;
	*passes = np.numPasses;
	rc = 0;
	if (image) {
		NVPW_RawMetricsConfig_GetConfigImage_Params get = {
		    .structSize = NVPW_RawMetricsConfig_GetConfigImage_Params_STRUCT_SIZE,
		    .pRawMetricsConfig = raw_cfg,
		};
		rc = -EINVAL;
		if (nv.NVPW_RawMetricsConfig_GetConfigImage(&get) != NVPA_STATUS_SUCCESS ||
		    get.bytesCopied == 0)
			goto out;
		uint8_t *buf = malloc(get.bytesCopied);
		if (!buf) {
			rc = -ENOMEM;
			goto out;
		}
		get.bytesAllocated = get.bytesCopied;
		get.pBuffer = buf;
		if (nv.NVPW_RawMetricsConfig_GetConfigImage(&get) != NVPA_STATUS_SUCCESS) {
			free(buf);
			goto out;
		}
		*image = buf;
		*image_size = get.bytesCopied;
		rc = 0;
	}
out:;
	NVPW_RawMetricsConfig_Destroy_Params destroy = {
	    .structSize = NVPW_RawMetricsConfig_Destroy_Params_STRUCT_SIZE,
	    .pRawMetricsConfig = raw_cfg,
	};
	nv.NVPW_RawMetricsConfig_Destroy(&destroy);
	return rc;
}

int pmconfig_new(const char *chip, const uint8_t *availability, const char *const *metrics, size_t count,
                 struct pmconfig **out, char *why, size_t why_size)
{
	*out = NULL;
	if (!nv.lib) {
		snprintf(why, why_size, "libnvperf_host not loaded");
		return -ENOENT;
	}
	if ((!chip && !availability) || count == 0 || count > PMCONFIG_METRICS_MAX) {
		snprintf(why, why_size, "between 1 and %d metrics for a named chip", PMCONFIG_METRICS_MAX);
		return -EINVAL;
	}
	struct pmconfig *cfg = calloc(1, sizeof *cfg);
	if (!cfg) {
		snprintf(why, why_size, "no memory for the metrics config");
		return -ENOMEM;
	}
	int rc = pmconfig_evaluator(cfg, chip, availability, why, why_size);
	if (rc != 0)
		goto fail;
	for (size_t i = 0; i < count; i++) {
		size_t k = cfg->n_asked++;
		snprintf(cfg->asked[k], PMCONFIG_NAME_MAX, "%s", metrics[i]);
		cfg->state[k] = PMCONFIG_UNKNOWN;
		for (size_t j = 0; j < k; j++)
			if (strcmp(cfg->asked[j], cfg->asked[k]) == 0)
				cfg->state[k] = PMCONFIG_DUPLICATE;
		if (cfg->state[k] == PMCONFIG_DUPLICATE || strlen(metrics[i]) >= PMCONFIG_NAME_MAX)
			continue;
		NVPW_MetricEvalRequest req;
		NVPW_MetricsEvaluator_ConvertMetricNameToMetricEvalRequest_Params conv = {
		    .structSize =
		        NVPW_MetricsEvaluator_ConvertMetricNameToMetricEvalRequest_Params_STRUCT_SIZE,
		    .pMetricsEvaluator = cfg->evaluator,
		    .pMetricName = metrics[i],
		    .pMetricEvalRequest = &req,
		    .metricEvalRequestStructSize = NVPW_MetricEvalRequest_STRUCT_SIZE,
		};
		if (nv.NVPW_MetricsEvaluator_ConvertMetricNameToMetricEvalRequest(&conv) !=
		    NVPA_STATUS_SUCCESS)
			continue;
		/* Known by name is not enough: its raw counters must be sampleable on their own. */
		size_t alone = 0;
		rc = pmconfig_try(cfg, chip, availability, &req, 1, &alone, NULL, NULL);
		if (rc == -ENOTSUP) {
			snprintf(why, why_size, "PM sampling config for %s refused",
			         chip ? chip : "this GPU");
			goto fail;
		}
		cfg->state[k] = PMCONFIG_NOT_SAMPLED;
		if (rc != 0 || alone != 1)
			continue;
		cfg->requests[cfg->n_used] = req;
		cfg->state[k] = PMCONFIG_USED;
		snprintf(cfg->used[cfg->n_used], PMCONFIG_NAME_MAX, "%s", metrics[i]);
		cfg->n_used++;
	}
	/* Drop from the end until the rest fit one pass (the list is in order of importance). */
	while (cfg->n_used > 0) {
		size_t passes = 0;
		rc = pmconfig_try(cfg, chip, availability, cfg->requests, cfg->n_used, &passes, &cfg->image,
		                  &cfg->image_size);
		if (rc == 0 && passes == 1) {
			cfg->passes = 1;
			break;
		}
		free(cfg->image);
		cfg->image = NULL;
		cfg->n_used--;
		for (size_t k = cfg->n_asked; k-- > 0;)
			if (cfg->state[k] == PMCONFIG_USED) {
				cfg->state[k] = PMCONFIG_NO_PASS;
				break;
			}
	}
	if (cfg->n_used == 0) {
		snprintf(why, why_size, "none of the %zu metrics can be sampled on %s", count,
		         chip ? chip : "this GPU");
		rc = -ENOTSUP;
		goto fail;
	}
	*out = cfg;
	return 0;
fail:
	pmconfig_free(cfg);
	return rc;
}

void pmconfig_free(struct pmconfig *cfg)
{
	if (!cfg)
		return;
	if (cfg->evaluator) {
		NVPW_MetricsEvaluator_Destroy_Params p = {
		    .structSize = NVPW_MetricsEvaluator_Destroy_Params_STRUCT_SIZE,
		    .pMetricsEvaluator = cfg->evaluator,
		};
		nv.NVPW_MetricsEvaluator_Destroy(&p);
	}
	free(cfg->scratch);
	free(cfg->image);
	free(cfg);
}

const uint8_t *pmconfig_image(const struct pmconfig *cfg, size_t *size)
{
	*size = cfg->image_size;
	return cfg->image;
}

size_t pmconfig_passes(const struct pmconfig *cfg)
{
	return cfg->passes;
}

size_t pmconfig_used(const struct pmconfig *cfg)
{
	return cfg->n_used;
}

const char *pmconfig_used_name(const struct pmconfig *cfg, size_t i)
{
	return i < cfg->n_used ? cfg->used[i] : NULL;
}

size_t pmconfig_asked(const struct pmconfig *cfg)
{
	return cfg->n_asked;
}

const char *pmconfig_asked_name(const struct pmconfig *cfg, size_t i)
{
	return i < cfg->n_asked ? cfg->asked[i] : NULL;
}

enum pmconfig_state pmconfig_asked_state(const struct pmconfig *cfg, size_t i)
{
	return i < cfg->n_asked ? cfg->state[i] : PMCONFIG_UNKNOWN;
}

int pmconfig_evaluate(struct pmconfig *cfg, const uint8_t *counter_data, size_t size, size_t index,
                      double *values)
{
	if (cfg->attributes_of != counter_data) {
		NVPW_MetricsEvaluator_SetDeviceAttributes_Params attr = {
		    .structSize = NVPW_MetricsEvaluator_SetDeviceAttributes_Params_STRUCT_SIZE,
		    .pMetricsEvaluator = cfg->evaluator,
		    .pCounterDataImage = counter_data,
		    .counterDataImageSize = size,
		};
		if (nv.NVPW_MetricsEvaluator_SetDeviceAttributes(&attr) != NVPA_STATUS_SUCCESS)
			return -EIO;
		cfg->attributes_of = counter_data;
	}
	NVPW_MetricsEvaluator_EvaluateToGpuValues_Params p = {
	    .structSize = NVPW_MetricsEvaluator_EvaluateToGpuValues_Params_STRUCT_SIZE,
	    .pMetricsEvaluator = cfg->evaluator,
	    .pMetricEvalRequests = cfg->requests,
	    .numMetricEvalRequests = cfg->n_used,
	    .metricEvalRequestStructSize = NVPW_MetricEvalRequest_STRUCT_SIZE,
	    .metricEvalRequestStrideSize = sizeof(NVPW_MetricEvalRequest),
	    .pCounterDataImage = counter_data,
	    .counterDataImageSize = size,
	    .rangeIndex = index,
	    .isolated = 1,
	    .pMetricValues = values,
	};
	return nv.NVPW_MetricsEvaluator_EvaluateToGpuValues(&p) == NVPA_STATUS_SUCCESS ? 0 : -EIO;
}
