#include "cuscope/session.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

int session_base_dir(char *out, size_t size)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	int n;
	if (xdg && xdg[0] == '/' && access(xdg, W_OK | X_OK) == 0)
		n = snprintf(out, size, "%s/cuscope", xdg);
	else
		n = snprintf(out, size, "/tmp/cuscope-%u", (unsigned)getuid());
	return n > 0 && (size_t)n < size ? 0 : -ENAMETOOLONG;
}

/* Makes dir 0700 or checks that an existing one is ours and private. */
static int session_private_dir(const char *dir, const char **cause)
{
	struct stat st;
	if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
		int err = errno;
		*cause = err == EACCES || err == EROFS ? "cannot create session directory (permission denied)"
		                                       : "cannot create session directory";
		return -err;
	}
	if (lstat(dir, &st) != 0) {
		*cause = "cannot stat session directory";
		return -errno;
	}
	if (!S_ISDIR(st.st_mode) || st.st_uid != getuid() || (st.st_mode & 0077) != 0) {
		*cause = "session directory is not a private directory owned by this user";
		return -EPERM;
	}
	if (access(dir, W_OK | X_OK) != 0) {
		*cause = "session directory is not writable";
		return -EACCES;
	}
	return 0;
}

int session_create(char *out, size_t size, const char **cause)
{
	char base[256];
	int err;
	const char *override = getenv("CUSCOPE_SESSION_ROOT");
	if (override && override[0]) {
		if (snprintf(base, sizeof base, "%s", override) >= (int)sizeof base)
			return *cause = "session root path too long", -ENAMETOOLONG;
	} else if (session_base_dir(base, sizeof base) != 0) {
		return *cause = "session root path too long", -ENAMETOOLONG;
	}
	err = session_private_dir(base, cause);
	if (err)
		return err;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	int n = snprintf(out, size, "%s/%d-%lx", base, (int)getpid(), (unsigned long)ts.tv_nsec);
	if (n < 0 || (size_t)n >= size)
		return *cause = "session path too long", -ENAMETOOLONG;
	if (mkdir(out, 0700) != 0) {
		*cause = "cannot create session directory";
		return -errno;
	}
	return 0;
}

int session_socket_path(char *out, size_t size, const char *dir, pid_t pid)
{
	int n = snprintf(out, size, "%s/%d.sock", dir, (int)pid);
	return n > 0 && (size_t)n < size ? 0 : -ENAMETOOLONG;
}

static int session_fill_addr(struct sockaddr_un *addr, const char *path)
{
	memset(addr, 0, sizeof *addr);
	addr->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof addr->sun_path)
		return -ENAMETOOLONG;
	strcpy(addr->sun_path, path);
	return 0;
}

int session_listen(const char *path)
{
	struct sockaddr_un addr;
	int err = session_fill_addr(&addr, path);
	if (err)
		return err;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	unlink(path);
	/* umask is process-wide (other threads of the traced program may be creating files): bind,
	 * then chmod. The session directory is 0700, so nobody else can reach the socket meanwhile. */
	int rc = bind(fd, (struct sockaddr *)&addr, sizeof addr);
	if (rc == 0)
		rc = chmod(path, 0600);
	if (rc != 0 || listen(fd, 8) != 0) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

int session_connect(const char *path)
{
	struct sockaddr_un addr;
	int err = session_fill_addr(&addr, path);
	if (err)
		return err;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
		err = -errno;
		close(fd);
		return err;
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
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
