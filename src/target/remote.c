#include "remote.h"
#include "cuscope/clock.h"
#include "cuscope/elfsym.h"

#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RED_ZONE 128

/* Set while a borrowed thread runs with our registers: leaving then would let it run on into
 * our call with nobody to put its registers back. */
static volatile sig_atomic_t remote_window;

int remote_busy(void)
{
	return remote_window;
}

/* Whether fd is a regular file with the device and inode a maps line named. */
static int remote_is_mapped_file(int fd, const struct remote_mapping *m)
{
	struct stat st;
	return fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && major(st.st_dev) == m->dev_major &&
	       minor(st.st_dev) == m->dev_minor && (uint64_t)st.st_ino == m->inode;
}

int remote_open_mapping(pid_t pid, const struct remote_mapping *m, const char *path)
{
	/* Nothing here may wait on what the target controls: a FIFO named like a library, a
	 * terminal, a link swapped in after the maps line was read. */
	const int flags = O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
	char at[PATH_MAX + 64];
	snprintf(at, sizeof at, "/proc/%d/map_files/%llx-%llx", (int)pid, (unsigned long long)m->start,
	         (unsigned long long)m->end);
	int fd = open(at, flags);
	int err = fd < 0 ? errno : 0;
	/* map_files needs CAP_SYS_ADMIN: without it the path, seen from the target's root, serves
	 * only when it still names the mapped file (a deleted one never does). */
	if (fd < 0 && (err == EPERM || err == EACCES) && path[0] == '/' && !strstr(path, " (deleted)") &&
	    snprintf(at, sizeof at, "/proc/%d/root%s", (int)pid, path) < (int)sizeof at) {
		fd = open(at, flags);
		err = fd < 0 ? errno : 0;
	}
	if (fd < 0)
		return -err;
	if (!remote_is_mapped_file(fd, m)) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

/* Reads a 64-bit ELF header and its program headers from fd; returns the count or -errno. */
static int remote_read_phdrs(int fd, Elf64_Ehdr *eh, Elf64_Phdr *ph, size_t cap)
{
	int rc = -ENOEXEC;
	if (pread(fd, eh, sizeof *eh, 0) == (ssize_t)sizeof *eh &&
	    memcmp(eh->e_ident, ELFMAG, SELFMAG) == 0 && eh->e_ident[EI_CLASS] == ELFCLASS64 &&
	    eh->e_phentsize == sizeof(Elf64_Phdr) && eh->e_phnum && eh->e_phnum <= cap) {
		size_t len = (size_t)eh->e_phnum * sizeof *ph;
		if (pread(fd, ph, len, (off_t)eh->e_phoff) == (ssize_t)len)
			rc = eh->e_phnum;
	}
	return rc;
}

static int mem_rw(pid_t pid, uint64_t addr, void *buf, size_t len, int write_it);

/*
 * Load bias of the module whose executable mapping is [start, ...) at file offset `offset`:
 * found through the PT_LOAD segment it maps (never through some other mapping of the same file,
 * such as a symbolizer's whole-file mmap), then verified by reading the ELF magic where the
 * file's first page must be loaded. Returns 0 or -ENOEXEC.
 */
static int remote_load_bias(pid_t pid, int fd, uint64_t start, uint64_t offset, uint64_t *bias)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph[64];
	int n = remote_read_phdrs(fd, &eh, ph, sizeof ph / sizeof ph[0]);
	if (n < 0)
		return n;
	const Elf64_Phdr *exec = NULL, *first = NULL;
	for (int i = 0; i < n; i++) {
		if (ph[i].p_type != PT_LOAD)
			continue;
		if (!first)
			first = &ph[i];
		uint64_t page_off = ph[i].p_offset & ~(uint64_t)(ph[i].p_align > 1 ? ph[i].p_align - 1 : 0);
		if ((ph[i].p_flags & PF_X) && offset >= page_off && offset < ph[i].p_offset + ph[i].p_filesz)
			exec = &ph[i];
	}
	if (!exec || !first || first->p_offset != 0)
		return -ENOEXEC;
	/* The mapping's first byte is file offset `offset`, which the segment puts at
	 * bias + p_vaddr - p_offset + offset. */
	uint64_t b = start - offset - (exec->p_vaddr - exec->p_offset);
	char magic[SELFMAG];
	if (mem_rw(pid, b + first->p_vaddr, magic, sizeof magic, 0) != 0 ||
	    memcmp(magic, ELFMAG, SELFMAG) != 0)
		return -ENOEXEC;
	*bias = b;
	return 0;
}

