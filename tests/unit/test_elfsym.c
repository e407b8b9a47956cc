/* elfsym: function symbols, build-id and debuglink of ELF files whose bytes anyone may control. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include "cuscope/elfsym.h"

/* A small image: null, .shstrtab, .symtab, .strtab, .note.gnu.build-id, .gnu_debuglink. */
enum { S_NULL, S_SHSTR, S_SYMTAB, S_STRTAB, S_NOTE, S_LINK, S_COUNT };

struct image {
	uint8_t bytes[4096];
	size_t size;
	Elf64_Ehdr *eh;
	Elf64_Shdr *sh;
};

static size_t put(struct image *im, const void *data, size_t len)
{
	size_t off = (im->size + 7) & ~(size_t)7;
	memcpy(im->bytes + off, data, len);
	im->size = off + len;
	return off;
}

static void image_build(struct image *im)
{
	memset(im, 0, sizeof *im);
	Elf64_Ehdr eh = {0};
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_shentsize = sizeof(Elf64_Shdr);
	eh.e_phentsize = sizeof(Elf64_Phdr);
	eh.e_shnum = S_COUNT;
	eh.e_shstrndx = S_SHSTR;
	put(im, &eh, sizeof eh);
	static const char shstr[] = "\0.shstrtab\0.symtab\0.strtab\0.note.gnu.build-id\0.gnu_debuglink";
	size_t shstr_off = put(im, shstr, sizeof shstr);
	static const char strtab[] = "\0alpha\0beta\0data_obj";
	size_t str_off = put(im, strtab, sizeof strtab);
	Elf64_Sym syms[4] = {{0}};
	syms[1] = (Elf64_Sym){1, ELF64_ST_INFO(STB_GLOBAL, STT_FUNC), 0, 1, 0x1000, 0x20};
	syms[2] = (Elf64_Sym){7, ELF64_ST_INFO(STB_LOCAL, STT_FUNC), 0, 1, 0x1100, 0x10};
	syms[3] = (Elf64_Sym){12, ELF64_ST_INFO(STB_GLOBAL, STT_OBJECT), 0, 1, 0x2000, 8};
	size_t sym_off = put(im, syms, sizeof syms);
	uint8_t note[sizeof(Elf64_Nhdr) + 4 + 8];
	Elf64_Nhdr nh = {4, 8, NT_GNU_BUILD_ID};
	memcpy(note, &nh, sizeof nh);
	memcpy(note + sizeof nh, "GNU", 4);
	memcpy(note + sizeof nh + 4, "\x01\x02\x03\x04\x05\x06\x07\x08", 8);
	size_t note_off = put(im, note, sizeof note);
	uint32_t crc = 0xdeadbeef; /* "prog.debug\0" padded to 12 bytes, then the CRC */
	uint8_t link_full[16] = {0};
	memcpy(link_full, "prog.debug", 10);
	memcpy(link_full + 12, &crc, 4);
	size_t link_off = put(im, link_full, sizeof link_full);
	Elf64_Shdr sh[S_COUNT] = {{0}};
	sh[S_SHSTR] = (Elf64_Shdr){1, SHT_STRTAB, 0, 0, shstr_off, sizeof shstr, 0, 0, 1, 0};
	sh[S_SYMTAB] =
	    (Elf64_Shdr){11, SHT_SYMTAB, 0, 0, sym_off, sizeof syms, S_STRTAB, 1, 8, sizeof(Elf64_Sym)};
	sh[S_STRTAB] = (Elf64_Shdr){19, SHT_STRTAB, 0, 0, str_off, sizeof strtab, 0, 0, 1, 0};
	sh[S_NOTE] = (Elf64_Shdr){27, SHT_NOTE, 0, 0, note_off, sizeof note, 0, 0, 4, 0};
	sh[S_LINK] = (Elf64_Shdr){46, SHT_PROGBITS, 0, 0, link_off, sizeof link_full, 0, 0, 4, 0};
	size_t sh_off = put(im, sh, sizeof sh);
	im->eh = (Elf64_Ehdr *)im->bytes;
	im->eh->e_shoff = sh_off;
	im->sh = (Elf64_Shdr *)(im->bytes + sh_off);
}

