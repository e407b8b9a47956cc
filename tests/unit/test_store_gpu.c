/*
 * Store unit tests for GPU activity: hand-made HELLO/STRING/GPU frames into a store, checked through
 * the store's queries and the stats writer.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cuscope/layout.h"
#include "cuscope/stats.h"
#include "cuscope/store.h"
#include "cuscope/viewport.h"
#include "cuscope/wire.h"

#define US 1000ull
#define MS 1000000ull

static int feed_source;         /* the source feed() feeds */
static int32_t hello_rank = -1; /* the rank hello() sends, -1 = none */

static void feed(struct store *st, uint32_t type, const void *payload, uint32_t length)
{
	const char *cause = NULL;
	int rc = store_feed(st, feed_source, type, payload, length, &cause);
	if (rc)
		fail_msg("store_feed(%u): %s", type, cause ? cause : "?");
}

static void hello(struct store *st, int pid)
{
	unsigned char buf[sizeof(struct wire_hello) + 8];
	struct wire_hello h;
	memset(&h, 0, sizeof h);
	memcpy(h.magic, WIRE_MAGIC, 8);
	h.version = WIRE_VERSION;
	h.hello_size = sizeof h;
	h.pid = pid;
	h.ppid = 1;
	h.start_mono_ns = 1000 * MS;
	h.features = WIRE_FEATURE_CUPTI;
	strcpy(h.host, "testhost");
	h.cmdline_len = 5;
	if (hello_rank >= 0) {
		h.ids = WIRE_ID_RANK;
		h.rank = hello_rank;
	}
	memcpy(buf, &h, sizeof h);
	memcpy(buf + sizeof h, "prog\0", 5);
	feed(st, WIRE_FRAME_HELLO, buf, sizeof h + 5);
}

static void string(struct store *st, uint32_t id, const char *text)
{
	unsigned char buf[sizeof(struct wire_string) + 512];
	struct wire_string s = {id, (uint32_t)strlen(text)};
	memcpy(buf, &s, sizeof s);
	memcpy(buf + sizeof s, text, s.length);
	feed(st, WIRE_FRAME_STRING, buf, (uint32_t)(sizeof s + s.length));
}

static void gpu(struct store *st, const struct wire_gpu_event *ev, size_t n)
{
	feed(st, WIRE_FRAME_GPU, ev, (uint32_t)(n * sizeof *ev));
}

static struct wire_gpu_event kernel(uint32_t stream, uint64_t start, uint64_t end, uint32_t name,
                                    uint32_t corr)
{
	struct wire_gpu_event e;
	memset(&e, 0, sizeof e);
	e.kind = WIRE_GPU_KERNEL;
	e.start_ns = start;
	e.end_ns = end;
	e.stream = stream;
	e.context = 1;
	e.name_id = name;
	e.correlation_id = corr;
	e.grid[0] = 128;
	e.block[0] = 256;
	return e;
}

static struct wire_gpu_event api(uint32_t tid, uint64_t start, uint64_t end, uint32_t name, uint32_t corr)
{
	struct wire_gpu_event e;
	memset(&e, 0, sizeof e);
	e.kind = WIRE_GPU_API_RUNTIME;
	e.start_ns = start;
	e.end_ns = end;
	e.tid = tid;
	e.name_id = name;
	e.correlation_id = corr;
	return e;
}

static struct wire_gpu_event memcpy_ev(uint32_t stream, uint64_t start, uint64_t end, uint32_t kind,
                                       uint32_t src, uint32_t dst, int async, uint64_t bytes)
{
	struct wire_gpu_event e;
	memset(&e, 0, sizeof e);
	e.kind = WIRE_GPU_MEMCPY;
	e.subkind = (uint16_t)kind;
	e.start_ns = start;
	e.end_ns = end;
	e.stream = stream;
	e.context = 1;
	e.src_mem = (uint8_t)src;
	e.dst_mem = (uint8_t)dst;
	e.flags = async ? WIRE_GPU_FLAG_ASYNC : 0;
	e.bytes = bytes;
	return e;
}

/* Store lane index of the stream lane (device 0, stream), or SIZE_MAX. */
static size_t find_stream(const struct store *st, uint32_t stream, struct store_lane_info *out)
{
	struct store_process_info pi;
	store_process_get(st, 0, &pi);
	for (size_t l = 0; l < pi.lane_count; l++) {
		store_lane_get(st, 0, l, out);
		if (out->kind == STORE_LANE_GPU_STREAM && out->stream == stream)
			return l;
	}
	return SIZE_MAX;
}

