/*
 * Address -> "function\x1fmodule" on the sender thread: module ranges from dl_iterate_phdr, function
 * symbols read from the mapped file itself (.symtab, else a separate debug file found by build-id
 * or .gnu_debuglink, else .gnu_debugdata and .dynsym), Python perf-trampoline names from
 * /tmp/perf-PID.map (ours only), "module+0xOFFSET" when nothing names the address. Results are
 * cached per address and interned, so each distinct frame costs one lookup.
 */
#include "collector.h"
#include "cuscope/crc32.h"
#include "cuscope/elfsym.h"
#include "cuscope/hashmap.h"
#include "cuscope/timerow.h"
#include "cuscope/wire.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define PC_CACHE_SLOTS (1u << 18)
/* Bounds on what a module's files make us read: a debug file checked by CRC, a decompressed
 * .gnu_debugdata, the entries of a perf map. */
#define DEBUG_FILE_MAX (1ull << 30)
#define MINIDEBUG_MAX  (64u << 20)
#define PERF_MAP_MAX   (1u << 20)
/* Loads of a module's symbols dropped (the fd became the program's) before it stays unnamed. */
#define MODULE_TAKEOVERS_MAX 4
#define DEBUG_ROOT           "/usr/lib/debug"

struct module {
	char path[512];
	uint64_t base;   /* dlpi_addr */
	uint64_t lo, hi; /* absolute range of its PT_LOAD segments */
	int loaded;      /* symbols read (or tried) */
	struct elfsym_table tab;
	uint8_t build_id[64]; /* from its loaded PT_NOTE segment */
	size_t build_id_len;  /* 0: none */
	dev_t dev;            /* the file its symbols were read from, for reading names later */
	ino_t ino;
	char map_link[64];   /* its /proc/self/map_files link when that opened it, else "" */
	unsigned taken_over; /* loads dropped because the program took the fd's number */
};

struct perf_entry {
	uint64_t start, size;
	char *name;
};

/* Both are searched as time rows (timerow.h): sorted by their first field. */
_Static_assert(offsetof(struct elfsym_func, start) == TIMEROW_START &&
                   offsetof(struct perf_entry, start) == TIMEROW_START,
               "sorted by the first field");

static struct {
	struct module *mods;
	size_t mod_count, mod_cap;
	struct perf_entry *perf;
	size_t perf_count, perf_cap;
	off_t perf_size;    /* bytes of the perf map already read */
	pid_t perf_pid;     /* whose perf map perf_size counts */
	uint64_t *cache_pc; /* open addressing: pc -> id */
	uint32_t *cache_id;
	size_t cache_used;
	uint32_t generation;
} sym;

/*
 * Every fd here is the collector's own, registered (fd.c): a thread of the program may close the
 * number and open a file of its own on it at any time. Each use is preceded by collector_fd_check
 * (elfsym reads with pread, which moves no offset of the program's), and what was read counts only
 * when collector_fd_close finds the fd still ours at the end.
 */

/* Whether the file on fd (ours) has this build-id. */
static int build_id_matches(int fd, const uint8_t *id, size_t len)
{
	struct elfsym_file f;
	memset(&f, 0, sizeof f); /* closed below even when never opened */
	uint8_t other[64];
	int ok = 0;
	if (collector_fd_check(fd) && elfsym_open_fd(&f, fd) == 0) {
		size_t n = collector_fd_check(fd) ? elfsym_build_id(&f, other, sizeof other) : 0;
		ok = n == len && memcmp(other, id, len) == 0;
	}
	elfsym_close(&f);
	return ok && collector_fd_check(fd);
}

/* A line of /proc/self/maps: the mapping holding want->addr, backed by a file. */
struct maps_find {
	uint64_t addr;
	unsigned long long lo, hi, ino;
	unsigned dev_major, dev_minor;
};

static int maps_line_found(const struct maps_find *w)
{
	return w->addr >= w->lo && w->addr < w->hi && w->ino != 0;
}

static int maps_line(char *line, size_t len, void *ctx)
{
	(void)len;
	struct maps_find *w = ctx;
	if (sscanf(line, "%llx-%llx %*s %*x %x:%x %llu", &w->lo, &w->hi, &w->dev_major, &w->dev_minor,
	           &w->ino) != 5)
		w->ino = 0;
	return maps_line_found(w);
}

