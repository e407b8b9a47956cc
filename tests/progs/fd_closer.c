/*
 * Test target for the collector's short-lived fds: one thread of the program, for SECONDS, closes
 * every fd number it does not own (3..1023; a daemon's close-everything loop run over and over),
 * opens files of its own onto the freed numbers and checks them: still open (F_GETFD), still the
 * same file (fstat identity), content and offset unchanged. Meanwhile the rest of the program keeps
 * the collector's short-lived fds busy: a pool of sleeping threads and a stream of short renamed
 * threads (the /proc/self/task scan and its comm reads, counters' /proc reads), a thread spinning
 * in JIT code of which /tmp/perf-PID.map names a part and grows (perf map reads), and a thread
 * calling many functions of its own, libc's qsort and a dlopen'ed libm (stacks symbolized from
 * module files). Prints "fd_closer: ok" (exit 0) or the first problem (exit 1), plus counts.
 *   fd_closer DIR SECONDS
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define KEEP     4  /* files held for the whole run */
#define TEMP     8  /* files opened onto the freed numbers in each round */
#define IDLE     48 /* sleeping threads the scans see */
#define FD_LIMIT 1024
#define JIT_SIZE 4096

/* Any fd use of the program's other threads happens under this lock (the closer holds it for its
 * sweep): only the collector's fds are closed behind someone's back. */
static pthread_mutex_t prog_fd_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int stop;
static char dir[3500];
static unsigned char *jit;
static atomic_ulong churned, jit_entries;

