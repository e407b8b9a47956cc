#include "cuscope/elfsym.h"

#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Bounds on what a file (its owner may be anyone) makes us read: far above any real library. */
#define ELFSYM_MAX_TABLE (256u << 20)

/* Reads size bytes at off into a new buffer; NULL when short, out of the file or too large. */
static void *elfsym_read(int fd, uint64_t off, uint64_t size, uint64_t file_size)
{
	if (!size || size > ELFSYM_MAX_TABLE || off > file_size || size > file_size - off)
		return NULL;
	char *buf = malloc((size_t)size);
	if (!buf)
		return NULL;
	size_t done = 0;
	while (done < size) {
		ssize_t n = pread(fd, buf + done, (size_t)size - done, (off_t)(off + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			free(buf);
			return NULL;
		}
		done += (size_t)n;
	}
	return buf;
}

int elfsym_lookup(int fd, const char *name, uint64_t *value, uint64_t *first_vaddr)
{
	struct stat st;
	/* Only a regular file, read with pread into our own memory: a device or FIFO could block
	 * or never end, and a mapping of a file its owner truncates would fault (SIGBUS). */
	if (fstat(fd, &st) != 0)
		return -errno;
	if (!S_ISREG(st.st_mode) || st.st_size < (off_t)sizeof(Elf64_Ehdr))
		return -ENOEXEC;
	uint64_t size = (uint64_t)st.st_size;
	Elf64_Ehdr eh;
	if (pread(fd, &eh, sizeof eh, 0) != (ssize_t)sizeof eh || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_shentsize != sizeof(Elf64_Shdr) ||
	    eh.e_phentsize != sizeof(Elf64_Phdr) || !eh.e_shnum)
		return -ENOEXEC;
	Elf64_Phdr *ph =
	    eh.e_phnum ? elfsym_read(fd, eh.e_phoff, (uint64_t)eh.e_phnum * sizeof *ph, size) : NULL;
	Elf64_Shdr *sh = elfsym_read(fd, eh.e_shoff, (uint64_t)eh.e_shnum * sizeof *sh, size);
	if (!ph || !sh) {
		free(ph);
		free(sh);
		return -ENOEXEC;
	}
	*first_vaddr = 0;
	for (size_t i = 0; i < eh.e_phnum; i++) {
		if (ph[i].p_type == PT_LOAD) {
			*first_vaddr = ph[i].p_vaddr - ph[i].p_offset;
			break;
		}
	}
	int rc = -ENOENT;
	for (size_t i = 0; i < eh.e_shnum && rc == -ENOENT; i++) {
		if (sh[i].sh_type != SHT_DYNSYM || sh[i].sh_link >= eh.e_shnum ||
		    sh[i].sh_entsize != sizeof(Elf64_Sym))
			continue;
		const Elf64_Shdr *strs = &sh[sh[i].sh_link];
		Elf64_Sym *syms = elfsym_read(fd, sh[i].sh_offset, sh[i].sh_size, size);
		char *names = elfsym_read(fd, strs->sh_offset, strs->sh_size, size);
		size_t count = syms && names ? sh[i].sh_size / sizeof *syms : 0;
		for (size_t k = 0; k < count; k++) {
			if (syms[k].st_name >= strs->sh_size || syms[k].st_value == 0 ||
			    ELF64_ST_TYPE(syms[k].st_info) != STT_FUNC)
				continue;
			/* Bounded by the table's end, whether or not the file ends its last name. */
			const char *sym = names + syms[k].st_name;
			size_t room = strs->sh_size - syms[k].st_name;
			size_t len = strlen(name);
			if (room > len && memcmp(sym, name, len + 1) == 0) {
				*value = syms[k].st_value;
				rc = 0;
				break;
			}
		}
		free(syms);
		free(names);
	}
	free(ph);
	free(sh);
	return rc;
}
