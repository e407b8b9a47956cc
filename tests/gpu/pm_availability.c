/*
 * pm_availability OUT_FILE [DEVICE]: writes the PM-sampling counter availability image of a GPU
 * (cuptiPmSamplingGetCounterAvailability, as the collector asks before enabling) to OUT_FILE and
 * prints "chip NAME bytes N". Run on the GPU host; the image lets the host-API unit test
 * (tests/unit/test_pmconfig.c) build that GPU's PM-sampling config on a machine without a GPU
 * (tests/data/gh100_h200_pm_availability.bin came from the H200 this way).
 */
#include <cuda.h>
#include <cupti_pmsampling.h>
#include <cupti_profiler_target.h>
#include <cupti_target.h>

#include <stdio.h>
#include <stdlib.h>

static int cupti_ok(CUptiResult rc, const char *what)
{
	if (rc == CUPTI_SUCCESS)
		return 1;
	const char *text = NULL;
	cuptiGetResultString(rc, &text);
	fprintf(stderr, "pm_availability: %s: %s\n", what, text ? text : "CUPTI error");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: pm_availability OUT_FILE [DEVICE]\n");
		return 2;
	}
	char *end = NULL;
	size_t device = argc == 3 ? strtoul(argv[2], &end, 10) : 0;
	if (argc == 3 && (end == argv[2] || *end)) {
		fprintf(stderr, "pm_availability: DEVICE must be a device index, not '%s'\n", argv[2]);
		return 2;
	}
	CUresult cr = cuInit(0);
	if (cr != CUDA_SUCCESS) {
		fprintf(stderr, "pm_availability: cuInit failed (%d)\n", (int)cr);
		return 1;
	}
	CUpti_Profiler_Initialize_Params init = {.structSize = CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
	if (!cupti_ok(cuptiProfilerInitialize(&init), "cuptiProfilerInitialize"))
		return 1;
	CUpti_Device_GetChipName_Params chip = {.structSize = CUpti_Device_GetChipName_Params_STRUCT_SIZE,
	                                        .deviceIndex = device};
	if (!cupti_ok(cuptiDeviceGetChipName(&chip), "cuptiDeviceGetChipName"))
		return 1;
	CUpti_PmSampling_GetCounterAvailability_Params av = {
	    .structSize = CUpti_PmSampling_GetCounterAvailability_Params_STRUCT_SIZE, .deviceIndex = device};
	if (!cupti_ok(cuptiPmSamplingGetCounterAvailability(&av), "counter availability size"))
		return 1;
	if (av.counterAvailabilityImageSize == 0) {
		fprintf(stderr, "pm_availability: CUPTI reports no counter availability image\n");
		return 1;
	}
	uint8_t *image = malloc(av.counterAvailabilityImageSize);
	if (!image) {
		fprintf(stderr, "pm_availability: no memory for %zu bytes\n",
		        av.counterAvailabilityImageSize);
		return 1;
	}
	av.pCounterAvailabilityImage = image;
	if (!cupti_ok(cuptiPmSamplingGetCounterAvailability(&av), "counter availability"))
		return 1;
	FILE *f = fopen(argv[1], "wb");
	if (!f || fwrite(image, 1, av.counterAvailabilityImageSize, f) != av.counterAvailabilityImageSize ||
	    fclose(f) != 0) {
		fprintf(stderr, "pm_availability: cannot write %s\n", argv[1]);
		return 1;
	}
	printf("chip %s bytes %zu\n", chip.pChipName, av.counterAvailabilityImageSize);
	free(image);
	return 0;
}
