/* File descriptors the collector created, known by identity: used and closed only while still ours. */
#include "collector.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
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

/* Reads fd's identity; 0 or -1. The perf id is asked only of a perf fd (has_perf_id set). */
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
	if (ask_perf_id && ioctl(fd, PERF_EVENT_IOC_ID, &id->perf_id) == 0)
		id->has_perf_id = 1;
	return 0;
}

int collector_fd_own(int fd)
{
	if (fd < 0)
		return -1;
	struct fd_identity id;
	/* Only a freshly created fd of ours is asked for a perf id: an ioctl on anything else
	 * could mean something to its driver. */
	int anon = 0;
	struct stat st;
	if (fstat(fd, &st) == 0 && (st.st_mode & S_IFMT) == 0)
		anon = 1; /* anonymous inodes (perf, eventfd) have no file type */
	if (fd_identity_read(fd, &id, anon) != 0) {
		close(fd);
		return -1;
	}
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
	id.owned = 1;
	fd_table[fd] = id;
	pthread_mutex_unlock(&fd_table_lock);
	return fd;
}

int collector_fd_check(int fd)
{
	if (fd < 0)
		return 0;
	pthread_mutex_lock(&fd_table_lock);
	int ok = 0;
	if ((size_t)fd < fd_table_cap && fd_table[fd].owned) {
		struct fd_identity *want = &fd_table[fd], now;
		/* The perf id is asked only once fstat shows the same anonymous inode: a perf fd. */
		ok = fd_identity_read(fd, &now, 0) == 0 && now.dev == want->dev && now.ino == want->ino &&
		     now.rdev == want->rdev && now.type == want->type;
		if (ok && want->has_perf_id)
			ok = ioctl(fd, PERF_EVENT_IOC_ID, &now.perf_id) == 0 && now.perf_id == want->perf_id;
		if (!ok)
			want->owned = 0; /* the number is the program's now */
	}
	pthread_mutex_unlock(&fd_table_lock);
	return ok;
}

int collector_fd_close(int fd)
{
	if (!collector_fd_check(fd))
		return -1;
	collector_fd_forget(fd);
	close(fd);
	return 0;
}

void collector_fd_forget(int fd)
{
	pthread_mutex_lock(&fd_table_lock);
	if (fd >= 0 && (size_t)fd < fd_table_cap)
		fd_table[fd].owned = 0;
	pthread_mutex_unlock(&fd_table_lock);
}

/* Forked child: the forking thread may have held the table's lock; nobody else runs here now. */
void collector_fd_after_fork(void)
{
	pthread_mutex_init(&fd_table_lock, NULL);
}
