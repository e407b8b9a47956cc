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

/* ---- function symbols of a whole file ---- */

/* Reads size bytes at off from the file or buffer into a new buffer (bounded as elfsym_read). */
static void *file_read(const struct elfsym_file *f, uint64_t off, uint64_t size)
{
	if (f->fd >= 0)
		return elfsym_read(f->fd, off, size, f->size);
	if (!size || size > ELFSYM_MAX_TABLE || off > f->size || size > f->size - off)
		return NULL;
	void *buf = malloc((size_t)size);
	if (buf)
		memcpy(buf, f->mem + off, (size_t)size);
	return buf;
}

static int file_open(struct elfsym_file *f)
{
	Elf64_Ehdr eh;
	f->sh = NULL;
	f->shstr = NULL;
	f->shstr_size = 0;
	if (f->size < sizeof eh)
		return -ENOEXEC;
	void *head = file_read(f, 0, sizeof eh);
	if (!head)
		return -ENOEXEC;
	memcpy(&eh, head, sizeof eh);
	free(head);
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_shentsize != sizeof(Elf64_Shdr) || !eh.e_shnum)
		return -ENOEXEC;
	f->shnum = eh.e_shnum;
	f->sh = file_read(f, eh.e_shoff, (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr));
	if (!f->sh)
		return -ENOEXEC;
	const Elf64_Shdr *sh = f->sh;
	if (eh.e_shstrndx < f->shnum && sh[eh.e_shstrndx].sh_type == SHT_STRTAB) {
		f->shstr = file_read(f, sh[eh.e_shstrndx].sh_offset, sh[eh.e_shstrndx].sh_size);
		f->shstr_size = f->shstr ? sh[eh.e_shstrndx].sh_size : 0;
	}
	return 0;
}

