#include "export_sink.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

int export_sink_open(struct export_sink *s, const char *path, char *msg_buf, size_t msg_size,
                     const char **cause)
{
	memset(s, 0, sizeof *s);
	s->target = (struct safefs_output){.fd = -1, .dir_fd = -1, .hold_fd = -1, .in_place = 1};
	if (!path || strcmp(path, "-") == 0) {
		s->file = stdout;
		return 0;
	}
	const char *why = NULL;
	int err = safefs_output_open(&s->target, path, 0, &why);
	if (err) {
		snprintf(msg_buf, msg_size, "%s %s: %s", why, path, strerror(-err));
		*cause = msg_buf;
		return err;
	}
	s->path = path;
	size_t plen = strlen(path);
	if (plen > 3 && strcmp(path + plen - 3, ".gz") == 0) {
		s->gz = gzdopen(s->target.fd, "wb1");
		if (s->gz)
			gzbuffer(s->gz, 256u << 10);
	} else {
		s->file = fdopen(s->target.fd, "wb");
	}
	if (!s->gz && !s->file) {
		close(s->target.fd);
		safefs_output_discard(&s->target);
		snprintf(msg_buf, msg_size, "cannot create %s: %s", path, strerror(ENOMEM));
		*cause = msg_buf;
		return -ENOMEM;
	}
	return 0;
}

void export_sink_write(struct export_sink *s, const void *buf, size_t n)
{
	if (!n)
		return;
	if (!s->err) {
		if (s->gz) {
			if (gzwrite(s->gz, buf, (unsigned)n) != (int)n)
				s->err = -EIO;
		} else if (fwrite(buf, 1, n, s->file) != n) {
			s->err = errno ? -errno : -EIO;
		}
	}
	s->bytes += n;
}

int export_sink_close(struct export_sink *s, char *msg_buf, size_t msg_size, const char **cause)
{
	int rc = s->err;
	if (s->gz) {
		int zrc = gzclose(s->gz);
		if (!rc && zrc != Z_OK)
			rc = -EIO;
	} else if (!s->path) {
		if (fflush(stdout) != 0 && !rc)
			rc = errno ? -errno : -EIO;
	} else if (fclose(s->file) != 0 && !rc) {
		rc = errno ? -errno : -EIO;
	}
	/* Complete: it replaces PATH; failed: PATH stays as it was. */
	if (s->path) {
		if (!rc)
			rc = safefs_output_commit(&s->target);
		else
			safefs_output_discard(&s->target);
	}
	if (rc) {
		if (s->path)
			snprintf(msg_buf, msg_size, "cannot write %s: %s", s->path, strerror(-rc));
		else
			snprintf(msg_buf, msg_size, "writing output: %s", strerror(-rc));
		*cause = msg_buf;
	}
	return rc;
}
