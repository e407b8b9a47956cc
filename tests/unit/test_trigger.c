/*
 * Trigger unit tests: the parser (every kind, every unit, malformed input), and the evaluator on a
 * store fed with hand-made HELLO/STRING/EVENTS/GPU frames, pass by pass as a live viewer feeds it.
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

#include "cuscope/store.h"
#include "cuscope/trigger.h"
#include "cuscope/wire.h"

#define US 1000ull
#define MS 1000000ull
#define T0 (10000 * MS)

static void feed(struct store *st, uint32_t type, const void *payload, uint32_t length)
{
	const char *cause = NULL;
	if (store_feed(st, 0, type, payload, length, &cause) != 0)
		fail_msg("store_feed(%u): %s", type, cause ? cause : "?");
}

static void hello(struct store *st, int pid)
{
	unsigned char buf[sizeof(struct wire_hello) + 5];
	struct wire_hello h;
	memset(&h, 0, sizeof h);
	memcpy(h.magic, WIRE_MAGIC, 8);
	h.version = WIRE_VERSION;
	h.hello_size = sizeof h;
	h.pid = pid;
	h.ppid = 1;
	h.start_mono_ns = T0;
	h.features = WIRE_FEATURE_CUPTI;
	strcpy(h.host, "testhost");
	h.cmdline_len = 5;
	memcpy(buf, &h, sizeof h);
	memcpy(buf + sizeof h, "prog\0", 5);
	feed(st, WIRE_FRAME_HELLO, buf, sizeof buf);
}

static void string(struct store *st, uint32_t id, const char *text)
{
	unsigned char buf[sizeof(struct wire_string) + 256];
	struct wire_string s = {id, (uint32_t)strlen(text)};
	memcpy(buf, &s, sizeof s);
	memcpy(buf + sizeof s, text, s.length);
	feed(st, WIRE_FRAME_STRING, buf, (uint32_t)(sizeof s + s.length));
}

static void event(struct store *st, uint16_t kind, uint32_t tid, uint64_t t, uint64_t value, uint32_t name,
                  uint32_t domain)
{
	struct wire_event ev;
	memset(&ev, 0, sizeof ev);
	ev.kind = kind;
	ev.tid = tid;
	ev.time_ns = t;
	ev.value = value;
	ev.name_id = name;
	ev.domain_id = domain;
	feed(st, WIRE_FRAME_EVENTS, &ev, sizeof ev);
}

static void push(struct store *st, uint32_t tid, uint64_t t, uint32_t name, uint32_t domain)
{
	event(st, WIRE_EV_NVTX_PUSH, tid, t, 0, name, domain);
}

static void pop(struct store *st, uint32_t tid, uint64_t t, uint32_t domain)
{
	event(st, WIRE_EV_NVTX_POP, tid, t, 0, 0, domain);
}

static void gpu_op(struct store *st, uint16_t kind, uint32_t stream, uint64_t start, uint64_t end,
                   uint32_t name, uint32_t corr)
{
	struct wire_gpu_event e;
	memset(&e, 0, sizeof e);
	e.kind = kind;
	e.start_ns = start;
	e.end_ns = end;
	e.stream = stream;
	e.context = 1;
	e.name_id = name;
	e.correlation_id = corr;
	e.grid[0] = 1;
	e.block[0] = 32;
	feed(st, WIRE_FRAME_GPU, &e, sizeof e);
}

static void api(struct store *st, uint32_t tid, uint64_t start, uint64_t end, uint32_t name, uint32_t corr)
{
	struct wire_gpu_event e;
	memset(&e, 0, sizeof e);
	e.kind = WIRE_GPU_API_RUNTIME;
	e.start_ns = start;
	e.end_ns = end;
	e.tid = tid;
	e.name_id = name;
	e.correlation_id = corr;
	feed(st, WIRE_FRAME_GPU, &e, sizeof e);
}

enum { S_STEP = 1, S_FWD, S_DOM, S_KERNEL, S_LAUNCH, S_SLEEP, S_READ, S_GC, S_MUTEX };

static struct store *new_store(void)
{
	struct store *st = store_new();
	hello(st, 4242);
	string(st, S_STEP, "step");
	string(st, S_FWD, "forward");
	string(st, S_DOM, "train");
	string(st, S_KERNEL, "k");
	string(st, S_LAUNCH, "cudaLaunchKernel");
	string(st, S_SLEEP, "nanosleep");
	string(st, S_READ, "read");
	string(st, S_GC, "gc gen 2");
	string(st, S_MUTEX, "pthread_mutex_lock");
	return st;
}

static struct trigger_engine *engine(const char *const *exprs, size_t n, uint64_t rearm, uint64_t gap_min)
{
	struct trigger_spec specs[8];
	for (size_t i = 0; i < n; i++) {
		const char *why = NULL;
		if (trigger_parse(exprs[i], &specs[i], &why) != 0)
			fail_msg("%s: %s", exprs[i], why);
	}
	struct trigger_config cfg = {.rearm_ns = rearm, .gap_min_ns = gap_min, .gpu_lag_ns = 0};
	return trigger_engine_new(specs, n, &cfg);
}

static void test_parse_kinds(void **state)
{
	(void)state;
	struct trigger_spec s;
	const char *why;
	assert_int_equal(trigger_parse("gpu-idle>20ms", &s, &why), 0);
	assert_int_equal(s.kind, TRIGGER_GPU_IDLE);
	assert_int_equal(s.dur_ns, 20 * MS);
	assert_int_equal(trigger_parse("range:step>1.5s", &s, &why), 0);
	assert_int_equal(s.kind, TRIGGER_RANGE);
	assert_string_equal(s.name, "step");
	assert_int_equal(s.has_domain, 0);
	assert_int_equal(s.dur_ns, 1500 * MS);
	assert_int_equal(trigger_parse("range:train/fwd pass>250us", &s, &why), 0);
	assert_int_equal(s.has_domain, 1);
	assert_string_equal(s.domain, "train");
	assert_string_equal(s.name, "fwd pass");
	assert_int_equal(s.dur_ns, 250 * US);
	assert_int_equal(trigger_parse("range:step>p99*2", &s, &why), 0);
	assert_int_equal(s.kind, TRIGGER_RANGE_PCT);
	assert_true(s.q == 99.0 && s.factor == 2.0);
	assert_int_equal(trigger_parse("range:a>b>p50*1.5", &s, &why), 0);
	assert_string_equal(s.name, "a>b");
	assert_true(s.q == 50.0 && s.factor == 1.5);
	assert_int_equal(trigger_parse("gap-explained:gc", &s, &why), 0);
	assert_int_equal(s.kind, TRIGGER_GAP_CAUSE);
	assert_string_equal(s.cause, "gc");
	assert_string_equal(s.expr, "gap-explained:gc");
}

static void test_parse_durations(void **state)
{
	(void)state;
	uint64_t ns;
	assert_int_equal(trigger_parse_duration("100ns", &ns), 0);
	assert_int_equal(ns, 100);
	assert_int_equal(trigger_parse_duration("3us", &ns), 0);
	assert_int_equal(ns, 3000);
	assert_int_equal(trigger_parse_duration("2.5ms", &ns), 0);
	assert_int_equal(ns, 2500000);
	assert_int_equal(trigger_parse_duration("2s", &ns), 0);
	assert_int_equal(ns, 2000000000ull);
	const char *bad[] = {"", "5", "ms", "-5ms", "0ms", "5 ms", "5msx", "5m", "nanms", "1e30s", "+5ms"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		assert_int_not_equal(trigger_parse_duration(bad[i], &ns), 0);
}

static void test_parse_malformed(void **state)
{
	(void)state;
	const char *bad[] = {"",
	                     "gpu-idle",
	                     "gpu-idle>",
	                     "gpu-idle>5",
	                     "gpu-idle<5ms",
	                     "range:>5ms",
	                     "range:x",
	                     "range:x>",
	                     "range:x>p0*2",
	                     "range:x>p101*2",
	                     "range:x>p99",
	                     "range:x>p99*0",
	                     "range:x>p99*",
	                     "range:dom/>5ms",
	                     "gap-explained:",
	                     "gap-explained:magic",
	                     "idle>5ms",
	                     "range:x>5ms\n"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct trigger_spec s;
		const char *why = NULL;
		assert_int_not_equal(trigger_parse(bad[i], &s, &why), 0);
		assert_non_null(why);
	}
}

/* A range that runs long fires at start + DUR while still open (a hang), once. */
static void test_range_open_fires(void **state)
{
	(void)state;
	struct store *st = new_store();
	const char *ex[] = {"range:step>50ms"};
	struct trigger_engine *e = engine(ex, 1, 2000 * MS, 0);
	push(st, 7, T0, S_STEP, 0);
	assert_int_equal(trigger_engine_eval(e, st, T0 + 49 * MS), 0);
	assert_int_equal(trigger_engine_eval(e, st, T0 + 50 * MS), 1);
	const struct trigger_firing *f = trigger_engine_firing(e, 0);
	assert_int_equal(f->time_ns, T0 + 50 * MS);
	assert_int_equal(f->pid, 4242);
	assert_int_equal(f->trigger, 0);
	/* Still open later, and then complete: the same instance never fires again. */
	assert_int_equal(trigger_engine_eval(e, st, T0 + 5000 * MS), 0);
	pop(st, 7, T0 + 5100 * MS, 0);
	assert_int_equal(trigger_engine_eval(e, st, T0 + 5200 * MS), 0);
	assert_int_equal(trigger_engine_firing_count(e), 1);
	trigger_engine_free(e);
	store_free(st);
}