int elfsym_open_fd(struct elfsym_file *f, int fd)
{
	struct stat st;
	memset(f, 0, sizeof *f);
	f->fd = fd;
	/* A device or FIFO could block or never end. */
	if (fstat(fd, &st) != 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -ENOEXEC;
	f->size = (uint64_t)st.st_size;
	return file_open(f);
}

int elfsym_open_mem(struct elfsym_file *f, const void *mem, size_t size)
{
	memset(f, 0, sizeof *f);
	f->fd = -1;
	f->mem = mem;
	f->size = size;
	return file_open(f);
}

void elfsym_close(struct elfsym_file *f)
{
	free(f->sh);
	free(f->shstr);
	f->sh = NULL;
	f->shstr = NULL;
}

int elfsym_has_section_type(const struct elfsym_file *f, uint32_t type)
{
	const Elf64_Shdr *sh = f->sh;
	for (size_t i = 0; sh && i < f->shnum; i++)
		if (sh[i].sh_type == type && sh[i].sh_size)
			return 1;
	return 0;
}

/* Symbols are read this many at a time: a 13 MB .symtab is never held whole. */
#define ELFSYM_SYMS_PER_READ 4096u

/* Appends the FUNC symbols of sections of type; names copied into a block of the table, or (lazy)
 * left in the file at offsets into its string table. */
static int read_funcs(struct elfsym_file *f, uint32_t type, struct elfsym_table *t, int lazy)
{
	const Elf64_Shdr *sh = f->sh;
	for (size_t i = 0; sh && i < f->shnum; i++) {
		if (sh[i].sh_type != type || sh[i].sh_link >= f->shnum ||
		    sh[i].sh_entsize != sizeof(Elf64_Sym))
			continue;
		const Elf64_Shdr *strs = &sh[sh[i].sh_link];
		uint64_t n = sh[i].sh_size / sizeof(Elf64_Sym);
		if (!n || sh[i].sh_size > ELFSYM_MAX_TABLE || sh[i].sh_offset > f->size ||
		    sh[i].sh_size > f->size - sh[i].sh_offset || strs->sh_offset > f->size ||
		    strs->sh_size > f->size - strs->sh_offset || !strs->sh_size || strs->sh_size > UINT32_MAX)
			continue; /* out of the file or too large: skip this table */
		char *block = NULL;
		if (lazy) {
			if (f->fd < 0 || t->lazy_str_size)
				return -EINVAL;
		} else {
			/* One byte more than the table, always NUL: a last name the file leaves open ends
			 * there. */
			char *names = strs->sh_size < ELFSYM_MAX_TABLE
			                  ? file_read(f, strs->sh_offset, strs->sh_size)
			                  : NULL;
			block = names ? realloc(names, (size_t)strs->sh_size + 1) : NULL;
			if (!block) {
				free(names);
				continue;
			}
			block[strs->sh_size] = '\0';
			char **blocks = realloc(t->blocks, (t->block_count + 1) * sizeof *blocks);
			if (!blocks) {
				free(block);
				return -ENOMEM;
			}
			t->blocks = blocks;
			t->blocks[t->block_count++] = block;
		}
		struct elfsym_func *out = realloc(t->funcs, (t->count + n) * sizeof *out);
		if (!out)
			return -ENOMEM;
		t->funcs = out;
		for (uint64_t first = 0; first < n; first += ELFSYM_SYMS_PER_READ) {
			uint64_t k_n = n - first < ELFSYM_SYMS_PER_READ ? n - first : ELFSYM_SYMS_PER_READ;
			Elf64_Sym *syms =
			    file_read(f, sh[i].sh_offset + first * sizeof *syms, k_n * sizeof *syms);
			if (!syms)
				break; /* what was read so far stays */
			for (uint64_t k = 0; k < k_n; k++) {
				if (ELF64_ST_TYPE(syms[k].st_info) != STT_FUNC || syms[k].st_value == 0 ||
				    syms[k].st_name >= strs->sh_size || syms[k].st_shndx == SHN_UNDEF)
					continue;
				uint32_t size =
				    syms[k].st_size > UINT32_MAX ? UINT32_MAX : (uint32_t)syms[k].st_size;
				out[t->count++] = (struct elfsym_func){syms[k].st_value,
				                                       block ? block + syms[k].st_name : NULL,
				                                       size, syms[k].st_name};
			}
			free(syms);
		}
		if (lazy) {
			t->lazy_str_off = strs->sh_offset;
			t->lazy_str_size = strs->sh_size;
			return 0;
		}
	}
	return 0;
}

int elfsym_read_funcs(struct elfsym_file *f, uint32_t type, struct elfsym_table *t)
{
	return read_funcs(f, type, t, 0);
}

int elfsym_read_funcs_lazy(struct elfsym_file *f, uint32_t type, struct elfsym_table *t)
{
	return read_funcs(f, type, t, 1);
}

const char *elfsym_func_name(const struct elfsym_table *t, const struct elfsym_func *fn, int fd, char *buf,
                             size_t cap)
{
	if (fn->name)
		return fn->name;
	if (fd < 0 || cap < 2 || fn->name_off >= t->lazy_str_size)
		return NULL;
	uint64_t left = t->lazy_str_size - fn->name_off;
	size_t want = left < cap - 1 ? (size_t)left : cap - 1;
	size_t done = 0;
	while (done < want) {
		ssize_t n =
		    pread(fd, buf + done, want - done, (off_t)(t->lazy_str_off + fn->name_off + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		/* Names are short: stop at the first NUL rather than read cap bytes each time. */
		if (memchr(buf + done, '\0', (size_t)n)) {
			done += (size_t)n;
			break;
		}
		done += (size_t)n;
	}
	if (!done)
		return NULL;
	buf[done < cap ? done : cap - 1] = '\0';
	return buf;
}

static int cmp_func(const void *a, const void *b)
{
	const struct elfsym_func *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

void elfsym_table_sort(struct elfsym_table *t)
{
	/* Room was made for every symbol; only functions were kept. */
	if (t->count) {
		struct elfsym_func *fit = realloc(t->funcs, t->count * sizeof *t->funcs);
		if (fit)
			t->funcs = fit;
	}
	if (t->count)
		qsort(t->funcs, t->count, sizeof *t->funcs, cmp_func);
}

void elfsym_table_fini(struct elfsym_table *t)
{
	for (size_t i = 0; i < t->block_count; i++)
		free(t->blocks[i]);
	free(t->blocks);
	free(t->funcs);
	memset(t, 0, sizeof *t);
}

/* Index of the section with this name, or -1. */
static int section_index(const struct elfsym_file *f, const char *name)
{
	const Elf64_Shdr *sh = f->sh;
	size_t len = strlen(name);
	for (size_t i = 0; sh && f->shstr && i < f->shnum; i++) {
		if (sh[i].sh_name >= f->shstr_size || f->shstr_size - sh[i].sh_name <= len)
			continue;
		if (memcmp(f->shstr + sh[i].sh_name, name, len + 1) == 0)
			return sh[i].sh_type == SHT_NOBITS ? -1 : (int)i;
	}
	return -1;
}

void *elfsym_section(struct elfsym_file *f, const char *name, size_t *size)
{
	int i = section_index(f, name);
	if (i < 0)
		return NULL;
	const Elf64_Shdr *sh = &((const Elf64_Shdr *)f->sh)[i];
	void *data = file_read(f, sh->sh_offset, sh->sh_size);
	*size = data ? (size_t)sh->sh_size : 0;
	return data;
}

size_t elfsym_notes_build_id(const uint8_t *notes, size_t size, uint8_t *id, size_t cap)
{
	size_t off = 0;
	/* Each note: header, name and descriptor padded to 4 bytes, all within the notes. */
	while (size - off >= sizeof(Elf64_Nhdr)) {
		Elf64_Nhdr nh;
		memcpy(&nh, notes + off, sizeof nh);
		off += sizeof nh;
		size_t name_room = ((size_t)nh.n_namesz + 3) & ~(size_t)3;
		size_t desc_room = ((size_t)nh.n_descsz + 3) & ~(size_t)3;
		if (nh.n_namesz > size - off || name_room > size - off ||
		    nh.n_descsz > size - off - name_room)
			return 0;
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && memcmp(notes + off, "GNU", 4) == 0 &&
		    nh.n_descsz) {
			memcpy(id, notes + off + name_room, nh.n_descsz < cap ? nh.n_descsz : cap);
			return nh.n_descsz;
		}
		off += name_room;
		off += desc_room < size - off ? desc_room : size - off;
	}
	return 0;
}

size_t elfsym_build_id(struct elfsym_file *f, uint8_t *id, size_t cap)
{
	const Elf64_Shdr *sh = f->sh;
	for (size_t i = 0; sh && i < f->shnum; i++) {
		if (sh[i].sh_type != SHT_NOTE || sh[i].sh_size > (1u << 20))
			continue;
		uint8_t *notes = file_read(f, sh[i].sh_offset, sh[i].sh_size);
		size_t found = notes ? elfsym_notes_build_id(notes, (size_t)sh[i].sh_size, id, cap) : 0;
		free(notes);
		if (found)
			return found;
	}
	return 0;
}

int elfsym_debuglink(struct elfsym_file *f, char *name, size_t cap, uint32_t *crc)
{
	size_t size;
	char *data = elfsym_section(f, ".gnu_debuglink", &size);
	if (!data)
		return -ENOENT;
	/* The name, NUL, padding to 4 bytes, then the CRC-32 of the debug file. */
	size_t len = strnlen(data, size);
	size_t crc_off = (len + 4) & ~(size_t)3;
	int rc = -ENOENT;
	if (len && len < cap && crc_off + 4 <= size && !memchr(data, '/', len) && strcmp(data, ".") != 0 &&
	    strcmp(data, "..") != 0) {
		memcpy(name, data, len + 1);
		memcpy(crc, data + crc_off, 4);
		rc = 0;
	}
	free(data);
	return rc;
}
