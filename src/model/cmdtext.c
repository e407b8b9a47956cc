/*
 * The status line's command text. A pure function so that its cuts are tested without a terminal:
 * a long checkout path or long arguments used to push the pid off the line and cut the program's
 * name.
 */
#include "cuscope/cmdtext.h"

#include <string.h>

size_t cmdtext_cells(const char *s)
{
	size_t n = 0;
	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

/* Bytes of the first `cells` characters of s (never splits a UTF-8 sequence). */
static size_t cmdtext_head_bytes(const char *s, size_t len, size_t cells)
{
	size_t i = 0;
	while (i < len) {
		if (((unsigned char)s[i] & 0xc0) != 0x80) {
			if (!cells)
				break;
			cells--;
		}
		i++;
	}
	return i;
}

/* Offset in s where its last `cells` characters start. */
static size_t cmdtext_tail_offset(const char *s, size_t len, size_t cells)
{
	size_t i = len;
	while (i > 0 && cells) {
		i--;
		if (((unsigned char)s[i] & 0xc0) != 0x80)
			cells--;
	}
	while (i > 0 && ((unsigned char)s[i] & 0xc0) == 0x80)
		i--;
	return i;
}

/* Appends n bytes of s to out[*o..size - 1) (always NUL-terminated). */
static void cmdtext_append(char *out, size_t size, size_t *o, const char *s, size_t n)
{
	if (*o + 1 >= size)
		return;
	if (n > size - 1 - *o)
		n = size - 1 - *o;
	memcpy(out + *o, s, n);
	*o += n;
	out[*o] = '\0';
}

size_t cmdtext_fit(const char *cmdline, const char *suffix, size_t width, const char *ellipsis, char *out,
                   size_t size)
{
	if (!size)
		return 0;
	out[0] = '\0';
	cmdline = cmdline ? cmdline : "";
	suffix = suffix ? suffix : "";
	ellipsis = ellipsis ? ellipsis : "";
	size_t word = strcspn(cmdline, " ");
	const char *base = cmdline;
	for (size_t i = 0; i < word; i++)
		if (cmdline[i] == '/' && i + 1 < word)
			base = cmdline + i + 1;
	size_t base_len = (size_t)(cmdline + word - base);
	/* The command without the program's directory: base_len bytes of base, then rest. */
	const char *rest = cmdline + word;
	size_t rest_len = strlen(rest);
	char cmd[4096];
	size_t clen = 0;
	cmd[0] = '\0';
	cmdtext_append(cmd, sizeof cmd, &clen, base, base_len);
	cmdtext_append(cmd, sizeof cmd, &clen, rest, rest_len);

	size_t o = 0;
	size_t sw = cmdtext_cells(suffix), cw = cmdtext_cells(cmd), ew = cmdtext_cells(ellipsis);
	size_t avail = width > sw ? width - sw : 0;
	if (cw <= avail) {
		cmdtext_append(out, size, &o, cmd, clen);
	} else if (avail > ew) {
		/* Head and tail around the ellipsis: the head takes the basename whole when it fits. */
		size_t keep = avail - ew;
		char base_only[1024];
		size_t bo = 0;
		base_only[0] = '\0';
		cmdtext_append(base_only, sizeof base_only, &bo, base, base_len);
		size_t bw = cmdtext_cells(base_only);
		size_t head = (keep + 1) / 2;
		if (head < bw)
			head = bw < keep ? bw : keep;
		size_t tail = keep - head;
		cmdtext_append(out, size, &o, cmd, cmdtext_head_bytes(cmd, clen, head));
		cmdtext_append(out, size, &o, ellipsis, strlen(ellipsis));
		size_t t = cmdtext_tail_offset(cmd, clen, tail);
		if (tail)
			cmdtext_append(out, size, &o, cmd + t, clen - t);
	} else {
		cmdtext_append(out, size, &o, cmd, cmdtext_head_bytes(cmd, clen, avail));
	}
	cmdtext_append(out, size, &o, suffix, strlen(suffix));
	return cmdtext_cells(out);
}