/* Function names read from the image, comma-separated, or "ERR" when it does not open. */
static void funcs_of(struct image *im, char *out, size_t size)
{
	struct elfsym_file f;
	struct elfsym_table t = {0};
	out[0] = '\0';
	if (elfsym_open_mem(&f, im->bytes, im->size) != 0) {
		snprintf(out, size, "ERR");
		return;
	}
	elfsym_read_funcs(&f, SHT_SYMTAB, &t);
	elfsym_table_sort(&t);
	for (size_t i = 0; i < t.count; i++)
		snprintf(out + strlen(out), size - strlen(out), "%s%s@%llx", i ? "," : "", t.funcs[i].name,
		         (unsigned long long)t.funcs[i].start);
	elfsym_table_fini(&t);
	elfsym_close(&f);
}

static void test_well_formed(void **state)
{
	(void)state;
	struct image im;
	char got[256];
	image_build(&im);
	funcs_of(&im, got, sizeof got);
	assert_string_equal(got, "alpha@1000,beta@1100"); /* objects are not functions */
	struct elfsym_file f;
	assert_int_equal(elfsym_open_mem(&f, im.bytes, im.size), 0);
	uint8_t id[20];
	assert_int_equal(elfsym_build_id(&f, id, sizeof id), 8);
	assert_memory_equal(id, "\x01\x02\x03\x04\x05\x06\x07\x08", 8);
	char name[64];
	uint32_t crc;
	assert_int_equal(elfsym_debuglink(&f, name, sizeof name, &crc), 0);
	assert_string_equal(name, "prog.debug");
	assert_int_equal(crc, 0xdeadbeef);
	assert_true(elfsym_has_section_type(&f, SHT_SYMTAB));
	assert_false(elfsym_has_section_type(&f, SHT_DYNSYM));
	elfsym_close(&f);
}

static void test_hostile_headers(void **state)
{
	(void)state;
	struct image im;
	char got[256];
	image_build(&im);
	im.eh->e_shoff = UINT64_MAX - 8; /* wraps */
	funcs_of(&im, got, sizeof got);
	assert_string_equal(got, "ERR");
	image_build(&im);
	im.eh->e_shnum = 0xffff; /* the table runs past the end */
	funcs_of(&im, got, sizeof got);
	assert_string_equal(got, "ERR");
	image_build(&im);
	im.eh->e_shstrndx = 200; /* no section names: still functions */
	funcs_of(&im, got, sizeof got);
	assert_string_equal(got, "alpha@1000,beta@1100");
	image_build(&im);
	im.bytes[EI_CLASS] = ELFCLASS32;
	funcs_of(&im, got, sizeof got);
	assert_string_equal(got, "ERR");
	struct elfsym_file f;
	assert_int_equal(elfsym_open_mem(&f, im.bytes, 10), -ENOEXEC); /* shorter than a header */
}

static void test_hostile_tables(void **state)
{
	(void)state;
	struct image im;
	char got[256];
	image_build(&im);
	im.sh[S_SYMTAB].sh_link = 77;
	funcs_of(&im, got, sizeof got);
	assert_string_equal(got, "");
	image_build(&im);
	im.sh[S_SYMTAB].sh_offset = UINT64_MAX - 16; /* offset + size wraps */
	funcs_of(&im, got, sizeof got);
	assert_string_equal(got, "");
	image_build(&im);
	im.sh[S_STRTAB].sh_size = UINT64_MAX; /* a string table larger than any bound */
	funcs_of(&im, got, sizeof got);
	assert_string_equal(got, "");
	image_build(&im);
	im.sh[S_SYMTAB].sh_entsize = 7;
	funcs_of(&im, got, sizeof got);
	assert_string_equal(got, "");
	image_build(&im);
	/* A name index past its table is skipped; a table whose last name is not ended ends there. */
	Elf64_Sym *syms = (Elf64_Sym *)(im.bytes + im.sh[S_SYMTAB].sh_offset);
	syms[1].st_name = 1000;
	im.sh[S_STRTAB].sh_size = 9; /* "\0alpha\0be" */
	funcs_of(&im, got, sizeof got);
	assert_string_equal(got, "be@1100");
}

