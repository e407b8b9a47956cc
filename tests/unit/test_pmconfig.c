/*
 * The PM-sampling configuration through CUPTI's real profiler host API, for GH100 (the H200 of the GPU
 * host) without a GPU: which of the issue's metrics the host API accepts, and that the ones
 * kept fit one pass. Skipped, saying so, where the library is absent and in the sanitized build.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "../../src/collector/pmconfig.h"

static const char *const state_names[] = {"used",      "unknown",     "no_pass",
                                          "duplicate", "not_sampled", "refused"};

static int loaded(void)
{
#ifdef __SANITIZE_ADDRESS__
	/* libcupti opens libnvperf_host with RTLD_DEEPBIND, which AddressSanitizer's runtime refuses
	 * (it aborts the process); the unsanitized build of this test (build/tests) runs these. */
	printf("SKIP: under AddressSanitizer (libcupti loads libnvperf_host with RTLD_DEEPBIND)\n");
	return 0;
#endif
	char why[256];
	if (pmconfig_load(NULL, why, sizeof why) == 0)
		return 1;
	printf("SKIP: %s\n", why);
	return 0;
}

/* The default set on GH100: every metric is known, and all of them fit one pass. */
static void test_default_set_gh100(void **state)
{
	(void)state;
	if (!loaded())
		skip();
	struct pmconfig *cfg = NULL;
	char why[256] = "";
	int rc = pmconfig_new("GH100", NULL, pmconfig_default_metrics, pmconfig_default_count, &cfg, why,
	                      sizeof why);
	if (rc != 0)
		fail_msg("pmconfig_new: %d %s", rc, why);
	for (size_t i = 0; i < pmconfig_asked(cfg); i++)
		printf("GH100 %-75s %s\n", pmconfig_asked_name(cfg, i),
		       state_names[pmconfig_asked_state(cfg, i)]);
	assert_int_equal(pmconfig_asked(cfg), pmconfig_default_count);
	assert_int_equal(pmconfig_passes(cfg), 1);
	size_t size = 0;
	const uint8_t *image = pmconfig_image(cfg, &size);
	assert_non_null(image);
	assert_true(size > 64);
	printf("GH100 config image: %zu bytes, %zu of %zu metrics, %zu pass\n", size, pmconfig_used(cfg),
	       pmconfig_default_count, pmconfig_passes(cfg));
	assert_int_equal(pmconfig_used(cfg), pmconfig_default_count);
	for (size_t i = 0; i < pmconfig_used(cfg); i++)
		assert_string_equal(pmconfig_used_name(cfg, i), pmconfig_default_metrics[i]);
	pmconfig_free(cfg);
}

/*
 * The issue's names as written (PCIe and NVLink bytes too, which the default set leaves out): all
 * known to CUPTI's host API for GH100, and all ten in one pass.
 */
static void test_issue_names_gh100(void **state)
{
	(void)state;
	if (!loaded())
		skip();
	const char *const issue[] = {
	    "gr__cycles_active.avg",
	    "sm__cycles_active.avg",
	    "sm__warps_active_realtime.avg.pct_of_peak_sustained_elapsed",
	    "sm__pipe_tensor_cycles_active_realtime.avg.pct_of_peak_sustained_elapsed",
	    "dram__bytes_read.sum",
	    "dram__bytes_write.sum",
	    "pcie__read_bytes.sum",
	    "pcie__write_bytes.sum",
	    "nvlrx__bytes.sum",
	    "nvltx__bytes.sum"};
	struct pmconfig *cfg = NULL;
	char why[256] = "";
	assert_int_equal(pmconfig_new("GH100", NULL, issue, 10, &cfg, why, sizeof why), 0);
	for (size_t i = 0; i < 10; i++) {
		printf("GH100 issue name %-75s %s\n", issue[i], state_names[pmconfig_asked_state(cfg, i)]);
		assert_int_equal(pmconfig_asked_state(cfg, i), PMCONFIG_USED);
	}
	assert_int_equal(pmconfig_passes(cfg), 1);
	pmconfig_free(cfg);
}

/* A name the chip does not have is left out, a duplicate once, and the rest still configure. */
static void test_unknown_and_duplicate(void **state)
{
	(void)state;
	if (!loaded())
		skip();
	const char *const metrics[] = {"sm__cycles_active.avg", "no_such__metric.sum",
	                               "sm__cycles_active.avg", "dram__bytes_read.sum"};
	struct pmconfig *cfg = NULL;
	char why[256] = "";
	assert_int_equal(pmconfig_new("GH100", NULL, metrics, 4, &cfg, why, sizeof why), 0);
	assert_int_equal(pmconfig_asked_state(cfg, 0), PMCONFIG_USED);
	assert_int_equal(pmconfig_asked_state(cfg, 1), PMCONFIG_UNKNOWN);
	assert_int_equal(pmconfig_asked_state(cfg, 2), PMCONFIG_DUPLICATE);
	assert_int_equal(pmconfig_asked_state(cfg, 3), PMCONFIG_USED);
	assert_int_equal(pmconfig_used(cfg), 2);
	assert_string_equal(pmconfig_used_name(cfg, 1), "dram__bytes_read.sum");
	pmconfig_free(cfg);
}

