/* Escaping of untrusted names for terminals, JSON and CSV (see escape.h for the rules). */
#include "cuscope/escape.h"
#include "cuscope/xalloc.h"

#include <stdlib.h>
#include <string.h>

static const char escape_hex[] = "0123456789abcdef";

/* Length of the valid UTF-8 sequence at p (2..4 bytes, at most avail), 0 when it is not valid. */
static size_t escape_utf8_len(const unsigned char *p, size_t avail)
{
	unsigned c = p[0];
	size_t n;
	unsigned min;
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
		min = 0x80;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		min = 0x800;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		min = 0x10000;
	} else {
		return 0;
	}
	if (n > avail)
		return 0;
	unsigned cp = c & (0x7fu >> n);
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3fu);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

/* "\xNN" for byte c into esc; returns 4. */
static size_t escape_byte_hex(char *esc, unsigned char c)
{
	esc[0] = '\\';
	esc[1] = 'x';
	esc[2] = escape_hex[c >> 4];
	esc[3] = escape_hex[c & 15];
	return 4;
}

/* JSON escape of code point c (< 0xa0) into esc, 0 when it needs none. */
static size_t escape_json_code(char *esc, unsigned c)
{
	static const char *const short_form[] = {
	    ['"'] = "\\\"", ['\\'] = "\\\\", ['\n'] = "\\n", ['\t'] = "\\t", ['\r'] = "\\r"};
	if (c < sizeof short_form / sizeof short_form[0] && short_form[c]) {
		memcpy(esc, short_form[c], 2);
		return 2;
	}
	if (c >= 0x20 && c < 0x7f)
		return 0;
	memcpy(esc, "\\u00", 4);
	esc[4] = escape_hex[c >> 4 & 15];
	esc[5] = escape_hex[c & 15];
	return 6;
}

/* Receives escaped output; escaped = 1 for the escape of one character (never to be cut). */
typedef void (*escape_piece_fn)(void *ctx, const char *bytes, size_t len, int escaped);

static void escape_walk(const char *s, size_t len, enum escape_kind kind, escape_piece_fn sink, void *ctx)
{
	const unsigned char *p = (const unsigned char *)s, *end = p + len, *run = p;
	while (p < end) {
		char esc[16];
		size_t e = 0, n = 1;
		unsigned c = *p;
		if (c < 0x80) {
			if (kind == ESCAPE_JSON)
				e = escape_json_code(esc, c);
			else if (kind == ESCAPE_TERM && (c < 0x20 || c == 0x7f))
				e = escape_byte_hex(esc, (unsigned char)c);
		} else {
			n = escape_utf8_len(p, (size_t)(end - p));
			if (!n) {
				n = 1;
				if (kind == ESCAPE_JSON) {
					memcpy(esc, "\\ufffd", 6);
					e = 6;
				} else if (kind == ESCAPE_UTF8) {
					memcpy(esc, "\xef\xbf\xbd", 3);
					e = 3;
				} else {
					e = escape_byte_hex(esc, (unsigned char)c);
				}
			} else if (n == 2 && c == 0xc2 && p[1] < 0xa0 && kind != ESCAPE_UTF8) {
				/* A C1 control (U+0080..U+009F): some terminals act on it in UTF-8 too. */
				if (kind == ESCAPE_JSON) {
					e = escape_json_code(esc, p[1]);
				} else {
					e = escape_byte_hex(esc, p[0]);
					e += escape_byte_hex(esc + e, p[1]);
				}
			}
		}
		if (e) {
			if (p > run)
				sink(ctx, (const char *)run, (size_t)(p - run), 0);
			sink(ctx, esc, e, 1);
			p += n;
			run = p;
		} else {
			p += n;
		}
	}
	if (p > run)
		sink(ctx, (const char *)run, (size_t)(p - run), 0);
}

struct escape_plain {
	escape_sink_fn sink;
	void *ctx;
};

static void escape_piece_plain(void *ctx, const char *bytes, size_t len, int escaped)
{
	struct escape_plain *pl = ctx;
	(void)escaped;
	pl->sink(pl->ctx, bytes, len);
}

