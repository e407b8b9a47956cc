/* CUPTI PM sampling of one GPU: configure, start, decode and evaluate (pmsample.c drives it). */
#include "pmsample_impl.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

void pmsample_pm_release(struct pmsample_gpu *g)
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
int pmsample_pm_start(struct pmsample_gpu *g, char *why, size_t why_size)
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
	/* The host API comes from the libcupti the program traces with. */
	if (pmconfig_load(cupti_library(), why, why_size) != 0) {
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
	    /* Oldest kept: the decode every PMSAMPLE_DECODE_NS drains the buffer long before it fills.
	     * With KEEP_LATEST the H200 host completed no sample while sampling ran (2026-12-04). */
	    .hwBufferAppendMode = CUPTI_PM_SAMPLING_HARDWARE_BUFFER_APPEND_MODE_KEEP_OLDEST,
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
	/* Metrics left out are said once, with the chip's name: a warning where the user asked for
	 * them, information where the default set names what this GPU lacks (NVLink on a PCIe card). */
	char left[512] = "";
	size_t off = 0;
	for (size_t i = 0; i < pmconfig_asked(g->cfg) && off < sizeof left; i++) {
		enum pmconfig_state st = pmconfig_asked_state(g->cfg, i);
		if (st == PMCONFIG_USED || st == PMCONFIG_DUPLICATE)
			continue;
		int w = snprintf(left + off, sizeof left - off, "%s%s (%s%s)", off ? ", " : "",
		                 pmconfig_asked_name(g->cfg, i), st == PMCONFIG_REFUSED ? "refused: " : "",
		                 st == PMCONFIG_UNKNOWN   ? "unknown"
		                 : st == PMCONFIG_NO_PASS ? "not in one pass"
		                 : st == PMCONFIG_REFUSED ? pmconfig_asked_error(g->cfg, i)
		                                          : "not sampled");
		off += w > 0 ? (size_t)w : 0;
	}
	if (left[0])
		collector_notice(pms.default_set ? WIRE_NOTICE_INFO : WIRE_NOTICE_WARNING,
		                 "GPU metrics on GPU%d (%s): left out %s", g->ordinal, chip.pChipName, left);
	/* What this GPU samples, said once: which metrics the host permits is worth knowing. */
	char list[768] = "";
	off = 0;
	for (size_t i = 0; i < used && off < sizeof list; i++) {
		int w = snprintf(list + off, sizeof list - off, "%s%s", i ? ", " : "", names[i]);
		off += w > 0 ? (size_t)w : 0;
	}
	collector_notice(WIRE_NOTICE_INFO,
	                 "GPU metrics on GPU%d (%s): CUPTI PM sampling at %u Hz of %zu metrics: %s",
	                 g->ordinal, chip.pChipName, pms.hz, used, list);
	return 0;
fail:
	pmsample_pm_release(g);
	return err;
}

/* Says once when PM sampling runs but nothing comes out of it, with what the last decode said. */
static void pmsample_pm_silent(struct pmsample_gpu *g, const CUpti_PmSampling_DecodeData_Params *dec,
                               const CUpti_PmSampling_GetCounterDataInfo_Params *info, uint64_t now)
{
	if (g->pm_samples || g->decode_said || now - g->pm_since_ns < PMSAMPLE_SILENT_NS)
		return;
	g->decode_said = 1;
	collector_notice(
	    WIRE_NOTICE_WARNING,
	    "GPU metrics on GPU%d: no PM sample completed in %llu s (last decode: stop reason %d, "
	    "overflow %d, %zu of %zu samples populated)",
	    g->ordinal, (unsigned long long)(PMSAMPLE_SILENT_NS / 1000000000ull), (int)dec->decodeStopReason,
	    (int)dec->overflow, info ? info->numPopulatedSamples : 0, info ? info->numTotalSamples : 0);
}

