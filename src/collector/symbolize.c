/*
 * Address -> "function\x1fmodule" on the sender thread: module ranges from dl_iterate_phdr, function
 * symbols read straight from each module's ELF file (.symtab, else .dynsym), Python perf-trampoline
 * names from /tmp/perf-PID.map, "module+0xOFFSET" when nothing names the address. Results are
 * cached per address and interned, so each distinct frame costs one lookup.
 */
#include "collector.h"
#include "cuscope/hashmap.h"
#include "cuscope/timerow.h"
#include "cuscope/wire.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define PC_CACHE_SLOTS (1u << 18)

struct symbol {
	uint64_t start; /* module-relative (st_value) */
	uint64_t size;
	const char *name; /* points into the mapped string table */
};

struct module {
	char path[512];
	uint64_t base;   /* dlpi_addr */
	uint64_t lo, hi; /* absolute range of its PT_LOAD segments */
	int loaded;      /* symbols read (or tried) */
	struct symbol *syms;
	size_t sym_count;
	void *map; /* the ELF file, mapped while symbols point into it */
	size_t map_size;
};

struct perf_entry {
	uint64_t start, size;
	char *name;
};

/* Both are searched as time rows (timerow.h): sorted by their first field. */
_Static_assert(offsetof(struct symbol, start) == TIMEROW_START &&
                   offsetof(struct perf_entry, start) == TIMEROW_START,
               "sorted by the first field");

static struct {
	struct module *mods;
	size_t mod_count, mod_cap;
	struct perf_entry *perf;
	size_t perf_count, perf_cap;
	off_t perf_size;    /* bytes of the perf map already read */
	uint64_t *cache_pc; /* open addressing: pc -> id */
	uint32_t *cache_id;
	size_t cache_used;
	uint32_t generation;
} sym;

static int cmp_symbol(const void *a, const void *b)
{
	const struct symbol *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* Reads FUNC symbols of one section type from a mapped ELF file. */
static void module_read_symbols(struct module *m, const uint8_t *file, size_t size, uint32_t want_type)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)file;
	if (eh->e_shoff == 0 || eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr) > size)
		return;
	const Elf64_Shdr *sh = (const Elf64_Shdr *)(file + eh->e_shoff);
	for (size_t i = 0; i < eh->e_shnum; i++) {
		if (sh[i].sh_type != want_type || sh[i].sh_link >= eh->e_shnum)
			continue;
		const Elf64_Shdr *strs = &sh[sh[i].sh_link];
		if (sh[i].sh_offset + sh[i].sh_size > size || strs->sh_offset + strs->sh_size > size ||
		    sh[i].sh_entsize != sizeof(Elf64_Sym))
			continue;
		const Elf64_Sym *s = (const Elf64_Sym *)(file + sh[i].sh_offset);
		size_t n = sh[i].sh_size / sizeof *s;
		struct symbol *out = realloc(m->syms, (m->sym_count + n) * sizeof *out);
		if (!out)
			return;
		m->syms = out;
		for (size_t k = 0; k < n; k++) {
			if (ELF64_ST_TYPE(s[k].st_info) != STT_FUNC || s[k].st_value == 0 ||
			    s[k].st_name >= strs->sh_size)
				continue;
			out[m->sym_count++] = (struct symbol){
			    s[k].st_value, s[k].st_size, (const char *)file + strs->sh_offset + s[k].st_name};
		}
	}
}

static void module_load(struct module *m)
{
	m->loaded = 1;
	int fd = open(m->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	struct stat st;
	if (fstat(fd, &st) != 0 || st.st_size < (off_t)sizeof(Elf64_Ehdr)) {
		close(fd);
		return;
	}
	void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return;
	const Elf64_Ehdr *eh = map;
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64) {
		munmap(map, (size_t)st.st_size);
		return;
	}
	m->map = map;
	m->map_size = (size_t)st.st_size;
	module_read_symbols(m, map, m->map_size, SHT_SYMTAB);
	if (!m->sym_count)
		module_read_symbols(m, map, m->map_size, SHT_DYNSYM);
	qsort(m->syms, m->sym_count, sizeof *m->syms, cmp_symbol);
}

