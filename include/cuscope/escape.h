/*
 * Escaping of names that came from a capture or a traced program (NVTX ranges, threads, kernels,
 * command lines, manifest lines) before a terminal or a parser sees them. The one place for it:
 * every textual output path of stats, diff, info and export goes through these.
 *
 * Terminal text: C0 controls, DEL, C1 controls (also when UTF-8 encoded) and bytes that are not
 * valid UTF-8 become "\xNN" (one per byte); valid UTF-8 is kept. A backslash is kept as it is.
 * JSON (RFC 8259): '"', '\' and every control (C0, DEL, C1) as \" \\ \n \t \r or \u00NN; bytes that
 * are not valid UTF-8 as \ufffd (JSON strings hold Unicode text only).
 * UTF-8 (length-delimited formats such as protobuf): text kept as it is, controls included; bytes that
 * are not valid UTF-8 as U+FFFD (the same text a JSON reader gets from the JSON form).
 * CSV (RFC 4180): terminal-escaped text, in double quotes (inner quotes doubled) when it holds a
 * comma, a quote or leading/trailing spaces.
 */
#ifndef CUSCOPE_ESCAPE_H
#define CUSCOPE_ESCAPE_H

#include <stddef.h>
#include <stdio.h>

enum escape_kind {
	ESCAPE_TERM,
	ESCAPE_JSON, /* the string's body, without the surrounding quotes */
	ESCAPE_UTF8, /* valid UTF-8 only, nothing else changed */
};

/* Receives escaped output in pieces. */
typedef void (*escape_sink_fn)(void *ctx, const char *bytes, size_t len);

/* Escapes len bytes of s (NULs included) into sink. */
void escape_write(const char *s, size_t len, enum escape_kind kind, escape_sink_fn sink, void *ctx);
/* Terminal-escaped copy of the NUL-terminated s (xmalloc: the viewer dies on out-of-memory). */
char *escape_term_dup(const char *s);
/* Writes s terminal-escaped. */
void escape_term_fputs(FILE *out, const char *s);
/* Writes s as a JSON string, quotes included. */
void escape_json_fputs(FILE *out, const char *s);
/* Writes s as one CSV field. */
void escape_csv_fputs(FILE *out, const char *s);
/*
 * Writes s terminal-escaped in a field of width columns: cut at a character boundary when longer,
 * padded with spaces (after it when left, before it otherwise). A column is one UTF-8 character.
 */
void escape_term_field(FILE *out, const char *s, size_t width, int left);
/* Columns the terminal-escaped form of s takes (as escape_term_field counts them). */
size_t escape_term_columns(const char *s);

#endif