static size_t find_thread(const struct store *st, pid_t tid, struct store_lane_info *out)
{
	struct store_process_info pi;
	store_process_get(st, 0, &pi);
	for (size_t l = 0; l < pi.lane_count; l++) {
		store_lane_get(st, 0, l, out);
		if (out->kind == STORE_LANE_THREAD && out->tid == tid)
			return l;
	}
	return SIZE_MAX;
}

static size_t count_stream_lanes(const struct store *st)
{
	struct store_process_info pi;
	store_process_get(st, 0, &pi);
	size_t n = 0;
	for (size_t l = 0; l < pi.lane_count; l++) {
		struct store_lane_info li;
		store_lane_get(st, 0, l, &li);
		n += li.kind == STORE_LANE_GPU_STREAM;
	}
	return n;
}

/*
 * A kernel on a new stream when the process's lane array is full (16 lanes, then 32, ...): the
 * op lands on its new lane (it once went through a pointer into the array before it moved).
 */
static void test_new_stream_moves_lanes(void **state)
{
	(void)state;
	struct store *st = store_new();
	hello(st, 99);
	string(st, 1, "_Z1kv");
	for (uint32_t s = 1; s <= 100; s++) {
		struct wire_gpu_event k = kernel(s, s * MS, s * MS + US, 1, 0);
		gpu(st, &k, 1);
	}
	assert_int_equal(count_stream_lanes(st), 100);
	for (uint32_t s = 1; s <= 100; s++) {
		struct store_lane_info li;
		find_stream(st, s, &li);
		assert_int_equal(li.gpu_ops, 1);
		assert_int_equal(li.kernels, 1);
	}
	store_free(st);
}

static void test_two_streams(void **state)
{
	(void)state;
	struct store *st = store_new();
	hello(st, 100);
	string(st, 1, "k1");
	struct wire_gpu_event ev[5] = {
	    kernel(7, 10 * MS, 11 * MS, 1, 1),  kernel(7, 12 * MS, 13 * MS, 1, 2),
	    kernel(7, 14 * MS, 15 * MS, 1, 3),  kernel(13, 10 * MS, 20 * MS, 1, 4),
	    kernel(13, 21 * MS, 22 * MS, 1, 5),
	};
	gpu(st, ev, 5);
	assert_int_equal(count_stream_lanes(st), 2);
	assert_int_equal(store_gpu_event_count(st), 5);
	assert_int_equal(store_event_count(st), 5);
	struct store_lane_info li;
	size_t l7 = find_stream(st, 7, &li);
	assert_true(l7 != SIZE_MAX);
	assert_int_equal(li.kernels, 3);
	assert_int_equal(li.gpu_ops, 3);
	assert_int_equal(li.gpu_row_count, 1);
	assert_int_equal(li.row_count, 0); /* no NVTX rows: stats' nvtx section sees nothing here */
	assert_string_equal(li.name, "GPU0 s7");
	const struct store_gpu_op *op;
	size_t n = store_lane_gpu_query(st, 0, l7, 0, 11 * MS + 1, 14 * MS, &op);
	assert_int_equal(n, 1);
	assert_int_equal(op[0].start_ns, 12 * MS);
	size_t l13 = find_stream(st, 13, &li);
	assert_int_equal(li.kernels, 2);
	n = store_lane_gpu_query(st, 0, l13, 0, 0, UINT64_MAX, &op);
	assert_int_equal(n, 2);
	assert_int_equal(store_first_ns(st), 10 * MS);
	assert_int_equal(store_last_ns(st), 22 * MS);
	struct store_kernel_config kc;
	assert_int_equal(store_gpu_op_kernel(st, 0, &op[0], &kc), 0);
	assert_int_equal(kc.grid[0], 128);
	assert_int_equal(kc.block[0], 256);
	store_free(st);
}

static void test_default_stream_and_copy_label(void **state)
{
	(void)state;
	struct store *st = store_new();
	hello(st, 100);
	string(st, 1, "k");
	/* An op on the NULL stream before the context record that names it. */
	struct wire_gpu_event k = kernel(3, 1 * MS, 2 * MS, 1, 0);
	gpu(st, &k, 1);
	struct wire_gpu_event ctx;
	memset(&ctx, 0, sizeof ctx);
	ctx.kind = WIRE_GPU_CONTEXT;
	ctx.context = 1;
	ctx.device = 0;
	ctx.stream = 3;
	gpu(st, &ctx, 1);
	struct store_lane_info li;
	find_stream(st, 3, &li);
	assert_true(li.is_default);
	assert_string_equal(li.name, "GPU0 default");
	/* After the context record: a new lane on the null stream of device 1 is default at once. */
	ctx.context = 2;
	ctx.device = 1;
	ctx.stream = 40;
	struct wire_gpu_event c2 =
	    memcpy_ev(41, 1 * MS, 2 * MS, WIRE_MEMCPY_HTOD, WIRE_MEM_PINNED, WIRE_MEM_DEVICE, 1, 4096);
	c2.device = 1;
	struct wire_gpu_event k2 = kernel(40, 3 * MS, 4 * MS, 1, 0);
	k2.device = 1;
	struct wire_gpu_event batch[3] = {ctx, c2, k2};
	gpu(st, batch, 3);
	size_t l40 = find_stream(st, 40, &li);
	assert_true(l40 != SIZE_MAX);
	assert_true(li.is_default);
	assert_string_equal(li.name, "GPU1 default");
	size_t l41 = find_stream(st, 41, &li);
	assert_false(li.is_default);
	assert_string_equal(li.name, "GPU1 s41 cpy");
	const struct store_gpu_op *op;
	assert_int_equal(store_lane_gpu_all(st, 0, l41, 0, &op), 1);
	assert_int_equal(store_gpu_op_bytes(st, 0, &op[0]), 4096);
	store_free(st);
}

