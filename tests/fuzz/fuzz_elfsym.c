/*
 * libFuzzer harness for elfsym (ELF files the symbolizer reads may belong to anyone): the input
 * is opened as an ELF image in memory and everything the collector asks of it is read: function
 * symbols of both tables, the build-id note, the debuglink and the .gnu_debugdata section.
 */
#include "cuscope/elfsym.h"

#include <elf.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct elfsym_file f;
	if (elfsym_open_mem(&f, data, size) == 0) {
		struct elfsym_table t = {0};
		elfsym_read_funcs(&f, SHT_SYMTAB, &t);
		elfsym_read_funcs(&f, SHT_DYNSYM, &t);
		elfsym_table_sort(&t);
		size_t total = 0;
		for (size_t i = 0; i < t.count; i++)
			total += strlen(t.funcs[i].name); /* every name ends inside its block */
		elfsym_table_fini(&t);
		uint8_t id[64];
		elfsym_build_id(&f, id, sizeof id);
		char name[256];
		uint32_t crc;
		elfsym_debuglink(&f, name, sizeof name, &crc);
		size_t n;
		free(elfsym_section(&f, ".gnu_debugdata", &n));
		(void)total;
	}
	elfsym_close(&f);
	return 0;
}
