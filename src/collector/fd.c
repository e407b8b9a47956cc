/* File descriptors the collector created, known by identity: used and closed only while still ours. */
#include "collector.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <linux/perf_event.h>

/* ---- fd identity ---- */

struct fd_identity {
	int owned;
	int has_perf_id;
	dev_t dev;
	ino_t ino;
	dev_t rdev;
	mode_t type;      /* S_IFMT bits */
	uint64_t perf_id; /* PERF_EVENT_IOC_ID: perf fds share one anonymous inode */
};

/* Indexed by fd number; grown on the collector's threads only. */
static struct fd_identity *fd_table;
static size_t fd_table_cap;
static pthread_mutex_t fd_table_lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * The gap between a look at an fd and its use: a program thread that closes a number of ours and
 * opens a file of its own on it right there would get its file closed (or written) by us, and a
 * shared fd table has no close-if-same. The program's close, dup2, dup3 and close_range go
 * through the collector (inject.c, collector_fd_app_closing): for a number of ours it clears
 * fd_fast_owned first, then waits while a collector thread is inside a use of that number
 * (fd_fast_busy). A use raises busy first, then reads owned: with sequentially consistent atomics
 * either the use sees the number given up, or the program's close waits for the use to end. Lock
 * free (the program may close from a signal handler); numbers past FD_FAST_MAX keep the gap.
 */
#define FD_FAST_MAX 4096
static _Atomic unsigned char fd_fast_owned[FD_FAST_MAX];
static _Atomic unsigned char fd_fast_busy[FD_FAST_MAX];

/* Starts a use of fd: 0 when the program gave the number up (it closed it through libc). */
static int fd_use_begin(int fd)
{
	if (fd < 0 || fd >= FD_FAST_MAX)
		return 1;
	atomic_fetch_add(&fd_fast_busy[fd], 1);
	if (atomic_load(&fd_fast_owned[fd]))
		return 1;
	atomic_fetch_sub(&fd_fast_busy[fd], 1);
	return 0;
}

static void fd_use_end(int fd)
{
	if (fd >= 0 && fd < FD_FAST_MAX)
		atomic_fetch_sub(&fd_fast_busy[fd], 1);
}

int collector_fd_use_begin(int fd)
{
	return fd_use_begin(fd);
}

void collector_fd_use_end(int fd)
{
	fd_use_end(fd);
}

static void fd_fast_set(int fd, int owned)
{
	if (fd >= 0 && fd < FD_FAST_MAX)
		atomic_store(&fd_fast_owned[fd], (unsigned char)owned);
}

int collector_fd_app_may_hold(int fd)
{
	return fd >= 0 && fd < FD_FAST_MAX && atomic_load(&fd_fast_owned[fd]);
}

void collector_fd_app_closing(int fd)
{
	if (fd < 0 || fd >= FD_FAST_MAX)
		return;
	/* A number given up already is not waited on: a use of it under way ends on its own check
	 * (waiting there made each of 300 forked children's exits ~100 ms slower, t092). Bounded: a
	 * real-time program thread may share its CPU with the busy collector thread, and the use may
	 * be a read on a slow file system; past the bound the one-call gap of before is back, never
	 * a hang. */
	if (!atomic_exchange(&fd_fast_owned[fd], 0))
		return;
	for (unsigned spins = 0; atomic_load(&fd_fast_busy[fd]); spins++) {
		if (spins < 64) {
			sched_yield();
			continue;
		}
		if (spins > 64 + 400)
			return; /* 400 x 50 us: 20 ms */
		struct timespec pause = {0, 50000};
		nanosleep(&pause, NULL);
	}
}