static void test_kernel_before_api(void **state)
{
	(void)state;
	struct store *st = store_new();
	hello(st, 100);
	string(st, 1, "k");
	string(st, 2, "cudaLaunchKernel");
	struct wire_gpu_event k = kernel(7, 10 * MS, 11 * MS, 1, 42);
	gpu(st, &k, 1);
	struct store_lane_info li;
	size_t l7 = find_stream(st, 7, &li);
	const struct store_gpu_op *op;
	assert_int_equal(store_lane_gpu_all(st, 0, l7, 0, &op), 1);
	struct store_gpu_launch launch;
	assert_int_equal(store_gpu_op_get_launch(st, 0, &op[0], &launch), -ENOENT);
	/* The API record arrives later: now the kernel knows its launching thread. */
	struct wire_gpu_event a = api(555, 9 * MS, 9 * MS + 5 * US, 2, 42);
	gpu(st, &a, 1);
	store_lane_gpu_all(st, 0, l7, 0, &op);
	assert_int_equal(store_gpu_op_get_launch(st, 0, &op[0], &launch), 0);
	assert_int_equal(launch.tid, 555);
	assert_string_equal(store_string(st, launch.name_id), "cudaLaunchKernel");
	assert_int_equal(launch.start_ns, 9 * MS);
	/* The call itself is on thread 555's cuda api row. */
	size_t lt = find_thread(st, 555, &li);
	assert_true(lt != SIZE_MAX);
	assert_int_equal(li.gpu_row_count, 1);
	assert_int_equal(store_lane_gpu_all(st, 0, lt, 0, &op), 1);
	assert_int_equal(op[0].kind, WIRE_GPU_API_RUNTIME);
	store_free(st);
}

/*
 * Correlation ids are sparse and come out of order: every CUDA call takes one (here 8 cheap calls
 * not recorded before each launch), and calls recorded by callback arrive thread by thread a drain
 * ahead of their kernels. Every kernel still finds its launching thread (a map indexed by the id
 * and sized by the records seen once lost most of one thread's); a crafted id sizes nothing.
 */
enum { SPARSE_LAUNCHES = 1000, SPARSE_THREADS = 3, SPARSE_IDS = 9 };
static uint32_t sparse_ids[SPARSE_THREADS][SPARSE_LAUNCHES];

/* Correlation ids of each thread's launches (each after 8 cheap calls): thread 0 ran alone first,
 * then threads 1 and 2 at once, their calls interleaved at random (a fixed seed). */
static void sparse_ids_make(void)
{
	uint32_t next = 0, seed = 12345;
	for (uint32_t i = 0; i < SPARSE_LAUNCHES; i++)
		sparse_ids[0][i] = next += SPARSE_IDS;
	uint32_t calls[3] = {0, 0, 0};
	while (calls[1] + calls[2] < 2 * SPARSE_LAUNCHES * SPARSE_IDS) {
		seed = seed * 1103515245u + 12345u;
		uint32_t t = 1 + ((seed >> 16) & 1);
		if (calls[t] == SPARSE_LAUNCHES * SPARSE_IDS)
			t = 3 - t;
		next++;
		if (++calls[t] % SPARSE_IDS == 0)
			sparse_ids[t][calls[t] / SPARSE_IDS - 1] = next;
	}
}

/* The thread whose launch took id. */
static uint32_t sparse_thread(uint32_t id)
{
	for (uint32_t t = 0; t < SPARSE_THREADS; t++)
		for (uint32_t i = 0; i < SPARSE_LAUNCHES; i++)
			if (sparse_ids[t][i] == id)
				return t;
	fail_msg("no launch took correlation %u", id);
	return 0;
}

