/*
 * Test target for unbalanced NVTX use: pops and ends with nothing to match, a pop in an empty
 * domain while the default domain has a range open, and ranges left open at exit.
 * Expected: "d.keep" PushPop 1 and "ok" PushPop 4 (balanced, unaffected), "ok.async" StartEnd 1;
 * unmatched_pop = 3 (default pops) + 1 (empty domain pop) + 1 (end of an unknown id) = 5.
 * "left.open" (push) and "left.async" (start) are still open at exit.
 */
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int main(void)
{
	struct timespec ts = {.tv_sec = 0, .tv_nsec = 200 * 1000000L};
	nvtxDomainHandle_t dom = nvtxDomainCreateA("empty.dom");
	nvtxRangeId_t id;

	for (int i = 0; i < 3; i++)
		nvtxRangePop();
	nvtxRangePushA("d.keep");
	nvtxDomainRangePop(dom);
	nvtxRangePop();
	for (int i = 0; i < 4; i++) {
		nvtxRangePushA("ok");
		nvtxRangePop();
	}
	id = nvtxRangeStartA("ok.async");
	nvtxRangeEnd(id);
	nvtxRangeEnd(id + 1000000);
	nvtxRangeStartA("left.async");
	nvtxRangePushA("left.open");
	nanosleep(&ts, NULL);
	printf("pid %d\n", (int)getpid());
	return 0;
}
