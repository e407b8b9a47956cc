/* PyTorch's per-call NVTX message suffix, taken off so that a range is named by its operator. */
#include "nvtxname.h"

#include <string.h>

/* Where a run of decimal digits ending at end starts (end when there is none). */
static size_t nvtxname_number_start(const char *text, size_t end)
{
	size_t i = end;
	while (i > 0 && text[i - 1] >= '0' && text[i - 1] <= '9')
		i--;
	return i;
}

/*
 * Where a bracketed list of numbers ending at end starts: torch's "[[32, 256], []]" (sizes) or
 * "[(343,0), (0,-1)]" (input_op_ids); end when text does not end with one.
 */
static size_t nvtxname_list_start(const char *text, size_t end)
{
	if (end == 0 || text[end - 1] != ']')
		return end;
	size_t depth = 0;
	for (size_t i = end; i > 0; i--) {
		char c = text[i - 1];
		if (c == ']') {
			depth++;
		} else if (c == '[') {
			if (--depth == 0)
				return i - 1;
		} else if (!((c >= '0' && c <= '9') || c == ',' || c == ' ' || c == '(' || c == ')' ||
		             c == '-')) {
			return end;
		}
	}
	return end;
}

size_t nvtxname_op_length(const char *text, size_t length)
{
	/* torch's getNvtxStr appends them in this order; read from the end, so the last comes first. */
	static const struct {
		const char *key;
		size_t key_len;
		int list; /* a bracketed list, else a number */
	} parts[] = {
#define NVTXNAME_PART(key, list) {key, sizeof key - 1, list}
	    NVTXNAME_PART(", input_op_ids = ", 1),
	    NVTXNAME_PART(", sizes = ", 1),
	    NVTXNAME_PART(", op_id = ", 0),
	    NVTXNAME_PART(", seq = ", 0),
#undef NVTXNAME_PART
	};
	size_t end = length;
	for (size_t p = 0; p < sizeof parts / sizeof parts[0]; p++) {
		size_t start =
		    parts[p].list ? nvtxname_list_start(text, end) : nvtxname_number_start(text, end);
		size_t n = parts[p].key_len;
		if (start == end || start < n || memcmp(text + start - n, parts[p].key, n) != 0)
			continue;
		end = start - n;
	}
	return end > 0 ? end : length;
}
