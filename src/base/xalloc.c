#include "cuscope/xalloc.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void xalloc_die(size_t size)
{
	char msg[96];
	int n = snprintf(msg, sizeof msg, "cuscope: out of memory (%zu bytes)\n", size);
	if (write(STDERR_FILENO, msg, (size_t)n) < 0) {
		/* nothing more to do */
	}
	abort();
}

void *xmalloc(size_t size)
{
	void *p = malloc(size ? size : 1);
	if (!p)
		xalloc_die(size);
	return p;
}

void *xcalloc(size_t count, size_t size)
{
	void *p = calloc(count ? count : 1, size ? size : 1);
	if (!p)
		xalloc_die(count * size);
	return p;
}

void *xrealloc(void *ptr, size_t size)
{
	void *p = realloc(ptr, size ? size : 1);
	if (!p)
		xalloc_die(size);
	return p;
}

void xgrow(void **ptr, size_t *cap, size_t need, size_t elem_size)
{
	if (need <= *cap)
		return;
	size_t new_cap = *cap ? *cap : 16;
	while (new_cap < need)
		new_cap *= 2;
	*ptr = xrealloc(*ptr, new_cap * elem_size);
	*cap = new_cap;
}

char *xstrdup(const char *s)
{
	return xstrndup(s, strlen(s));
}

char *xstrndup(const char *s, size_t n)
{
	char *p = xmalloc(n + 1);
	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *out;
	va_start(ap, fmt);
	int n = vasprintf(&out, fmt, ap);
	va_end(ap);
	if (n < 0)
		xalloc_die(0);
	return out;
}