/* Nothing usable: one clear cause, no config. */
static void test_nothing_usable(void **state)
{
	(void)state;
	if (!loaded())
		skip();
	const char *const metrics[] = {"no_such__metric.sum"};
	struct pmconfig *cfg = (struct pmconfig *)1;
	char why[256] = "";
	assert_true(pmconfig_new("GH100", NULL, metrics, 1, &cfg, why, sizeof why) < 0);
	assert_null(cfg);
	assert_non_null(strstr(why, "none of the 1 metrics"));
	assert_true(pmconfig_new("NO_SUCH_CHIP", NULL, pmconfig_default_metrics, 2, &cfg, why, sizeof why) <
	            0);
	assert_null(cfg);
	assert_true(strlen(why) > 0);
}

/* More metrics than fit one pass: the tail is dropped (NO_PASS), the head kept in one pass. */
static void test_too_many_for_one_pass(void **state)
{
	(void)state;
	if (!loaded())
		skip();
	const char *const metrics[] = {
	    "sm__cycles_active.avg",
	    "dram__bytes_read.sum",
	    "lts__t_sectors.sum",
	    "l1tex__t_sectors.sum",
	    "sm__inst_executed.sum",
	    "smsp__inst_executed_pipe_fma.sum",
	    "smsp__inst_executed_pipe_alu.sum",
	    "l1tex__t_requests.sum",
	    "lts__t_requests.sum",
	    "smsp__inst_executed_pipe_lsu.sum",
	    "sm__sass_thread_inst_executed_op_fadd_pred_on.sum",
	    "sm__sass_thread_inst_executed_op_fmul_pred_on.sum",
	    "sm__sass_thread_inst_executed_op_ffma_pred_on.sum",
	    "lts__t_sectors_srcunit_tex.sum",
	    "l1tex__data_pipe_lsu_wavefronts.sum",
	    "smsp__warps_launched.sum",
	};
	size_t n = sizeof metrics / sizeof metrics[0];
	struct pmconfig *cfg = NULL;
	char why[256] = "";
	assert_int_equal(pmconfig_new("GH100", NULL, metrics, n, &cfg, why, sizeof why), 0);
	assert_int_equal(pmconfig_passes(cfg), 1);
	assert_string_equal(pmconfig_used_name(cfg, 0), "sm__cycles_active.avg");
	size_t used = 0, no_pass = 0;
	for (size_t i = 0; i < n; i++) {
		printf("GH100 %-55s %s\n", metrics[i], state_names[pmconfig_asked_state(cfg, i)]);
		used += pmconfig_asked_state(cfg, i) == PMCONFIG_USED;
		no_pass += pmconfig_asked_state(cfg, i) == PMCONFIG_NO_PASS;
	}
	assert_int_equal(used, pmconfig_used(cfg));
	/* Kept metrics are a prefix of the known ones: nothing after the first dropped one is kept. */
	int dropped = 0;
	for (size_t i = 0; i < n; i++) {
		enum pmconfig_state st = pmconfig_asked_state(cfg, i);
		if (st != PMCONFIG_USED && st != PMCONFIG_UNKNOWN)
			dropped = 1;
		else if (dropped)
			assert_int_not_equal(pmconfig_asked_state(cfg, i), PMCONFIG_USED);
	}
	printf("one pass holds %zu of %zu, %zu dropped\n", used, n, no_pass);
	pmconfig_free(cfg);
}

/*
 * The H200 of the GPU host, with its own counter availability image (tests/gpu/pm_availability
 * wrote it there): that PCIe card has no NVLink, and the host API fails both NVLink metrics with
 * CUPTI_ERROR_UNKNOWN rather than as unknown names. They are left out with that answer and the
 * rest of the default set still configures in one pass (the whole config used to be refused).
 */
