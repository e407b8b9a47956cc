/*
 * Test target with known truth: NVTX domains, registered strings, domain marks, a Unicode
 * message in a domain, and start/end ranges begun on one thread and ended on another.
 * Prints "pid P" and "tid NAME TID" lines.
 *
 * Expected NVTX rows (name, domain, style, count):
 *   a.ascii      dom.A PushPop 3      a.registered dom.A PushPop 4   a.registered dom.A Mark 1
 *   a.mark       dom.A Mark 2         a.outer      dom.A PushPop 2   same-name    dom.A PushPop 1
 *   b.ascii      dom.B PushPop 2      same-name    dom.B PushPop 2   dom-wide-é   dom.B PushPop 1
 *   b.async      dom.B StartEnd 2     same-name    ""    PushPop 3   d.inner      ""    PushPop 2
 *   handoff      ""    StartEnd 6 (each >= 1 ms, ended on thread "ender")
 */
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define HANDOFFS 6
#define B_ASYNC  2

static nvtxDomainHandle_t dom_a, dom_b;
static int handoff_pipe[2];
static pid_t ender_tid;

struct handoff {
	nvtxRangeId_t id;
	int domain_b; /* end with nvtxDomainRangeEnd(dom_b, ...) */
};

/* Sleeps for ms milliseconds, restarting after signals. */
static void sleep_ms(long ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) != 0)
		;
}

/* Event attributes for an ASCII, Unicode or registered message. */
static nvtxEventAttributes_t attr_ascii(const char *msg)
{
	nvtxEventAttributes_t a;

	memset(&a, 0, sizeof(a));
	a.version = NVTX_VERSION;
	a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	a.messageType = NVTX_MESSAGE_TYPE_ASCII;
	a.message.ascii = msg;
	return a;
}

static nvtxEventAttributes_t attr_wide(const wchar_t *msg)
{
	nvtxEventAttributes_t a = attr_ascii(NULL);

	a.messageType = NVTX_MESSAGE_TYPE_UNICODE;
	a.message.unicode = msg;
	return a;
}

static nvtxEventAttributes_t attr_registered(nvtxStringHandle_t h)
{
	nvtxEventAttributes_t a = attr_ascii(NULL);

	a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
	a.message.registered = h;
	return a;
}

/* The "ender" thread: ends every range id that arrives on the pipe, 1 ms after it arrives. */
static void *ender(void *arg)
{
	struct handoff h;

	(void)arg;
	ender_tid = (pid_t)syscall(SYS_gettid);
	pthread_setname_np(pthread_self(), "ender");
	while (read(handoff_pipe[0], &h, sizeof(h)) == (ssize_t)sizeof(h)) {
		sleep_ms(1);
		if (h.domain_b)
			nvtxDomainRangeEnd(dom_b, h.id);
		else
			nvtxRangeEnd(h.id);
	}
	return NULL;
}

static void send_handoff(nvtxRangeId_t id, int domain_b)
{
	struct handoff h = {.id = id, .domain_b = domain_b};

	if (write(handoff_pipe[1], &h, sizeof(h)) != (ssize_t)sizeof(h))
		perror("nvtx_domains: write");
}

int main(void)
{
	nvtxEventAttributes_t a;
	nvtxStringHandle_t reg;
	pthread_t th;

	if (pipe(handoff_pipe) != 0 || pthread_create(&th, NULL, ender, NULL) != 0) {
		fprintf(stderr, "nvtx_domains: setup failed\n");
		return 1;
	}
	dom_a = nvtxDomainCreateA("dom.A");
	dom_b = nvtxDomainCreateA("dom.B");
	reg = nvtxDomainRegisterStringA(dom_a, "a.registered");

	for (int i = 0; i < 3; i++) {
		a = attr_ascii("a.ascii");
		nvtxDomainRangePushEx(dom_a, &a);
		nvtxDomainRangePop(dom_a);
	}
	for (int i = 0; i < 4; i++) {
		a = attr_registered(reg);
		nvtxDomainRangePushEx(dom_a, &a);
		nvtxDomainRangePop(dom_a);
	}
	a = attr_registered(reg);
	nvtxDomainMarkEx(dom_a, &a);
	for (int i = 0; i < 2; i++) {
		a = attr_ascii("a.mark");
		nvtxDomainMarkEx(dom_a, &a);
	}

	/* Interleaved stacks: each domain pops its own. */
	for (int i = 0; i < 2; i++) {
		a = attr_ascii("a.outer");
		nvtxDomainRangePushEx(dom_a, &a);
		a = attr_ascii("b.ascii");
		nvtxDomainRangePushEx(dom_b, &a);
		nvtxRangePushA("d.inner");
		sleep_ms(1);
		nvtxDomainRangePop(dom_a);
		nvtxRangePop();
		nvtxDomainRangePop(dom_b);
	}

	/* One name in three domains. */
	a = attr_ascii("same-name");
	nvtxDomainRangePushEx(dom_a, &a);
	nvtxDomainRangePop(dom_a);
	for (int i = 0; i < 2; i++) {
		nvtxDomainRangePushEx(dom_b, &a);
		nvtxDomainRangePop(dom_b);
	}
	for (int i = 0; i < 3; i++) {
		nvtxRangePushA("same-name");
		nvtxRangePop();
	}

	a = attr_wide(L"dom-wide-\u00e9");
	nvtxDomainRangePushEx(dom_b, &a);
	nvtxDomainRangePop(dom_b);

	/* Start here, end on the ender thread. */
	for (int i = 0; i < HANDOFFS; i++)
		send_handoff(nvtxRangeStartA("handoff"), 0);
	for (int i = 0; i < B_ASYNC; i++) {
		a = attr_ascii("b.async");
		send_handoff(nvtxDomainRangeStartEx(dom_b, &a), 1);
	}
	close(handoff_pipe[1]);
	pthread_join(th, NULL);
	sleep_ms(100);

	printf("pid %d\n", (int)getpid());
	printf("tid ender %d\n", (int)ender_tid);
	return 0;
}