int remote_find_module(pid_t pid, const char *prefix, struct remote_module *out)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return -errno;
	char line[4608];
	int rc = -ENOENT;
	while (fgets(line, sizeof line, f)) {
		unsigned long long start, end, offset, inode;
		unsigned dev_major, dev_minor;
		char perms[8];
		int name_at = 0;
		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end, perms, &offset, &dev_major,
		           &dev_minor, &inode, &name_at) < 7 ||
		    !name_at)
			continue;
		char *file = line + name_at;
		file[strcspn(file, "\n")] = '\0';
		const char *base = strrchr(file, '/');
		base = base ? base + 1 : file;
		/* Only an executable mapping is the module's code as the loader placed it: a plain
		 * mmap of the same file (the collector's symbolizer maps whole files) never is. */
		if (file[0] != '/' || strncmp(base, prefix, strlen(prefix)) != 0 || perms[2] != 'x' || !inode)
			continue;
		struct remote_mapping m = {start, end, dev_major, dev_minor, inode};
		int fd = remote_open_mapping(pid, &m, file);
		if (fd < 0)
			continue;
		uint64_t bias;
		int found = remote_load_bias(pid, fd, start, offset, &bias) == 0;
		close(fd);
		if (!found)
			continue;
		snprintf(out->path, sizeof out->path, "%s", file);
		out->map = m;
		out->bias = bias;
		rc = 0;
		break;
	}
	fclose(f);
	return rc;
}

int remote_symbol(pid_t pid, const char *module_prefix, const char *symbol, uint64_t *address)
{
	struct remote_module m;
	int rc = remote_find_module(pid, module_prefix, &m);
	if (rc)
		return rc;
	uint64_t value, first_vaddr;
	int fd = remote_open_mapping(pid, &m.map, m.path);
	if (fd < 0)
		return fd;
	rc = elfsym_lookup(fd, symbol, &value, &first_vaddr);
	close(fd);
	if (rc)
		return rc;
	*address = m.bias + value;
	return 0;
}

pid_t remote_pick_thread(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	pid_t chosen = pid;
	int chosen_is_main_sleeping = 0;
	if (!d)
		return pid;
	struct dirent *de;
	while ((de = readdir(d))) {
		pid_t tid = (pid_t)atoi(de->d_name);
		if (tid <= 0)
			continue;
		char stat_path[96], buf[512];
		snprintf(stat_path, sizeof stat_path, "/proc/%d/task/%d/stat", (int)pid, (int)tid);
		FILE *f = fopen(stat_path, "re");
		if (!f)
			continue;
		char state = 0;
		if (fgets(buf, sizeof buf, f)) {
			char *p = strrchr(buf, ')');
			if (p && p[1] == ' ')
				state = p[2];
		}
		fclose(f);
		/* A thread asleep in the kernel holds no user-space lock (malloc's included). */
		if (state == 'S' && !chosen_is_main_sleeping) {
			chosen = tid;
			chosen_is_main_sleeping = tid == pid;
			if (chosen_is_main_sleeping)
				break;
		}
	}
	closedir(d);
	return chosen;
}

static int mem_rw(pid_t pid, uint64_t addr, void *buf, size_t len, int write_it)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/mem", (int)pid);
	int fd = open(path, (write_it ? O_RDWR : O_RDONLY) | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = write_it ? pwrite(fd, buf, len, (off_t)addr) : pread(fd, buf, len, (off_t)addr);
	int err = errno;
	close(fd);
	return n == (ssize_t)len ? 0 : -(n < 0 ? err : EIO);
}

/* Waits for tid to stop (or exit) with a deadline; returns 0 with *status, -ETIMEDOUT or -ESRCH. */
static int wait_stop(pid_t tid, int *status, uint64_t deadline_ns)
{
	for (;;) {
		pid_t r = waitpid(tid, status, __WALL | WNOHANG);
		if (r == tid) {
			if (WIFEXITED(*status) || WIFSIGNALED(*status))
				return -ESRCH;
			return 0;
		}
		if (r < 0 && errno != EINTR)
			return -ESRCH;
		if (clock_mono_ns() > deadline_ns)
			return -ETIMEDOUT;
		struct timespec ts = {0, 200000};
		nanosleep(&ts, NULL);
	}
}