/* Start/end ranges (the process's async lane, ended on another thread) count as push/pop ones. */
static void test_range_startend(void **state)
{
	(void)state;
	struct store *st = new_store();
	const char *ex[] = {"range:step>20ms"};
	struct trigger_engine *e = engine(ex, 1, MS, 0);
	event(st, WIRE_EV_NVTX_START, 7, T0, 1, S_STEP, 0);
	event(st, WIRE_EV_NVTX_START, 7, T0 + 5 * MS, 2, S_STEP, 0);
	event(st, WIRE_EV_NVTX_END, 8, T0 + 10 * MS, 2, 0, 0);
	assert_int_equal(trigger_engine_eval(e, st, T0 + 21 * MS), 1);
	assert_int_equal(trigger_engine_firing(e, 0)->time_ns, T0 + 20 * MS);
	event(st, WIRE_EV_NVTX_START, 7, T0 + 30 * MS, 3, S_STEP, 0);
	event(st, WIRE_EV_NVTX_END, 8, T0 + 80 * MS, 3, 0, 0);
	event(st, WIRE_EV_NVTX_END, 8, T0 + 90 * MS, 1, 0, 0);
	assert_int_equal(trigger_engine_eval(e, st, T0 + 100 * MS), 1);
	assert_int_equal(trigger_engine_firing(e, 1)->time_ns, T0 + 50 * MS);
	assert_int_equal(trigger_engine_firing(e, 1)->value_ns, 50 * MS);
	trigger_engine_free(e);
	store_free(st);
}