void escape_write(const char *s, size_t len, enum escape_kind kind, escape_sink_fn sink, void *ctx)
{
	struct escape_plain pl = {sink, ctx};
	escape_walk(s, len, kind, escape_piece_plain, &pl);
}

static void escape_sink_file(void *ctx, const char *bytes, size_t len)
{
	fwrite(bytes, 1, len, ctx);
}

struct escape_buf {
	char *p;
	size_t len, cap;
};

static void escape_sink_buf(void *ctx, const char *bytes, size_t len)
{
	struct escape_buf *b = ctx;
	xgrow((void **)&b->p, &b->cap, b->len + len + 1, 1);
	memcpy(b->p + b->len, bytes, len);
	b->len += len;
	b->p[b->len] = '\0';
}

char *escape_term_dup(const char *s)
{
	struct escape_buf b = {NULL, 0, 0};
	escape_sink_buf(&b, "", 0);
	escape_write(s, strlen(s), ESCAPE_TERM, escape_sink_buf, &b);
	return b.p;
}

void escape_term_fputs(FILE *out, const char *s)
{
	escape_write(s, strlen(s), ESCAPE_TERM, escape_sink_file, out);
}

void escape_json_fputs(FILE *out, const char *s)
{
	fputc('"', out);
	escape_write(s, strlen(s), ESCAPE_JSON, escape_sink_file, out);
	fputc('"', out);
}

void escape_csv_fputs(FILE *out, const char *s)
{
	size_t len = strlen(s);
	/* Terminal escaping leaves no CR or LF, so only these need the quotes. */
	int quote = strpbrk(s, ",\"") || (len && (s[0] == ' ' || s[len - 1] == ' '));
	if (!quote) {
		escape_term_fputs(out, s);
		return;
	}
	char *t = escape_term_dup(s);
	fputc('"', out);
	for (const char *c = t; *c; c++) {
		if (*c == '"')
			fputc('"', out);
		fputc(*c, out);
	}
	fputc('"', out);
	free(t);
}

/* Columns of a piece of escaped output: escapes are ASCII, other bytes are UTF-8 characters. */
static size_t escape_piece_columns(const char *bytes, size_t len)
{
	size_t cols = 0;
	for (size_t i = 0; i < len; i++)
		cols += ((unsigned char)bytes[i] & 0xc0) != 0x80;
	return cols;
}

static void escape_sink_count(void *ctx, const char *bytes, size_t len, int escaped)
{
	(void)escaped;
	*(size_t *)ctx += escape_piece_columns(bytes, len);
}

size_t escape_term_columns(const char *s)
{
	size_t cols = 0;
	escape_walk(s, strlen(s), ESCAPE_TERM, escape_sink_count, &cols);
	return cols;
}

struct escape_field {
	FILE *out;
	size_t width, used;
	int full; /* a piece did not fit: nothing more is written */
};

/* Writes what fits of a piece: whole characters of plain text, an escape only whole. */
static void escape_sink_field(void *ctx, const char *bytes, size_t len, int escaped)
{
	struct escape_field *f = ctx;
	if (f->full)
		return;
	size_t cols = escape_piece_columns(bytes, len);
	if (f->used + cols <= f->width) {
		fwrite(bytes, 1, len, f->out);
		f->used += cols;
		return;
	}
	f->full = 1;
	if (escaped)
		return;
	size_t i = 0;
	while (i < len && f->used < f->width) {
		size_t n = 1;
		while (i + n < len && ((unsigned char)bytes[i + n] & 0xc0) == 0x80)
			n++;
		fwrite(bytes + i, 1, n, f->out);
		f->used++;
		i += n;
	}
}

void escape_term_field(FILE *out, const char *s, size_t width, int left)
{
	if (!left) {
		size_t cols = escape_term_columns(s);
		for (size_t i = cols; i < width; i++)
			fputc(' ', out);
	}
	struct escape_field f = {out, width, 0, 0};
	escape_walk(s, strlen(s), ESCAPE_TERM, escape_sink_field, &f);
	if (left)
		for (size_t i = f.used; i < width; i++)
			fputc(' ', out);
}
