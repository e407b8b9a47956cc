/*
 * libFuzzer harness for the capture reader: the input is written to a memfd and read with
 * capture_read into a fresh store, then the store is summarised (stats, export) and freed. Each
 * input is read twice: as it is, and with every chunk's checksums recomputed (sources folded to
 * 0..15) so the fuzzer reaches the frame and store code behind the CRCs. Each read is followed
 * by a second one of the same file into the same store as another capture with its times moved
 * (as `stats A B` reads captures of several hosts), before the summaries.
 */
#include "cuscope/capture.h"
#include "cuscope/crc32.h"
#include "cuscope/export.h"
#include "cuscope/stats.h"
#include "cuscope/store.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static FILE *devnull;

static void read_one(const uint8_t *data, size_t size)
{
	int fd = memfd_create("fuzz-capture", 0);
	if (fd < 0)
		abort();
	if (size && write(fd, data, size) != (ssize_t)size)
		abort();
	char path[64];
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	struct store *st = store_new();
	struct capture_read_result res;
	char msg[512];
	const char *cause = NULL;
	store_capture_begin(st);
	if (capture_read(path, st, &res, msg, sizeof msg, &cause) == 0) {
		struct capture_read_result again;
		struct capture_read_options opts = {.shift_ns = (int64_t)(size * 1000003u) - 7000000000ll,
		                                    .source_base = (int)res.sources};
		store_capture_begin(st);
		if (capture_read_with(path, st, &opts, &again, msg, sizeof msg, &cause) == 0)
			free(again.manifest);
		stats_write(devnull, st, STATS_FORMAT_JSON);
		struct export_options eo = {0, UINT64_MAX};
		struct export_counts counts;
		export_chrome_json(st, "/dev/null", &eo, &counts, msg, sizeof msg, &cause);
	}
	free(res.manifest);
	store_free(st);
	close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!devnull)
		devnull = fopen("/dev/null", "w");
	read_one(data, size);
	if (size < sizeof(struct capture_file_header) + sizeof(struct capture_chunk_header))
		return 0;
	uint8_t *fixed = malloc(size);
	memcpy(fixed, data, size);
	size_t off = sizeof(struct capture_file_header);
	while (off + sizeof(struct capture_chunk_header) <= size) {
		struct capture_chunk_header ch;
		memcpy(&ch, fixed + off, sizeof ch);
		size_t avail = size - off - sizeof ch;
		if (ch.length > avail)
			ch.length = (uint32_t)avail;
		ch.magic = CAPTURE_CHUNK_MAGIC;
		ch.source &= 15;
		ch.payload_crc = crc32_update(0, fixed + off + sizeof ch, ch.length);
		ch.header_crc = 0;
		ch.header_crc = crc32_update(0, &ch, sizeof ch);
		memcpy(fixed + off, &ch, sizeof ch);
		off += sizeof ch + ch.length;
	}
	read_one(fixed, size);
	free(fixed);
	return 0;
}
