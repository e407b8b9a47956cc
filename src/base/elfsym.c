#include "cuscope/elfsym.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int elfsym_lookup(const char *path, const char *name, uint64_t *value, uint64_t *first_vaddr)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) != 0 || st.st_size < (off_t)sizeof(Elf64_Ehdr)) {
		close(fd);
		return -ENOEXEC;
	}
	size_t size = (size_t)st.st_size;
	const uint8_t *file = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (file == MAP_FAILED)
		return -errno;
	int rc = -ENOENT;
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)file;
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr) > size ||
	    eh->e_phoff + (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr) > size) {
		rc = -ENOEXEC;
		goto out;
	}
	*first_vaddr = 0;
	const Elf64_Phdr *ph = (const Elf64_Phdr *)(file + eh->e_phoff);
	for (size_t i = 0; i < eh->e_phnum; i++) {
		if (ph[i].p_type == PT_LOAD) {
			*first_vaddr = ph[i].p_vaddr - ph[i].p_offset;
			break;
		}
	}
	const Elf64_Shdr *sh = (const Elf64_Shdr *)(file + eh->e_shoff);
	for (size_t i = 0; i < eh->e_shnum && rc == -ENOENT; i++) {
		if (sh[i].sh_type != SHT_DYNSYM || sh[i].sh_link >= eh->e_shnum ||
		    sh[i].sh_entsize != sizeof(Elf64_Sym))
			continue;
		const Elf64_Shdr *strs = &sh[sh[i].sh_link];
		if (sh[i].sh_offset + sh[i].sh_size > size || strs->sh_offset + strs->sh_size > size)
			continue;
		const Elf64_Sym *syms = (const Elf64_Sym *)(file + sh[i].sh_offset);
		size_t count = sh[i].sh_size / sizeof *syms;
		for (size_t k = 0; k < count; k++) {
			if (syms[k].st_name >= strs->sh_size || syms[k].st_value == 0 ||
			    ELF64_ST_TYPE(syms[k].st_info) != STT_FUNC)
				continue;
			const char *sym = (const char *)file + strs->sh_offset + syms[k].st_name;
			if (strcmp(sym, name) == 0) {
				*value = syms[k].st_value;
				rc = 0;
				break;
			}
		}
	}
out:
	munmap((void *)file, size);
	return rc;
}
