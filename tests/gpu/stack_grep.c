/*
 * Test helper: counts the CPU samples of a capture whose stack holds a frame whose function
 * contains TEXT, and prints "<matching> <total> <first matching function>".
 *   stack_grep FILE TEXT
 */
#include "cuscope/capture.h"
#include "cuscope/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: stack_grep FILE TEXT\n");
		return 2;
	}
	struct store *st = store_new();
	struct capture_read_result res;
	char msg[512];
	const char *cause;
	if (capture_read(argv[1], st, &res, msg, sizeof msg, &cause) != 0) {
		fprintf(stderr, "stack_grep: %s\n", cause);
		return 2;
	}
	unsigned long matching = 0, total = 0;
	const char *first = "-";
	for (size_t p = 0; p < store_process_count(st); p++) {
		struct store_process_info pi;
		store_process_get(st, p, &pi);
		for (size_t l = 0; l < pi.lane_count; l++) {
			const struct store_sample *s;
			size_t n = store_lane_samples(st, p, l, 0, UINT64_MAX, &s);
			for (size_t i = 0; i < n; i++) {
				const uint32_t *frames;
				size_t depth = store_stack_frames(st, s[i].stack_id, &frames);
				total++;
				for (size_t f = 0; f < depth; f++) {
					const char *fn = store_frame_function(st, frames[f]);
					if (fn && strstr(fn, argv[2])) {
						if (!matching)
							first = fn;
						matching++;
						break;
					}
				}
			}
		}
	}
	printf("%lu %lu %s\n", matching, total, first);
	free(res.manifest);
	return 0;
}