static void test_sparse_ids_linked(void **state)
{
	(void)state;
	sparse_ids_make();
	struct store *st = store_new();
	hello(st, 100);
	string(st, 1, "k");
	string(st, 2, "cudaLaunchKernel");
	static struct wire_gpu_event ev[SPARSE_LAUNCHES];
	/* The calls arrive ring by ring: thread 0's in a drain of their own, then the newest thread's
	 * first; the kernels after all of them. */
	static const uint32_t order[SPARSE_THREADS] = {0, 2, 1};
	for (uint32_t k = 0; k < SPARSE_THREADS; k++) {
		uint32_t t = order[k];
		for (uint32_t i = 0; i < SPARSE_LAUNCHES; i++) {
			uint32_t id = sparse_ids[t][i];
			ev[i] = api(1000 + t, 10 * MS + id * US, 10 * MS + id * US + 500, 2, id);
		}
		gpu(st, ev, SPARSE_LAUNCHES);
	}
	for (uint32_t t = 0; t < SPARSE_THREADS; t++) {
		for (uint32_t i = 0; i < SPARSE_LAUNCHES; i++) {
			uint32_t id = sparse_ids[t][i];
			ev[i] = kernel(7, 100 * MS + id * US, 100 * MS + id * US + 500, 1, id);
		}
		gpu(st, ev, SPARSE_LAUNCHES);
	}
	struct store_lane_info li;
	size_t l7 = find_stream(st, 7, &li);
	const struct store_gpu_op *op;
	size_t n = store_lane_gpu_all(st, 0, l7, 0, &op);
	assert_int_equal(n, SPARSE_LAUNCHES * SPARSE_THREADS);
	for (size_t k = 0; k < n; k++) {
		struct store_gpu_launch launch;
		if (store_gpu_op_get_launch(st, 0, &op[k], &launch) != 0)
			fail_msg("kernel %zu (correlation %u) lost its launch", k, op[k].correlation_id);
		assert_int_equal(launch.tid, 1000 + sparse_thread(op[k].correlation_id));
	}
	/* One record naming the largest id: linked, and the store grows by far less than a map of
	 * 2^32 ids (or of 2^20 slots). */
	size_t before = store_memory_bytes(st);
	struct wire_gpu_event crafted[2] = {api(1000, 900 * MS, 901 * MS, 2, 0xffffffffu),
	                                    kernel(7, 902 * MS, 903 * MS, 1, 0xffffffffu)};
	gpu(st, crafted, 2);
	assert_true(store_memory_bytes(st) - before < (1u << 20));
	n = store_lane_gpu_all(st, 0, l7, 0, &op);
	struct store_gpu_launch launch;
	assert_int_equal(store_gpu_op_get_launch(st, 0, &op[n - 1], &launch), 0);
	assert_int_equal(launch.tid, 1000);
	store_free(st);
}

/*
 * The ids of a program that launches 100 kernels (each after 8 cheap calls), copies and syncs,
 * 200 times: clustered runs that once made a probe run out in the correlation table (a launch
 * recorded, its kernel unlinked).
 */
static void test_batch_ids_linked(void **state)
{
	(void)state;
	enum { BATCHES = 200, LAUNCHES = 100, CHUNK = 1000 };
	struct store *st = store_new();
	hello(st, 100);
	string(st, 1, "k");
	string(st, 2, "cudaLaunchKernel");
	static struct wire_gpu_event apis[BATCHES * (LAUNCHES + 2)], kernels[BATCHES * LAUNCHES];
	size_t n_api = 0, n_kernel = 0;
	uint32_t id = 1; /* cudaFree(0), not recorded */
	for (uint32_t b = 0; b < BATCHES; b++) {
		for (uint32_t i = 0; i < LAUNCHES; i++) {
			id += 9;
			uint64_t at = 10 * MS + (uint64_t)id * US;
			apis[n_api++] = api(1000, at, at + 500, 2, id);
			kernels[n_kernel++] = kernel(7, at + 600, at + 900, 1, id);
		}
		for (uint32_t i = 0; i < 2; i++) { /* the copy and the sync: calls without a kernel */
			id++;
			apis[n_api++] =
			    api(1000, 10 * MS + (uint64_t)id * US, 10 * MS + (uint64_t)id * US + 500, 2, id);
		}
	}
	for (size_t i = 0; i < n_api; i += CHUNK)
		gpu(st, apis + i, n_api - i < CHUNK ? n_api - i : CHUNK);
	for (size_t i = 0; i < n_kernel; i += CHUNK)
		gpu(st, kernels + i, n_kernel - i < CHUNK ? n_kernel - i : CHUNK);
	struct store_lane_info li;
	size_t l7 = find_stream(st, 7, &li);
	const struct store_gpu_op *op;
	size_t n = store_lane_gpu_all(st, 0, l7, 0, &op);
	assert_int_equal(n, n_kernel);
	for (size_t k = 0; k < n; k++) {
		struct store_gpu_launch launch;
		if (store_gpu_op_get_launch(st, 0, &op[k], &launch) != 0)
			fail_msg("kernel %zu (correlation %u) lost its launch", k, op[k].correlation_id);
	}
	store_free(st);
}

