/*
 * fd.c's short-lived fd helpers: what they read, and what they do once the program took the
 * number (the file the program put there is never read, written or closed, and what was read is
 * dropped). The take-over is made deterministic with dup2 of another file onto the number.
 */
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

#include "../../src/collector/collector.h"

struct fixture {
	char dir[1024];
	char path[1100];   /* a file of ours, "one\ntwo\nthree" (no final newline) */
	char victim[1100]; /* the program's file */
};

static void write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof *fx);
	const char *tmp = getenv("TMPDIR");
	snprintf(fx->dir, sizeof fx->dir, "%s/test_fd.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(fx->dir))
		return -1;
	snprintf(fx->path, sizeof fx->path, "%s/ours", fx->dir);
	snprintf(fx->victim, sizeof fx->victim, "%s/program", fx->dir);
	write_file(fx->path, "one\ntwo\nthree");
	write_file(fx->victim, "program data\n");
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

/* The program closes fd and opens its own file on the same number; returns that file's ino. */
static ino_t take_over(int fd, const char *victim)
{
	int v = open(victim, O_RDWR);
	assert_true(v >= 0);
	assert_int_equal(dup2(v, fd), fd);
	close(v);
	struct stat st;
	assert_int_equal(fstat(fd, &st), 0);
	return st.st_ino;
}

/* The program's file on fd is still open, the same file, its offset and content untouched. */
static void assert_program_file_intact(int fd, ino_t ino)
{
	struct stat st;
	char buf[64] = "";
	assert_true(fcntl(fd, F_GETFD) >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_ino, ino);
	assert_int_equal(lseek(fd, 0, SEEK_CUR), 0);
	assert_int_equal(pread(fd, buf, sizeof buf - 1, 0), 13);
	assert_string_equal(buf, "program data\n");
	close(fd);
}

static void test_read_file(void **state)
{
	struct fixture *fx = *state;
	char buf[64];
	assert_int_equal(collector_fd_read_file(fx->path, buf, sizeof buf), 13);
	assert_string_equal(buf, "one\ntwo\nthree");
	/* Cut at cap - 1 bytes, always terminated. */
	assert_int_equal(collector_fd_read_file(fx->path, buf, 4), 3);
	assert_string_equal(buf, "one");
	/* Longer than one read (several preads, each checked). */
	char big_path[1200], big[20000], back[20001];
	memset(big, 'x', sizeof big);
	snprintf(big_path, sizeof big_path, "%s/big", fx->dir);
	int fd = open(big_path, O_WRONLY | O_CREAT, 0600);
	assert_int_equal(write(fd, big, sizeof big), (ssize_t)sizeof big);
	close(fd);
	assert_int_equal(collector_fd_read_file(big_path, back, sizeof back), (ssize_t)sizeof big);
	assert_int_equal(strspn(back, "x"), sizeof big);
	char missing[1200];
	snprintf(missing, sizeof missing, "%s/none", fx->dir);
	assert_int_equal(collector_fd_read_file(missing, buf, sizeof buf), -ENOENT);
	/* Never through a final link. */
	char link[1200];
	snprintf(link, sizeof link, "%s/link", fx->dir);
	assert_int_equal(symlink(fx->path, link), 0);
	assert_int_equal(collector_fd_read_file(link, buf, sizeof buf), -ELOOP);
}

static void test_taken_over_pread_and_close(void **state)
{
	struct fixture *fx = *state;
	int fd = collector_fd_open(fx->path, O_RDONLY, 0);
	assert_true(fd >= 0);
	char buf[16];
	assert_int_equal(collector_fd_pread(fd, buf, 3, 0), 3);
	ino_t ino = take_over(fd, fx->victim);
	assert_int_equal(collector_fd_pread(fd, buf, sizeof buf, 0), -EBADF);
	assert_int_equal(collector_fd_write(fd, "x", 1), -1);
	assert_int_equal(errno, EBADF);
	struct stat st;
	assert_int_equal(collector_fd_fstat(fd, &st), -EBADF);
	assert_int_equal(collector_fd_close(fd), -1);
	assert_program_file_intact(fd, ino);
}

static void test_taken_over_dir(void **state)
{
	struct fixture *fx = *state;
	/* Listed whole through an fd that stays ours: complete, and 0 at the close. */
	struct collector_fd_dir *d = malloc(sizeof *d);
	assert_int_equal(collector_fd_dir_open(d, fx->dir), 0);
	int names = 0, saw_ours = 0;
	const char *name;
	while ((name = collector_fd_dir_next(d))) {
		names++;
		saw_ours |= strcmp(name, "ours") == 0;
	}
	assert_int_equal(names, 4); /* . .. ours program */
	assert_true(saw_ours);
	assert_int_equal(collector_fd_dir_close(d), 0);
	/* Taken over before the first getdents64: nothing listed, the program's file untouched. */
	assert_int_equal(collector_fd_dir_open(d, fx->dir), 0);
	int fd = d->fd;
	ino_t ino = take_over(fd, fx->victim);
	assert_null(collector_fd_dir_next(d));
	assert_int_equal(collector_fd_dir_close(d), -EBADF);
	assert_program_file_intact(fd, ino);
	/* Stopped early: not a complete listing. */
	assert_int_equal(collector_fd_dir_open(d, fx->dir), 0);
	assert_non_null(collector_fd_dir_next(d));
	assert_int_equal(collector_fd_dir_close(d), -EAGAIN);
	free(d);
}

struct lines {
	char seen[8][64];
	int count, stop_at;
};

static int line_cb(char *line, size_t len, void *ctx)
{
	struct lines *l = ctx;
	assert_int_equal(strlen(line), len);
	if (l->count < 8)
		snprintf(l->seen[l->count], sizeof l->seen[0], "%s", line);
	return ++l->count == l->stop_at;
}

static void test_read_lines(void **state)
{
	struct fixture *fx = *state;
	int fd = collector_fd_open(fx->path, O_RDONLY, 0);
	assert_true(fd >= 0);
	struct lines l = {.stop_at = 0};
	off_t pos = 0;
	/* The partial last line stays for later. */
	assert_int_equal(collector_fd_read_lines(fd, &pos, line_cb, &l), 0);
	assert_int_equal(l.count, 2);
	assert_string_equal(l.seen[0], "one");
	assert_string_equal(l.seen[1], "two");
	assert_int_equal(pos, 8);
	/* Stopped by the callback: pos just past the line that stopped it. */
	struct lines first = {.stop_at = 1};
	off_t at = 0;
	assert_int_equal(collector_fd_read_lines(fd, &at, line_cb, &first), 0);
	assert_int_equal(first.count, 1);
	assert_int_equal(at, 4);
	assert_int_equal(collector_fd_close(fd), 0);
	/* A line longer than the buffer is skipped whole; the next one is read. */
	char long_path[1200];
	snprintf(long_path, sizeof long_path, "%s/long", fx->dir);
	int w = open(long_path, O_WRONLY | O_CREAT, 0600);
	char big[10000];
	memset(big, 'y', sizeof big);
	assert_int_equal(write(w, big, sizeof big), (ssize_t)sizeof big);
	assert_int_equal(write(w, "\nafter\n", 7), 7);
	close(w);
	fd = collector_fd_open(long_path, O_RDONLY, 0);
	struct lines two = {.stop_at = 0};
	pos = 0;
	assert_int_equal(collector_fd_read_lines(fd, &pos, line_cb, &two), 0);
	assert_int_equal(two.count, 1);
	assert_string_equal(two.seen[0], "after");
	assert_int_equal(pos, (off_t)sizeof big + 7);
	/* Taken over: an error, and the program's file is left as it was. */
	ino_t ino = take_over(fd, fx->victim);
	pos = 0;
	assert_int_equal(collector_fd_read_lines(fd, &pos, line_cb, &two), -EBADF);
	assert_int_equal(collector_fd_close(fd), -1);
	assert_program_file_intact(fd, ino);
}

static void test_append(void **state)
{
	struct fixture *fx = *state;
	char log[1200], buf[64];
	snprintf(log, sizeof log, "%s/log", fx->dir);
	assert_int_equal(collector_fd_append(log, "a\n", 2), 0);
	assert_int_equal(collector_fd_append(log, "b\n", 2), 0);
	assert_int_equal(collector_fd_read_file(log, buf, sizeof buf), 4);
	assert_string_equal(buf, "a\nb\n");
	struct stat st;
	assert_int_equal(stat(log, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	/* Never through a link. */
	char link[1200];
	snprintf(link, sizeof link, "%s/loglink", fx->dir);
	assert_int_equal(symlink(fx->victim, link), 0);
	assert_int_equal(collector_fd_append(link, "x\n", 2), -ELOOP);
	assert_int_equal(collector_fd_read_file(fx->victim, buf, sizeof buf), 13);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_read_file, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_taken_over_pread_and_close, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_taken_over_dir, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_read_lines, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_append, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