static void test_hostile_notes_and_link(void **state)
{
	(void)state;
	struct image im;
	struct elfsym_file f;
	uint8_t id[20];
	char name[64];
	uint32_t crc;
	image_build(&im);
	Elf64_Nhdr *nh = (Elf64_Nhdr *)(im.bytes + im.sh[S_NOTE].sh_offset);
	nh->n_descsz = 0xfffffff0; /* past the section */
	assert_int_equal(elfsym_open_mem(&f, im.bytes, im.size), 0);
	assert_int_equal(elfsym_build_id(&f, id, sizeof id), 0);
	elfsym_close(&f);
	nh->n_descsz = 8;
	nh->n_namesz = 0xffffffff;
	assert_int_equal(elfsym_open_mem(&f, im.bytes, im.size), 0);
	assert_int_equal(elfsym_build_id(&f, id, sizeof id), 0);
	elfsym_close(&f);

	image_build(&im);
	char *link = (char *)im.bytes + im.sh[S_LINK].sh_offset;
	memcpy(link, "../etc/pas", 10); /* a path, not a name */
	assert_int_equal(elfsym_open_mem(&f, im.bytes, im.size), 0);
	assert_int_equal(elfsym_debuglink(&f, name, sizeof name, &crc), -ENOENT);
	elfsym_close(&f);
	image_build(&im);
	link = (char *)im.bytes + im.sh[S_LINK].sh_offset;
	memset(link, 'a', 16); /* no NUL, no room for the CRC */
	assert_int_equal(elfsym_open_mem(&f, im.bytes, im.size), 0);
	assert_int_equal(elfsym_debuglink(&f, name, sizeof name, &crc), -ENOENT);
	elfsym_close(&f);
}

/* This test program itself: its .symtab has this function, and the linker gave it a build-id. */
static void test_real_file(void **state)
{
	(void)state;
	int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	struct elfsym_file f;
	struct elfsym_table t = {0};
	assert_int_equal(elfsym_open_fd(&f, fd), 0);
	assert_int_equal(elfsym_read_funcs(&f, SHT_SYMTAB, &t), 0);
	int found = 0;
	for (size_t i = 0; i < t.count; i++)
		found |= strcmp(t.funcs[i].name, "test_real_file") == 0;
	assert_true(found);
	uint8_t id[64];
	assert_true(elfsym_build_id(&f, id, sizeof id) >= 8);
	elfsym_table_fini(&t);
	elfsym_close(&f);
	close(fd);
	/* Not a regular file: refused before any read. */
	fd = open("/dev/null", O_RDONLY);
	assert_int_equal(elfsym_open_fd(&f, fd), -ENOEXEC);
	elfsym_close(&f);
	close(fd);
}

