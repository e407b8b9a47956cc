/*
 * Test target for the collector's per-thread cache of NVTX message pointers: the same pointer with
 * new bytes must never be recorded under the old name. Prints "pid P" and "tid NAME TID".
 *
 * Expected PushPop rows (name, domain, count), all in the default domain unless named:
 *   buf.0 44, buf.1 .. buf.4 40 each   one static buffer rewritten in place (same length)
 *   buf 4                     a pointer into that buffer
 *   abc 30, abcd 30, ab 30    one buffer alternating a prefix, a longer and a shorter string
 *   stack.A 25, stack.B 25    a stack buffer at the same address in every call
 *   heap.first 1, heap.second 1   a heap string freed and its memory reused
 *   edge.0 20, edge.1 20, edge 20 strings ending on the last byte before an unreadable page
 *   long.<120 x 'L'> 12       longer than a cache slot holds
 *   many.000 .. many.199  3 each   200 distinct pointers (slots collide)
 *   cat.ascii 7 (category 3)   wide.name 5   reg.name 6 (registered)   dom.name dom.N 9
 *   thr.0 100, thr.1 100      two threads, each rewriting its own buffer at its own address
 * Marks: mark.buf 4 (from the buffer that also names pushes).
 */
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static void push_pop(const char *msg)
{
	nvtxRangePushA(msg);
	nvtxRangePop();
}

/* A stack buffer: the same address on every call from the same caller. */
static __attribute__((noinline)) void stack_push(int which)
{
	char name[16];
	snprintf(name, sizeof name, "stack.%c", which ? 'B' : 'A');
	push_pop(name);
}

static void *thread_main(void *arg)
{
	int id = (int)(long)arg;
	char buf[32];
	printf("tid thr%d %ld\n", id, (long)syscall(SYS_gettid));
	for (int i = 0; i < 100; i++) {
		snprintf(buf, sizeof buf, "thr.%d", i % 2);
		push_pop(buf);
	}
	return NULL;
}

int main(void)
{
	static char buf[64];
	printf("pid %d\n", (int)getpid());

	for (int i = 0; i < 200; i++) {
		snprintf(buf, sizeof buf, "buf.%d", i % 5);
		push_pop(buf);
	}
	const char *abc[] = {"abc", "abcd", "ab"};
	for (int i = 0; i < 90; i++) {
		strcpy(buf, abc[i % 3]);
		push_pop(buf);
	}
	for (int i = 0; i < 4; i++) {
		strcpy(buf, "mark.buf");
		nvtxMarkA(buf);
		push_pop(buf + 5); /* "buf": a pointer inside the buffer */
		strcpy(buf, "buf.0");
		push_pop(buf);
	}
	for (int i = 0; i < 50; i++)
		stack_push(i % 2);

	char *heap = strdup("heap.first");
	push_pop(heap);
	free(heap);
	heap = strdup("heap.second");
	push_pop(heap);
	free(heap);

	/* Strings whose NUL is the last readable byte: a word read past it would fault. */
	long page = sysconf(_SC_PAGESIZE);
	char *map = mmap(NULL, (size_t)page * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED || mprotect(map + page, (size_t)page, PROT_NONE) != 0)
		return 3;
	for (int i = 0; i < 60; i++) {
		const char *text = i % 3 == 0 ? "edge.0" : i % 3 == 1 ? "edge.1" : "edge";
		char *at = map + page - (strlen(text) + 1);
		memcpy(at, text, strlen(text) + 1);
		push_pop(at);
	}

	char longname[160];
	memset(longname, 'L', sizeof longname);
	memcpy(longname, "long.", 5);
	longname[125] = '\0';
	for (int i = 0; i < 12; i++)
		push_pop(longname);

	static char many[200][16];
	for (int i = 0; i < 200; i++)
		snprintf(many[i], sizeof many[i], "many.%03d", i);
	for (int r = 0; r < 3; r++)
		for (int i = 0; i < 200; i++)
			push_pop(many[i]);

	nvtxEventAttributes_t a;
	memset(&a, 0, sizeof a);
	a.version = NVTX_VERSION;
	a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	a.messageType = NVTX_MESSAGE_TYPE_ASCII;
	a.category = 3;
	a.message.ascii = "cat.ascii";
	for (int i = 0; i < 7; i++) {
		nvtxRangePushEx(&a);
		nvtxRangePop();
	}
	for (int i = 0; i < 5; i++) {
		nvtxRangePushW(L"wide.name");
		nvtxRangePop();
	}
	nvtxDomainHandle_t dom = nvtxDomainCreateA("dom.N");
	a.category = 0;
	a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
	a.message.registered = nvtxDomainRegisterStringA(dom, "reg.name");
	for (int i = 0; i < 6; i++) {
		nvtxRangePushEx(&a);
		nvtxRangePop();
	}
	a.messageType = NVTX_MESSAGE_TYPE_ASCII;
	strcpy(buf, "dom.name");
	a.message.ascii = buf;
	for (int i = 0; i < 9; i++) {
		nvtxDomainRangePushEx(dom, &a);
		nvtxDomainRangePop(dom);
	}

	pthread_t th[2];
	for (long i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, thread_main, (void *)i);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	return 0;
}
