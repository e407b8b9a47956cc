/*
 * The PM-sampling configuration and evaluation through CUPTI's profiler host API (see
 * pmconfig.h). Its entry points are resolved with dlsym from the libcupti in use, so the collector
 * has no link-time dependency on them: where they are missing the sampler falls back to NVML and
 * says why.
 */
#include "pmconfig.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cupti_profiler_host.h>
#include <cupti_result.h>

const char *const pmconfig_default_metrics[] = {
    "gr__cycles_active.avg",
    "sm__cycles_active.avg",
    "sm__warps_active_realtime.avg.pct_of_peak_sustained_elapsed",
    "sm__pipe_tensor_cycles_active_realtime.avg.pct_of_peak_sustained_elapsed",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    /* Every tensor pipe (HMMA, HGMMA: cuBLAS bf16 GEMMs on Hopper run on wgmma), non-realtime. */
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "pcie__read_bytes.sum",
    "pcie__write_bytes.sum",
    /* Left out, with a notice, on a GPU without NVLink (the H200 of the GPU host). */
    "nvlrx__bytes.sum",
    "nvltx__bytes.sum",
};
const size_t pmconfig_default_count = sizeof pmconfig_default_metrics / sizeof pmconfig_default_metrics[0];

/* The entry points we use, typed by the library's own declarations. */
#define PMCONFIG_FNS(X)                                                                                      \
	X(cuptiProfilerHostInitialize)                                                                       \
	X(cuptiProfilerHostDeinitialize)                                                                     \
	X(cuptiProfilerHostConfigAddMetrics)                                                                 \
	X(cuptiProfilerHostGetConfigImageSize)                                                               \
	X(cuptiProfilerHostGetConfigImage)                                                                   \
	X(cuptiProfilerHostGetNumOfPasses)                                                                   \
	X(cuptiProfilerHostEvaluateToGpuValues)                                                              \
	X(cuptiGetResultString)

/* cuptiGetResultString is declared in cupti_result.h with the other entry points. */
static struct {
	void *lib;
#define PMCONFIG_SLOT(name) __typeof__(name) *name;
	PMCONFIG_FNS(PMCONFIG_SLOT)
#undef PMCONFIG_SLOT
} cu;

struct pmconfig {
	CUpti_Profiler_Host_Object *host; /* built the image; evaluates the samples */
	uint8_t *image;
	size_t image_size;
	size_t passes;
	size_t n_used;
	char used[PMCONFIG_METRICS_MAX][PMCONFIG_NAME_MAX];
	const char *used_names[PMCONFIG_METRICS_MAX]; /* used[i], as the API takes them */
	size_t n_asked;
	char asked[PMCONFIG_METRICS_MAX][PMCONFIG_NAME_MAX];
	enum pmconfig_state state[PMCONFIG_METRICS_MAX];
	int refusal[PMCONFIG_METRICS_MAX]; /* CUPTI's result for a PMCONFIG_REFUSED metric */
};

int64_t pmconfig_clock_offset(uint64_t gpu_ns, uint64_t mono_ns, uint64_t real_ns, const int64_t *prev)
{
	if (gpu_ns + PMCONFIG_REALTIME_NEAR > real_ns && gpu_ns < real_ns + PMCONFIG_REALTIME_NEAR)
		return (int64_t)(mono_ns - real_ns);
	return prev ? *prev : (int64_t)(mono_ns - gpu_ns);
}

const char *pmconfig_error(int rc)
{
	const char *text = NULL;
	if (cu.cuptiGetResultString && cu.cuptiGetResultString((CUptiResult)-rc, &text) == CUPTI_SUCCESS &&
	    text)
		return text;
	return "CUPTI error";
}