static void test_sync_joins_thread_either_order(void **state)
{
	(void)state;
	struct store *st = store_new();
	hello(st, 100);
	string(st, 2, "cudaStreamSynchronize");
	struct wire_gpu_event s;
	memset(&s, 0, sizeof s);
	s.kind = WIRE_GPU_SYNC;
	s.subkind = WIRE_SYNC_STREAM;
	s.start_ns = 5 * MS;
	s.end_ns = 8 * MS;
	s.stream = 7;
	s.context = 1;
	s.correlation_id = 9;
	/* Sync first: parked on its stream, then moved to the thread when the API record comes. */
	gpu(st, &s, 1);
	struct store_lane_info li;
	size_t l7 = find_stream(st, 7, &li);
	assert_int_equal(li.gpu_ops, 1);
	struct wire_gpu_event a = api(77, 5 * MS - 1000, 8 * MS + 1000, 2, 9);
	gpu(st, &a, 1);
	store_lane_get(st, 0, l7, &li);
	assert_int_equal(li.gpu_ops, 0);
	size_t lt = find_thread(st, 77, &li);
	assert_int_equal(li.gpu_ops, 2);
	assert_int_equal(li.gpu_row_count, 2); /* the sync is nested inside the call */
	const struct store_gpu_op *op;
	assert_int_equal(store_lane_gpu_all(st, 0, lt, 1, &op), 1);
	assert_int_equal(op[0].kind, WIRE_GPU_SYNC);
	/* API first: the sync goes straight to the thread. */
	a = api(78, 20 * MS, 30 * MS, 2, 10);
	s.correlation_id = 10;
	s.start_ns = 21 * MS;
	s.end_ns = 29 * MS;
	struct wire_gpu_event both[2] = {a, s};
	gpu(st, both, 2);
	find_thread(st, 78, &li);
	assert_int_equal(li.gpu_ops, 2);
	/* No API record ever: stays on the stream (never dropped). */
	s.correlation_id = 11;
	s.start_ns = 40 * MS;
	s.end_ns = 41 * MS;
	gpu(st, &s, 1);
	store_lane_get(st, 0, l7, &li);
	assert_int_equal(li.gpu_ops, 1);
	store_free(st);
}

static void test_graph_kernel_kept(void **state)
{
	(void)state;
	struct store *st = store_new();
	hello(st, 100);
	string(st, 1, "graph_node");
	struct wire_gpu_event k = kernel(7, 1 * MS, 2 * MS, 1, 0);
	k.graph_id = 3;
	gpu(st, &k, 1);
	struct store_lane_info li;
	size_t l = find_stream(st, 7, &li);
	assert_int_equal(li.kernels, 1);
	const struct store_gpu_op *op;
	assert_int_equal(store_lane_gpu_all(st, 0, l, 0, &op), 1);
	struct store_gpu_launch launch;
	assert_int_equal(store_gpu_op_get_launch(st, 0, &op[0], &launch), -ENOENT);
	struct store_kernel_config kc;
	store_gpu_op_kernel(st, 0, &op[0], &kc);
	assert_int_equal(kc.graph_id, 3);
	store_free(st);
}

static void test_demangle(void **state)
{
	(void)state;
	char buf[256];
	assert_non_null(store_demangle("_Z6vecAddPKfS0_Pfi", buf, sizeof buf));
	assert_string_equal(buf, "vecAdd(float const*, float const*, float*, int)");
	assert_null(store_demangle("plain_c_kernel", buf, sizeof buf));

	struct store *st = store_new();
	hello(st, 100);
	string(st, 1, "_Z6vecAddPKfS0_Pfi");
	string(
	    st, 2,
	    "_ZN2at6native18elementwise_kernelILi128ELi4EZNS0_22gpu_kernel_impl_nocastIfEEvRT_EUliE_EEviT1_");
	struct wire_gpu_event k[2] = {kernel(7, 1 * MS, 2 * MS, 1, 0), kernel(7, 3 * MS, 4 * MS, 2, 0)};
	gpu(st, k, 2);
	struct store_lane_info li;
	size_t l = find_stream(st, 7, &li);
	const struct store_gpu_op *op;
	assert_int_equal(store_lane_gpu_all(st, 0, l, 0, &op), 2);
	assert_string_equal(store_string(st, op[0].name_id),
	                    "vecAdd(float const*, float const*, float*, int)");
	assert_string_equal(store_short_name(st, op[0].name_id), "vecAdd");
	assert_string_equal(store_short_name(st, op[1].name_id), "at::native::elementwise_kernel");
	store_free(st);
}

