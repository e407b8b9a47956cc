/*
 * The command text of the status line: the program's basename and its arguments, cut from the
 * middle to a width in cells, with a suffix (the pid) that is never cut.
 */
#ifndef CUSCOPE_CMDTEXT_H
#define CUSCOPE_CMDTEXT_H

#include <stddef.h>

/* Cells of a UTF-8 string, one per character (the status line holds no wide characters). */
size_t cmdtext_cells(const char *s);
/*
 * Writes to out (NUL-terminated, at most size bytes) the basename of cmdline's first word, the
 * rest of cmdline, then suffix, fitting `width` cells: when too long, the middle of the command
 * gives way to `ellipsis`, keeping the basename whole when it fits and the end of the arguments.
 * The suffix is kept whole even when it alone exceeds width. Returns the cells written.
 */
size_t cmdtext_fit(const char *cmdline, const char *suffix, size_t width, const char *ellipsis, char *out,
                   size_t size);

#endif