/* Resolves every entry point of an opened library; 0 or -ENOENT naming the missing one. */
static int pmconfig_resolve(void *lib, char *why, size_t why_size)
{
#define PMCONFIG_RESOLVE(name)                                                                               \
	if (!(cu.name = (__typeof__(name) *)dlsym(lib, #name))) {                                            \
		snprintf(why, why_size, "libcupti lacks " #name " (PM sampling needs CUDA 12.6 or later)");  \
		return -ENOENT;                                                                              \
	}
	PMCONFIG_FNS(PMCONFIG_RESOLVE)
#undef PMCONFIG_RESOLVE
	return 0;
}

/*
 * A sanitizer runtime in the process: libcupti opens libnvperf_host with RTLD_DEEPBIND, and
 * AddressSanitizer's runtime ends the process when it sees that flag (so would the others').
 */
static const char *pmconfig_sanitizer(void)
{
	static const char *const runtimes[][2] = {{"__asan_init", "AddressSanitizer"},
	                                          {"__hwasan_init", "HWAddressSanitizer"},
	                                          {"__tsan_init", "ThreadSanitizer"},
	                                          {"__msan_init", "MemorySanitizer"}};
	for (size_t i = 0; i < sizeof runtimes / sizeof runtimes[0]; i++)
		if (dlsym(RTLD_DEFAULT, runtimes[i][0]))
			return runtimes[i][1];
	return NULL;
}

int pmconfig_load(void *cupti, char *why, size_t why_size)
{
	if (cu.lib)
		return 0;
	const char *sanitizer = pmconfig_sanitizer();
	if (sanitizer) {
		snprintf(why, why_size,
		         "the program runs under %s, which refuses how libcupti loads libnvperf_host "
		         "(RTLD_DEEPBIND)",
		         sanitizer);
		return -ENOTSUP;
	}
	/* The libcupti the program traces with: never a second one beside it. */
	if (cupti) {
		int rc = pmconfig_resolve(cupti, why, why_size);
		if (rc != 0) {
			memset(&cu, 0, sizeof cu);
			return rc;
		}
		cu.lib = cupti;
		return 0;
	}
	char buf[512];
	const char *env = getenv("CUSCOPE_CUPTI_PATH");
	const char *cuda_home = getenv("CUDA_HOME");
	const char *dirs[] = {cuda_home, "/usr/local/cuda"};
	void *lib = NULL;
	if (env && *env) {
		lib = dlopen(env, RTLD_NOW | RTLD_LOCAL);
		if (!lib) {
			snprintf(why, why_size, "cannot load %s: %s", env, dlerror());
			return -ENOENT;
		}
	}
	for (size_t d = 0; !lib && d < sizeof dirs / sizeof dirs[0]; d++) {
		static const char *const subdirs[] = {"/lib64", "/extras/CUPTI/lib64"};
		for (size_t s = 0; !lib && dirs[d] && *dirs[d] && s < 2; s++) {
			snprintf(buf, sizeof buf, "%s%s/libcupti.so", dirs[d], subdirs[s]);
			lib = dlopen(buf, RTLD_NOW | RTLD_LOCAL);
		}
	}
	if (!lib)
		lib = dlopen("libcupti.so", RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		snprintf(why, why_size, "libcupti.so not found (CUDA toolkit; or set CUSCOPE_CUPTI_PATH)");
		return -ENOENT;
	}
	int rc = pmconfig_resolve(lib, why, why_size);
	if (rc != 0) {
		dlclose(lib);
		memset(&cu, 0, sizeof cu);
		return rc;
	}
	cu.lib = lib;
	return 0;
}

/* CUPTI's answers that mean "this metric, or this set of them, is not for this chip". */
static int pmconfig_metric_refused(int rc)
{
	return rc == -(int)CUPTI_ERROR_INVALID_PARAMETER || rc == -(int)CUPTI_ERROR_INVALID_METRIC_NAME;
}

static void pmconfig_host_free(CUpti_Profiler_Host_Object *host)
{
	if (!host)
		return;
	CUpti_Profiler_Host_Deinitialize_Params p = {
	    .structSize = CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE, .pHostObject = host};
	cu.cuptiProfilerHostDeinitialize(&p);
}

/* A new PM-sampling host object for the chip: 0, or -(CUPTI result) when the chip is refused. */
static int pmconfig_host_new(const char *chip, const uint8_t *availability, CUpti_Profiler_Host_Object **host)
{
	CUpti_Profiler_Host_Initialize_Params init = {
	    .structSize = CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE,
	    .profilerType = CUPTI_PROFILER_TYPE_PM_SAMPLING,
	    .pChipName = chip,
	    .pCounterAvailabilityImage = availability,
	};
	CUptiResult rc = cu.cuptiProfilerHostInitialize(&init);
	*host = rc == CUPTI_SUCCESS ? init.pHostObject : NULL;
	return rc == CUPTI_SUCCESS ? 0 : -(int)rc;
}

/*
 * A host object configured with names[0..n): *host and, when image is not NULL, the config image
 * (a new buffer) and its pass count. 0, -(CUPTI result) when the chip or the set is refused.
 */
static int pmconfig_try(const char *chip, const uint8_t *availability, const char *const *names, size_t n,
                        CUpti_Profiler_Host_Object **host, uint8_t **image, size_t *image_size,
                        size_t *passes)
{
	*host = NULL;
	CUpti_Profiler_Host_Object *obj;
	int err = pmconfig_host_new(chip, availability, &obj);
	if (err != 0)
		return err;
	CUptiResult rc;
	CUpti_Profiler_Host_ConfigAddMetrics_Params add = {
	    .structSize = CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE,
	    .pHostObject = obj,
	    .ppMetricNames = (const char **)names,
	    .numMetrics = n,
	};
	CUpti_Profiler_Host_GetConfigImageSize_Params size = {
	    .structSize = CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE,
	    .pHostObject = obj,
	};
	uint8_t *buf = NULL;
	if ((rc = cu.cuptiProfilerHostConfigAddMetrics(&add)) != CUPTI_SUCCESS ||
	    (rc = cu.cuptiProfilerHostGetConfigImageSize(&size)) != CUPTI_SUCCESS)
		goto fail;
	rc = CUPTI_ERROR_OUT_OF_MEMORY;
	if (size.configImageSize == 0 || !(buf = malloc(size.configImageSize)))
		goto fail;
	CUpti_Profiler_Host_GetConfigImage_Params get = {
	    .structSize = CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE,
	    .pHostObject = obj,
	    .configImageSize = size.configImageSize,
	    .pConfigImage = buf,
	};
	CUpti_Profiler_Host_GetNumOfPasses_Params np = {
	    .structSize = CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE,
	    .configImageSize = size.configImageSize,
	    .pConfigImage = buf,
	};
	if ((rc = cu.cuptiProfilerHostGetConfigImage(&get)) != CUPTI_SUCCESS ||
	    (rc = cu.cuptiProfilerHostGetNumOfPasses(&np)) != CUPTI_SUCCESS)
		goto fail;
	*passes = np.numOfPasses;
	*host = obj;
	if (image) {
		*image = buf;
		*image_size = size.configImageSize;
	} else {
		free(buf);
	}
	return 0;
fail:
	free(buf);
	pmconfig_host_free(obj);
	return -(int)rc;
}

int pmconfig_new(const char *chip, const uint8_t *availability, const char *const *metrics, size_t count,
                 struct pmconfig **out, char *why, size_t why_size)
{
	*out = NULL;
	if (!cu.lib) {
		snprintf(why, why_size, "CUPTI's profiler host API not loaded");
		return -ENOENT;
	}
	if (!chip || count == 0 || count > PMCONFIG_METRICS_MAX) {
		snprintf(why, why_size, "between 1 and %d metrics for a named chip", PMCONFIG_METRICS_MAX);
		return -EINVAL;
	}
	struct pmconfig *cfg = calloc(1, sizeof *cfg);
	if (!cfg) {
		snprintf(why, why_size, "no memory for the metrics config");
		return -ENOMEM;
	}
	/* The chip itself first: one clear cause when the host API refuses it. */
	CUpti_Profiler_Host_Object *probe;
	int rc = pmconfig_host_new(chip, availability, &probe);
	if (rc != 0) {
		snprintf(why, why_size, "PM sampling config for %s refused: %s", chip, pmconfig_error(rc));
		free(cfg);
		return -ENOTSUP;
	}
	pmconfig_host_free(probe);
	int refusal = 0; /* CUPTI's last answer that did not refuse a name (for why) */
	for (size_t i = 0; i < count; i++) {
		size_t k = cfg->n_asked++;
		snprintf(cfg->asked[k], PMCONFIG_NAME_MAX, "%s", metrics[i]);
		cfg->state[k] = PMCONFIG_UNKNOWN;
		for (size_t j = 0; j < k; j++)
			if (strcmp(cfg->asked[j], cfg->asked[k]) == 0)
				cfg->state[k] = PMCONFIG_DUPLICATE;
		if (cfg->state[k] == PMCONFIG_DUPLICATE || strlen(metrics[i]) >= PMCONFIG_NAME_MAX)
			continue;
		/* Each alone: known to the chip, and sampled in one pass. */
		CUpti_Profiler_Host_Object *host = NULL;
		size_t alone = 0;
		rc = pmconfig_try(chip, availability, &metrics[i], 1, &host, NULL, NULL, &alone);
		if (rc != 0) {
			/* One metric's failure leaves that metric out, whatever CUPTI answered: on the H200
			 * (PCIe) the NVLink metrics fail with CUPTI_ERROR_UNKNOWN, not as unknown names. Any
			 * other answer is kept and said with the metric (and in why when none is left). */
			if (!pmconfig_metric_refused(rc)) {
				cfg->state[k] = PMCONFIG_REFUSED;
				cfg->refusal[k] = rc;
				refusal = rc;
			}
			continue;
		}
		pmconfig_host_free(host);
		if (alone != 1) {
			cfg->state[k] = PMCONFIG_NOT_SAMPLED;
			continue;
		}
		cfg->state[k] = PMCONFIG_USED;
		snprintf(cfg->used[cfg->n_used], PMCONFIG_NAME_MAX, "%s", metrics[i]);
		cfg->used_names[cfg->n_used] = cfg->used[cfg->n_used];
		cfg->n_used++;
	}
	/* Drop from the end until the rest fit one pass (the list is in order of importance). */
	while (cfg->n_used > 0) {
		size_t passes = 0;
		rc = pmconfig_try(chip, availability, cfg->used_names, cfg->n_used, &cfg->host, &cfg->image,
		                  &cfg->image_size, &passes);
		if (rc == 0 && passes == 1) {
			cfg->passes = 1;
			break;
		}
		if (rc == 0) {
			pmconfig_host_free(cfg->host);
			cfg->host = NULL;
			free(cfg->image);
			cfg->image = NULL;
		}
		/* The last one goes, as the least important: the set needs more passes, or CUPTI failed
		 * it (each of its metrics configured alone, so no one of them is to blame; the answer is
		 * kept for why). */
		if (rc != 0 && !pmconfig_metric_refused(rc))
			refusal = rc;
		cfg->n_used--;
		for (size_t k = cfg->n_asked; k-- > 0;)
			if (cfg->state[k] == PMCONFIG_USED) {
				cfg->state[k] = PMCONFIG_NO_PASS;
				break;
			}
	}
	if (cfg->n_used == 0) {
		/* CUPTI's answer is said whatever its cause: the same one for every metric may be the
		 * host API itself failing (memory, a library), or metrics this GPU lacks (the H200's
		 * NVLink ones answer CUPTI_ERROR_UNKNOWN); the two cannot be told apart here. */
		if (refusal)
			snprintf(why, why_size, "none of the %zu metrics can be sampled on %s (CUPTI: %s)",
			         count, chip, pmconfig_error(refusal));
		else
			snprintf(why, why_size, "none of the %zu metrics can be sampled on %s", count, chip);
		pmconfig_free(cfg);
		return -ENOTSUP;
	}
	*out = cfg;
	return 0;
}

void pmconfig_free(struct pmconfig *cfg)
{
	if (!cfg)
		return;
	pmconfig_host_free(cfg->host);
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

const char *pmconfig_asked_error(const struct pmconfig *cfg, size_t i)
{
	return i < cfg->n_asked && cfg->state[i] == PMCONFIG_REFUSED ? pmconfig_error(cfg->refusal[i]) : NULL;
}

int pmconfig_evaluate(struct pmconfig *cfg, const uint8_t *counter_data, size_t size, size_t index,
                      double *values)
{
	CUpti_Profiler_Host_EvaluateToGpuValues_Params p = {
	    .structSize = CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE,
	    .pHostObject = cfg->host,
	    .pCounterDataImage = counter_data,
	    .counterDataImageSize = size,
	    .rangeIndex = index,
	    .ppMetricNames = cfg->used_names,
	    .numMetrics = cfg->n_used,
	    .pMetricValues = values,
	};
	CUptiResult rc = cu.cuptiProfilerHostEvaluateToGpuValues(&p);
	return rc == CUPTI_SUCCESS ? 0 : -(int)rc;
}