/*
 * Opens the file mapped at the module's first address: through /proc/self/map_files (the mapped
 * inode itself, even when the path now names another file; needs CAP_SYS_ADMIN or
 * CAP_CHECKPOINT_RESTORE), else by path when that file is still the mapped inode (device and
 * inode as /proc/self/maps shows them) or has the loaded module's build-id.
 * -1 when neither: a replaced file's symbols would name the wrong functions. Without /proc, the
 * path.
 */
static int module_open(struct module *m)
{
	const char *path = m->path;
	int maps = collector_fd_open("/proc/self/maps", O_RDONLY, 0);
	if (maps == -ENOENT) /* no /proc (a chroot): the path is all there is */
		return collector_fd_open(path, O_RDONLY | O_NONBLOCK, 0);
	if (maps < 0)
		return -1;
	struct maps_find w = {.addr = m->lo};
	off_t pos = 0;
	int rc = collector_fd_read_lines(maps, &pos, maps_line, &w);
	/* What a line said counts only if the fd was ours to the end. */
	if (collector_fd_close(maps) != 0 || rc != 0 || !maps_line_found(&w))
		return -1;
	char link[64];
	snprintf(link, sizeof link, "/proc/self/map_files/%llx-%llx", w.lo, w.hi);
	int fd = collector_fd_open(link, O_RDONLY | O_NONBLOCK, 0);
	if (fd >= 0) {
		snprintf(m->map_link, sizeof m->map_link, "%s", link);
		return fd;
	}
	fd = collector_fd_open(path, O_RDONLY | O_NONBLOCK, 0);
	struct stat st;
	if (fd < 0 || collector_fd_fstat(fd, &st) != 0)
		goto refuse;
	if (st.st_ino == w.ino && major(st.st_dev) == w.dev_major && minor(st.st_dev) == w.dev_minor)
		return fd;
	/* Another inode (overlayfs shows the lower file in maps, or a copy was renamed over it): the
	 * same file only if its build-id is the loaded one's. */
	if (m->build_id_len && m->build_id_len <= sizeof m->build_id &&
	    build_id_matches(fd, m->build_id, m->build_id_len))
		return fd;
refuse:
	if (fd >= 0)
		collector_fd_close(fd);
	return -1;
}

/* Opens path when it is a regular file owned by root or by us (never a FIFO that blocks). */
static int trusted_open(const char *path)
{
	int fd = collector_fd_open(path, O_RDONLY | O_NONBLOCK, 0);
	struct stat st;
	if (fd >= 0 && (collector_fd_fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
	                (st.st_uid != 0 && st.st_uid != geteuid()))) {
		collector_fd_close(fd);
		fd = -1;
	}
	return fd < 0 ? -1 : fd;
}

/* CRC-32 of a whole file as .gnu_debuglink states it; 0 and *ok = 0 when unreadable. */
static uint32_t file_crc(int fd, int *ok)
{
	static uint8_t buf[1 << 16]; /* the sender thread only */
	uint32_t crc = 0;
	uint64_t done = 0;
	*ok = 0;
	for (;;) {
		ssize_t n = collector_fd_pread(fd, buf, sizeof buf, (off_t)done);
		if (n < 0)
			return 0;
		if (n == 0)
			break;
		crc = crc32_update(crc, buf, (size_t)n);
		done += (uint64_t)n;
		if (done > DEBUG_FILE_MAX)
			return 0;
	}
	*ok = 1;
	return crc;
}

/*
 * The separate debug file of a stripped module (gdb's rules): by build-id under
 * /usr/lib/debug/.build-id (its build-id checked), else by .gnu_debuglink next to the module, in
 * .debug/ there, or under /usr/lib/debug (its CRC checked). fd or -1.
 */
