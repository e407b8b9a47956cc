/* Dying allocators: the viewer may exit on out-of-memory; the collector never uses these. */
#ifndef CUSCOPE_XALLOC_H
#define CUSCOPE_XALLOC_H

#include <stddef.h>

void *xmalloc(size_t size);
void *xcalloc(size_t count, size_t size);
void *xrealloc(void *ptr, size_t size);
/* Grows *ptr (an array of elem_size items with capacity *cap) to hold at least need items. */
void xgrow(void **ptr, size_t *cap, size_t need, size_t elem_size);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