static void test_h200_availability(void **state)
{
	(void)state;
	if (!loaded())
		skip();
	static uint8_t image[1 << 16];
	/* A path from the repository root, where tests/run.sh runs the unit tests. */
	const char *path = "tests/data/gh100_h200_pm_availability.bin";
	FILE *f = fopen(path, "rb");
	if (!f)
		fail_msg("cannot open %s: run from the repository root (tests/run.sh does)", path);
	size_t size = fread(image, 1, sizeof image, f);
	fclose(f);
	assert_true(size > 0 && size < sizeof image);
	struct pmconfig *cfg = NULL;
	char why[256] = "";
	int rc = pmconfig_new("GH100", image, pmconfig_default_metrics, pmconfig_default_count, &cfg, why,
	                      sizeof why);
	if (rc != 0)
		fail_msg("pmconfig_new with the H200's availability: %d %s", rc, why);
	size_t refused = 0;
	for (size_t i = 0; i < pmconfig_asked(cfg); i++) {
		const char *name = pmconfig_asked_name(cfg, i), *error = pmconfig_asked_error(cfg, i);
		enum pmconfig_state st = pmconfig_asked_state(cfg, i);
		printf("H200 %-75s %s %s\n", name, state_names[st], error ? error : "");
		if (strncmp(name, "nvl", 3) == 0) {
			/* CUPTI 13.0 answers CUPTI_ERROR_UNKNOWN; a later one refusing the names instead
			 * would be as right. */
			if (st == PMCONFIG_REFUSED)
				assert_string_equal(error, "CUPTI_ERROR_UNKNOWN");
			else
				assert_int_equal(st, PMCONFIG_UNKNOWN);
			refused++;
		} else {
			assert_int_equal(st, PMCONFIG_USED);
			assert_null(error);
		}
	}
	assert_int_equal(refused, 2);
	assert_int_equal(pmconfig_used(cfg), pmconfig_default_count - 2);
	assert_int_equal(pmconfig_passes(cfg), 1);
	pmconfig_free(cfg);
	/* Only what the card lacks: no config, and why says so with CUPTI's answer. */
	const char *const nvlink[] = {"nvlrx__bytes.sum", "nvltx__bytes.sum"};
	cfg = (struct pmconfig *)1;
	assert_true(pmconfig_new("GH100", image, nvlink, 2, &cfg, why, sizeof why) < 0);
	assert_null(cfg);
	printf("H200, NVLink only: %s\n", why);
	assert_non_null(strstr(why, "none of the 2 metrics can be sampled on GH100"));
}

/* Under a sanitizer runtime the host API is never loaded (libcupti's RTLD_DEEPBIND load of
 * libnvperf_host would end the process): one reason, the fallback takes over. */
static void test_sanitizer_refused(void **state)
{
	(void)state;
#ifdef __SANITIZE_ADDRESS__
	char why[256] = "";
	assert_int_equal(pmconfig_load(NULL, why, sizeof why), -ENOTSUP);
	assert_non_null(strstr(why, "AddressSanitizer"));
	printf("refused: %s\n", why);
#else
	skip();
#endif
}

/* GPU sample timestamps onto CLOCK_MONOTONIC: through REALTIME when they follow it, else pinned once. */
static void test_clock_offset(void **state)
{
	(void)state;
	const uint64_t S = 1000000000ull, real = 1796000000ull * S, mono = 5000 * S;
	/* A REALTIME timestamp 80 ms old: mono = ts + (mono - real), so it lands 80 ms before now. */
	int64_t off = pmconfig_clock_offset(real - 80000000ull, mono, real, NULL);
	assert_true((uint64_t)((int64_t)(real - 80000000ull) + off) == mono - 80000000ull);
	/* Slightly ahead of the host (the GPU's view of REALTIME): the same mapping. */
	assert_int_equal(pmconfig_clock_offset(real + 2 * S, mono, real, NULL), (int64_t)(mono - real));
	/* A timer of its own (seconds since boot): the newest end is now, then kept. */
	off = pmconfig_clock_offset(700 * S, mono, real, NULL);
	assert_true((uint64_t)((int64_t)(700 * S) + off) == mono);
	int64_t kept = off;
	assert_int_equal(pmconfig_clock_offset(701 * S, mono + 3 * S, real + 3 * S, &kept), off);
	/* A REALTIME timestamp moves with REALTIME - MONOTONIC even when an offset was known. */
	assert_int_equal(pmconfig_clock_offset(real, mono, real, &kept), (int64_t)(mono - real));
	/* Far from REALTIME by more than PMCONFIG_REALTIME_NEAR: not taken for it. */
	assert_int_equal(pmconfig_clock_offset(real - PMCONFIG_REALTIME_NEAR - 1, mono, real, NULL),
	                 (int64_t)(mono - (real - PMCONFIG_REALTIME_NEAR - 1)));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_default_set_gh100),     cmocka_unit_test(test_issue_names_gh100),
	    cmocka_unit_test(test_unknown_and_duplicate), cmocka_unit_test(test_nothing_usable),
	    cmocka_unit_test(test_too_many_for_one_pass), cmocka_unit_test(test_clock_offset),
	    cmocka_unit_test(test_sanitizer_refused),     cmocka_unit_test(test_h200_availability),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
