/*
 * libFuzzer harness for the trigger texts: a capture's trigger notice (anyone can write a capture)
 * read back with trigger_notice_parse, then written again and read once more (the same fields);
 * and the input as a --trigger expression (trigger_parse), a duration (trigger_parse_duration).
 */
#include "cuscope/trigger.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	struct trigger_notice n, back;
	if (trigger_notice_parse(text, &n) == 0) {
		char again[8192];
		trigger_notice_format(&n, again, sizeof again);
		if (trigger_notice_parse(again, &back) != 0 || back.time_ns != n.time_ns ||
		    back.pid != n.pid || strcmp(back.file, n.file) != 0 || strcmp(back.expr, n.expr) != 0 ||
		    strcmp(back.cause, n.cause) != 0)
			abort();
	}
	struct trigger_spec spec;
	const char *why;
	trigger_parse(text, &spec, &why);
	uint64_t ns;
	trigger_parse_duration(text, &ns);
	free(text);
	return 0;
}