static int collect_module(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	(void)data;
	uint64_t lo = UINT64_MAX, hi = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uint64_t start = info->dlpi_addr + ph->p_vaddr;
		if (start < lo)
			lo = start;
		if (start + ph->p_memsz > hi)
			hi = start + ph->p_memsz;
	}
	if (lo >= hi)
		return 0;
	for (size_t i = 0; i < sym.mod_count; i++)
		if (sym.mods[i].lo == lo && sym.mods[i].hi == hi)
			return 0;
	if (sym.mod_count == sym.mod_cap) {
		size_t cap = sym.mod_cap ? sym.mod_cap * 2 : 64;
		struct module *m = realloc(sym.mods, cap * sizeof *m);
		if (!m)
			return 1;
		sym.mods = m;
		sym.mod_cap = cap;
	}
	struct module *m = &sym.mods[sym.mod_count++];
	memset(m, 0, sizeof *m);
	m->base = info->dlpi_addr;
	m->lo = lo;
	m->hi = hi;
	if (info->dlpi_name && info->dlpi_name[0]) {
		snprintf(m->path, sizeof m->path, "%s", info->dlpi_name);
	} else {
		ssize_t n = readlink("/proc/self/exe", m->path, sizeof m->path - 1);
		m->path[n > 0 ? n : 0] = '\0';
	}
	return 0;
}

static struct module *module_find(uint64_t pc)
{
	for (size_t i = 0; i < sym.mod_count; i++)
		if (pc >= sym.mods[i].lo && pc < sym.mods[i].hi)
			return &sym.mods[i];
	return NULL;
}

static const struct symbol *module_symbol(const struct module *m, uint64_t rel)
{
	size_t lo = timerow_bound(m->syms, m->sym_count, sizeof *m->syms, TIMEROW_START, rel, 1);
	if (lo == 0)
		return NULL;
	const struct symbol *s = &m->syms[lo - 1];
	/* Zero-size symbols (hand-written assembly) cover up to the next symbol. */
	if (s->size && rel >= s->start + s->size)
		return NULL;
	return s;
}

