/* Rank labels from a launcher's environment and `record -o` patterns (rank.c, outpattern.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <string.h>

#include <cmocka.h>

#include "cuscope/outpattern.h"
#include "cuscope/rank.h"
#include "cuscope/wire.h"

/* A test environment: NULL-terminated "NAME=value" strings. */
static const char *env_get(const char *name, void *ctx)
{
	const char *const *env = ctx;
	size_t len = strlen(name);
	for (; *env; env++)
		if (strncmp(*env, name, len) == 0 && (*env)[len] == '=')
			return *env + len + 1;
	return NULL;
}

static void test_rank_parse(void **state)
{
	(void)state;
	int32_t v = -5;
	assert_int_equal(rank_parse("0", &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(rank_parse("2147483647", &v), 0);
	assert_int_equal(v, 2147483647);
	const char *bad[] = {"",   "-1",   "+1", " 1", "1 ", "2147483648", "99999999999999999999",
	                     "1x", "0x10", "1.0"};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		v = 77;
		assert_int_equal(rank_parse(bad[i], &v), -EINVAL);
		assert_int_equal(v, 77);
	}
	assert_int_equal(rank_parse(NULL, &v), -EINVAL);
}

static void test_rank_read(void **state)
{
	(void)state;
	struct rank_ids r;
	const char *none[] = {"PATH=/bin", NULL};
	rank_read(&r, env_get, none);
	assert_int_equal(r.ids, 0);
	assert_string_equal(r.bad_name, "");

	/* torchrun */
	const char *torch[] = {
	    "RANK=3", "LOCAL_RANK=1", "WORLD_SIZE=8", "TORCHELASTIC_RESTART_COUNT=2", "SLURM_PROCID=9", NULL};
	rank_read(&r, env_get, torch);
	assert_int_equal(r.ids, WIRE_ID_ALL);
	assert_int_equal(r.rank, 3);
	assert_int_equal(r.local_rank, 1);
	assert_int_equal(r.world_size, 8);
	assert_int_equal(r.restart_count, 2);

	/* Slurm and Open MPI forms, in their order */
	const char *slurm[] = {"SLURM_PROCID=5", "SLURM_LOCALID=1", "SLURM_NTASKS=16", NULL};
	rank_read(&r, env_get, slurm);
	assert_int_equal(r.ids, WIRE_ID_RANK | WIRE_ID_LOCAL_RANK | WIRE_ID_WORLD_SIZE);
	assert_int_equal(r.rank, 5);
	assert_int_equal(r.local_rank, 1);
	assert_int_equal(r.world_size, 16);
	const char *ompi[] = {"SLURM_PROCID=5", "OMPI_COMM_WORLD_RANK=6", "PMI_RANK=7", NULL};
	rank_read(&r, env_get, ompi);
	assert_int_equal(r.rank, 6);

	/* A bad first one is ignored, named once, and not replaced by the next variable. */
	const char *bad[] = {"RANK=-1", "SLURM_PROCID=4", "WORLD_SIZE=x\n\033[2J", NULL};
	rank_read(&r, env_get, bad);
	assert_int_equal(r.ids, 0);
	assert_string_equal(r.bad_name, "RANK");
	assert_string_equal(r.bad_value, "-1");
	const char *esc[] = {"WORLD_SIZE=x\n\033[2J", NULL};
	rank_read(&r, env_get, esc);
	assert_string_equal(r.bad_name, "WORLD_SIZE");
	assert_string_equal(r.bad_value, "x???2J");
}

/* Expands pattern in env with pid 4242 on host "node7.cluster"; returns the rc, out and cause. */
static int expand(const char *pattern, const char *const *env, char *out, size_t size, char *cause)
{
	struct outpattern_vars v = {.get = env_get, .ctx = (void *)env, .pid = 4242, .host = "node7.cluster"};
	cause[0] = '\0';
	return outpattern_expand(pattern, &v, out, size, cause, 256);
}

static void test_expand(void **state)
{
	(void)state;
	const char *env[] = {"RANK=3", "SLURM_JOB_ID=991", "RUN=exp1", "PCT=%r", NULL};
	char out[256], cause[256];
	assert_int_equal(expand("run-%h-%r.cuscope", env, out, sizeof out, cause), 0);
	assert_string_equal(out, "run-node7-3.cuscope");
	assert_int_equal(expand("%j/%p_%q{RUN}_100%%.cap", env, out, sizeof out, cause), 0);
	assert_string_equal(out, "991/4242_exp1_100%.cap");
	/* Expanded once: a value's own % is kept as it is. */
	assert_int_equal(expand("x%q{PCT}", env, out, sizeof out, cause), 0);
	assert_string_equal(out, "x%r");
	assert_int_equal(expand("plain.cuscope", env, out, sizeof out, cause), 0);
	assert_string_equal(out, "plain.cuscope");

	/* Errors: one line each, naming what is wrong. */
	static const struct {
		const char *pattern, *want;
	} bad[] = {
	    {"a%x", "unknown pattern %x"},
	    {"a%", "lone %"},
	    {"a%q{RUN", "%q needs {VARIABLE}"},
	    {"a%qRUN", "%q needs {VARIABLE}"},
	    {"a%q{}", "empty"},
	    {"a%q{NOPE}", "%q{NOPE}: NOPE is not set"},
	    {"%q{}x", "empty"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		assert_int_equal(expand(bad[i].pattern, env, out, sizeof out, cause), -EINVAL);
		if (!strstr(cause, bad[i].want))
			fail_msg("%s: cause %s, want %s", bad[i].pattern, cause, bad[i].want);
		assert_null(strchr(cause, '\n'));
	}
	const char *empty[] = {"E=", "CTL=a\nb", "RANK=abc", NULL};
	assert_int_equal(expand("%j", empty, out, sizeof out, cause), -EINVAL);
	assert_non_null(strstr(cause, "SLURM_JOB_ID is not set"));
	assert_int_equal(expand("%q{E}", empty, out, sizeof out, cause), -EINVAL);
	assert_int_equal(expand("%q{CTL}", empty, out, sizeof out, cause), -EINVAL);
	assert_non_null(strstr(cause, "control character"));
	assert_int_equal(expand("%r", empty, out, sizeof out, cause), -EINVAL);
	assert_non_null(strstr(cause, "RANK=abc is not a rank"));
	const char *norank[] = {NULL};
	assert_int_equal(expand("%r", norank, out, sizeof out, cause), -EINVAL);
	assert_non_null(strstr(cause, "SLURM_PROCID is set"));
	/* Too long for out, and an empty result */
	assert_int_equal(expand("%q{RUN}%q{RUN}", env, out, 8, cause), -EINVAL);
	assert_non_null(strstr(cause, "too long"));
	assert_int_equal(expand("%q{RUN}%q{RUN}", env, out, 9, cause), 0);
	assert_string_equal(out, "exp1exp1");
	assert_int_equal(expand("", env, out, sizeof out, cause), -EINVAL);
	assert_non_null(strstr(cause, "empty"));
}

static void test_uses_pid(void **state)
{
	(void)state;
	assert_int_equal(outpattern_uses_pid("a-%p"), 1);
	assert_int_equal(outpattern_uses_pid("%r%p"), 1);
	assert_int_equal(outpattern_uses_pid("a-%%p"), 0);
	assert_int_equal(outpattern_uses_pid("a-%%%p"), 1);
	assert_int_equal(outpattern_uses_pid("p%"), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rank_parse),
	    cmocka_unit_test(test_rank_read),
	    cmocka_unit_test(test_expand),
	    cmocka_unit_test(test_uses_pid),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
