/* Where an export writes: standard output, or PATH written as PATH.partial and renamed into place
 * when complete (safefs.h), gzip-compressed when PATH ends in ".gz". Shared by the JSON and the
 * Perfetto writers. */
#ifndef CUSCOPE_EXPORT_SINK_H
#define CUSCOPE_EXPORT_SINK_H

#include "cuscope/safefs.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <zlib.h>

struct export_sink {
	const char *path; /* NULL when writing to standard output */
	FILE *file;
	gzFile gz;
	struct safefs_output target;
	int err;        /* first write error, -errno */
	uint64_t bytes; /* handed to the sink so far (before compression) */
};

/* Opens path ("-" or NULL: standard output); 0, or -errno with a one-line *cause (in msg_buf). */
int export_sink_open(struct export_sink *s, const char *path, char *msg_buf, size_t msg_size,
                     const char **cause);
/* Writes n bytes; the first failure is kept in s->err and later writes are skipped. */
void export_sink_write(struct export_sink *s, const void *buf, size_t n);
/* Closes the sink: a complete file replaces PATH, a failed one leaves PATH as it was. Returns 0, or
 * -errno (the first write error first) with a one-line *cause (in msg_buf). */
int export_sink_close(struct export_sink *s, char *msg_buf, size_t msg_size, const char **cause);

#endif