/* Ranges that start and end between two passes are judged when found; short ones never fire; a
 * trigger is quiet for the re-arm time after it fired; other names and domains do not count. */
static void test_range_completed_rearm(void **state)
{
	(void)state;
	struct store *st = new_store();
	const char *ex[] = {"range:step>10ms", "range:train/step>10ms"};
	struct trigger_engine *e = engine(ex, 2, 100 * MS, 0);
	push(st, 7, T0, S_STEP, 0);
	pop(st, 7, T0 + 9 * MS, 0);
	push(st, 7, T0 + 20 * MS, S_FWD, 0);
	pop(st, 7, T0 + 40 * MS, 0);
	push(st, 7, T0 + 50 * MS, S_STEP, 0); /* fires at +60 */
	pop(st, 7, T0 + 75 * MS, 0);
	push(st, 7, T0 + 80 * MS, S_STEP, 0); /* would fire at +90: inside the quiet time */
	pop(st, 7, T0 + 95 * MS, 0);
	assert_int_equal(trigger_engine_eval(e, st, T0 + 100 * MS), 1);
	assert_int_equal(trigger_engine_firing(e, 0)->time_ns, T0 + 60 * MS);
	assert_int_equal(trigger_engine_firing(e, 0)->value_ns, 25 * MS);
	push(st, 7, T0 + 200 * MS, S_STEP, 0); /* quiet time over: fires at +210 */
	pop(st, 7, T0 + 230 * MS, 0);
	/* The domain's: the domain trigger fires at +260; the any-domain one is quiet till +310. */
	push(st, 8, T0 + 250 * MS, S_STEP, S_DOM);
	pop(st, 8, T0 + 280 * MS, S_DOM);
	assert_int_equal(trigger_engine_eval(e, st, T0 + 400 * MS), 2);
	assert_int_equal(trigger_engine_firing_count(e), 3);
	assert_int_equal(trigger_engine_firing(e, 1)->time_ns, T0 + 210 * MS);
	assert_int_equal(trigger_engine_firing(e, 1)->trigger, 0);
	assert_int_equal(trigger_engine_firing(e, 2)->time_ns, T0 + 260 * MS);
	assert_int_equal(trigger_engine_firing(e, 2)->trigger, 1);
	trigger_engine_free(e);
	store_free(st);
}