static int cmp_perf(const void *a, const void *b)
{
	const struct perf_entry *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* Reads lines appended to /tmp/perf-PID.map since the last look ("START SIZE name", hex). */
static void perf_map_refresh(void)
{
	char path[64];
	snprintf(path, sizeof path, "/tmp/perf-%d.map", getpid());
	FILE *f = fopen(path, "r");
	if (!f)
		return;
	struct stat st;
	if (fstat(fileno(f), &st) != 0 || st.st_size == sym.perf_size) {
		fclose(f);
		return;
	}
	fseeko(f, sym.perf_size, SEEK_SET);
	char line[1024];
	while (fgets(line, sizeof line, f)) {
		size_t len = strlen(line);
		if (!len || line[len - 1] != '\n')
			break; /* partial line: read it next time */
		sym.perf_size += (off_t)len;
		line[len - 1] = '\0';
		char *end;
		uint64_t start = strtoull(line, &end, 16);
		uint64_t size = strtoull(end, &end, 16);
		while (*end == ' ')
			end++;
		if (!*end)
			continue;
		if (sym.perf_count == sym.perf_cap) {
			size_t cap = sym.perf_cap ? sym.perf_cap * 2 : 256;
			struct perf_entry *p = realloc(sym.perf, cap * sizeof *p);
			if (!p)
				break;
			sym.perf = p;
			sym.perf_cap = cap;
		}
		char *name = strdup(end);
		if (!name)
			break;
		sym.perf[sym.perf_count++] = (struct perf_entry){start, size, name};
	}
	fclose(f);
	qsort(sym.perf, sym.perf_count, sizeof *sym.perf, cmp_perf);
}

static const struct perf_entry *perf_find(uint64_t pc)
{
	size_t lo = timerow_bound(sym.perf, sym.perf_count, sizeof *sym.perf, TIMEROW_START, pc, 1);
	if (lo == 0)
		return NULL;
	const struct perf_entry *e = &sym.perf[lo - 1];
	return pc < e->start + e->size ? e : NULL;
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

static uint32_t symbolize_uncached(uint64_t pc)
{
	char text[2048];
	struct module *m = module_find(pc);
	if (!m) {
		dl_iterate_phdr(collect_module, NULL); /* a library loaded since the last look */
		m = module_find(pc);
	}
	if (m) {
		if (!m->loaded)
			module_load(m);
		const struct symbol *s = module_symbol(m, pc - m->base);
		if (!s) {
			/* Exported names the file's tables lack (e.g. the vDSO) may still be known to the
			 * loader. */
			Dl_info info;
			if (dladdr((void *)pc, &info) && info.dli_sname) {
				snprintf(text, sizeof text, "%s%c%s", info.dli_sname, WIRE_FRAME_SEPARATOR,
				         base_name(m->path));
				return sender_intern(text, strlen(text));
			}
			snprintf(text, sizeof text, "%s+0x%llx%c%s", base_name(m->path),
			         (unsigned long long)(pc - m->base), WIRE_FRAME_SEPARATOR,
			         base_name(m->path));
		} else {
			snprintf(text, sizeof text, "%s%c%s", s->name, WIRE_FRAME_SEPARATOR,
			         base_name(m->path));
		}
		return sender_intern(text, strlen(text));
	}
	const struct perf_entry *e = perf_find(pc);
	if (!e) {
		perf_map_refresh();
		e = perf_find(pc);
	}
	if (e) {
		snprintf(text, sizeof text, "%s%c[perf-map]", e->name, WIRE_FRAME_SEPARATOR);
		return sender_intern(text, strlen(text));
	}
	snprintf(text, sizeof text, "0x%llx%c[unknown]", (unsigned long long)pc, WIRE_FRAME_SEPARATOR);
	return sender_intern(text, strlen(text));
}

/* A cache slot holds pc + 1 (0 = empty). */
static enum hashmap_look cache_look(const void *ctx, size_t slot)
{
	uint64_t pc = *(const uint64_t *)ctx;
	if (!sym.cache_pc[slot])
		return HASHMAP_EMPTY;
	return sym.cache_pc[slot] == pc + 1 ? HASHMAP_MATCH : HASHMAP_OTHER;
}

uint32_t symbolize_pc(uint64_t pc, int is_return_address)
{
	/* A return address points after the call: look up the call instruction's function. */
	uint64_t lookup = is_return_address && pc ? pc - 1 : pc;
	if (sym.generation != sender_string_generation()) {
		/* Interned ids were reset (fork): cached ids are meaningless now. */
		if (sym.cache_pc) {
			memset(sym.cache_pc, 0, PC_CACHE_SLOTS * sizeof *sym.cache_pc);
			sym.cache_used = 0;
		}
		sym.generation = sender_string_generation();
	}
	if (!sym.cache_pc) {
		sym.cache_pc = calloc(PC_CACHE_SLOTS, sizeof *sym.cache_pc);
		sym.cache_id = calloc(PC_CACHE_SLOTS, sizeof *sym.cache_id);
		if (!sym.cache_pc || !sym.cache_id) {
			free(sym.cache_pc);
			free(sym.cache_id);
			sym.cache_pc = NULL;
			sym.cache_id = NULL;
			return symbolize_uncached(lookup);
		}
	}
	/* A bounded cache: 16 probes at most, then the answer is just not cached. */
	int matched;
	size_t i = hashmap_probe(PC_CACHE_SLOTS, (lookup * 0x9E3779B97F4A7C15ull) >> 46, 16, cache_look,
	                         &lookup, &matched);
	if (i != SIZE_MAX && matched)
		return sym.cache_id[i];
	uint32_t id = symbolize_uncached(lookup);
	/* Keep the table at most 3/4 full; beyond that, answers are just not cached. */
	if (i != SIZE_MAX && sym.cache_used < PC_CACHE_SLOTS / 4 * 3) {
		sym.cache_pc[i] = lookup + 1;
		sym.cache_id[i] = id;
		sym.cache_used++;
	}
	return id;
}

void symbolize_forget(void)
{
	/* After fork the module list is still valid (same address space); ids are reset by generation. */
	sym.generation = 0;
}
