/* Private to pmsample*.c: the GPU metrics sampler's state, shared by its PM-sampling and NVML
 * parts. */
#ifndef CUSCOPE_COLLECTOR_PMSAMPLE_IMPL_H
#define CUSCOPE_COLLECTOR_PMSAMPLE_IMPL_H

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
/* Samples left free in the counter data image: with fewer, it is emptied (a pending one lost). */
#define PMSAMPLE_IMAGE_SPARE 64u
/* Without a completed sample this long after PM sampling started, the collector says why. */
#define PMSAMPLE_SILENT_NS 3000000000ull
#define PMSAMPLE_BATCH     64u /* samples per wire frame */

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

#define PMSAMPLE_GPM_COUNT 8 /* NVML GPM metrics kept (pmsample_nvml.c) */
extern const struct pmsample_gpm_name {
	unsigned id;
	const char *name;
} pmsample_gpm_metrics[PMSAMPLE_GPM_COUNT];

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
	uint64_t pm_since_ns; /* PM sampling started (first decode), 0 before */
	uint64_t pm_samples;  /* samples decoded since */
	size_t image_sent;    /* samples of the counter data image already sent */
	int overflow_said;
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

/* The start: its thread looks at the GPUs (slow: CUPTI profiler host API, configs), the sender then samples. */
enum { PMSAMPLE_IDLE = 0, PMSAMPLE_STARTING = 1, PMSAMPLE_STARTED = 2 };
/* cuda.h's value, without including cuda.h for one number. */
#define PMSAMPLE_CUDA_ERROR_NOT_INITIALIZED 3
/* How long the start thread waits for the program's cuInit to return, and how often it looks. */
#define PMSAMPLE_INIT_WAIT_MS 30000
#define PMSAMPLE_INIT_POLL_MS 20
/* How long the program's exit waits for the sender's decode in progress (pmsample_at_exit). */
#define PMSAMPLE_EXIT_WAIT_MS 100

struct pmsample_state {
	int enabled; /* not --gpu-metrics off */
	int started; /* the GPUs were looked at (start_state reached STARTED) */
	_Atomic int start_state;
	pthread_t start_thread;
	int start_joinable;            /* start_thread is ours to join */
	_Atomic uint64_t start_cpu_ns; /* its CPU time */
	_Atomic int start_cancel;      /* a detach or stop: the start thread gives up its wait */
	/* The program's exit closed the samplers (pmsample_at_exit): the sender no longer calls CUPTI
	 * or NVML for them; busy: the sender is inside such a call. */
	_Atomic int closed;
	_Atomic int busy;
	_Atomic int exit_hooked; /* pmsample_at_exit is registered with atexit */
	int named;               /* the metric names were interned (sender thread) */
	pid_t pid;               /* the process that started (a forked child starts again) */
	unsigned hz;             /* samples per second */
	int default_set;         /* the metrics are pmconfig's defaults, not the user's list */
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
};

/* The one sampler state (pmsample.c); its parts live in pmsample_pm.c and pmsample_nvml.c. */
extern struct pmsample_state pms;

/* pmsample.c */
void pmsample_emit(const struct pmsample_gpu *g, uint32_t id, uint16_t source, uint64_t start, uint64_t end,
                   double value);
void pmsample_flush(void);
void pmsample_clock(struct pmsample_gpu *g, uint64_t newest_end);
/* pmsample_pm.c: CUPTI PM sampling of one GPU */
void pmsample_pm_release(struct pmsample_gpu *g);
int pmsample_pm_start(struct pmsample_gpu *g, char *why, size_t why_size);
void pmsample_pm_decode(struct pmsample_gpu *g);
/* pmsample_nvml.c: the NVML fallbacks */
int pmsample_gpm_start(struct pmsample_gpu *g, char *why, size_t why_size);
void pmsample_gpm_poll(struct pmsample_gpu *g, uint64_t now);
int pmsample_util_start(struct pmsample_gpu *g, char *why, size_t why_size);
void pmsample_util_poll(struct pmsample_gpu *g, uint64_t now);

#endif