/* The percentile trigger is armed after 20 instances and judges against the last 100. */
static void test_range_percentile(void **state)
{
	(void)state;
	struct store *st = new_store();
	const char *ex[] = {"range:step>p50*2"};
	struct trigger_engine *e = engine(ex, 1, 1 * MS, 0);
	uint64_t t = T0;
	/* Warm-up: long steps first, then 19 of 10 ms: not armed yet, nothing fires. */
	for (int i = 0; i < 19; i++) {
		uint64_t d = i == 0 ? 500 * MS : 10 * MS;
		push(st, 7, t, S_STEP, 0);
		pop(st, 7, t + d, 0);
		t += d + MS;
	}
	assert_int_equal(trigger_engine_eval(e, st, t), 0);
	push(st, 7, t, S_STEP, 0);
	pop(st, 7, t + 10 * MS, 0);
	t += 11 * MS;
	assert_int_equal(trigger_engine_eval(e, st, t), 0);
	/* Armed: p50 = 10 ms, threshold 20 ms; an open step fires at start + 20 ms. */
	push(st, 7, t, S_STEP, 0);
	assert_int_equal(trigger_engine_eval(e, st, t + 19 * MS), 0);
	assert_int_equal(trigger_engine_eval(e, st, t + 21 * MS), 1);
	assert_int_equal(trigger_engine_firing(e, 0)->time_ns, t + 20 * MS);
	pop(st, 7, t + 30 * MS, 0);
	t += 31 * MS;
	/* 100 more of 30 ms push the old ones out of the window: p50 = 30 ms, a 50 ms step is fine. */
	for (int i = 0; i < 100; i++) {
		push(st, 7, t, S_STEP, 0);
		pop(st, 7, t + 30 * MS, 0);
		t += 31 * MS;
		trigger_engine_eval(e, st, t);
	}
	size_t before = trigger_engine_firing_count(e);
	push(st, 7, t, S_STEP, 0);
	pop(st, 7, t + 50 * MS, 0);
	t += 51 * MS;
	assert_int_equal(trigger_engine_eval(e, st, t), 0);
	push(st, 7, t, S_STEP, 0);
	pop(st, 7, t + 70 * MS, 0);
	assert_int_equal(trigger_engine_eval(e, st, t + 71 * MS), 1);
	assert_int_equal(trigger_engine_firing(e, before)->time_ns, t + 60 * MS);
	trigger_engine_free(e);
	store_free(st);
}

/* gpu-idle: counted from the first kernel (copies before do not start it), fires while open. */
static void test_gpu_idle(void **state)
{
	(void)state;
	struct store *st = new_store();
	const char *ex[] = {"gpu-idle>30ms"};
	struct trigger_engine *e = engine(ex, 1, 10 * MS, 0);
	gpu_op(st, WIRE_GPU_MEMCPY, 7, T0, T0 + MS, 0, 0);
	/* 100 ms before the first kernel: not a gap. */
	assert_int_equal(trigger_engine_eval(e, st, T0 + 90 * MS), 0);
	gpu_op(st, WIRE_GPU_KERNEL, 7, T0 + 100 * MS, T0 + 110 * MS, S_KERNEL, 0);
	gpu_op(st, WIRE_GPU_KERNEL, 8, T0 + 105 * MS, T0 + 130 * MS, S_KERNEL, 0); /* another stream */
	gpu_op(st, WIRE_GPU_KERNEL, 7, T0 + 150 * MS, T0 + 160 * MS, S_KERNEL, 0); /* 20 ms gap: no */
	assert_int_equal(trigger_engine_eval(e, st, T0 + 170 * MS), 0);
	assert_int_equal(trigger_engine_eval(e, st, T0 + 189 * MS), 0);
	/* Open since +160: fires at +190 while open, not again when it closes. */
	assert_int_equal(trigger_engine_eval(e, st, T0 + 195 * MS), 1);
	assert_int_equal(trigger_engine_firing(e, 0)->time_ns, T0 + 190 * MS);
	assert_int_equal(trigger_engine_firing(e, 0)->pid, 4242);
	gpu_op(st, WIRE_GPU_KERNEL, 7, T0 + 300 * MS, T0 + 310 * MS, S_KERNEL, 0);
	/* A closed gap found late (+310 .. +400) fires at its start + 30 ms. */
	gpu_op(st, WIRE_GPU_KERNEL, 7, T0 + 400 * MS, T0 + 410 * MS, S_KERNEL, 0);
	assert_int_equal(trigger_engine_eval(e, st, T0 + 420 * MS), 1);
	assert_int_equal(trigger_engine_firing(e, 1)->time_ns, T0 + 340 * MS);
	assert_int_equal(trigger_engine_firing(e, 1)->value_ns, 90 * MS);
	trigger_engine_free(e);
	store_free(st);
}

