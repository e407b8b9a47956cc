/*
 * Files in places another user may control: the one place for verified directory fds and for
 * creating outputs that never destroy what was there. Linked into the collector too, so it never
 * allocates, never logs and never exits.
 *
 * Rules: a directory is trusted when every component of its path is a real directory owned by
 * root or by the expected user, writable by others only when sticky, and symlinks on the way are
 * followed only when root or that user owns them; the last component is never a symlink. Entries
 * inside are reached with openat/unlinkat/fstatat relative to that fd, never by path again.
 */
#ifndef CUSCOPE_SAFEFS_H
#define CUSCOPE_SAFEFS_H

#include <dirent.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/types.h>

#define SAFEFS_PRIVATE 1 /* the last directory: owned by uid, no group/other bits, not a link */

/* Checks an open fd: a directory owned by uid (private if flags say so); 0, -ENOTDIR or -EPERM. */
int safefs_check_dir(int fd, uid_t uid, int flags);
/*
 * Opens path (a trusted walk, see above) as a directory fd (O_RDONLY, close-on-exec); without
 * SAFEFS_PRIVATE the last directory only has to pass the rule of the ones on the way (/tmp does).
 * Returns fd or -errno.
 */
int safefs_open_dir(const char *path, uid_t uid, int flags);
/* Opens name in the verified parent without following a link and checks it like safefs_check_dir. */
int safefs_open_dir_at(int parent, const char *name, uid_t uid, int flags);
/*
 * Creates name in parent (0700) unless it exists, then opens and checks it: a private directory
 * owned by uid. When we are root and made it, it is given to uid. fd or -errno.
 */
int safefs_mkdir_private_at(int parent, const char *name, uid_t uid);
/*
 * Whether uid may access st per its mode (what: 4 read, 2 write, 1 search, or'ed), counting the
 * owner bits for the owner and the "other" bits for anyone else (group membership unknown:
 * never granted through the group). Root may always.
 */
int safefs_uid_may(const struct stat *st, uid_t uid, int what);
/*
 * Opens name in the verified parent as a directory that another user's data may be read from
 * on uid's behalf: not a link, owned by root or uid, writable by nobody else, listable and
 * searchable by uid. fd or -errno (-EPERM when it is not such a directory).
 */
int safefs_open_dir_for(int parent, const char *name, uid_t uid);
/*
 * Opens name in dir to read as data on uid's behalf: a regular file (not a link, FIFO or device:
 * never blocks), readable by uid, at most max_size bytes. fd or -errno.
 */
int safefs_open_data_at(int dir, const char *name, uid_t uid, off_t max_size);
/* Lists a verified directory fd from its start (fd stays open); NULL on failure. */
DIR *safefs_opendir(int dir);
/*
 * Removes the directory name inside parent: its plain entries first (unlinkat: a link is removed,
 * never followed), then the directory. Entries for which keep returns non-zero stay (and so does
 * the directory); subdirectories are never descended. The directory must be owned by uid.
 * Returns 0 when it is gone, -ENOTEMPTY when something was kept, or -errno.
 */
int safefs_remove_dir_at(int parent, const char *name, uid_t uid,
                         int (*keep)(int dir, const char *entry, const struct stat *st));
/* Splits path into its directory (or "." / "/") and last component; 0 or -ENAMETOOLONG/-EINVAL. */
int safefs_split(const char *path, char *dir, size_t dir_size, char *name, size_t name_size);

/*
 * An output file. A new or regular FILE is written as FILE.partial (0600, O_EXCL|O_NOFOLLOW)
 * beside it and renamed onto FILE by safefs_output_commit, so a failed run leaves FILE as it was.
 * "-" (standard output), and an existing device or FIFO (also through a link that root or we
 * own) are written in place, never unlinked or replaced.
 */
struct safefs_output {
	int fd;       /* write here; the caller closes it before commit or discard */
	int dir_fd;   /* the directory holding FILE, -1 when written in place */
	int in_place; /* stdout, a device or a FIFO */
	int hold_fd;  /* a second fd on FILE.partial, so its identity cannot be reused before commit */
	dev_t dev;    /* identity of FILE.partial, checked before renaming it */
	ino_t ino;
	char name[NAME_MAX + 1];    /* FILE's last component */
	char partial[NAME_MAX + 1]; /* FILE.partial's last component */
	char partial_path[PATH_MAX];
};

/*
 * Opens path for writing (readable: also for reading back, O_RDWR). Returns 0 or -errno with
 * *cause a static explanation.
 */
int safefs_output_open(struct safefs_output *out, const char *path, int readable, const char **cause);
/* Renames FILE.partial onto FILE (after the caller closed fd); 0 or -errno. */
int safefs_output_commit(struct safefs_output *out);
/* Removes FILE.partial (nothing was worth keeping); FILE stays as it was. */
void safefs_output_discard(struct safefs_output *out);
/* Leaves FILE.partial where it is (a damaged result the user may still read). */
void safefs_output_keep_partial(struct safefs_output *out);

#endif