/* Reads fd's identity; 0 or -1. The perf id is asked (ask_perf_id) only of an anonymous inode. */
static int fd_identity_read(int fd, struct fd_identity *id, int ask_perf_id)
{
	struct stat st;
	if (fstat(fd, &st) != 0)
		return -1;
	id->dev = st.st_dev;
	id->ino = st.st_ino;
	id->rdev = st.st_rdev;
	id->type = st.st_mode & S_IFMT;
	id->has_perf_id = 0;
	if (ask_perf_id && id->type == 0 && ioctl(fd, PERF_EVENT_IOC_ID, &id->perf_id) == 0)
		id->has_perf_id = 1;
	return 0;
}

/* Records fd (just created by the collector) with its identity; fd, or -1 (closed) when the table
 * cannot grow. */
static int fd_register(int fd, struct fd_identity *id)
{
	pthread_mutex_lock(&fd_table_lock);
	if ((size_t)fd >= fd_table_cap) {
		size_t cap = fd_table_cap ? fd_table_cap : 64;
		while (cap <= (size_t)fd)
			cap *= 2;
		struct fd_identity *t = realloc(fd_table, cap * sizeof *t);
		if (!t) {
			pthread_mutex_unlock(&fd_table_lock);
			close(fd);
			return -1;
		}
		memset(t + fd_table_cap, 0, (cap - fd_table_cap) * sizeof *t);
		fd_table = t;
		fd_table_cap = cap;
	}
	id->owned = 1;
	fd_table[fd] = *id;
	fd_fast_set(fd, 1);
	pthread_mutex_unlock(&fd_table_lock);
	return fd;
}

int collector_fd_own(int fd, mode_t type)
{
	if (fd < 0)
		return -1;
	struct fd_identity id;
	/* Only an anonymous inode (perf, eventfd: no file type) is asked for a perf id: an ioctl on
	 * anything else could mean something to its driver. */
	if (fd_identity_read(fd, &id, type == 0) != 0)
		return -1; /* not an open number: nothing to close */
	/* The program may have closed the new number and opened a file of its own on it already:
	 * anything but what we made (a socket, a perf event) is left alone. */
	if (id.type != type || (type == 0 && !id.has_perf_id))
		return -1;
	return fd_register(fd, &id);
}

/* collector_fd_check under the table's lock; forget drops the registration whatever the answer. */
static int fd_check_locked(int fd, int forget)
{
	int ok = 0;
	if (fd < FD_FAST_MAX && !atomic_load(&fd_fast_owned[fd]) && (size_t)fd < fd_table_cap)
		fd_table[fd].owned = 0; /* the program closed it through libc */
	if ((size_t)fd < fd_table_cap && fd_table[fd].owned) {
		struct fd_identity *want = &fd_table[fd], now;
		/* The perf id is asked only once fstat shows the same anonymous inode: a perf fd. */
		ok = fd_identity_read(fd, &now, 0) == 0 && now.dev == want->dev && now.ino == want->ino &&
		     now.rdev == want->rdev && now.type == want->type;
		if (ok && want->has_perf_id)
			ok = ioctl(fd, PERF_EVENT_IOC_ID, &now.perf_id) == 0 && now.perf_id == want->perf_id;
		if (!ok || forget) {
			want->owned = 0; /* the number is the program's now, or about to be free */
			fd_fast_set(fd, 0);
		}
	}
	return ok;
}

int collector_fd_check(int fd)
{
	if (fd < 0)
		return 0;
	pthread_mutex_lock(&fd_table_lock);
	int ok = fd_check_locked(fd, 0);
	pthread_mutex_unlock(&fd_table_lock);
	return ok;
}

int collector_fd_close(int fd)
{
	if (fd < 0)
		return -1;
	/* Closed right after the look, under the lock: the program could still take the number in
	 * between (a shared fd table offers no close-if-same), but the gap is kept to one system call. */
	if (!fd_use_begin(fd)) {
		collector_fd_forget(fd);
		return -1;
	}
	pthread_mutex_lock(&fd_table_lock);
	int ok = fd_check_locked(fd, 1);
	if (ok)
		close(fd);
	pthread_mutex_unlock(&fd_table_lock);
	fd_use_end(fd);
	return ok ? 0 : -1;
}

