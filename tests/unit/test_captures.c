/*
 * Several captures read into one store (cli_load_captures): each file's CLOCK_MONOTONIC times are
 * moved by its REALTIME anchor's offset to the others', processes with the same pid in different
 * files stay apart, a file without an anchor is read as it is (one warning), a bad file among
 * them is refused before anything is read, and one file reads exactly as before.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cuscope/capture.h"
#include "cuscope/cli.h"
#include "cuscope/store.h"
#include "cuscope/wire.h"

#define SEC 1000000000ull

struct fixture {
	char dir[64];
	char a[128], b[128], c[128], junk[128], err[128];
};

/* A capture of one process (pid 100) on host: an NVTX range at mono + 1 s .. + 2 s, a blocking
 * call + 3 s .. + 4 s, a kernel + 5 s .. + 6 s, BYE at + 7 s (unless it ended abruptly); its
 * anchor is (mono, real). */
static void write_one(const char *path, const char *host, uint64_t mono, uint64_t real, int bye_too)
{
	int err = 0;
	const char *cause = NULL;
	struct capture_writer *w = capture_writer_open(path, &err, &cause);
	assert_non_null(w);
	uint8_t buf[sizeof(struct wire_hello) + 16];
	static const char argv[] = "app";
	struct wire_hello h;
	memset(&h, 0, sizeof h);
	memcpy(h.magic, WIRE_MAGIC, 8);
	h.version = WIRE_VERSION;
	h.hello_size = sizeof h;
	h.pid = 100;
	h.ppid = 1;
	h.start_mono_ns = mono;
	h.anchor_mono_ns = mono;
	h.anchor_real_ns = real;
	strcpy(h.host, host);
	h.cmdline_len = sizeof argv;
	memcpy(buf, &h, sizeof h);
	memcpy(buf + sizeof h, argv, sizeof argv);
	assert_int_equal(
	    capture_writer_frame(w, 0, WIRE_FRAME_HELLO, buf, (uint32_t)(sizeof h + sizeof argv)), 0);
	uint8_t sbuf[sizeof(struct wire_string) + 8];
	struct wire_string s = {2, 4};
	memcpy(sbuf, &s, sizeof s);
	memcpy(sbuf + sizeof s, "step", 4);
	assert_int_equal(capture_writer_frame(w, 0, WIRE_FRAME_STRING, sbuf, sizeof s + 4), 0);
	struct wire_event e[3];
	memset(e, 0, sizeof e);
	e[0] = (struct wire_event){
	    .time_ns = mono + 1 * SEC, .tid = 100, .name_id = 2, .kind = WIRE_EV_NVTX_PUSH};
	e[1] = (struct wire_event){.time_ns = mono + 2 * SEC, .tid = 100, .kind = WIRE_EV_NVTX_POP};
	e[2] = (struct wire_event){.time_ns = mono + 3 * SEC,
	                           .value = mono + 4 * SEC,
	                           .tid = 100,
	                           .name_id = 2,
	                           .kind = WIRE_EV_OSRT};
	assert_int_equal(capture_writer_frame(w, 0, WIRE_FRAME_EVENTS, e, sizeof e), 0);
	struct wire_gpu_event k;
	memset(&k, 0, sizeof k);
	k.kind = WIRE_GPU_KERNEL;
	k.start_ns = mono + 5 * SEC;
	k.end_ns = mono + 6 * SEC;
	k.stream = 7;
	k.context = 1;
	k.name_id = 2;
	assert_int_equal(capture_writer_frame(w, 0, WIRE_FRAME_GPU, &k, sizeof k), 0);
	struct wire_bye bye = {.time_ns = mono + 7 * SEC, .exit_code = 0};
	if (bye_too)
		assert_int_equal(capture_writer_frame(w, 0, WIRE_FRAME_BYE, &bye, sizeof bye), 0);
	assert_int_equal(capture_writer_close(w), 0);
}

/* A capture of one process (pid 200) on host whose n NCCL kernels end at ends[k] (its clock), each
 * 1 ms long; its anchor is (mono, real). */
