/*
 * A kernel's details name the NVTX range around its launch call (with --torch, the PyTorch
 * operator that launched it): the innermost range open on the launching thread during the call.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "cuscope/inspect.h"
#include "cuscope/layout.h"
#include "cuscope/store.h"
#include "cuscope/wire.h"

#define MS 1000000ull

static void feed(struct store *st, uint32_t type, const void *payload, size_t length)
{
	const char *cause = NULL;
	if (store_feed(st, 0, type, payload, (uint32_t)length, &cause))
		fail_msg("store_feed(%u): %s", type, cause ? cause : "?");
}

static void string(struct store *st, uint32_t id, const char *text)
{
	unsigned char buf[sizeof(struct wire_string) + 256];
	struct wire_string s = {id, (uint32_t)strlen(text)};
	memcpy(buf, &s, sizeof s);
	memcpy(buf + sizeof s, text, s.length);
	feed(st, WIRE_FRAME_STRING, buf, sizeof s + s.length);
}

static struct wire_event ev(uint16_t kind, uint64_t t, uint32_t name)
{
	struct wire_event e;
	memset(&e, 0, sizeof e);
	e.kind = kind;
	e.time_ns = t;
	e.tid = 101;
	e.name_id = name;
	return e;
}

static struct wire_gpu_event gpu(uint16_t kind, uint64_t start, uint64_t end, uint32_t name, uint32_t corr)
{
	struct wire_gpu_event e;
	memset(&e, 0, sizeof e);
	e.kind = kind;
	e.start_ns = start;
	e.end_ns = end;
	e.name_id = name;
	e.correlation_id = corr;
	e.context = 1;
	if (kind == WIRE_GPU_KERNEL)
		e.stream = 7;
	else
		e.tid = 101;
	return e;
}

enum { N_MAIN = 1, N_LINEAR, N_ADDMM, N_LAUNCH, N_GEMM, N_COPY };

/*
 * Thread 101: aten::linear [10, 20] ms holding aten::addmm [12, 18]; cudaLaunchKernel calls at
 * [13, 14] (inside addmm, correlation 5), [19.0, 19.5] (inside linear only, 6) and [25, 26]
 * (outside every range, 7). Their kernels run on stream 7 at 30, 40 and 50 ms.
 */
static int setup(void **state)
{
	struct store *st = store_new();
	unsigned char buf[sizeof(struct wire_hello) + 8];
	struct wire_hello h;
	memset(&h, 0, sizeof h);
	memcpy(h.magic, WIRE_MAGIC, 8);
	h.version = WIRE_VERSION;
	h.hello_size = sizeof h;
	h.pid = 100;
	h.ppid = 1;
	h.start_mono_ns = 1 * MS;
	h.features = WIRE_FEATURE_NVTX | WIRE_FEATURE_THREADS | WIRE_FEATURE_CUPTI;
	h.cmdline_len = 5;
	memcpy(buf, &h, sizeof h);
	memcpy(buf + sizeof h, "prog\0", 5);
	feed(st, WIRE_FRAME_HELLO, buf, sizeof h + 5);
	string(st, N_MAIN, "main");
	string(st, N_LINEAR, "aten::linear");
	string(st, N_ADDMM, "aten::addmm");
	string(st, N_LAUNCH, "cudaLaunchKernel");
	string(st, N_GEMM, "gemm_kernel");
	string(st, N_COPY, "copy_kernel");
	struct wire_event e[] = {
	    ev(WIRE_EV_THREAD_NAME, 5 * MS, N_MAIN), ev(WIRE_EV_NVTX_PUSH, 10 * MS, N_LINEAR),
	    ev(WIRE_EV_NVTX_PUSH, 12 * MS, N_ADDMM), ev(WIRE_EV_NVTX_POP, 18 * MS, 0),
	    ev(WIRE_EV_NVTX_POP, 20 * MS, 0),
	};
	feed(st, WIRE_FRAME_EVENTS, e, sizeof e);
	struct wire_gpu_event g[] = {
	    gpu(WIRE_GPU_API_RUNTIME, 13 * MS, 14 * MS, N_LAUNCH, 5),
	    gpu(WIRE_GPU_API_RUNTIME, 19 * MS, 19 * MS + MS / 2, N_LAUNCH, 6),
	    gpu(WIRE_GPU_API_RUNTIME, 25 * MS, 26 * MS, N_LAUNCH, 7),
	    gpu(WIRE_GPU_KERNEL, 30 * MS, 31 * MS, N_GEMM, 5),
	    gpu(WIRE_GPU_KERNEL, 40 * MS, 41 * MS, N_COPY, 6),
	    gpu(WIRE_GPU_KERNEL, 50 * MS, 51 * MS, N_COPY, 7),
	};
	feed(st, WIRE_FRAME_GPU, g, sizeof g);
	*state = st;
	return 0;
}

static int teardown(void **state)
{
	store_free(*state);
	return 0;
}

/* The details of the kernel on stream 7 at t. */
static void kernel_details(const struct store *st, uint64_t t, struct inspect_text *out)
{
	struct inspect_view v = {.store = st, .cursor_col = 100, .now_ns = 70 * MS, .clip_ns = UINT64_MAX};
	viewport_set(&v.vp, 0, 100 * MS, 100);
	struct layout lay;
	layout_init(&lay);
	layout_build(&lay, st);
	struct layout_row r = {0};
	for (size_t i = 0; i < lay.count; i++)
		if (lay.rows[i].kind == LAYOUT_ROW_GPU_STREAM)
			r = lay.rows[i];
	layout_fini(&lay);
	assert_int_equal(r.kind, LAYOUT_ROW_GPU_STREAM);
	struct inspect_hit h = inspect_row_hit(&v, &r, t, 0);
	assert_true(h.found && h.gpu);
	inspect_details(&v, out, &h);
}

static int line_of(const struct inspect_text *t, const char *prefix)
{
	for (int i = 0; i < t->count; i++)
		if (strncmp(t->lines[i], prefix, strlen(prefix)) == 0)
			return i;
	return -1;
}

static void test_innermost_range(void **state)
{
	struct inspect_text t;
	kernel_details(*state, 30 * MS + MS / 2, &t);
	int launched = line_of(&t, "launched  cudaLaunchKernel on main 101");
	assert_true(launched >= 0);
	assert_true(line_of(&t, "in range  ") == launched + 1);
	assert_string_equal(t.lines[launched + 1], "in range  aten::addmm (around the launch)");
}

static void test_outer_range(void **state)
{
	struct inspect_text t;
	kernel_details(*state, 40 * MS + MS / 2, &t);
	assert_true(line_of(&t, "launched  cudaLaunchKernel") >= 0);
	assert_true(line_of(&t, "in range  aten::linear (around the launch)") >= 0);
}

static void test_no_range(void **state)
{
	struct inspect_text t;
	kernel_details(*state, 50 * MS + MS / 2, &t);
	assert_true(line_of(&t, "launched  cudaLaunchKernel") >= 0);
	assert_int_equal(line_of(&t, "in range"), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_innermost_range, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_outer_range, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_no_range, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
