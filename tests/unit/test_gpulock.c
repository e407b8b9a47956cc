/* The per-GPU sampler lock: one holder per UUID, others told who holds it, released on close. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../src/collector/gpulock.h"

static const uint8_t u1[16] = {0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
static const uint8_t u2[16] = {1};

static int tmpdir(char *path)
{
	strcpy(path, "/tmp/cuscope-gpulock-XXXXXX");
	assert_non_null(mkdtemp(path));
	int dir = open(path, O_RDONLY | O_DIRECTORY);
	assert_true(dir >= 0);
	return dir;
}

static void test_one_holder_per_gpu(void **state)
{
	(void)state;
	char path[64];
	int dir = tmpdir(path);
	pid_t holder = -1;
	int a = gpulock_take(dir, u1, &holder);
	assert_true(a >= 0);
	/* A second open of the same GPU's lock (another rank) is refused and told the holder. */
	assert_int_equal(gpulock_take(dir, u1, &holder), -EBUSY);
	assert_int_equal(holder, getpid());
	/* Another GPU is independent. */
	int b = gpulock_take(dir, u2, &holder);
	assert_true(b >= 0);
	/* Another process is refused too while we hold it; after the close it gets it. */
	pid_t child = fork();
	if (child == 0) {
		pid_t h = 0;
		_exit(gpulock_take(dir, u1, &h) == -EBUSY && h == getppid() ? 0 : 1);
	}
	int status;
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	close(a);
	int c = gpulock_take(dir, u1, &holder);
	assert_true(c >= 0);
	struct stat st;
	char name[48];
	gpulock_name(u1, name);
	assert_string_equal(name, "gpu-deadbeef0102030405060708090a0b0c.lock");
	assert_int_equal(fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_true(fcntl(c, F_GETFD) & FD_CLOEXEC);
	close(b);
	close(c);
	unlinkat(dir, name, 0);
	gpulock_name(u2, name);
	unlinkat(dir, name, 0);
	close(dir);
	rmdir(path);
}

/* A link planted where the lock file goes is never followed. */
static void test_link_refused(void **state)
{
	(void)state;
	char path[64], name[48], target[96];
	int dir = tmpdir(path);
	gpulock_name(u1, name);
	snprintf(target, sizeof target, "%s/victim", path);
	assert_int_equal(symlinkat(target, dir, name), 0);
	pid_t holder;
	assert_true(gpulock_take(dir, u1, &holder) < 0);
	assert_int_equal(access(target, F_OK), -1);
	unlinkat(dir, name, 0);
	close(dir);
	rmdir(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_one_holder_per_gpu),
	    cmocka_unit_test(test_link_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
