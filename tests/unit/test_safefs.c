/* safefs: the trusted directory walk, removal through fds, and outputs that never destroy. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "cuscope/safefs.h"

struct fixture {
	char dir[1024];
};

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof *fx);
	const char *tmp = getenv("TMPDIR");
	snprintf(fx->dir, sizeof fx->dir, "%s/test_safefs.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(fx->dir))
		return -1;
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;
	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", fx->dir);
	if (system(cmd) != 0)
		return -1;
	free(fx);
	return 0;
}

/* path = fx->dir + "/" + name */
static const char *at(const struct fixture *fx, const char *name)
{
	static char buf[4][PATH_MAX];
	static int next;
	char *out = buf[next++ % 4];
	snprintf(out, PATH_MAX, "%s/%s", fx->dir, name);
	return out;
}

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static int file_is(const char *path, const char *text)
{
	char buf[256] = "";
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	return strcmp(buf, text) == 0;
}

static void test_split(void **state)
{
	(void)state;
	char dir[64], name[16];
	assert_int_equal(safefs_split("/a/b/c.cap", dir, sizeof dir, name, sizeof name), 0);
	assert_string_equal(dir, "/a/b");
	assert_string_equal(name, "c.cap");
	assert_int_equal(safefs_split("c.cap", dir, sizeof dir, name, sizeof name), 0);
	assert_string_equal(dir, ".");
	assert_int_equal(safefs_split("/c.cap", dir, sizeof dir, name, sizeof name), 0);
	assert_string_equal(dir, "/");
	assert_int_equal(safefs_split("x//y/", dir, sizeof dir, name, sizeof name), 0);
	assert_string_equal(dir, "x");
	assert_string_equal(name, "y");
	assert_int_equal(safefs_split("/a/a-name-longer-than-16", dir, sizeof dir, name, sizeof name),
	                 -ENAMETOOLONG);
	assert_int_equal(safefs_split("", dir, sizeof dir, name, sizeof name), -EINVAL);
}

static void test_open_dir_rules(void **state)
{
	struct fixture *fx = *state;
	uid_t me = getuid();
	assert_int_equal(mkdir(at(fx, "private"), 0700), 0);
	assert_int_equal(mkdir(at(fx, "open"), 0755), 0);
	assert_int_equal(symlink(at(fx, "private"), at(fx, "link")), 0);
	int fd = safefs_open_dir(at(fx, "private"), me, SAFEFS_PRIVATE);
	assert_true(fd >= 0);
	close(fd);
	/* The last component is never a link when it must be private... */
	assert_int_equal(safefs_open_dir(at(fx, "link"), me, SAFEFS_PRIVATE), -ELOOP);
	/* ...nor group/other accessible. */
	assert_int_equal(safefs_open_dir(at(fx, "open"), me, SAFEFS_PRIVATE), -EPERM);
	/* Another owner is refused. */
	assert_int_equal(safefs_open_dir(at(fx, "private"), me + 1, SAFEFS_PRIVATE), -EPERM);
	/* A directory others may write (not sticky) on the way: anything below could be swapped. */
	assert_int_equal(mkdir(at(fx, "shared"), 0777), 0);
	assert_int_equal(chmod(at(fx, "shared"), 0777), 0);
	assert_int_equal(mkdir(at(fx, "shared/inner"), 0700), 0);
	assert_int_equal(safefs_open_dir(at(fx, "shared/inner"), me, SAFEFS_PRIVATE), -EPERM);
	/* Sticky (like /tmp) is fine. */
	assert_int_equal(chmod(at(fx, "shared"), 01777), 0);
	fd = safefs_open_dir(at(fx, "shared/inner"), me, SAFEFS_PRIVATE);
	assert_true(fd >= 0);
	close(fd);
	/* A link of our own on the way is followed. */
	fd = safefs_open_dir(at(fx, "link/."), me, SAFEFS_PRIVATE);
	assert_true(fd >= 0);
	close(fd);
}

