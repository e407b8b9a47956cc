/*
 * GPU hardware metrics through CUPTI's profiler host API (cupti_profiler_host.h, in libcupti,
 * resolved with dlsym; private to the collector and its unit test): for a chip name ("GH100") and
 * a list of metric names, which metrics the chip knows, the PM-sampling config image for them in
 * one pass, and the evaluation of decoded counter data into metric values. The same host object
 * builds the config and evaluates the samples, so the counter data CUPTI decodes (laid out by
 * metric name) and the evaluation agree. Needs no GPU: the chip name (or the device's counter
 * availability image) is enough, so the unit test runs on any machine with the toolkit.
 */
#ifndef CUSCOPE_COLLECTOR_PMCONFIG_H
#define CUSCOPE_COLLECTOR_PMCONFIG_H

#include <stddef.h>
#include <stdint.h>

#define PMCONFIG_METRICS_MAX 16  /* metrics one sampler asks for */
#define PMCONFIG_NAME_MAX    128 /* longest metric name, bytes with the NUL */

/* The default set: GPU and SM active, warps, tensor pipes, DRAM, PCIe and NVLink bytes. */
extern const char *const pmconfig_default_metrics[];
extern const size_t pmconfig_default_count;

/* Why a metric is not in the config. */
enum pmconfig_state {
	PMCONFIG_USED = 0,        /* in the config image */
	PMCONFIG_UNKNOWN = 1,     /* the chip has no such metric */
	PMCONFIG_NO_PASS = 2,     /* known, but it did not fit the one pass with the others */
	PMCONFIG_DUPLICATE = 3,   /* listed twice */
	PMCONFIG_NOT_SAMPLED = 4, /* known, but not in one pass of PM sampling even alone */
	PMCONFIG_REFUSED = 5,     /* alone, CUPTI failed it with another answer (pmconfig_asked_error) */
};

struct pmconfig;

/*
 * Resolves the host API from libcupti: the handle given (the libcupti the collector traces
 * with), else CUSCOPE_CUPTI_PATH, else $CUDA_HOME's and /usr/local/cuda's, else by name. 0, or
 * -ENOENT with why filled; -ENOTSUP under a sanitizer runtime (libcupti's RTLD_DEEPBIND load of
 * libnvperf_host would end the process). Idempotent; the library stays loaded.
 */
int pmconfig_load(void *cupti, char *why, size_t why_size);

/*
 * Builds the one-pass PM-sampling configuration for chip (with the device's counter availability
 * image where known, else NULL) and the metrics named: each is checked alone, those CUPTI fails
 * (unknown names, or any other answer, kept as PMCONFIG_REFUSED) are left out, then metrics are
 * dropped from the end of the list until the rest fit one pass (or CUPTI takes the set). *out is
 * NULL and -errno returned with why filled when the chip is refused or nothing usable remains
 * (then why gives CUPTI's last answer that was not a name's refusal, if any).
 * Needs pmconfig_load first. Allocates with malloc.
 */
int pmconfig_new(const char *chip, const uint8_t *availability, const char *const *metrics, size_t count,
                 struct pmconfig **out, char *why, size_t why_size);
void pmconfig_free(struct pmconfig *cfg);

/* The config image for cuptiPmSamplingSetConfig (owned by cfg). */
const uint8_t *pmconfig_image(const struct pmconfig *cfg, size_t *size);
/* Passes the image needs (1 for any config pmconfig_new returns). */
size_t pmconfig_passes(const struct pmconfig *cfg);
/* Metrics in the image, in the order values come out of pmconfig_evaluate. */
size_t pmconfig_used(const struct pmconfig *cfg);
const char *pmconfig_used_name(const struct pmconfig *cfg, size_t i);
/* Each metric asked for, in the order given: its name and what became of it. */
size_t pmconfig_asked(const struct pmconfig *cfg);
const char *pmconfig_asked_name(const struct pmconfig *cfg, size_t i);
enum pmconfig_state pmconfig_asked_state(const struct pmconfig *cfg, size_t i);
/* For a PMCONFIG_REFUSED metric, CUPTI's answer as pmconfig_error names it; else NULL. */
const char *pmconfig_asked_error(const struct pmconfig *cfg, size_t i);

/*
 * Evaluates sample `index` of a counter data image (filled by cuptiPmSamplingDecodeData) into
 * values[0..pmconfig_used): 0, or a negative CUPTI result (pmconfig_error names it).
 */
int pmconfig_evaluate(struct pmconfig *cfg, const uint8_t *counter_data, size_t size, size_t index,
                      double *values);

/*
 * The offset (add it) from a PM sample's GPU timestamp to CLOCK_MONOTONIC, given the newest
 * sample's end gpu_ns and the clocks now. The GPU's timer follows the host's CLOCK_REALTIME (the
 * driver keeps them in step): a timestamp within PMCONFIG_REALTIME_NEAR of REALTIME is mapped
 * through REALTIME - MONOTONIC now. Any other timer keeps *prev when there is one, else takes
 * gpu_ns as now (right to the decode period).
 */
#define PMCONFIG_REALTIME_NEAR (600ull * 1000000000ull)
int64_t pmconfig_clock_offset(uint64_t gpu_ns, uint64_t mono_ns, uint64_t real_ns, const int64_t *prev);

/* CUPTI's text for a CUPTI result negated (pmconfig_evaluate's), never NULL. */
const char *pmconfig_error(int rc);

#endif
