#include "cuscope/session.h"
#include "cuscope/safefs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* A session whose processes are gone is removed at the next start, but a detached target's
 * output log is kept this long for its user to read. */
#define SESSION_LOG_KEEP_S (24 * 3600)
/* An attach session that never got a socket (the attach failed half-way) is stale after this. */
#define SESSION_ATTACH_STALE_S 60

int session_base_dir(char *out, size_t size)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	struct stat st;
	int n;
	/* Only a runtime directory of our own (root under sudo may still carry the user's). */
	if (xdg && xdg[0] == '/' && stat(xdg, &st) == 0 && st.st_uid == getuid() &&
	    access(xdg, W_OK | X_OK) == 0)
		n = snprintf(out, size, "%s/cuscope", xdg);
	else
		n = snprintf(out, size, "/tmp/cuscope-%u", (unsigned)getuid());
	return n > 0 && (size_t)n < size ? 0 : -ENAMETOOLONG;
}

int session_root(char *out, size_t size)
{
	const char *override = getenv("CUSCOPE_SESSION_ROOT");
	if (!override || !override[0])
		return session_base_dir(out, size);
	int n;
	if (override[0] == '/') {
		n = snprintf(out, size, "%s", override);
	} else {
		/* Absolute from the start: children that chdir still find the session. */
		char cwd[PATH_MAX];
		if (!getcwd(cwd, sizeof cwd))
			return -errno;
		n = snprintf(out, size, "%s/%s", cwd, override);
	}
	return n > 0 && (size_t)n < size ? 0 : -ENAMETOOLONG;
}

/* Opens (creating it if missing) the per-user root as a verified private directory fd. */
static int session_root_open(char *root, size_t size, const char **cause)
{
	char parent[PATH_MAX], name[NAME_MAX + 1];
	if (session_root(root, size) != 0 ||
	    safefs_split(root, parent, sizeof parent, name, sizeof name) != 0)
		return *cause = "session root path too long", -ENAMETOOLONG;
	int pfd = safefs_open_dir(parent, getuid(), 0);
	if (pfd < 0) {
		*cause = pfd == -EPERM || pfd == -ELOOP
		             ? "session root's parent may be changed by another user"
		             : "cannot open session root's parent";
		return pfd;
	}
	int fd = safefs_mkdir_private_at(pfd, name, getuid());
	close(pfd);
	if (fd < 0) {
		*cause = fd == -EACCES || fd == -EROFS ? "cannot create session directory (permission denied)"
		         : fd == -EPERM || fd == -ENOTDIR
		             ? "session directory is not a private directory owned by this user"
		             : "cannot create session directory";
		return fd;
	}
	if (faccessat(fd, ".", W_OK | X_OK, 0) != 0) {
		close(fd);
		return *cause = "session directory is not writable", -EACCES;
	}
	return fd;
}

int session_create(char *out, size_t size, const char **cause)
{
	char root[PATH_MAX];
	int fd = session_root_open(root, sizeof root, cause);
	if (fd < 0)
		return fd;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	char name[64];
	snprintf(name, sizeof name, "%d-%lx", (int)getpid(), (unsigned long)ts.tv_nsec);
	int n = snprintf(out, size, "%s/%s", root, name);
	int rc = 0;
	if (n < 0 || (size_t)n >= size) {
		*cause = "session path too long";
		rc = -ENAMETOOLONG;
	} else if (mkdirat(fd, name, 0700) != 0) {
		*cause = "cannot create session directory";
		rc = -errno;
	}
	close(fd);
	return rc;
}

int session_open(const char *dir, uid_t uid)
{
	return safefs_open_dir(dir, uid, SAFEFS_PRIVATE);
}

int session_socket_path(char *out, size_t size, const char *dir, pid_t pid)
{
	int n = snprintf(out, size, "%s/%d.sock", dir, (int)pid);
	return n > 0 && (size_t)n < size ? 0 : -ENAMETOOLONG;
}

/*
 * The address of name in the directory fd: through /proc/self/fd, so a session path longer than
 * sun_path (108 bytes) still works and nothing on the way is looked up by name again.
 */
static int session_fill_addr_at(struct sockaddr_un *addr, int fd, const char *name)
{
	memset(addr, 0, sizeof *addr);
	addr->sun_family = AF_UNIX;
	int n = name ? snprintf(addr->sun_path, sizeof addr->sun_path, "/proc/self/fd/%d/%s", fd, name)
	             : snprintf(addr->sun_path, sizeof addr->sun_path, "/proc/self/fd/%d", fd);
	return n > 0 && (size_t)n < sizeof addr->sun_path ? 0 : -ENAMETOOLONG;
}

int session_listen_at(int dfd, const char *name, int fd)
{
	/* The collector's own session: its uid's (or made for it by root), nobody else may write it. */
	struct stat st;
	if (fstat(dfd, &st) != 0 || !S_ISDIR(st.st_mode) || (st.st_mode & 0022) ||
	    (st.st_uid != getuid() && st.st_uid != geteuid() && st.st_uid != 0))
		return -EPERM;
	struct sockaddr_un addr;
	int err = session_fill_addr_at(&addr, dfd, name);
	if (err)
		return err;
	unlinkat(dfd, name, 0);
	/* umask is process-wide (other threads of the traced program may be creating files): bind,
	 * then chmod. The session directory is private, so nobody else can reach the socket meanwhile. */
	int rc = bind(fd, (struct sockaddr *)&addr, sizeof addr);
	if (rc == 0)
		rc = fchmodat(dfd, name, 0600, 0);
	if (rc != 0 || listen(fd, 8) != 0)
		return -errno;
	return 0;
}