static void test_overlap_second_row_and_busy(void **state)
{
	(void)state;
	struct store *st = store_new();
	hello(st, 100);
	string(st, 1, "k");
	/* [10,20) and [15,25) overlap on one stream: two rows; union 10..25 + 30..31 = 16 ms. */
	struct wire_gpu_event k[3] = {kernel(7, 10 * MS, 20 * MS, 1, 0), kernel(7, 15 * MS, 25 * MS, 1, 0),
	                              kernel(7, 30 * MS, 31 * MS, 1, 0)};
	gpu(st, k, 3);
	/* Out of order arrival lands sorted. */
	struct wire_gpu_event early = kernel(7, 1 * MS, 2 * MS, 1, 0);
	gpu(st, &early, 1);
	struct store_lane_info li;
	size_t l = find_stream(st, 7, &li);
	assert_int_equal(li.gpu_row_count, 2);
	const struct store_gpu_op *op;
	size_t n = store_lane_gpu_all(st, 0, l, 0, &op);
	assert_int_equal(n, 3);
	for (size_t i = 1; i < n; i++)
		assert_true(op[i - 1].end_ns <= op[i].start_ns);
	assert_int_equal(op[0].start_ns, 1 * MS);

	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	assert_int_equal(stats_write(f, st, STATS_FORMAT_JSON), 0);
	fclose(f);
	/* 1 + 15 + 1 ms */
	assert_non_null(strstr(text, "\"busy_ns\": 17000000"));
	assert_non_null(strstr(text, "\"kernels\": 4"));
	free(text);
	store_free(st);
}

/* Two processes (ranks) on one GPU with a stream of the same id: each has its own stream lane,
 * and stats keeps them apart by (pid, device, stream). */
static void test_two_processes_one_stream_id(void **state)
{
	(void)state;
	struct store *st = store_new();
	for (int p = 0; p < 2; p++) {
		feed_source = p;
		hello_rank = p;
		hello(st, 100 + p);
		string(st, 1, "k");
		struct wire_gpu_event ev[2] = {kernel(7, 1 * MS, 2 * MS, 1, 0),
		                               kernel(7, 3 * MS, 4 * MS, 1, 0)};
		gpu(st, ev, (size_t)p + 1);
	}
	feed_source = 0;
	hello_rank = -1;
	for (size_t p = 0; p < 2; p++) {
		struct store_process_info pi;
		store_process_get(st, p, &pi);
		assert_int_equal(pi.rank, (int)p);
		size_t streams = 0;
		for (size_t l = 0; l < pi.lane_count; l++) {
			struct store_lane_info li;
			store_lane_get(st, p, l, &li);
			if (li.kind != STORE_LANE_GPU_STREAM)
				continue;
			streams++;
			assert_int_equal(li.stream, 7);
			assert_int_equal(li.pid, 100 + (int)p);
			assert_int_equal(li.kernels, p + 1);
		}
		assert_int_equal(streams, 1);
	}
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	assert_int_equal(stats_write(f, st, STATS_FORMAT_JSON), 0);
	fclose(f);
	assert_non_null(strstr(text, "{\"pid\": 100, \"rank\": 0, \"device\": 0, \"stream\": 7, \"default\": "
	                             "false, \"kernels\": 1"));
	assert_non_null(strstr(text, "{\"pid\": 101, \"rank\": 1, \"device\": 0, \"stream\": 7, \"default\": "
	                             "false, \"kernels\": 2"));
	free(text);
	store_free(st);
}