/* Names left in the file read back as the eager read copies them: this test program's .symtab. */
static void test_lazy_names_real_file(void **state)
{
	(void)state;
	int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	struct elfsym_file f;
	struct elfsym_table eager = {0}, lazy = {0};
	assert_int_equal(elfsym_open_fd(&f, fd), 0);
	assert_int_equal(elfsym_read_funcs(&f, SHT_SYMTAB, &eager), 0);
	assert_int_equal(elfsym_read_funcs_lazy(&f, SHT_SYMTAB, &lazy), 0);
	/* One lazy string table per table. */
	assert_int_equal(elfsym_read_funcs_lazy(&f, SHT_SYMTAB, &lazy), -EINVAL);
	elfsym_table_sort(&eager);
	elfsym_table_sort(&lazy);
	assert_true(eager.count > 10);
	assert_int_equal(eager.count, lazy.count);
	assert_int_equal(lazy.block_count, 0);
	char buf[4096];
	for (size_t i = 0; i < lazy.count; i++) {
		assert_null(lazy.funcs[i].name);
		assert_true(lazy.funcs[i].start == eager.funcs[i].start);
		const char *name = elfsym_func_name(&lazy, &lazy.funcs[i], fd, buf, sizeof buf);
		assert_non_null(name);
		/* Equal starts may come in either order: compare with the eager name at that start. */
		int same = 0;
		for (size_t j = i; j < eager.count && eager.funcs[j].start == lazy.funcs[i].start; j++)
			same |= strcmp(name, eager.funcs[j].name) == 0;
		for (size_t j = i; j-- > 0 && eager.funcs[j].start == lazy.funcs[i].start;)
			same |= strcmp(name, eager.funcs[j].name) == 0;
		assert_true(same);
	}
	/* A held name is returned as it is; a name cut to the buffer; no file, no name. */
	assert_ptr_equal(elfsym_func_name(&eager, &eager.funcs[0], -1, buf, sizeof buf), eager.funcs[0].name);
	const char *cut = elfsym_func_name(&lazy, &lazy.funcs[0], fd, buf, 3);
	assert_non_null(cut);
	assert_true(strlen(cut) <= 2);
	assert_null(elfsym_func_name(&lazy, &lazy.funcs[0], -1, buf, sizeof buf));
	elfsym_table_fini(&eager);
	elfsym_table_fini(&lazy);
	elfsym_close(&f);
	close(fd);
}

/* A crafted image read lazily: a name index past the table is skipped, an unended last name ends
 * with the table, a file shorter than the table gives no name; an in-memory image is refused. */
static void test_lazy_names_hostile(void **state)
{
	(void)state;
	struct image im;
	image_build(&im);
	Elf64_Sym *syms = (Elf64_Sym *)(im.bytes + im.sh[S_SYMTAB].sh_offset);
	syms[1].st_name = 1000;
	im.sh[S_STRTAB].sh_size = 9; /* "\0alpha\0be" */
	char path[] = "/tmp/cuscope-test-elfsym-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	unlink(path);
	assert_int_equal(write(fd, im.bytes, im.size), (ssize_t)im.size);
	struct elfsym_file f;
	struct elfsym_table t = {0};
	assert_int_equal(elfsym_open_fd(&f, fd), 0);
	assert_int_equal(elfsym_read_funcs_lazy(&f, SHT_SYMTAB, &t), 0);
	assert_int_equal(t.count, 1);
	char buf[64];
	assert_string_equal(elfsym_func_name(&t, &t.funcs[0], fd, buf, sizeof buf), "be");
	/* The file cut short after the symbols were read (another user truncates it): no name. */
	assert_int_equal(ftruncate(fd, (off_t)im.sh[S_STRTAB].sh_offset), 0);
	assert_null(elfsym_func_name(&t, &t.funcs[0], fd, buf, sizeof buf));
	elfsym_table_fini(&t);
	elfsym_close(&f);
	close(fd);
	struct elfsym_table m = {0};
	image_build(&im);
	assert_int_equal(elfsym_open_mem(&f, im.bytes, im.size), 0);
	assert_int_equal(elfsym_read_funcs_lazy(&f, SHT_SYMTAB, &m), -EINVAL);
	elfsym_table_fini(&m);
	elfsym_close(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_well_formed),        cmocka_unit_test(test_hostile_headers),
	    cmocka_unit_test(test_hostile_tables),     cmocka_unit_test(test_hostile_notes_and_link),
	    cmocka_unit_test(test_real_file),          cmocka_unit_test(test_lazy_names_real_file),
	    cmocka_unit_test(test_lazy_names_hostile),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