static int debug_file_open(struct elfsym_file *f, const char *module_path)
{
	char path[1024];
	uint8_t id[64];
	size_t len = collector_fd_check(f->fd) ? elfsym_build_id(f, id, sizeof id) : 0;
	if (len >= 2 && len <= sizeof id) {
		int o = snprintf(path, sizeof path, DEBUG_ROOT "/.build-id/%02x/", id[0]);
		for (size_t i = 1; i < len; i++)
			o += snprintf(path + o, sizeof path - (size_t)o, "%02x", id[i]);
		snprintf(path + o, sizeof path - (size_t)o, ".debug");
		int fd = trusted_open(path);
		if (fd >= 0 && build_id_matches(fd, id, len))
			return fd;
		if (fd >= 0)
			collector_fd_close(fd);
	}
	char name[256];
	uint32_t want;
	if (!collector_fd_check(f->fd) || elfsym_debuglink(f, name, sizeof name, &want) != 0 ||
	    !collector_fd_check(f->fd))
		return -1;
	char dir[512];
	snprintf(dir, sizeof dir, "%s", module_path);
	char *slash = strrchr(dir, '/');
	if (!slash)
		return -1;
	*slash = '\0';
	static const char *const formats[] = {"%s/%s", "%s/.debug/%s", DEBUG_ROOT "%s/%s"};
	for (size_t i = 0; i < sizeof formats / sizeof *formats; i++) {
		if (snprintf(path, sizeof path, formats[i], dir, name) >= (int)sizeof path)
			continue;
		if (strcmp(path, module_path) == 0)
			continue; /* the stripped module names itself */
		int fd = trusted_open(path), ok;
		if (fd >= 0 && file_crc(fd, &ok) == want && ok)
			return fd;
		if (fd >= 0)
			collector_fd_close(fd);
	}
	return -1;
}

/* liblzma's lzma_stream_buffer_decode, loaded on first use (the collector runs without it). */
typedef int (*lzma_decode_fn)(uint64_t *memlimit, uint32_t flags, const void *allocator, const uint8_t *in,
                              size_t *in_pos, size_t in_size, uint8_t *out, size_t *out_pos, size_t out_size);

static lzma_decode_fn lzma_decoder(void)
{
	static int tried;
	static lzma_decode_fn fn;
	if (!tried) {
		tried = 1;
		void *lib = dlopen("liblzma.so.5", RTLD_LAZY | RTLD_LOCAL);
		if (lib)
			*(void **)&fn = dlsym(lib, "lzma_stream_buffer_decode");
	}
	return fn;
}

/* Functions of .gnu_debugdata (MiniDebugInfo: an xz-compressed ELF holding a .symtab). */
static void minidebug_read(struct elfsym_file *f, struct elfsym_table *t)
{
	size_t in_size;
	uint8_t *in = elfsym_section(f, ".gnu_debugdata", &in_size);
	lzma_decode_fn decode = in ? lzma_decoder() : NULL;
	if (!decode) {
		free(in);
		return;
	}
	/* Output size is known only by decoding: grow the buffer up to the bound. */
	size_t first = in_size < MINIDEBUG_MAX / 8 ? in_size * 4 + 4096 : MINIDEBUG_MAX;
	for (size_t out_size = first; out_size <= MINIDEBUG_MAX; out_size *= 2) {
		uint8_t *out = malloc(out_size);
		if (!out)
			break;
		uint64_t memlimit = MINIDEBUG_MAX;
		size_t in_pos = 0, out_pos = 0;
		int rc = decode(&memlimit, 0, NULL, in, &in_pos, in_size, out, &out_pos, out_size);
		if (rc == 0 /* LZMA_OK */) {
			struct elfsym_file mini;
			if (elfsym_open_mem(&mini, out, out_pos) == 0)
				elfsym_read_funcs(&mini, SHT_SYMTAB, t); /* names are copied out */
			elfsym_close(&mini);
		}
		free(out);
		if (rc != 10 /* LZMA_BUF_ERROR: output too small */)
			break;
	}
	free(in);
}

/* Reads the module's functions: its .symtab, else its debug file's, else .gnu_debugdata plus
 * .dynsym. */