void collector_fd_forget(int fd)
{
	pthread_mutex_lock(&fd_table_lock);
	if (fd >= 0 && (size_t)fd < fd_table_cap)
		fd_table[fd].owned = 0;
	fd_fast_set(fd, 0);
	pthread_mutex_unlock(&fd_table_lock);
}

/* Forked child: the forking thread may have held the table's lock; nobody else runs here now. */
void collector_fd_after_fork(void)
{
	pthread_mutex_init(&fd_table_lock, NULL);
	/* The parent's collector threads are gone: a use they were inside never ends here. */
	for (int i = 0; i < FD_FAST_MAX; i++)
		atomic_store(&fd_fast_busy[i], 0);
}

/* ---- short-lived fds: opened, used and closed through the table ---- */

/* procfs's device (0 until known): a /proc file the collector opened is on it. */
static _Atomic dev_t fd_proc_dev;
static _Atomic int fd_proc_dev_known;

/*
 * Whether the file just opened on fd (identity id) is the one path names, not a file of the
 * program that took the number between our open and our fstat. A /proc path that gave a procfs
 * file (read on every thread scan) is checked by device only, which costs no system call: procfs
 * files the program opens in that window are not told apart. Other paths, and /proc's links to
 * files elsewhere (map_files), are looked up again.
 */
static int fd_is_named(const char *path, const struct fd_identity *id)
{
	struct stat st;
	if (strncmp(path, "/proc/", 6) == 0) {
		if (!atomic_load(&fd_proc_dev_known) && stat("/proc/self", &st) == 0) {
			atomic_store(&fd_proc_dev, st.st_dev);
			atomic_store(&fd_proc_dev_known, 1);
		}
		if (atomic_load(&fd_proc_dev_known) && id->dev == atomic_load(&fd_proc_dev))
			return 1;
	}
	/* A path gone meanwhile proves nothing either way: taken for ours. A path renamed over
	 * meanwhile costs one fd (left alone). */
	return stat(path, &st) != 0 || (st.st_dev == id->dev && st.st_ino == id->ino);
}

int collector_fd_open(const char *path, int flags, mode_t mode)
{
	int fd = open(path, flags | O_CLOEXEC | O_NOCTTY, mode);
	if (fd < 0)
		return -errno;
	struct fd_identity id;
	if (fd_identity_read(fd, &id, 0) != 0)
		return -EBADF; /* not even ours to close */
	/* The program may close the new number and open a file of its own on it before our fstat:
	 * then the number is left alone. */
	if (!fd_is_named(path, &id))
		return -EBADF;
	return fd_register(fd, &id) < 0 ? -ENOMEM : fd;
}

int collector_fd_fstat(int fd, struct stat *st)
{
	return collector_fd_check(fd) && fstat(fd, st) == 0 ? 0 : -EBADF;
}

ssize_t collector_fd_pread(int fd, void *buf, size_t len, off_t off)
{
	for (;;) {
		if (!fd_use_begin(fd))
			return -EBADF;
		ssize_t n = collector_fd_check(fd) ? pread(fd, buf, len, off) : (errno = EBADF, -1);
		int saved = errno;
		fd_use_end(fd);
		if (n >= 0)
			return n;
		if (saved != EINTR)
			return -saved;
	}
}

ssize_t collector_fd_write(int fd, const void *buf, size_t len)
{
	if (!fd_use_begin(fd)) {
		errno = EBADF;
		return -1;
	}
	ssize_t n = collector_fd_check(fd) ? write(fd, buf, len) : (errno = EBADF, -1);
	int saved = errno;
	fd_use_end(fd);
	errno = saved;
	return n;
}

