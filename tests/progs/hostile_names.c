/*
 * Test target whose names are terminal escape sequences: an OSC that retitles the terminal, a CSI
 * that clears it, a C1 CSI, all as NVTX ranges, a mark, a domain and a thread name. Readers of
 * its capture must print them escaped, never raw.
 */
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static void sleep_ms(long ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0)
		;
}

static void *worker(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "\x1b[31mred\x07");
	nvtxRangePushA("worker \x1b]0;pwned\x07 range");
	sleep_ms(5);
	nvtxRangePop();
	sleep_ms(100); /* long enough for the thread scan to see the name */
	return NULL;
}

int main(void)
{
	pthread_t t;
	pthread_create(&t, NULL, worker, NULL);
	for (int i = 0; i < 3; i++) {
		nvtxRangePushA("\x1b]0;pwned\x07");
		nvtxRangePushA("\x1b[2J\x1b[Hclear, \"quoted\"");
		sleep_ms(2);
		nvtxRangePop();
		nvtxRangePop();
	}
	nvtxMarkA("\xc2\x9b"
	          "2Jc1 mark \x7f");
	nvtxDomainHandle_t d = nvtxDomainCreateA("dom\x1b]2;x\x07");
	nvtxEventAttributes_t a;
	memset(&a, 0, sizeof a);
	a.version = NVTX_VERSION;
	a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	a.messageType = NVTX_MESSAGE_TYPE_ASCII;
	a.message.ascii = "in domain\x1b[5m";
	nvtxDomainRangePushEx(d, &a);
	sleep_ms(2);
	nvtxDomainRangePop(d);
	pthread_join(t, NULL);
	printf("done\n");
	return 0;
}