/* GPU records come late: with a lag, an idle stretch is judged only that far behind now. */
static void test_gpu_idle_lag(void **state)
{
	(void)state;
	struct store *st = new_store();
	struct trigger_spec s;
	const char *why;
	assert_int_equal(trigger_parse("gpu-idle>30ms", &s, &why), 0);
	struct trigger_config cfg = {.rearm_ns = MS, .gpu_lag_ns = 200 * MS};
	struct trigger_engine *e = trigger_engine_new(&s, 1, &cfg);
	gpu_op(st, WIRE_GPU_KERNEL, 7, T0, T0 + 10 * MS, S_KERNEL, 0);
	assert_int_equal(trigger_engine_eval(e, st, T0 + 220 * MS), 0);
	/* The kernel that filled the "gap" arrives late: nothing fired meanwhile. */
	gpu_op(st, WIRE_GPU_KERNEL, 7, T0 + 30 * MS, T0 + 60 * MS, S_KERNEL, 0);
	assert_int_equal(trigger_engine_eval(e, st, T0 + 240 * MS), 0);
	assert_int_equal(trigger_engine_eval(e, st, T0 + 300 * MS), 1);
	assert_int_equal(trigger_engine_firing(e, 0)->time_ns, T0 + 90 * MS);
	trigger_engine_free(e);
	store_free(st);
}

/* gap-explained: the thread that launched the op after the gap slept through it. */
static void test_gap_explained(void **state)
{
	(void)state;
	struct store *st = new_store();
	const char *ex[] = {"gap-explained:sleep", "gap-explained:read"};
	struct trigger_engine *e = engine(ex, 2, MS, 5 * MS);
	api(st, 7, T0, T0 + 10 * US, S_LAUNCH, 1);
	gpu_op(st, WIRE_GPU_KERNEL, 3, T0 + 20 * US, T0 + MS, S_KERNEL, 1);
	event(st, WIRE_EV_OSRT, 7, T0 + MS, T0 + 41 * MS, S_SLEEP, 0);
	api(st, 7, T0 + 41 * MS, T0 + 41 * MS + 10 * US, S_LAUNCH, 2);
	gpu_op(st, WIRE_GPU_KERNEL, 3, T0 + 41 * MS + 20 * US, T0 + 42 * MS, S_KERNEL, 2);
	/* A short gap (3 ms) is not explained, whatever the thread did. */
	event(st, WIRE_EV_OSRT, 7, T0 + 42 * MS, T0 + 45 * MS, S_READ, 0);
	api(st, 7, T0 + 45 * MS, T0 + 45 * MS + 10 * US, S_LAUNCH, 3);
	gpu_op(st, WIRE_GPU_KERNEL, 3, T0 + 45 * MS + 20 * US, T0 + 46 * MS, S_KERNEL, 3);
	assert_int_equal(trigger_engine_eval(e, st, T0 + 50 * MS), 1);
	const struct trigger_firing *f = trigger_engine_firing(e, 0);
	assert_int_equal(f->trigger, 0);
	assert_int_equal(f->time_ns, T0 + MS + 5 * MS);
	assert_string_equal(f->cause, "sleep");
	assert_string_equal(trigger_gap_cause(st, 0, 7, T0 + MS, T0 + 41 * MS), "sleep");
	assert_string_equal(trigger_gap_cause(st, 0, 7, T0 + 42 * MS, T0 + 45 * MS), "read");
	assert_string_equal(trigger_gap_cause(st, 0, 99, T0, T0 + MS), "unknown");
	/* GC covering most of a gap explains it, even inside a blocking call; a lock; a call that
	 * covers less than half explains nothing. */
	event(st, WIRE_EV_GC, 7, T0 + 100 * MS, T0 + 130 * MS, S_GC, 0);
	assert_string_equal(trigger_gap_cause(st, 0, 7, T0 + 100 * MS, T0 + 140 * MS), "gc");
	event(st, WIRE_EV_OSRT, 7, T0 + 200 * MS, T0 + 260 * MS, S_MUTEX, 0);
	assert_string_equal(trigger_gap_cause(st, 0, 7, T0 + 200 * MS, T0 + 250 * MS), "lock");
	assert_string_equal(trigger_gap_cause(st, 0, 7, T0 + 240 * MS, T0 + 300 * MS), "unknown");
	trigger_engine_free(e);
	store_free(st);
}

