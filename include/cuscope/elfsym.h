/* Dynamic symbol lookup in an ELF file (for calling into another process's libraries). */
#ifndef CUSCOPE_ELFSYM_H
#define CUSCOPE_ELFSYM_H

#include <stdint.h>

/*
 * Finds `name` in the .dynsym of the ELF file open on fd (a regular file; the caller keeps fd
 * and verified which file it is) and returns its st_value (the address
 * relative to the module's load base) in *value, and the file offset of the first PT_LOAD
 * segment's virtual address in *first_vaddr. Returns 0, -ENOENT (no such symbol), or -errno.
 */
int elfsym_lookup(int fd, const char *name, uint64_t *value, uint64_t *first_vaddr);

#endif
