/* Viewer-side messages: one clear line each, prefixed with "cuscope: ". */
#ifndef CUSCOPE_LOG_H
#define CUSCOPE_LOG_H

/* Prints "cuscope: <message>" to stderr. */
void log_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints "cuscope: warning: <message>" to stderr. */
void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Routes messages into a buffer instead of stderr while the screen is owned by curses (NULL restores). */
void log_set_sink(void (*sink)(const char *line));

#endif