static void test_memcpy_stats_and_sections(void **state)
{
	(void)state;
	struct store *st = store_new();
	hello(st, 100);
	string(st, 1, "k");
	string(st, 2, "NVIDIA H200");
	string(st, 3, "cudaMemcpyAsync");
	struct wire_gpu_event ev[6] = {
	    memcpy_ev(7, 1 * MS, 2 * MS, WIRE_MEMCPY_HTOD, WIRE_MEM_PAGEABLE, WIRE_MEM_DEVICE, 0, 100),
	    memcpy_ev(7, 3 * MS, 4 * MS, WIRE_MEMCPY_HTOD, WIRE_MEM_PAGEABLE, WIRE_MEM_DEVICE, 0, 200),
	    memcpy_ev(7, 5 * MS, 6 * MS, WIRE_MEMCPY_HTOD, WIRE_MEM_PINNED, WIRE_MEM_DEVICE, 1,
	              5000000000ull),
	    memcpy_ev(7, 7 * MS, 9 * MS, WIRE_MEMCPY_DTOH, WIRE_MEM_DEVICE, WIRE_MEM_PINNED, 1, 50),
	    kernel(7, 10 * MS, 11 * MS, 1, 0),
	    api(5, 1 * MS, 1 * MS + 300, 3, 0),
	};
	gpu(st, ev, 6);
	struct wire_gpu_device dev;
	memset(&dev, 0, sizeof dev);
	dev.device = 0;
	dev.name_id = 2;
	for (int i = 0; i < 16; i++)
		dev.uuid[i] = (uint8_t)(0xa0 + i);
	feed(st, WIRE_FRAME_GPU_DEVICE, &dev, sizeof dev);
	struct store_gpu_device_info di;
	assert_int_equal(store_gpu_device_find(st, 0, 0, &di), 0);
	assert_string_equal(di.name, "NVIDIA H200");
	assert_string_equal(di.short_name, "H200");
	assert_string_equal(di.uuid, "GPU-a0a1a2a3-a4a5-a6a7-a8a9-aaabacadaeaf");

	unsigned char nbuf[64];
	struct wire_notice wn = {
	    .level = WIRE_NOTICE_WARNING, .topic = WIRE_NOTICE_TOPIC_GPU_UNAVAILABLE, .length = 16};
	memcpy(nbuf, &wn, sizeof wn);
	memcpy(nbuf + sizeof wn, "GPU unavailable\n", 16);
	feed(st, WIRE_FRAME_NOTICE, nbuf, sizeof wn + 16);
	assert_int_equal(store_notice_count(st, 0), 1);
	struct store_notice_info ni;
	store_notice_get(st, 0, 0, &ni);
	assert_string_equal(ni.text, "GPU unavailable ");
	assert_int_equal(ni.level, WIRE_NOTICE_WARNING);
	assert_int_equal(ni.topic, WIRE_NOTICE_TOPIC_GPU_UNAVAILABLE);
	assert_int_equal(ni.seq, 1);
	assert_int_equal(store_notice_total(st), 1);

	struct wire_loss loss = {WIRE_LOSS_CUPTI_DROPPED, 0, 12};
	feed(st, WIRE_FRAME_LOSSES, &loss, sizeof loss);
	assert_int_equal(store_loss_count(st, WIRE_LOSS_CUPTI_DROPPED), 12);

	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	assert_int_equal(stats_write(f, st, STATS_FORMAT_JSON), 0);
	fclose(f);
	static const char *const keys[] = {
	    "\"nvtx\":",   "\"threads\":", "\"processes\":", "\"losses\":",  "\"kernels\":", "\"memcpy\":",
	    "\"memset\":", "\"sync\":",    "\"gpus\":",      "\"streams\":", "\"api\":"};
	const char *prev = text;
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
		const char *at = strstr(text, keys[i]);
		if (!at)
			fail_msg("stats JSON lacks %s", keys[i]);
		assert_true(at >= prev); /* in this order */
		prev = at;
	}
	/* Two pageable sync HtoD copies grouped, the pinned async one (over 4 GiB) apart. */
	assert_non_null(strstr(text,
	                       "{\"kind\": \"HtoD\", \"src_mem\": \"pageable\", \"dst_mem\": \"device\", "
	                       "\"async\": false, \"count\": 2, \"bytes\": 300, \"total_ns\": 2000000}"));
	assert_non_null(
	    strstr(text, "{\"kind\": \"HtoD\", \"src_mem\": \"pinned\", \"dst_mem\": \"device\", "
	                 "\"async\": true, \"count\": 1, \"bytes\": 5000000000, \"total_ns\": 1000000}"));
	assert_non_null(strstr(text, "\"kind\": \"DtoH\", \"src_mem\": \"device\", \"dst_mem\": \"pinned\""));
	assert_non_null(strstr(text, "\"cause\": \"cupti_dropped\", \"count\": 12"));
	assert_non_null(strstr(text, "{\"device\": 0, \"name\": \"NVIDIA H200\", \"uuid\": "
	                             "\"GPU-a0a1a2a3-a4a5-a6a7-a8a9-aaabacadaeaf\"}"));
	assert_non_null(strstr(
	    text,
	    "{\"pid\": 100, \"rank\": -1, \"device\": 0, \"stream\": 7, \"default\": false, \"kernels\": 1"));
	assert_non_null(strstr(
	    text, "{\"name\": \"cudaMemcpyAsync\", \"count\": 1, \"total_ns\": 300, \"p50_ns\": 300}"));
	free(text);

	/* Table and CSV carry every heading too. */
	for (int fmt = STATS_FORMAT_TABLE; fmt <= STATS_FORMAT_CSV; fmt++) {
		text = NULL;
		f = open_memstream(&text, &len);
		assert_int_equal(stats_write(f, st, (enum stats_format)fmt), 0);
		fclose(f);
		assert_non_null(strstr(text, fmt == STATS_FORMAT_TABLE ? "== streams ==" : "# streams"));
		assert_non_null(strstr(text, fmt == STATS_FORMAT_TABLE ? "== api ==" : "# api"));
		assert_non_null(strstr(text, "true"));
		free(text);
	}
	store_free(st);
}

