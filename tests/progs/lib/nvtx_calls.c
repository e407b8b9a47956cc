/*
 * NVTX calls for test programs written in Python (loaded with ctypes): the stand-in torch of the
 * --torch tests names its operators' ranges through these, as libtorch_cuda does through NVTX3.
 */
#include <nvtx3/nvToolsExt.h>

int nvtx_calls_push(const char *message)
{
	return nvtxRangePushA(message);
}

int nvtx_calls_pop(void)
{
	return nvtxRangePop();
}
