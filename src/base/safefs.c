#include "cuscope/safefs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define SAFEFS_MAX_LINKS 40

int safefs_check_dir(int fd, uid_t uid, int flags)
{
	struct stat st;
	if (fstat(fd, &st) != 0)
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	if (st.st_uid != uid)
		return -EPERM;
	if ((flags & SAFEFS_PRIVATE) && (st.st_mode & 0077))
		return -EPERM;
	return 0;
}

/* A directory on the way: owned by root or uid, and nobody else may rename entries in it. */
static int safefs_check_step(int fd, uid_t uid)
{
	struct stat st;
	if (fstat(fd, &st) != 0)
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	if (st.st_uid != 0 && st.st_uid != uid)
		return -EPERM;
	if ((st.st_mode & 0022) && !(st.st_mode & S_ISVTX))
		return -EPERM;
	return 0;
}

/* Opens one component below fd; a symlink is followed only when root or uid owns it. */
static int safefs_step(int fd, const char *name, uid_t uid, int last, int *links)
{
	int flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC;
	int next = openat(fd, name, flags | O_NOFOLLOW);
	if (next >= 0 || (errno != ELOOP && errno != ENOTDIR))
		return next >= 0 ? next : -errno;
	struct stat st;
	if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
		return -errno;
	if (!S_ISLNK(st.st_mode))
		return -ENOTDIR;
	if (last || (st.st_uid != 0 && st.st_uid != uid) || ++*links > SAFEFS_MAX_LINKS)
		return -ELOOP;
	/* The link's parent was checked: nobody else can replace a link root or uid owns there. */
	next = openat(fd, name, flags);
	return next >= 0 ? next : -errno;
}