/* Two triggers firing in one pass come out in time order. */
static void test_firings_time_order(void **state)
{
	(void)state;
	struct store *st = new_store();
	const char *ex[] = {"range:forward>5ms", "range:step>5ms"};
	struct trigger_engine *e = engine(ex, 2, MS, 0);
	push(st, 7, T0 + 100 * MS, S_FWD, 0);
	pop(st, 7, T0 + 120 * MS, 0);
	push(st, 8, T0, S_STEP, 0);
	pop(st, 8, T0 + 20 * MS, 0);
	assert_int_equal(trigger_engine_eval(e, st, T0 + 200 * MS), 2);
	assert_int_equal(trigger_engine_firing(e, 0)->trigger, 1);
	assert_int_equal(trigger_engine_firing(e, 1)->trigger, 0);
	trigger_engine_free(e);
	store_free(st);
}

/* A firing written as a notice reads back whole, odd file names included; other text is refused. */
static void test_notice_roundtrip(void **state)
{
	(void)state;
	struct trigger_notice n = {.time_ns = 123456789012ull,
	                           .value_ns = 51 * MS,
	                           .pre_ns = 5000 * MS,
	                           .held_ns = 1200 * MS,
	                           .pid = 4242};
	snprintf(n.cause, sizeof n.cause, "sleep");
	snprintf(n.file, sizeof n.file, "/tmp/a dir/x expr=y.cuscope");
	snprintf(n.expr, sizeof n.expr, "range:train/fwd pass>p99*2");
	char text[1024];
	trigger_notice_format(&n, text, sizeof text);
	struct trigger_notice back;
	assert_int_equal(trigger_notice_parse(text, &back), 0);
	assert_int_equal(back.time_ns, n.time_ns);
	assert_int_equal(back.value_ns, n.value_ns);
	assert_int_equal(back.pre_ns, n.pre_ns);
	assert_int_equal(back.held_ns, n.held_ns);
	assert_int_equal(back.pid, 4242);
	assert_string_equal(back.cause, "sleep");
	assert_string_equal(back.file, n.file);
	assert_string_equal(back.expr, n.expr);
	n.cause[0] = n.file[0] = '\0';
	trigger_notice_format(&n, text, sizeof text);
	assert_int_equal(trigger_notice_parse(text, &back), 0);
	assert_string_equal(back.cause, "");
	assert_string_equal(back.file, "");
	const char *bad[] = {"", "GPU tracing unavailable", "trigger time_ns=1 pid=2",
	                     "trigger time_ns=1 pid=2 value_ns=3 pre_ns=4 held_ns=5 cause=- file=99:x expr=y",
	                     "trigger time_ns=x pid=2 value_ns=3 pre_ns=4 held_ns=5 cause=- file=0: expr=y"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		assert_int_not_equal(trigger_notice_parse(bad[i], &back), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse_kinds),
	    cmocka_unit_test(test_parse_durations),
	    cmocka_unit_test(test_parse_malformed),
	    cmocka_unit_test(test_range_open_fires),
	    cmocka_unit_test(test_range_completed_rearm),
	    cmocka_unit_test(test_range_percentile),
	    cmocka_unit_test(test_gpu_idle),
	    cmocka_unit_test(test_gpu_idle_lag),
	    cmocka_unit_test(test_gap_explained),
	    cmocka_unit_test(test_firings_time_order),
	    cmocka_unit_test(test_notice_roundtrip),
	    cmocka_unit_test(test_range_startend),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