static void test_mkdir_private(void **state)
{
	struct fixture *fx = *state;
	int parent = open(fx->dir, O_RDONLY | O_DIRECTORY);
	assert_true(parent >= 0);
	int fd = safefs_mkdir_private_at(parent, "made", getuid());
	assert_true(fd >= 0);
	close(fd);
	struct stat st;
	assert_int_equal(stat(at(fx, "made"), &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700);
	/* Existing and public: refused, not "fixed". */
	assert_int_equal(mkdir(at(fx, "public"), 0755), 0);
	assert_int_equal(safefs_mkdir_private_at(parent, "public", getuid()), -EPERM);
	/* A link where the directory should be: refused. */
	assert_int_equal(symlink(at(fx, "made"), at(fx, "planted")), 0);
	assert_int_equal(safefs_mkdir_private_at(parent, "planted", getuid()), -ENOTDIR);
	close(parent);
}

static int keep_txt(int dir, const char *entry, const struct stat *st)
{
	(void)dir;
	(void)st;
	return strstr(entry, ".keep") != NULL;
}

static void test_remove_dir(void **state)
{
	struct fixture *fx = *state;
	assert_int_equal(mkdir(at(fx, "victim"), 0700), 0);
	write_text(at(fx, "victim/precious"), "p");
	assert_int_equal(mkdir(at(fx, "s"), 0700), 0);
	write_text(at(fx, "s/a"), "a");
	assert_int_equal(symlink(at(fx, "victim/precious"), at(fx, "s/link")), 0);
	int parent = open(fx->dir, O_RDONLY | O_DIRECTORY);
	assert_int_equal(safefs_remove_dir_at(parent, "s", getuid(), NULL), 0);
	struct stat st;
	assert_int_equal(lstat(at(fx, "s"), &st), -1);
	assert_true(file_is(at(fx, "victim/precious"), "p"));
	/* The session swapped for a link to another directory: nothing there goes. */
	assert_int_equal(symlink(at(fx, "victim"), at(fx, "swapped")), 0);
	assert_true(safefs_remove_dir_at(parent, "swapped", getuid(), NULL) < 0);
	assert_true(file_is(at(fx, "victim/precious"), "p"));
	assert_int_equal(lstat(at(fx, "swapped"), &st), 0);
	/* Kept entries keep the directory. */
	assert_int_equal(mkdir(at(fx, "k"), 0700), 0);
	write_text(at(fx, "k/x.keep"), "k");
	write_text(at(fx, "k/y"), "y");
	assert_int_equal(safefs_remove_dir_at(parent, "k", getuid(), keep_txt), -ENOTEMPTY);
	assert_true(file_is(at(fx, "k/x.keep"), "k"));
	assert_int_equal(lstat(at(fx, "k/y"), &st), -1);
	close(parent);
}

static void test_output_commit_and_discard(void **state)
{
	struct fixture *fx = *state;
	const char *path = at(fx, "out.cap");
	write_text(path, "old");
	struct safefs_output out;
	const char *cause = NULL;
	assert_int_equal(safefs_output_open(&out, path, 0, &cause), 0);
	assert_false(out.in_place);
	assert_string_equal(out.partial_path, at(fx, "out.cap.partial"));
	struct stat st;
	assert_int_equal(fstat(out.fd, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(write(out.fd, "new", 3), 3);
	/* Until committed, FILE is what it was. */
	assert_true(file_is(path, "old"));
	/* A second writer does not clobber the first one's partial. */
	struct safefs_output second;
	assert_int_equal(safefs_output_open(&second, path, 0, &cause), -EEXIST);
	close(out.fd);
	assert_int_equal(safefs_output_commit(&out), 0);
	assert_true(file_is(path, "new"));
	assert_int_equal(lstat(at(fx, "out.cap.partial"), &st), -1);
	/* Discarded: FILE untouched, no partial left. */
	assert_int_equal(safefs_output_open(&out, path, 0, &cause), 0);
	assert_int_equal(write(out.fd, "bad", 3), 3);
	close(out.fd);
	safefs_output_discard(&out);
	assert_true(file_is(path, "new"));
	assert_int_equal(lstat(at(fx, "out.cap.partial"), &st), -1);
	/* A partial swapped by someone else is not renamed into place. */
	assert_int_equal(safefs_output_open(&out, path, 0, &cause), 0);
	close(out.fd);
	assert_int_equal(unlink(out.partial_path), 0);
	write_text(out.partial_path, "planted");
	assert_int_equal(safefs_output_commit(&out), -ESTALE);
	assert_true(file_is(path, "new"));
}

static void test_output_links_and_special(void **state)
{
	struct fixture *fx = *state;
	write_text(at(fx, "target"), "target");
	assert_int_equal(symlink(at(fx, "target"), at(fx, "link.cap")), 0);
	struct safefs_output out;
	const char *cause = NULL;
	assert_int_equal(safefs_output_open(&out, at(fx, "link.cap"), 0, &cause), 0);
	assert_int_equal(write(out.fd, "cap", 3), 3);
	close(out.fd);
	assert_int_equal(safefs_output_commit(&out), 0);
	struct stat st;
	assert_int_equal(lstat(at(fx, "link.cap"), &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_true(file_is(at(fx, "target"), "target"));
	/* /dev/null: in place, never replaced. */
	assert_int_equal(safefs_output_open(&out, "/dev/null", 0, &cause), 0);
	assert_true(out.in_place);
	close(out.fd);
	assert_int_equal(safefs_output_commit(&out), 0);
	assert_int_equal(lstat("/dev/null", &st), 0);
	assert_true(S_ISCHR(st.st_mode));
	/* A directory is refused. */
	assert_int_equal(safefs_output_open(&out, fx->dir, 0, &cause), -EISDIR);
}

/* Access on a user's behalf: owner bits for the owner, "other" bits for anyone else. */
static void test_uid_may(void **state)
{
	(void)state;
	struct stat st = {.st_uid = 1000, .st_mode = S_IFREG | 0640};
	assert_true(safefs_uid_may(&st, 1000, 4));
	assert_false(safefs_uid_may(&st, 1000, 1));
	assert_false(safefs_uid_may(&st, 1001, 4)); /* group bits never count */
	assert_true(safefs_uid_may(&st, 0, 4));
	st.st_mode = S_IFDIR | 0311;
	assert_false(safefs_uid_may(&st, 1000, 5)); /* searchable but not listable */
	assert_true(safefs_uid_may(&st, 1000, 1));
	assert_true(safefs_uid_may(&st, 1001, 1));
	st.st_mode = S_IFREG | 0004;
	assert_false(safefs_uid_may(&st, 1000, 4)); /* the owner's own bits say no */
	assert_true(safefs_uid_may(&st, 1001, 4));
}

/* Data read on a user's behalf: a regular file of bounded size, never a FIFO, link or folder. */
static void test_open_data_and_dir_for(void **state)
{
	struct fixture *fx = *state;
	uid_t me = geteuid();
	int dir = open(fx->dir, O_RDONLY | O_DIRECTORY);
	assert_true(dir >= 0);
	write_text(at(fx, "data"), "0123456789");
	assert_int_equal(mkfifo(at(fx, "fifo"), 0600), 0);
	assert_int_equal(symlink("data", at(fx, "link")), 0);
	assert_int_equal(mkdir(at(fx, "sub"), 0755), 0);
	int fd = safefs_open_data_at(dir, "data", me, 10);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(safefs_open_data_at(dir, "data", me, 9), -EFBIG);
	/* A FIFO nobody writes to: refused at once instead of blocking. */
	assert_int_equal(safefs_open_data_at(dir, "fifo", me, 10), -EPERM);
	assert_int_equal(safefs_open_data_at(dir, "link", me, 10), -ELOOP);
	assert_int_equal(safefs_open_data_at(dir, "sub", me, 10), -EPERM);
	fd = safefs_open_dir_for(dir, "sub", me);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(chmod(at(fx, "sub"), 0777), 0);
	assert_int_equal(safefs_open_dir_for(dir, "sub", me), -EPERM); /* anyone may change it */
	assert_int_equal(symlink("sub", at(fx, "sublink")), 0);
	assert_int_equal(safefs_open_dir_for(dir, "sublink", me), -ENOTDIR);
	close(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_split),
	    cmocka_unit_test(test_uid_may),
	    cmocka_unit_test_setup_teardown(test_open_data_and_dir_for, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_open_dir_rules, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_mkdir_private, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_remove_dir, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_output_commit_and_discard, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_output_links_and_special, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