struct own_file {
	int fd;
	struct stat id;
	char byte;
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- the collector's workload ---- */

static void *idle_main(void *arg)
{
	(void)arg;
	struct timespec ts = {0, 5000000};
	while (!atomic_load(&stop))
		nanosleep(&ts, NULL);
	return NULL;
}

static void *short_main(void *arg)
{
	char name[16];
	snprintf(name, sizeof name, "short-%lu", (unsigned long)(uintptr_t)arg % 1000);
	prctl(PR_SET_NAME, name); /* no fd: pthread_setname_np would open comm */
	volatile unsigned x = 0;
	for (unsigned i = 0; i < 20000; i++)
		x += i;
	struct timespec ts = {0, 2000000};
	nanosleep(&ts, NULL);
	prctl(PR_SET_NAME, "short-renamed");
	nanosleep(&ts, NULL);
	return NULL;
}

static void *churn_main(void *arg)
{
	(void)arg;
	for (uintptr_t i = 0; !atomic_load(&stop); i++) {
		pthread_t t[4];
		int made[4];
		for (int k = 0; k < 4; k++)
			made[k] =
			    pthread_create(&t[k], NULL, short_main, (void *)(i * 4 + (uintptr_t)k)) == 0;
		for (int k = 0; k < 4; k++)
			if (made[k])
				pthread_join(t[k], NULL);
		atomic_fetch_add(&churned, 4);
	}
	return NULL;
}

/* Appends "START SIZE NAME" for a piece of the JIT region (under the program's fd lock). */
static void perf_map_add(size_t off, size_t size, unsigned n)
{
	char path[64], line[128];
	snprintf(path, sizeof path, "/tmp/perf-%d.map", (int)getpid());
	int len = snprintf(line, sizeof line, "%lx %zx jit_piece_%u\n", (unsigned long)(uintptr_t)(jit + off),
	                   size, n);
	pthread_mutex_lock(&prog_fd_lock);
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (fd >= 0) {
		if (write(fd, line, (size_t)len) == len)
			atomic_fetch_add(&jit_entries, 1);
		close(fd);
	}
	pthread_mutex_unlock(&prog_fd_lock);
}

/* Spins in JIT code: a NOP sled (samples land on many addresses, most of them named by no map
 * entry yet) ending in a counted loop back to its start. */
static void *jit_main(void *arg)
{
	(void)arg;
	void (*run)(uint64_t) = (void (*)(uint64_t))(uintptr_t)jit;
	double next = now_s();
	for (unsigned n = 0; !atomic_load(&stop); n++) {
		run(2000);
		if (now_s() >= next) {
			perf_map_add(((size_t)n * 64) % (JIT_SIZE - 128), 32, n);
			next = now_s() + 0.1;
		}
	}
	return NULL;
}

static int jit_make(void)
{
	jit = mmap(NULL, JIT_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (jit == MAP_FAILED)
		return -1;
	/* nop sled; then: dec rdi; jnz start (rel32); ret */
	memset(jit, 0x90, JIT_SIZE);
	size_t at = JIT_SIZE - 16;
	jit[at] = 0x48, jit[at + 1] = 0xff, jit[at + 2] = 0xcf;
	int32_t rel = -(int32_t)(at + 3 + 6);
	jit[at + 3] = 0x0f, jit[at + 4] = 0x85;
	memcpy(jit + at + 5, &rel, 4);
	jit[at + 9] = 0xc3;
	return mprotect(jit, JIT_SIZE, PROT_READ | PROT_EXEC);
}

/* Many small functions of our own, named lazily from the program's file one by one. */
#define WORK_FN(n)                                                                                           \
	__attribute__((noinline)) static unsigned work_##n(unsigned x)                                       \
	{                                                                                                    \
		for (unsigned i = 0; i < 200000; i++)                                                        \
			x = x * 2654435761u + (n);                                                           \
		return x;                                                                                    \
	}
WORK_FN(0)
WORK_FN(1)
WORK_FN(2)
WORK_FN(3)
WORK_FN(4)
WORK_FN(5)
WORK_FN(6)
WORK_FN(7)
WORK_FN(8)
WORK_FN(9)
WORK_FN(10)
WORK_FN(11)
WORK_FN(12)
WORK_FN(13)
WORK_FN(14)
WORK_FN(15)
static unsigned (*const work_fns[])(unsigned) = {work_0,  work_1,  work_2,  work_3, work_4,  work_5,
                                                 work_6,  work_7,  work_8,  work_9, work_10, work_11,
                                                 work_12, work_13, work_14, work_15};

static int cmp_u(const void *a, const void *b)
{
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
	return x < y ? -1 : x > y;
}

static void *lib_main(void *arg)
{
	double (*cos_fn)(double) = (double (*)(double))arg;
	static unsigned v[4096];
	volatile double acc = 0;
	double start = now_s();
	while (!atomic_load(&stop)) {
		/* A new function about every 150 ms: each is named while the closer runs. */
		size_t k = (size_t)((now_s() - start) / 0.15) % (sizeof work_fns / sizeof *work_fns);
		unsigned x = work_fns[k]((unsigned)k);
		for (size_t i = 0; i < sizeof v / sizeof *v; i++)
			v[i] = x = x * 1103515245u + 12345u;
		qsort(v, sizeof v / sizeof *v, sizeof *v, cmp_u);
		for (int i = 0; i < 2000 && cos_fn; i++)
			acc += cos_fn((double)i);
	}
	return NULL;
}

/* ---- the closer ---- */

static int file_open(struct own_file *f, const char *name, char byte)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	f->fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	f->byte = byte;
	char buf[256];
	memset(buf, byte, sizeof buf);
	if (f->fd < 0 || fstat(f->fd, &f->id) != 0 ||
	    pwrite(f->fd, buf, sizeof buf, 0) != (ssize_t)sizeof buf)
		return -1;
	return 0;
}

/* 0 if the file is still open, ours, unchanged, its offset where we left it (0); else a reason. */
static const char *file_check(const struct own_file *f)
{
	struct stat st;
	char buf[257];
	if (fcntl(f->fd, F_GETFD) < 0)
		return "closed behind the program's back";
	if (fstat(f->fd, &st) != 0 || st.st_ino != f->id.st_ino || st.st_dev != f->id.st_dev)
		return "now another file (closed and reused)";
	if (lseek(f->fd, 0, SEEK_CUR) != 0)
		return "its offset moved (someone read or wrote through it)";
	if (pread(f->fd, buf, sizeof buf, 0) != 256 || memchr(buf, f->byte, 256) != buf ||
	    strspn(buf, (char[]){f->byte, 0}) < 256)
		return "its content changed";
	return NULL;
}

/* Closes every number in 3..FD_LIMIT-1 that is not one of ours. */
static void close_others(const int *mine, size_t n)
{
	char own[FD_LIMIT] = {0};
	for (size_t i = 0; i < n; i++)
		if (mine[i] >= 0 && mine[i] < FD_LIMIT)
			own[mine[i]] = 1;
	for (int fd = 3; fd < FD_LIMIT; fd++) {
		if (own[fd])
			continue;
		int end = fd;
		while (end + 1 < FD_LIMIT && !own[end + 1])
			end++;
		if (close_range((unsigned)fd, (unsigned)end, 0) != 0)
			for (int k = fd; k <= end; k++)
				close(k);
		fd = end;
	}
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: fd_closer DIR SECONDS\n");
		return 2;
	}
	snprintf(dir, sizeof dir, "%s", argv[1]);
	double seconds = atof(argv[2]);
	if (jit_make() != 0) {
		printf("fd_closer: no JIT region: %s\n", strerror(errno));
		return 1;
	}
	void *libm = dlopen("libm.so.6", RTLD_NOW);
	void *cos_fn = libm ? dlsym(libm, "cos") : NULL;
	perf_map_add(0, 32, 0);
	pthread_t idle[IDLE], churn, jitter, lib;
	for (int i = 0; i < IDLE; i++)
		pthread_create(&idle[i], NULL, idle_main, NULL);
	pthread_create(&churn, NULL, churn_main, NULL);
	pthread_create(&jitter, NULL, jit_main, NULL);
	pthread_create(&lib, NULL, lib_main, cos_fn);