static void write_nccl(const char *path, const char *host, uint64_t mono, uint64_t real, const uint64_t *ends,
                       size_t n)
{
	int err = 0;
	const char *cause = NULL;
	struct capture_writer *w = capture_writer_open(path, &err, &cause);
	assert_non_null(w);
	uint8_t buf[sizeof(struct wire_hello) + 16];
	static const char argv[] = "rank";
	struct wire_hello h;
	memset(&h, 0, sizeof h);
	memcpy(h.magic, WIRE_MAGIC, 8);
	h.version = WIRE_VERSION;
	h.hello_size = sizeof h;
	h.pid = 200;
	h.ppid = 1;
	h.start_mono_ns = mono;
	h.anchor_mono_ns = mono;
	h.anchor_real_ns = real;
	strcpy(h.host, host);
	h.cmdline_len = sizeof argv;
	memcpy(buf, &h, sizeof h);
	memcpy(buf + sizeof h, argv, sizeof argv);
	assert_int_equal(
	    capture_writer_frame(w, 0, WIRE_FRAME_HELLO, buf, (uint32_t)(sizeof h + sizeof argv)), 0);
	static const char name[] = "ncclDevKernel_AllReduce_Sum_f32_RING_LL";
	uint8_t sbuf[sizeof(struct wire_string) + sizeof name];
	struct wire_string s = {2, sizeof name - 1};
	memcpy(sbuf, &s, sizeof s);
	memcpy(sbuf + sizeof s, name, sizeof name - 1);
	assert_int_equal(
	    capture_writer_frame(w, 0, WIRE_FRAME_STRING, sbuf, (uint32_t)(sizeof s + sizeof name - 1)), 0);
	struct wire_gpu_event *k = calloc(n, sizeof *k);
	for (size_t i = 0; i < n; i++) {
		k[i].kind = WIRE_GPU_KERNEL;
		k[i].start_ns = ends[i] - 1000000;
		k[i].end_ns = ends[i];
		k[i].stream = 7;
		k[i].context = 1;
		k[i].name_id = 2;
	}
	assert_int_equal(capture_writer_frame(w, 0, WIRE_FRAME_GPU, k, (uint32_t)(n * sizeof *k)), 0);
	free(k);
	assert_int_equal(capture_writer_close(w), 0);
}

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof *fx);
	strcpy(fx->dir, "/tmp/cuscope-captures-XXXXXX");
	assert_non_null(mkdtemp(fx->dir));
	snprintf(fx->a, sizeof fx->a, "%s/a.cuscope", fx->dir);
	snprintf(fx->b, sizeof fx->b, "%s/b.cuscope", fx->dir);
	snprintf(fx->c, sizeof fx->c, "%s/c.cuscope", fx->dir);
	snprintf(fx->junk, sizeof fx->junk, "%s/junk.txt", fx->dir);
	snprintf(fx->err, sizeof fx->err, "%s/stderr", fx->dir);
	/* a: booted long ago; b: booted 950.5 s later, its wall clock 0.5 s ahead of a's. */
	/* a ended abruptly (no BYE): its process is not known to have exited, and is still not b's. */
	write_one(fx->a, "host-a", 1000 * SEC, 5000 * SEC, 0);
	write_one(fx->b, "host-b", 50 * SEC, 5000 * SEC + SEC / 2, 1);
	write_one(fx->c, "host-c", 20 * SEC, 0, 1); /* no anchor: an old capture */
	FILE *f = fopen(fx->junk, "w");
	assert_non_null(f);
	fputs("not a capture\n", f);
	fclose(f);
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;
	unlink(fx->a);
	unlink(fx->b);
	unlink(fx->c);
	unlink(fx->junk);
	unlink(fx->err);
	rmdir(fx->dir);
	free(fx);
	return 0;
}

/* The times of process p: its range, blocking call and kernel starts and its BYE-bounded end. */
struct times {
	uint64_t start, range, range_end, call, call_end, kernel, kernel_end;
	pid_t pid;
	uint32_t capture;
	char host[64];
};

static struct times times_of(const struct store *st, size_t p)
{
	struct times t;
	memset(&t, 0, sizeof t);
	struct store_process_info pi;
	store_process_get(st, p, &pi);
	t.start = pi.start_ns;
	t.pid = pi.pid;
	t.capture = pi.capture;
	snprintf(t.host, sizeof t.host, "%s", pi.host);
	for (size_t l = 0; l < pi.lane_count; l++) {
		struct store_lane_info li;
		store_lane_get(st, p, l, &li);
		if (li.kind == STORE_LANE_THREAD) {
			const struct store_range *r;
			assert_int_equal(store_lane_row_all(st, p, l, 0, &r), 1);
			t.range = r->start_ns;
			t.range_end = r->end_ns;
			const struct store_call *c;
			assert_int_equal(store_lane_osrt_query(st, p, l, 0, 0, UINT64_MAX, &c), 1);
			t.call = c->start_ns;
			t.call_end = c->end_ns;
		} else if (li.kind == STORE_LANE_GPU_STREAM) {
			const struct store_gpu_op *op;
			assert_int_equal(store_lane_gpu_all(st, p, l, 0, &op), 1);
			t.kernel = op->start_ns;
			t.kernel_end = op->end_ns;
		}
	}
	return t;
}