int remote_call(pid_t pid, pid_t tid, uint64_t func, uint64_t a1, uint64_t a2, const void *data,
                size_t data_len, uint64_t *ret, int timeout_ms, char *err, size_t err_size)
{
	(void)pid;
	if (ptrace(PTRACE_SEIZE, tid, 0, 0) != 0) {
		int e = errno;
		snprintf(err, err_size, "ptrace: %s", strerror(e));
		return -e;
	}
	int status;
	uint64_t deadline = clock_mono_ns() + (uint64_t)timeout_ms * 1000000ull;
	ptrace(PTRACE_INTERRUPT, tid, 0, 0);
	int rc = wait_stop(tid, &status, deadline);
	if (rc) {
		snprintf(err, err_size,
		         rc == -ESRCH ? "the process exited during attach" : "could not stop the thread");
		ptrace(PTRACE_DETACH, tid, 0, 0);
		return rc;
	}
	struct user_regs_struct saved, regs;
	struct user_fpregs_struct saved_fp;
	if (ptrace(PTRACE_GETREGS, tid, 0, &saved) != 0 || ptrace(PTRACE_GETFPREGS, tid, 0, &saved_fp) != 0) {
		int e = errno;
		snprintf(err, err_size, "cannot read registers: %s", strerror(e));
		ptrace(PTRACE_DETACH, tid, 0, 0);
		return -e;
	}
	/* Stack layout below the red zone: [return address 0][data], 16-aligned at the call. */
	uint64_t data_addr = (saved.rsp - RED_ZONE - 64 - data_len) & ~(uint64_t)15;
	uint64_t call_rsp = data_addr - 8;
	size_t scratch_len = (size_t)(saved.rsp - call_rsp);
	uint8_t *scratch = malloc(scratch_len);
	uint8_t *ours = calloc(1, scratch_len);
	if (!scratch || !ours || mem_rw(pid, call_rsp, scratch, scratch_len, 0) != 0) {
		snprintf(err, err_size, "cannot read the target's stack");
		free(scratch);
		free(ours);
		ptrace(PTRACE_DETACH, tid, 0, 0);
		return -EIO;
	}
	if (data_len)
		memcpy(ours + 8, data, data_len);
	rc = mem_rw(pid, call_rsp, ours, 8 + data_len, 1);
	if (rc) {
		snprintf(err, err_size, "cannot write the target's stack: %s", strerror(-rc));
		free(scratch);
		free(ours);
		ptrace(PTRACE_DETACH, tid, 0, 0);
		return rc;
	}
	regs = saved;
	regs.rip = func;
	regs.rdi = a1 == REMOTE_ARG_DATA ? data_addr : a1;
	regs.rsi = a2 == REMOTE_ARG_DATA ? data_addr : a2;
	regs.rax = 0;
	regs.rsp = call_rsp;
	/* Not in a system call any more: no restart logic must touch our registers. */
	regs.orig_rax = (unsigned long long)-1;
	remote_window = 1;
	ptrace(PTRACE_SETREGS, tid, 0, &regs);
	ptrace(PTRACE_CONT, tid, 0, 0);
	int result = -ETIMEDOUT;
	for (;;) {
		rc = wait_stop(tid, &status, deadline);
		if (rc == -ESRCH) {
			remote_window = 0;
			snprintf(err, err_size, "the process exited during attach");
			free(scratch);
			free(ours);
			return rc;
		}
		if (rc) {
			/* Stop it where it is and put everything back; the call did not finish in time. */
			ptrace(PTRACE_INTERRUPT, tid, 0, 0);
			wait_stop(tid, &status, clock_mono_ns() + 2000000000ull);
			snprintf(err, err_size, "the injected call did not return within %d ms", timeout_ms);
			break;
		}
		int sig = WSTOPSIG(status);
		struct user_regs_struct now;
		ptrace(PTRACE_GETREGS, tid, 0, &now);
		if (sig == SIGSEGV && now.rip == 0) {
			*ret = now.rax;
			result = 0;
			break;
		}
		/* Any other stop (a signal for the program): deliver it and keep waiting. */
		int deliver = (status >> 16) == PTRACE_EVENT_STOP ? 0 : sig;
		ptrace(PTRACE_CONT, tid, 0, deliver);
	}
	/* Registers first: from here on leaving (see attach's deadline) is harmless; the bytes we
	 * wrote lie below the red zone, where any signal handler may write too. */
	ptrace(PTRACE_SETREGS, tid, 0, &saved);
	ptrace(PTRACE_SETFPREGS, tid, 0, &saved_fp);
	remote_window = 0;
	mem_rw(pid, call_rsp, scratch, scratch_len, 1);
	ptrace(PTRACE_DETACH, tid, 0, 0);
	free(scratch);
	free(ours);
	return result;
}