	struct own_file keep[KEEP], temp[TEMP];
	int mine[KEEP + TEMP];
	const char *problem = NULL;
	int bad_fd = -1;
	pthread_mutex_lock(&prog_fd_lock);
	close_others(NULL, 0);
	for (int i = 0; i < KEEP && !problem; i++) {
		char name[16];
		snprintf(name, sizeof name, "keep%d", i);
		if (file_open(&keep[i], name, (char)('A' + i)) != 0)
			problem = "cannot open a file", bad_fd = keep[i].fd;
		mine[i] = keep[i].fd;
	}
	pthread_mutex_unlock(&prog_fd_lock);
	unsigned long rounds = 0;
	double end = now_s() + seconds;
	while (!problem && now_s() < end) {
		rounds++;
		pthread_mutex_lock(&prog_fd_lock);
		close_others(mine, KEEP);
		for (int i = 0; i < TEMP && !problem; i++) {
			char name[16];
			snprintf(name, sizeof name, "temp%d", i);
			if (file_open(&temp[i], name, (char)('a' + (rounds + (unsigned long)i) % 26)) != 0)
				problem = "cannot open a file", bad_fd = temp[i].fd;
			mine[KEEP + i] = temp[i].fd;
		}
		pthread_mutex_unlock(&prog_fd_lock);
		if (problem)
			break;
		/* Give the collector time to use (or close) what it opened on these numbers. */
		struct timespec ts = {0, 200000};
		nanosleep(&ts, NULL);
		pthread_mutex_lock(&prog_fd_lock);
		for (int i = 0; i < TEMP + KEEP && !problem; i++) {
			const struct own_file *f = i < TEMP ? &temp[i] : &keep[i - TEMP];
			if ((problem = file_check(f)))
				bad_fd = f->fd;
		}
		for (int i = 0; i < TEMP && !problem; i++)
			close(temp[i].fd);
		pthread_mutex_unlock(&prog_fd_lock);
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < IDLE; i++)
		pthread_join(idle[i], NULL);
	pthread_join(churn, NULL);
	pthread_join(jitter, NULL);
	pthread_join(lib, NULL);
	char path[64];
	snprintf(path, sizeof path, "/tmp/perf-%d.map", (int)getpid());
	unlink(path);
	printf("rounds %lu\n", rounds);
	printf("threads_churned %lu\n", atomic_load(&churned));
	printf("perf_map_entries %lu\n", atomic_load(&jit_entries));
	if (problem) {
		printf("fd_closer: fd %d: %s\n", bad_fd, problem);
		return 1;
	}
	printf("fd_closer: ok\n");
	return 0;
}