static void assert_at(const struct times *t, uint64_t mono)
{
	assert_int_equal(t->start, mono);
	assert_int_equal(t->range, mono + 1 * SEC);
	assert_int_equal(t->range_end, mono + 2 * SEC);
	assert_int_equal(t->call, mono + 3 * SEC);
	assert_int_equal(t->call_end, mono + 4 * SEC);
	assert_int_equal(t->kernel, mono + 5 * SEC);
	assert_int_equal(t->kernel_end, mono + 6 * SEC);
}

/* Runs cli_load_captures with stderr in a file; returns its status, the text in err (size n). */
static int load(struct fixture *fx, int count, char **paths, struct store *st, char *err, size_t n)
{
	fflush(stderr);
	int saved = dup(2);
	int fd = open(fx->err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0 && saved >= 0);
	dup2(fd, 2);
	close(fd);
	int rc = cli_load_captures(count, paths, st);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	FILE *f = fopen(fx->err, "r");
	assert_non_null(f);
	size_t got = fread(err, 1, n - 1, f);
	err[got] = '\0';
	fclose(f);
	return rc;
}

static void test_two_hosts_one_axis(void **state)
{
	struct fixture *fx = *state;
	struct store *st = store_new();
	char err[1024];
	char *paths[] = {fx->a, fx->b};
	assert_int_equal(load(fx, 2, paths, st, err, sizeof err), 0);
	assert_string_equal(err, "");
	assert_int_equal(store_capture_count(st), 2);
	/* Same pid, two hosts: two processes. */
	assert_int_equal(store_process_count(st), 2);
	struct times a = times_of(st, 0), b = times_of(st, 1);
	assert_int_equal(a.pid, 100);
	assert_int_equal(b.pid, 100);
	assert_int_equal(a.capture, 0);
	assert_int_equal(b.capture, 1);
	assert_string_equal(a.host, "host-a");
	assert_string_equal(b.host, "host-b");
	/* a's offset (real - mono) is 4000 s, b's 4950.5 s: b moves by 950.5 s, a stays. */
	assert_at(&a, 1000 * SEC);
	assert_at(&b, 1000 * SEC + SEC / 2);
	assert_int_equal(store_last_ns(st), 1000 * SEC + SEC / 2 + 7 * SEC);
	store_free(st);

	/* In the other order the same axis: the smaller offset is the reference, whichever comes first. */
	st = store_new();
	char *reversed[] = {fx->b, fx->a};
	assert_int_equal(load(fx, 2, reversed, st, err, sizeof err), 0);
	b = times_of(st, 0);
	a = times_of(st, 1);
	assert_at(&a, 1000 * SEC);
	assert_at(&b, 1000 * SEC + SEC / 2);
	store_free(st);
}

static void test_one_capture_as_before(void **state)
{
	struct fixture *fx = *state;
	struct store *st = store_new();
	char err[1024];
	char *paths[] = {fx->b};
	assert_int_equal(load(fx, 1, paths, st, err, sizeof err), 0);
	assert_string_equal(err, "");
	assert_int_equal(store_capture_count(st), 0);
	struct times b = times_of(st, 0);
	assert_at(&b, 50 * SEC);
	store_free(st);
}

static void test_no_anchor_taken_as_is(void **state)
{
	struct fixture *fx = *state;
	struct store *st = store_new();
	char err[1024];
	char *paths[] = {fx->b, fx->c, fx->a};
	assert_int_equal(load(fx, 3, paths, st, err, sizeof err), 0);
	/* One warning line, naming the file. */
	assert_non_null(strstr(err, "c.cuscope has no clock anchor"));
	assert_non_null(strchr(err, '\n'));
	assert_null(strchr(strchr(err, '\n') + 1, '\n'));
	assert_int_equal(store_process_count(st), 3);
	struct times b = times_of(st, 0), c = times_of(st, 1), a = times_of(st, 2);
	assert_at(&c, 20 * SEC);
	assert_at(&a, 1000 * SEC);
	assert_at(&b, 1000 * SEC + SEC / 2);
	store_free(st);
}

static void test_bad_file_refused_first(void **state)
{
	struct fixture *fx = *state;
	struct store *st = store_new();
	char err[1024];
	char *paths[] = {fx->a, fx->junk};
	assert_int_equal(load(fx, 2, paths, st, err, sizeof err), CLI_EXIT_USAGE);
	assert_non_null(strstr(err, "junk.txt is not a cuscope capture file\n"));
	assert_ptr_equal(strchr(err, '\n') + 1, err + strlen(err)); /* one line */
	/* Nothing was read. */
	assert_int_equal(store_process_count(st), 0);
	store_free(st);
}

/* The kernel ends of process p, in the order the store holds them (one stream, one row). */
static size_t kernel_ends(const struct store *st, size_t p, uint64_t *out, size_t max)
{
	struct store_process_info pi;
	store_process_get(st, p, &pi);
	for (size_t l = 0; l < pi.lane_count; l++) {
		struct store_lane_info li;
		store_lane_get(st, p, l, &li);
		if (li.kind != STORE_LANE_GPU_STREAM)
			continue;
		const struct store_gpu_op *op;
		size_t n = store_lane_gpu_all(st, p, l, 0, &op);
		for (size_t i = 0; i < n && i < max; i++)
			out[i] = op[i].end_ns;
		return n;
	}
	return 0;
}