ssize_t collector_fd_read_file(const char *path, char *buf, size_t cap)
{
	if (!cap)
		return -EINVAL;
	buf[0] = '\0';
	int fd = collector_fd_open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK, 0);
	if (fd < 0)
		return fd;
	size_t used = 0;
	ssize_t n;
	for (;;) {
		size_t want = cap - 1 - used;
		/* Registered just now (its identity read after the open): the first read needs no
		 * second look. */
		n = used ? collector_fd_pread(fd, buf + used, want, (off_t)used) : pread(fd, buf, want, 0);
		if (n < 0 && !used && errno == EINTR)
			continue;
		if (n < 0 && !used)
			n = -errno;
		if (n > 0)
			used += (size_t)n;
		/* A short read is the end: procfs and regular files give all they have. */
		if (n <= 0 || (size_t)n < want || used == cap - 1)
			break;
	}
	/* Closed only while ours; if it was not, what was read may be the program's: dropped. */
	if (collector_fd_close(fd) != 0) {
		buf[0] = '\0';
		return -EBADF;
	}
	buf[used] = '\0';
	return n < 0 && !used ? n : (ssize_t)used;
}

int collector_fd_append(const char *path, const void *buf, size_t len)
{
	int fd = collector_fd_open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW, 0600);
	if (fd < 0)
		return fd;
	ssize_t n = collector_fd_write(fd, buf, len);
	int rc = n < 0 ? -errno : (size_t)n == len ? 0 : -EIO;
	if (collector_fd_close(fd) != 0)
		rc = -EBADF;
	return rc;
}

int collector_fd_read_lines(int fd, off_t *pos, int (*line_fn)(char *line, size_t len, void *ctx), void *ctx)
{
	char buf[8192];
	size_t have = 0;  /* bytes in buf, read from *pos on */
	int skipping = 0; /* inside a line longer than buf: dropped up to its end */
	for (;;) {
		ssize_t n = collector_fd_pread(fd, buf + have, sizeof buf - have, *pos + (off_t)have);
		if (n <= 0)
			return (int)n; /* 0: the end (a partial last line stays for the next call) */
		have += (size_t)n;
		size_t start = 0;
		char *nl;
		while ((nl = memchr(buf + start, '\n', have - start))) {
			size_t len = (size_t)(nl - (buf + start));
			*nl = '\0';
			int stop = !skipping && line_fn(buf + start, len, ctx);
			skipping = 0;
			start += len + 1;
			if (stop) {
				*pos += (off_t)start;
				return 0;
			}
		}
		if (start == 0 && have == sizeof buf) {
			skipping = 1;
			start = have;
		}
		*pos += (off_t)start;
		memmove(buf, buf + start, have - start);
		have -= start;
	}
}

int collector_fd_dir_open(struct collector_fd_dir *d, const char *path)
{
	d->pos = d->end = 0;
	d->err = 0;
	d->fd = collector_fd_open(path, O_RDONLY | O_DIRECTORY, 0);
	return d->fd < 0 ? d->fd : 0;
}

const char *collector_fd_dir_next(struct collector_fd_dir *d)
{
	while (!d->err) {
		if (d->pos < d->end) {
			struct dirent64 *de = (struct dirent64 *)(void *)(d->buf + d->pos);
			d->pos += de->d_reclen;
			return de->d_name;
		}
		/* Checked before each call: getdents64 on the program's directory would move its
		 * position. */
		if (!collector_fd_check(d->fd)) {
			d->err = -EBADF;
			break;
		}
		ssize_t n = getdents64(d->fd, d->buf, sizeof d->buf);
		if (n <= 0) {
			d->err = n < 0 ? -errno : 1;
			break;
		}
		d->pos = 0;
		d->end = (size_t)n;
	}
	return NULL;
}

int collector_fd_dir_close(struct collector_fd_dir *d)
{
	int rc = d->err == 1 ? 0 : d->err ? d->err : -EAGAIN;
	if (collector_fd_close(d->fd) != 0)
		rc = -EBADF;
	d->fd = -1;
	return rc;
}
