/* A bounded ELF reader (pread, every offset checked): function symbols, build-id, debuglink and
 * sections for the collector's symbolizer, and dynamic symbol lookup for attach's injection. */
#ifndef CUSCOPE_ELFSYM_H
#define CUSCOPE_ELFSYM_H

#include <stddef.h>
#include <stdint.h>

/*
 * Finds `name` in the .dynsym of the ELF file open on fd (a regular file; the caller keeps fd
 * and verified which file it is) and returns its st_value (the address
 * relative to the module's load base) in *value, and the file offset of the first PT_LOAD
 * segment's virtual address in *first_vaddr. Returns 0, -ENOENT (no such symbol), or -errno.
 */
int elfsym_lookup(int fd, const char *name, uint64_t *value, uint64_t *first_vaddr);

/*
 * An ELF file read for its function symbols, from an fd (pread into our own memory: a mapping of
 * a file another user truncates would fault) or from a buffer (a decompressed .gnu_debugdata).
 * Every offset and size the file states is checked against its size and ELFSYM_MAX_TABLE.
 */
struct elfsym_file {
	int fd;             /* -1 when reading mem */
	const uint8_t *mem; /* not owned */
	uint64_t size;      /* bytes */
	uint16_t shnum;
	void *sh;    /* Elf64_Shdr[shnum] */
	char *shstr; /* section names */
	uint64_t shstr_size;
};

/* One function: [start, start + size) relative to the module's load base. */
struct elfsym_func {
	uint64_t start;    /* st_value; first, so tables are searched as time rows */
	const char *name;  /* NULL: left in the file (elfsym_read_funcs_lazy), see elfsym_func_name */
	uint32_t size;     /* bytes (at most 4 GiB); 0 for hand-written assembly */
	uint32_t name_off; /* where the name is in the table's file string table, when not held */
};

/*
 * Functions of a module, possibly from several files. Names read eagerly live in blocks the table
 * owns; names left in the file (one string table per table) are read one at a time, so a module's
 * whole string table is never held (libtorch_cpu.so's .strtab is 76 MB).
 */
struct elfsym_table {
	struct elfsym_func *funcs;
	size_t count;
	char **blocks;
	size_t block_count;
	uint64_t lazy_str_off, lazy_str_size; /* the file's string table for names not held */
};

/* Opens fd (a regular ELF64 file; the caller keeps fd open while reading). 0 or -errno. */
int elfsym_open_fd(struct elfsym_file *f, int fd);
/* Opens an ELF64 image in memory (not copied: mem must outlive f). 0 or -errno. */
int elfsym_open_mem(struct elfsym_file *f, const void *mem, size_t size);
void elfsym_close(struct elfsym_file *f);
/* Whether the file has a section of this type (SHT_SYMTAB: not stripped). */
int elfsym_has_section_type(const struct elfsym_file *f, uint32_t type);
/* Appends the FUNC symbols of every section of type (SHT_SYMTAB or SHT_DYNSYM), names copied
 * into the table. 0 or -errno. */
int elfsym_read_funcs(struct elfsym_file *f, uint32_t type, struct elfsym_table *t);
/* The same with the names left in the file (an fd file only; the first such section of the type,
 * once per table): read them with elfsym_func_name from the same file. 0 or -errno. */
int elfsym_read_funcs_lazy(struct elfsym_file *f, uint32_t type, struct elfsym_table *t);
/* fn's name: held, or read from fd (the file elfsym_read_funcs_lazy read; -1 when it cannot be
 * opened) into buf (cut to cap - 1 bytes). NULL when it cannot be read. */
const char *elfsym_func_name(const struct elfsym_table *t, const struct elfsym_func *fn, int fd, char *buf,
                             size_t cap);
/* Sorts by start (after the last elfsym_read_funcs). */
void elfsym_table_sort(struct elfsym_table *t);
void elfsym_table_fini(struct elfsym_table *t);
/* Contents of the named section (malloc'd, *size bytes), or NULL. */
void *elfsym_section(struct elfsym_file *f, const char *name, size_t *size);
/* The NT_GNU_BUILD_ID note: its length (copied up to cap bytes into id), or 0 when none. */
size_t elfsym_build_id(struct elfsym_file *f, uint8_t *id, size_t cap);
/* The same from notes in memory (a loaded module's PT_NOTE segment), size bytes. */
size_t elfsym_notes_build_id(const uint8_t *notes, size_t size, uint8_t *id, size_t cap);
/* The .gnu_debuglink file name (no '/' allowed) and CRC-32. 0 or -ENOENT. */
int elfsym_debuglink(struct elfsym_file *f, char *name, size_t cap, uint32_t *crc);

#endif