static void module_load(struct module *m)
{
	m->loaded = 1;
	int fd = module_open(m);
	if (fd < 0)
		return;
	struct stat st;
	if (collector_fd_fstat(fd, &st) == 0) {
		m->dev = st.st_dev;
		m->ino = st.st_ino;
	}
	/* The module's own tables keep their names in the file (module_func_name reads one when a
	 * stack needs it): holding libtorch's string tables would add 150 MB to a training process. */
	struct elfsym_file f;
	memset(&f, 0, sizeof f); /* closed below even when never opened */
	if (collector_fd_check(fd) && elfsym_open_fd(&f, fd) == 0 && collector_fd_check(fd)) {
		if (elfsym_has_section_type(&f, SHT_SYMTAB)) {
			elfsym_read_funcs_lazy(&f, SHT_SYMTAB, &m->tab);
		} else {
			int dbg = debug_file_open(&f, m->path);
			struct elfsym_file d;
			memset(&d, 0, sizeof d);
			int dbg_read = dbg >= 0 && collector_fd_check(dbg) && elfsym_open_fd(&d, dbg) == 0;
			if (dbg_read && collector_fd_check(dbg))
				elfsym_read_funcs(&d, SHT_SYMTAB, &m->tab);
			if (dbg >= 0) {
				elfsym_close(&d);
				/* The debug file's names are copied: they count only if it stayed ours. */
				if (collector_fd_close(dbg) != 0)
					elfsym_table_fini(&m->tab);
			}
			if (!m->tab.count && collector_fd_check(fd)) {
				minidebug_read(&f, &m->tab);
				if (collector_fd_check(fd))
					elfsym_read_funcs_lazy(&f, SHT_DYNSYM, &m->tab);
			}
		}
	}
	elfsym_close(&f);
	/* Symbols read through an fd that became the program's may be its file's: none are kept
	 * (read again for a later address, a few times at most). */
	if (collector_fd_close(fd) != 0) {
		elfsym_table_fini(&m->tab);
		m->loaded = ++m->taken_over >= MODULE_TAKEOVERS_MAX;
	}
	elfsym_table_sort(&m->tab);
}

/* Whether a segment's bytes lie inside a loaded (so readable) segment of the module. */
static int in_load_segment(const struct dl_phdr_info *info, const ElfW(Phdr) * seg)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_R) && seg->p_vaddr >= ph->p_vaddr &&
		    seg->p_vaddr + seg->p_memsz <= ph->p_vaddr + ph->p_filesz)
			return 1;
	}
	return 0;
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
	/* The loaded notes are this module's identity, whatever its path names now. */
	for (int i = 0; i < info->dlpi_phnum && !m->build_id_len; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_NOTE && ph->p_memsz <= (1u << 16) && in_load_segment(info, ph))
			m->build_id_len =
			    elfsym_notes_build_id((const uint8_t *)(info->dlpi_addr + ph->p_vaddr),
			                          ph->p_memsz, m->build_id, sizeof m->build_id);
	}
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

/* A function's name: held, or read from the module's file (reopened, and only when it is still the
 * file the symbols came from). NULL when it cannot be read. */
static const char *module_func_name(struct module *m, const struct elfsym_func *s, char *buf, size_t cap)
{
	if (s->name)
		return s->name;
	/* The mapping's own link first: no walk of /proc/self/maps (thousands of lines in a
	 * training process) for each name. */
	int fd = m->map_link[0] ? collector_fd_open(m->map_link, O_RDONLY | O_NONBLOCK, 0) : -1;
	if (fd < 0)
		fd = module_open(m);
	struct stat st;
	const char *name = NULL;
	if (fd >= 0 && collector_fd_fstat(fd, &st) == 0 && st.st_dev == m->dev && st.st_ino == m->ino)
		name = elfsym_func_name(&m->tab, s, fd, buf, cap);
	/* A name read through an fd that became the program's may be its bytes: dropped. */
	if (fd >= 0 && collector_fd_close(fd) != 0)
		name = NULL;
	return name;
}