int session_connect_at(int dir, const char *name)
{
	/* The socket itself, never through a link, then connected through its own fd. */
	int sfd = openat(dir, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (sfd < 0)
		return errno == ELOOP ? -ENOTSOCK : -errno;
	struct stat st;
	struct sockaddr_un addr;
	int err = fstat(sfd, &st) != 0 ? -errno : !S_ISSOCK(st.st_mode) ? -ENOTSOCK : 0;
	if (!err)
		err = session_fill_addr_at(&addr, sfd, NULL);
	int fd = err ? -1 : socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (!err && fd < 0)
		err = -errno;
	if (!err && connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
		err = -errno;
		close(fd);
	}
	close(sfd);
	if (err)
		return err;
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	return fd;
}

int session_connect(const char *path)
{
	char dir[PATH_MAX], name[NAME_MAX + 1];
	int err = safefs_split(path, dir, sizeof dir, name, sizeof name);
	if (err)
		return err;
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	int fd = session_connect_at(dfd, name);
	close(dfd);
	return fd;
}

int session_peer_allowed(int fd)
{
	struct ucred cred;
	socklen_t len = sizeof cred;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0)
		return -errno;
	return cred.uid == getuid() || cred.uid == 0;
}

pid_t session_socket_pid(const char *name)
{
	char *end;
	long pid = strtol(name, &end, 10);
	if (end == name || strcmp(end, ".sock") != 0 || pid <= 0)
		return 0;
	return (pid_t)pid;
}

static int session_pid_alive(long pid)
{
	return pid > 0 && pid <= 0x3fffffff && (kill((pid_t)pid, 0) == 0 || errno != ESRCH);
}

/* keep callback: sockets of live processes, and a recent output log of a detached target. */
static int session_keep_live(int dir, const char *entry, const struct stat *st)
{
	(void)dir;
	pid_t pid = session_socket_pid(entry);
	if (pid && S_ISSOCK(st->st_mode) && session_pid_alive(pid))
		return 1;
	if (strcmp(entry, "output.log") == 0 && S_ISREG(st->st_mode) &&
	    time(NULL) - st->st_mtime < SESSION_LOG_KEEP_S)
		return 1;
	return 0;
}

/* keep callback for removing a session at the end of a run: live sockets only. */
static int session_keep_sockets(int dir, const char *entry, const struct stat *st)
{
	(void)dir;
	pid_t pid = session_socket_pid(entry);
	return pid && S_ISSOCK(st->st_mode) && session_pid_alive(pid);
}

int session_remove(const char *dir, uid_t uid)
{
	char parent[PATH_MAX], name[NAME_MAX + 1];
	int rc = safefs_split(dir, parent, sizeof parent, name, sizeof name);
	if (rc)
		return rc;
	int pfd = safefs_open_dir(parent, uid, SAFEFS_PRIVATE);
	if (pfd < 0)
		return pfd;
	rc = safefs_remove_dir_at(pfd, name, uid, session_keep_sockets);
	close(pfd);
	return rc;
}

/* Whether a directory entry of the root is a session nobody uses any more. */
static int session_stale(int root, const char *name, const struct stat *st)
{
	long pid;
	unsigned long stamp;
	char tail;
	if (sscanf(name, "attach-%ld-%lx%c", &pid, &stamp, &tail) == 2) {
		/* An attach session: its target is gone, or it never got a socket. */
		if (!session_pid_alive(pid))
			return 1;
		char sock[NAME_MAX + 32];
		struct stat sst;
		snprintf(sock, sizeof sock, "%s/%ld.sock", name, pid);
		return fstatat(root, sock, &sst, AT_SYMLINK_NOFOLLOW) != 0 &&
		       time(NULL) - st->st_mtime > SESSION_ATTACH_STALE_S;
	}
	/* A launch or armed session is named by the process that made it. */
	if (sscanf(name, "%ld-%lx%c", &pid, &stamp, &tail) == 2)
		return !session_pid_alive(pid);
	return 0;
}

void session_sweep(void)
{
	char root[PATH_MAX];
	const char *cause;
	int fd = session_root_open(root, sizeof root, &cause);
	if (fd < 0)
		return;
	DIR *d = safefs_opendir(fd);
	if (!d) {
		close(fd);
		return;
	}
	struct dirent *de;
	while ((de = readdir(d))) {
		struct stat st;
		long pid;
		char tail;
		if (de->d_name[0] == '.' || fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
			continue;
		if (S_ISDIR(st.st_mode) && session_stale(fd, de->d_name, &st))
			safefs_remove_dir_at(fd, de->d_name, getuid(), session_keep_live);
		else if (S_ISREG(st.st_mode) && sscanf(de->d_name, "attach-%ld.en%c", &pid, &tail) == 2 &&
		         tail == 'v' && !session_pid_alive(pid))
			unlinkat(fd, de->d_name, 0); /* a rendezvous nobody will read */
	}
	closedir(d);
	close(fd);
}