/* Decodes what the GPU sampled since the last call and sends the samples completed since. */
void pmsample_pm_decode(struct pmsample_gpu *g)
{
	uint64_t now = clock_mono_ns();
	if (!g->pm_since_ns)
		g->pm_since_ns = now;
	CUpti_PmSampling_DecodeData_Params dec = {
	    .structSize = CUpti_PmSampling_DecodeData_Params_STRUCT_SIZE,
	    .pPmSamplingObject = g->obj,
	    .pCounterDataImage = g->data,
	    .counterDataImageSize = g->data_size,
	};
	CUptiResult rc = pms.cu.decode(&dec);
	if (rc != CUPTI_SUCCESS) {
		pmsample_pm_silent(g, &dec, NULL, now);
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
	if (dec.overflow && !g->overflow_said++)
		collector_notice(WIRE_NOTICE_WARNING,
		                 "GPU metrics on GPU%d: the PM sampling buffer overflowed; samples were lost",
		                 g->ordinal);
	rc = pms.cu.data_info(&info);
	if (rc != CUPTI_SUCCESS) {
		if (!g->decode_said++)
			collector_notice(WIRE_NOTICE_WARNING,
			                 "GPU metrics on GPU%d: reading the samples failed: %s", g->ordinal,
			                 pmsample_cupti_error(rc));
		return;
	}
	size_t used = pmconfig_used(g->cfg), failed = 0;
	int eval_rc = 0;
	for (size_t i = g->image_sent; i < info.numCompletedSamples; i++) {
		CUpti_PmSampling_CounterData_GetSampleInfo_Params si = {
		    .structSize = CUpti_PmSampling_CounterData_GetSampleInfo_Params_STRUCT_SIZE,
		    .pPmSamplingObject = g->obj,
		    .pCounterDataImage = g->data,
		    .counterDataImageSize = g->data_size,
		    .sampleIndex = i,
		};
		double values[PMCONFIG_METRICS_MAX];
		if (pms.cu.sample_info(&si) != CUPTI_SUCCESS ||
		    (eval_rc = pmconfig_evaluate(g->cfg, g->data, g->data_size, i, values)) != 0) {
			failed++;
			continue;
		}
		if (!g->clock_known || i + 1 == info.numCompletedSamples)
			pmsample_clock(g, si.endTimestamp);
		uint64_t start = (uint64_t)((int64_t)si.startTimestamp + g->clock_offset);
		uint64_t end = (uint64_t)((int64_t)si.endTimestamp + g->clock_offset);
		for (size_t k = 0; k < used; k++)
			pmsample_emit(g, g->ids[k], WIRE_GPU_METRIC_PM, start, end, values[k]);
		g->pm_samples++;
	}
	pmsample_pm_silent(g, &dec, &info, now);
	size_t fresh =
	    info.numCompletedSamples > g->image_sent ? info.numCompletedSamples - g->image_sent : 0;
	if (failed && failed == fresh && !g->decode_said++)
		collector_notice(WIRE_NOTICE_WARNING,
		                 "GPU metrics on GPU%d: %zu samples could not be evaluated (%s)", g->ordinal,
		                 failed, eval_rc ? pmconfig_error(eval_rc) : "no sample information");
	g->image_sent = info.numCompletedSamples > g->image_sent ? info.numCompletedSamples : g->image_sent;
	/*
	 * A sample is completed by a later decode than the one that populated it (the H200 host showed
	 * every sample of a 100 ms decode populated and none completed), so the image is decoded into
	 * again, sending only the samples completed since, and emptied once nothing is pending or it is
	 * (nearly) full; a sample pending then is lost.
	 */
	if (info.numPopulatedSamples > info.numCompletedSamples &&
	    dec.decodeStopReason != CUPTI_PM_SAMPLING_DECODE_STOP_REASON_COUNTER_DATA_FULL &&
	    info.numPopulatedSamples + PMSAMPLE_IMAGE_SPARE < info.numTotalSamples)
		return;
	g->image_sent = 0;
	CUpti_PmSampling_CounterDataImage_Initialize_Params di = {
	    .structSize = CUpti_PmSampling_CounterDataImage_Initialize_Params_STRUCT_SIZE,
	    .pPmSamplingObject = g->obj,
	    .counterDataSize = g->data_size,
	    .pCounterData = g->data,
	};
	pms.cu.data_init(&di);
}