static const struct elfsym_func *module_symbol(const struct module *m, uint64_t rel)
{
	size_t lo = timerow_bound(m->tab.funcs, m->tab.count, sizeof *m->tab.funcs, TIMEROW_START, rel, 1);
	if (lo == 0)
		return NULL;
	const struct elfsym_func *s = &m->tab.funcs[lo - 1];
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

/* One "START SIZE name" line (hex) of a perf map into sym.perf; nonzero stops the reading. */
static int perf_map_line(char *line, size_t len, void *ctx)
{
	(void)len;
	(void)ctx;
	char *end;
	uint64_t start = strtoull(line, &end, 16);
	uint64_t size = strtoull(end, &end, 16);
	while (*end == ' ')
		end++;
	if (!*end)
		return 0;
	if (sym.perf_count >= PERF_MAP_MAX)
		return 1; /* bounded memory: later entries stay unnamed */
	if (sym.perf_count == sym.perf_cap) {
		size_t cap = sym.perf_cap ? sym.perf_cap * 2 : 256;
		struct perf_entry *p = realloc(sym.perf, cap * sizeof *p);
		if (!p)
			return 1;
		sym.perf = p;
		sym.perf_cap = cap;
	}
	char *name = strdup(end);
	if (!name)
		return 1;
	sym.perf[sym.perf_count++] = (struct perf_entry){start, size, name};
	return 0;
}

/* Reads lines appended to /tmp/perf-PID.map since the last look ("START SIZE name", hex). */
static void perf_map_refresh(void)
{
	char path[64];
	if (sym.perf_pid != getpid()) {
		/* A forked child: its own map starts empty (the parent's entries stay valid here). */
		sym.perf_pid = getpid();
		sym.perf_size = 0;
	}
	snprintf(path, sizeof path, "/tmp/perf-%d.map", getpid());
	/* /tmp is everyone's: only the map this process (its user) wrote, never through a link, never
	 * a FIFO that would block. */
	int fd = collector_fd_open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK, 0);
	if (fd < 0)
		return;
	struct stat st;
	if (collector_fd_fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    st.st_size == sym.perf_size) {
		collector_fd_close(fd);
		return;
	}
	size_t had = sym.perf_count;
	off_t pos = sym.perf_size;
	int rc = collector_fd_read_lines(fd, &pos, perf_map_line, NULL);
	/* Lines read through an fd that became the program's may be its file's: all dropped. */
	if (collector_fd_close(fd) != 0 || rc != 0) {
		while (sym.perf_count > had)
			free(sym.perf[--sym.perf_count].name);
		return;
	}
	sym.perf_size = pos;
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

/*
 * Interns "function\x1fmodule" within WIRE_MAX_STRING (the viewer refuses longer strings): an
 * over-long function name is cut, never the module (a name that long stays mangled either way).
 */
static uint32_t frame_intern(const char *function, const char *module)
{
	char text[WIRE_MAX_STRING];
	size_t mod_len = strnlen(module, 255);
	size_t fn_len = strnlen(function, sizeof text - 1 - mod_len);
	memcpy(text, function, fn_len);
	text[fn_len] = WIRE_FRAME_SEPARATOR;
	memcpy(text + fn_len + 1, module, mod_len);
	return sender_intern(text, fn_len + 1 + mod_len);
}

static uint32_t symbolize_uncached(uint64_t pc)
{
	char text[64];
	struct module *m = module_find(pc);
	int loader = atomic_load(&collector_loader_usable);
	if (!m && loader) {
		dl_iterate_phdr(collect_module, NULL); /* a library loaded since the last look */
		m = module_find(pc);
	}
	if (m) {
		if (!m->loaded)
			module_load(m);
		const struct elfsym_func *s = module_symbol(m, pc - m->base);
		char fn_name[WIRE_MAX_STRING];
		const char *fn = s ? module_func_name(m, s, fn_name, sizeof fn_name) : NULL;
		if (fn)
			return frame_intern(fn, base_name(m->path));
		/* Exported names the file's tables lack (e.g. the vDSO) may still be known to the loader. */
		Dl_info info;
		if (loader && dladdr((void *)pc, &info) && info.dli_sname)
			return frame_intern(info.dli_sname, base_name(m->path));
		char name[300];
		snprintf(name, sizeof name, "%.255s+0x%llx", base_name(m->path),
		         (unsigned long long)(pc - m->base));
		return frame_intern(name, base_name(m->path));
	}
	const struct perf_entry *e = perf_find(pc);
	if (!e) {
		perf_map_refresh();
		e = perf_find(pc);
	}
	if (e)
		return frame_intern(e->name, "[perf-map]");
	snprintf(text, sizeof text, "0x%llx", (unsigned long long)pc);
	return frame_intern(text, "[unknown]");
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