int safefs_open_dir(const char *path, uid_t uid, int flags)
{
	char buf[PATH_MAX];
	if (!path || !*path)
		return -EINVAL;
	if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
		return -ENAMETOOLONG;
	int fd = open(path[0] == '/' ? "/" : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int rc = safefs_check_step(fd, uid), links = 0;
	char *save = NULL;
	char *comp = strtok_r(buf, "/", &save);
	while (!rc && comp) {
		char *following = strtok_r(NULL, "/", &save);
		if (strcmp(comp, ".") != 0) {
			int strict = following == NULL && (flags & SAFEFS_PRIVATE);
			int next = safefs_step(fd, comp, uid, strict, &links);
			close(fd);
			fd = next;
			if (fd < 0)
				return fd;
			rc = following ? safefs_check_step(fd, uid) : 0;
		}
		comp = following;
	}
	if (!rc)
		rc = (flags & SAFEFS_PRIVATE) ? safefs_check_dir(fd, uid, flags) : safefs_check_step(fd, uid);
	if (rc) {
		close(fd);
		return rc;
	}
	return fd;
}

int safefs_open_dir_at(int parent, const char *name, uid_t uid, int flags)
{
	int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ELOOP ? -ENOTDIR : -errno;
	int rc = safefs_check_dir(fd, uid, flags);
	if (rc) {
		close(fd);
		return rc;
	}
	return fd;
}

int safefs_mkdir_private_at(int parent, const char *name, uid_t uid)
{
	int made = mkdirat(parent, name, 0700) == 0;
	if (!made && errno != EEXIST)
		return -errno;
	int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ELOOP ? -ENOTDIR : -errno;
	struct stat st;
	int rc = fstat(fd, &st) != 0 ? -errno : 0;
	/* Only a directory we just made may change hands; an existing one must already be uid's. */
	if (!rc && made && st.st_uid != uid) {
		if (fchown(fd, uid, (gid_t)-1) != 0)
			rc = -errno;
	}
	if (!rc)
		rc = safefs_check_dir(fd, uid, SAFEFS_PRIVATE);
	if (rc) {
		close(fd);
		return rc;
	}
	return fd;
}

int safefs_uid_may(const struct stat *st, uid_t uid, int what)
{
	/* Owner bits for the owner, "other" bits for anyone else: group membership is not known
	 * here, so a group-only permission never counts (a refusal, never a leak). */
	mode_t bits = (mode_t)(((what & 4) ? 4 : 0) | ((what & 2) ? 2 : 0) | ((what & 1) ? 1 : 0));
	if (uid == 0)
		return 1;
	return st->st_uid == uid ? (st->st_mode & (bits << 6)) == (bits << 6) : (st->st_mode & bits) == bits;
}

int safefs_open_dir_for(int parent, const char *name, uid_t uid)
{
	int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return errno == ELOOP ? -ENOTDIR : -errno;
	struct stat st;
	int rc = fstat(fd, &st) != 0 ? -errno : 0;
	if (!rc && (!S_ISDIR(st.st_mode) || (st.st_uid != 0 && st.st_uid != uid) || (st.st_mode & 0022) ||
	            !safefs_uid_may(&st, uid, 5)))
		rc = -EPERM;
	if (rc) {
		close(fd);
		return rc;
	}
	return fd;
}

int safefs_open_data_at(int dir, const char *name, uid_t uid, off_t max_size)
{
	int fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	int rc = fstat(fd, &st) != 0 ? -errno : 0;
	if (!rc && (!S_ISREG(st.st_mode) || !safefs_uid_may(&st, uid, 4)))
		rc = -EPERM;
	if (!rc && st.st_size > max_size)
		rc = -EFBIG;
	if (rc) {
		close(fd);
		return rc;
	}
	return fd;
}

DIR *safefs_opendir(int dir)
{
	/* A fresh open file description: a dup would share (and keep) the read position. */
	int fd = openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	DIR *d = fdopendir(fd);
	if (!d)
		close(fd);
	return d;
}

int safefs_remove_dir_at(int parent, const char *name, uid_t uid,
                         int (*keep)(int dir, const char *entry, const struct stat *st))
{
	int fd = safefs_open_dir_at(parent, name, uid, 0);
	if (fd < 0)
		return fd;
	DIR *d = safefs_opendir(fd);
	if (!d) {
		close(fd);
		return -ENOMEM;
	}
	int kept = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		struct stat st;
		if (fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
			continue;
		if (S_ISDIR(st.st_mode) || (keep && keep(fd, de->d_name, &st))) {
			kept = 1;
			continue;
		}
		if (unlinkat(fd, de->d_name, 0) != 0 && errno != ENOENT)
			kept = 1;
	}
	closedir(d);
	close(fd);
	if (kept)
		return -ENOTEMPTY;
	/* AT_REMOVEDIR never follows a link: if name was swapped for one, nothing else goes. */
	if (unlinkat(parent, name, AT_REMOVEDIR) != 0 && errno != ENOENT)
		return -errno;
	return 0;
}

int safefs_split(const char *path, char *dir, size_t dir_size, char *name, size_t name_size)
{
	size_t len = strlen(path);
	while (len > 1 && path[len - 1] == '/')
		len--;
	if (!len)
		return -EINVAL;
	size_t start = len;
	while (start > 0 && path[start - 1] != '/')
		start--;
	size_t name_len = len - start;
	if (!name_len || name_len >= name_size)
		return name_len ? -ENAMETOOLONG : -EINVAL;
	memcpy(name, path + start, name_len);
	name[name_len] = '\0';
	size_t dir_len = start;
	while (dir_len > 1 && path[dir_len - 1] == '/')
		dir_len--;
	int n =
	    dir_len == 0 ? snprintf(dir, dir_size, ".") : snprintf(dir, dir_size, "%.*s", (int)dir_len, path);
	return n > 0 && (size_t)n < dir_size ? 0 : -ENAMETOOLONG;
}

/* An existing output written in place: not a regular file, not a directory. */
static int safefs_special(mode_t mode)
{
	return S_ISCHR(mode) || S_ISBLK(mode) || S_ISFIFO(mode) || S_ISSOCK(mode);
}

int safefs_output_open(struct safefs_output *out, const char *path, int readable, const char **cause)
{
	memset(out, 0, sizeof *out);
	out->fd = out->dir_fd = out->hold_fd = -1;
	int access_mode = readable ? O_RDWR : O_WRONLY;
	if (strcmp(path, "-") == 0) {
		out->in_place = 1;
		out->fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
		if (out->fd < 0)
			return *cause = "cannot use standard output", -errno;
		return 0;
	}
	struct stat st;
	int exists = lstat(path, &st) == 0;
	if (!exists && errno != ENOENT)
		return *cause = "cannot reach output", -errno;
	if (exists && S_ISDIR(st.st_mode))
		return *cause = "output is a directory", -EISDIR;
	int follow = 0;
	if (exists && S_ISLNK(st.st_mode) && (st.st_uid == 0 || st.st_uid == geteuid())) {
		/* Only a link that root or we made leads to a device (/dev/stdout); any other is replaced. */
		struct stat target;
		follow = stat(path, &target) == 0 && safefs_special(target.st_mode);
	}
	if (follow || (exists && safefs_special(st.st_mode))) {
		out->in_place = 1;
		out->fd = open(path, access_mode | O_NOCTTY | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW));
		if (out->fd < 0)
			return *cause = "cannot open output", -errno;
		return 0;
	}
	char dir[PATH_MAX];
	int rc = safefs_split(path, dir, sizeof dir, out->name, sizeof out->name);
	if (!rc &&
	    snprintf(out->partial, sizeof out->partial, "%s.partial", out->name) >= (int)sizeof out->partial)
		rc = -ENAMETOOLONG;
	if (!rc && snprintf(out->partial_path, sizeof out->partial_path, "%s.partial", path) >=
	               (int)sizeof out->partial_path)
		rc = -ENAMETOOLONG;
	if (rc)
		return *cause = "output name too long", rc;
	/* The directory is the caller's choice; what we create in it is never reached through a link. */
	out->dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (out->dir_fd < 0)
		return *cause = "cannot open output directory", -errno;
	out->fd =
	    openat(out->dir_fd, out->partial, access_mode | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (out->fd < 0) {
		int err = errno;
		close(out->dir_fd);
		out->dir_fd = -1;
		*cause = err == EEXIST || err == ELOOP
		             ? "an interrupted run left a .partial file (move it away) beside"
		             : "cannot create output";
		return -err;
	}
	if (fstat(out->fd, &st) != 0) {
		int err = errno;
		close(out->fd);
		out->fd = -1;
		safefs_output_discard(out);
		return *cause = "cannot create output", -err;
	}
	out->dev = st.st_dev;
	out->ino = st.st_ino;
	/* Held until commit: while the inode lives, no other file can take its number. */
	out->hold_fd = fcntl(out->fd, F_DUPFD_CLOEXEC, 3);
	return 0;
}

/* Closes the directory and the held fd. */
static void safefs_output_release(struct safefs_output *out)
{
	if (out->dir_fd >= 0)
		close(out->dir_fd);
	if (out->hold_fd >= 0)
		close(out->hold_fd);
	out->dir_fd = out->hold_fd = -1;
}

/* Whether FILE.partial still names the file we created. */
static int safefs_output_ours(const struct safefs_output *out)
{
	struct stat st;
	return fstatat(out->dir_fd, out->partial, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
	       st.st_dev == out->dev && st.st_ino == out->ino;
}

int safefs_output_commit(struct safefs_output *out)
{
	if (out->in_place || out->dir_fd < 0)
		return 0;
	int rc = 0;
	if (!safefs_output_ours(out))
		rc = -ESTALE;
	else if (renameat(out->dir_fd, out->partial, out->dir_fd, out->name) != 0)
		rc = -errno;
	safefs_output_release(out);
	return rc;
}

void safefs_output_discard(struct safefs_output *out)
{
	if (out->in_place || out->dir_fd < 0)
		return;
	if (safefs_output_ours(out))
		unlinkat(out->dir_fd, out->partial, 0);
	safefs_output_release(out);
}

void safefs_output_keep_partial(struct safefs_output *out)
{
	safefs_output_release(out);
}