static void test_layout_and_fold(void **state)
{
	(void)state;
	struct store *st = store_new();
	hello(st, 100);
	string(st, 1, "k");
	string(st, 2, "cudaLaunchKernel");
	struct wire_gpu_event ctx;
	memset(&ctx, 0, sizeof ctx);
	ctx.kind = WIRE_GPU_CONTEXT;
	ctx.context = 1;
	ctx.stream = 9;
	/* Streams appear out of order and on two devices; the thread comes with its API call. */
	struct wire_gpu_event ev[5] = {kernel(20, 1 * MS, 2 * MS, 1, 1), api(300, 0, 10 * US, 2, 1),
	                               kernel(9, 3 * MS, 4 * MS, 1, 0), kernel(5, 3 * MS, 4 * MS, 1, 0), ctx};
	ev[3].device = 1;
	gpu(st, ev, 5);
	struct layout lay;
	layout_init(&lay);
	layout_build(&lay, st);
	static const enum layout_row_kind want[] = {
	    LAYOUT_ROW_PROCESS,    LAYOUT_ROW_THREAD,     LAYOUT_ROW_CUDA_API,   LAYOUT_ROW_GPU_DEVICE,
	    LAYOUT_ROW_GPU_STREAM, LAYOUT_ROW_GPU_STREAM, LAYOUT_ROW_GPU_DEVICE, LAYOUT_ROW_GPU_STREAM,
	};
	assert_int_equal(lay.count, sizeof want / sizeof want[0]);
	for (size_t i = 0; i < lay.count; i++)
		assert_int_equal(lay.rows[i].kind, want[i]);
	struct store_lane_info li;
	store_lane_get(st, 0, lay.rows[4].lane, &li);
	assert_string_equal(li.name, "GPU0 default"); /* the default stream first */
	store_lane_get(st, 0, lay.rows[5].lane, &li);
	assert_string_equal(li.name, "GPU0 s20");
	assert_int_equal(lay.rows[6].device, 1);
	layout_fini(&lay);

	/* Many narrow kernels fold into cells; the cost does not depend on how many there are. */
	struct store *big = store_new();
	hello(big, 101);
	string(big, 1, "tiny");
	for (int b = 0; b < 100; b++) {
		struct wire_gpu_event k[100];
		for (int i = 0; i < 100; i++)
			k[i] = kernel(7, (uint64_t)(b * 100 + i) * 10 * US,
			              (uint64_t)(b * 100 + i) * 10 * US + 5 * US, 1, 0);
		gpu(big, k, 100);
	}
	const struct store_gpu_op *op;
	struct store_lane_info bl;
	size_t lane = find_stream(big, 7, &bl);
	size_t n = store_lane_gpu_query(big, 0, lane, 0, 0, 100 * MS, &op);
	assert_int_equal(n, 10000);
	struct viewport vp;
	viewport_set(&vp, 0, 100 * MS, 50);
	struct viewport_seg segs[50];
	size_t ns = viewport_fold_gpu(&vp, op, n, segs, 50);
	assert_int_equal(ns, 50);
	size_t total = 0;
	for (size_t i = 0; i < ns; i++) {
		assert_int_equal(segs[i].kind, VIEWPORT_SEG_FOLD);
		total += segs[i].count;
	}
	assert_int_equal(total, 10000);
	store_free(big);
	store_free(st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_two_streams),
	    cmocka_unit_test(test_new_stream_moves_lanes),
	    cmocka_unit_test(test_default_stream_and_copy_label),
	    cmocka_unit_test(test_kernel_before_api),
	    cmocka_unit_test(test_sparse_ids_linked),
	    cmocka_unit_test(test_batch_ids_linked),
	    cmocka_unit_test(test_sync_joins_thread_either_order),
	    cmocka_unit_test(test_graph_kernel_kept),
	    cmocka_unit_test(test_demangle),
	    cmocka_unit_test(test_overlap_second_row_and_busy),
	    cmocka_unit_test(test_two_processes_one_stream_id),
	    cmocka_unit_test(test_memcpy_stats_and_sections),
	    cmocka_unit_test(test_layout_and_fold),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