/*
 * Two hosts whose collectives truly end together: b's clock runs 20 ppm slow and its wall clock is
 * 3 s off, so its anchor misplaces it by 3 s. Matching the collectives moves b's kernels onto a's
 * (offset and drift), and the store keeps how: b "collectives" with the drift, a the reference.
 */
static void test_collectives_offset_and_drift(void **state)
{
	struct fixture *fx = *state;
	enum { N = 400 };
	uint64_t ta[N], tb[N];
	for (size_t k = 0; k < N; k++) {
		ta[k] = 1010 * SEC + k * 10000000ull; /* host a's clock: one collective every 10 ms */
		tb[k] = 60 * SEC + (uint64_t)llround((double)(ta[k] - 1010 * SEC) * (1 - 20e-6));
	}
	/* a: real - mono = 4000 s; b truly 4950 s (its 60 s is a's 1010 s), but its wall clock says 3 s more.
	 */
	write_nccl(fx->a, "host-a", 1000 * SEC, 5000 * SEC, ta, N);
	write_nccl(fx->b, "host-b", 50 * SEC, 5000 * SEC + 3 * SEC, tb, N);
	struct store *st = store_new();
	char err[1024];
	char *paths[] = {fx->a, fx->b};
	assert_int_equal(load(fx, 2, paths, st, err, sizeof err), 0);
	assert_string_equal(err, "");
	uint64_t ea[N], eb[N];
	assert_int_equal(kernel_ends(st, 0, ea, N), N);
	assert_int_equal(kernel_ends(st, 1, eb, N), N);
	for (size_t k = 0; k < N; k++) {
		int64_t e = (int64_t)(eb[k] - ea[k]);
		assert_true(e >= -2 && e <= 2);
	}
	struct store_capture_clock ca, cb;
	assert_int_equal(store_capture_get_clock(st, 0, &ca), 0);
	assert_int_equal(store_capture_get_clock(st, 1, &cb), 0);
	assert_string_equal(ca.method, "reference");
	assert_string_equal(cb.method, "collectives");
	assert_int_equal(cb.matched, N);
	assert_int_equal(cb.unmatched, 0);
	assert_int_equal(cb.outliers, 0);
	assert_true(cb.drift_ppb > 19990 && cb.drift_ppb < 20010); /* 1 / (1 - 20e-6) - 1 */
	assert_true(cb.residual_max_ns <= 2);
	/* The anchor put b 3 s late: matching took that back. */
	assert_true(cb.correction_ns < -3 * (int64_t)SEC + 100000 &&
	            cb.correction_ns > -3 * (int64_t)SEC - 100000);
	store_free(st);

	/* b saw 10 collectives fewer: the first N - 10 match, one warning line says so. */
	write_nccl(fx->b, "host-b", 50 * SEC, 5000 * SEC + 3 * SEC, tb, N - 10);
	st = store_new();
	assert_int_equal(load(fx, 2, paths, st, err, sizeof err), 0);
	assert_non_null(strstr(err, "the first 390 matched"));
	assert_ptr_equal(strchr(err, '\n') + 1, err + strlen(err));
	assert_int_equal(store_capture_get_clock(st, 1, &cb), 0);
	assert_int_equal(cb.unmatched, 10);
	assert_int_equal(kernel_ends(st, 1, eb, N), N - 10);
	assert_int_equal(kernel_ends(st, 0, ea, N), N);
	int64_t last = (int64_t)(eb[N - 11] - ea[N - 11]);
	assert_true(last >= -2 && last <= 2);
	store_free(st);

	/* Kernels that are not NCCL's: the anchor stays, no warning, nothing matched. */
	write_one(fx->b, "host-b", 50 * SEC, 5000 * SEC + SEC / 2, 1);
	st = store_new();
	assert_int_equal(load(fx, 2, paths, st, err, sizeof err), 0);
	assert_int_equal(store_capture_get_clock(st, 1, &cb), 0);
	assert_string_equal(cb.method, "anchor");
	assert_int_equal(cb.matched, 0);
	assert_int_equal(cb.residual_p50_ns, -1);
	/* a has 400 NCCL kernels, b none: one line says b was left to its anchor. */
	assert_non_null(strstr(err, "b.cuscope: 0 NCCL kernels to match"));
	store_free(st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_two_hosts_one_axis, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_one_capture_as_before, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_no_anchor_taken_as_is, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_bad_file_refused_first, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_collectives_offset_and_drift, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
