#include "cuscope/escape.h"
#include "cuscope/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static void (*log_sink)(const char *line);

static void log_emit(const char *prefix, const char *fmt, va_list ap)
{
	char line[1024];
	int n = snprintf(line, sizeof line, "cuscope: %s", prefix);
	if (n < 0)
		n = 0;
	vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
	/* Messages echo paths and names other people chose: a terminal gets them escaped. */
	char *safe = escape_term_dup(line);
	if (log_sink)
		log_sink(safe);
	else
		fprintf(stderr, "%s\n", safe);
	free(safe);
}

void log_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	log_emit("", fmt, ap);
	va_end(ap);
}

void log_warn(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	log_emit("warning: ", fmt, ap);
	va_end(ap);
}

void log_set_sink(void (*sink)(const char *line))
{
	log_sink = sink;
}
