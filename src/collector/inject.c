/*
 * The injected library's entry points: constructor (LD_PRELOAD or dlopen), destructor,
 * InitializeInjectionNvtx2 (NVTX_INJECTION64_PATH), InitializeInjection (CUDA_INJECTION64_PATH),
 * the exit paths (atexit, _exit), fork handling, --follow, attach restarts and thread renames.
 */
#include "collector.h"
#include "cuscope/session.h"
#include "cuscope/wire.h"
#include "config.h"
#include "sender.h"
#include "source.h"

#include <dlfcn.h>
#include <signal.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

_Atomic int collector_running;
_Atomic int collector_loader_usable = 1;

static int loader_probe_visit(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)info;
	(void)size;
	(void)data;
	return 1; /* the first module is enough: the lock was taken */
}

static void *loader_probe_main(void *arg)
{
	(void)arg;
	collector_mark_own_thread();
	/* Both of the loader's locks: dl_iterate_phdr's, and dlopen's and dlsym's. */
	dl_iterate_phdr(loader_probe_visit, NULL);
	dlsym(RTLD_DEFAULT, "cuscope_loader_probe");
	atomic_store(&collector_loader_usable, 1);
	return NULL;
}

void collector_loader_probe(void)
{
	atomic_store(&collector_loader_usable, 0);
	pthread_attr_t attr;
	pthread_t thread;
	sigset_t all, old;
	if (pthread_attr_init(&attr) != 0)
		return;
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	/* No signal of the program's lands on it. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	if (pthread_create(&thread, &attr, loader_probe_main, NULL) != 0)
		atomic_store(&collector_loader_usable, 0); /* no proof: stay off the loader */
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
}
static pid_t collector_pid;
/* --follow: a forked copy of this process (the same program) collects too. */
static int follow_fork_children = 1;

/* Child side of fork: the parent's rings and sender thread do not exist here. */
static void collector_atfork_child(void)
{
	collector_fd_after_fork();
	if (!atomic_load(&collector_running))
		return;
	collector_loader_probe();
	atomic_store(&collector_running, 0);
	/* Every part forgets the parent's state here, in this order: the rings (their threads are
	 * gone; a child that collects starts fresh ones, this thread's included), the sender (its
	 * thread, sockets, queue, strings, thread table), the event sources (timers, perf events,
	 * CUPTI). Nothing of the parent's is freed: it may have been mid-update. */
	collector_rings_after_fork(follow_fork_children);
	sender_forget_after_fork();
	source_each_after_fork();
	if (!follow_fork_children)
		return; /* --follow leaves this copy out: inert, like a process never started */
	collector_pid = getpid();
	if (sender_start() == 0)
		atomic_store_explicit(&collector_running, 1, memory_order_release);
}

static int cuda_injection_called;

/* dl_iterate_phdr visitor: notes whether a CUDA runtime or driver library is mapped. */
static int find_cuda_library(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	const char *slash = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;
	const char *base = slash ? slash + 1 : info->dlpi_name;
	if (base && (strncmp(base, "libcudart.so", 12) == 0 || strncmp(base, "libcuda.so", 10) == 0)) {
		*(int *)data = 1;
		return 1;
	}
	return 0;
}

static void collector_at_exit(void)
{
	if (!atomic_load(&collector_running) || collector_pid != getpid())
		return;
	static _Atomic int done;
	if (atomic_exchange(&done, 1))
		return;
	/* A CUDA program whose driver never initialised (no GPU, no driver) would otherwise just show
	 * no GPU lanes without saying why. */
	int cuda_loaded = 0;
	if (!cuda_injection_called && !getenv("CUSCOPE_NO_GPU")) {
		if (atomic_load(&collector_loader_usable))
			dl_iterate_phdr(find_cuda_library, &cuda_loaded);
		if (cuda_loaded)
			collector_notice_about(
			    WIRE_NOTICE_WARNING, WIRE_NOTICE_TOPIC_GPU_UNAVAILABLE,
			    "GPU tracing: the program loaded CUDA but the CUDA driver never initialised "
			    "(no GPU or no driver?); no GPU lanes");
	}
	source_each_exit();
	if (!sender_exit_early())
		sender_stop();
	atomic_store(&collector_running, 0);
}

/* How long _exit waits for the sender's final counts at most. */
#define COLLECTOR_EXIT_WAIT_NS 300000000ull

/* libc's _exit, resolved before the program runs: _exit may be called from a signal handler or a
 * vfork child, where dlsym (the loader's lock) must not be. */
static void (*real_exit)(int);

__attribute__((constructor)) static void collector_exit_resolve(void)
{
	real_exit = (void (*)(int))collector_real("_exit");
}

/*
 * _exit's share of the exit path. Programs call _exit from signal handlers (which may have
 * interrupted a CUDA call holding CUPTI's lock, or the loader) and from vfork children (sharing
 * our memory), and shells (dash) end this way. So: nothing at all in another process (a vfork
 * child has another pid; a forked child that collects has its own collector_pid), no CUPTI
 * flush, no loader call, no join; the sender writes its final counts from what the rings hold,
 * waited for at most COLLECTOR_EXIT_WAIT_NS. A handler cannot be told from the program's thread
 * cheaply, so it gets the same bounded path.
 */
static void collector_at_quick_exit(void)
{
	if (!atomic_load(&collector_running) || collector_pid != (pid_t)syscall(SYS_getpid) ||
	    collector_thread_own())
		return;
	static _Atomic int done;
	if (atomic_exchange(&done, 1))
		return;
	source_each_quick_exit();
	sender_stop_within(COLLECTOR_EXIT_WAIT_NS);
	atomic_store(&collector_running, 0);
}

/* _exit skips atexit handlers: the final counts are still sent, within a bound. */
COLLECTOR_EXPORT void _exit(int status)
{
	collector_at_quick_exit();
	if (real_exit)
		real_exit(status);
	syscall(SYS_exit_group, status);
	__builtin_unreachable();
}

static _Atomic int attach_notice_given;

/*
 * Says once per process what an attach cannot give: NVTX of code that already used it, blocking calls and,
 * in a CPython process, everything the Python hook (sitecustomize, set up only at start) reports.
 */
static void collector_attach_notices(void)
{
	if (atomic_exchange(&attach_notice_given, 1))
		return;
	collector_notice(WIRE_NOTICE_WARNING,
	                 "attached to a running process: NVTX ranges of code that already used NVTX, and "
	                 "blocking-call tracing, are not available");
	int (*py_initialized)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "Py_IsInitialized");
	if (py_initialized && py_initialized())
		collector_notice(WIRE_NOTICE_WARNING,
		                 "Python thread names, GC pauses and Python function names unavailable after "
		                 "attach: start the program under cuscope (cuscope -- python3 ...)");
}

void collector_begin(void)
{
	/* Before the sender's first thread scan, which creates each thread's sampling event. */
	source_each_begin();
}

/* Starts the sender (lazily: see sender.c); 0 or -1. */
static int collector_start(void)
{
	/* The sampling signal is claimed now; sampling starts when the sender's lazy start ends. */
	source_each_init(&collector_config);
	if (sender_start() != 0) {
		source_each_stop();
		return -1;
	}
	/* A new string table: names the threads cached for the previous one are sent again. */
	atomic_fetch_add_explicit(&collector_names_epoch, 1, memory_order_relaxed);
	atomic_store_explicit(&collector_running, 1, memory_order_release);
	return 0;
}

/* Armed mode (CUSCOPE_ARM=1 with the collector preloaded): a session of our own to attach to later. */
static const char *collector_armed_session(void)
{
	static char dir[4096];
	const char *cause;
	const char *arm = getenv("CUSCOPE_ARM");
	if (!arm || strcmp(arm, "1") != 0 || session_create(dir, sizeof dir, &cause) != 0)
		return NULL;
	return dir;
}

/*
 * --follow (CUSCOPE_FOLLOW, set by the launcher with CUSCOPE_LAUNCHED_PID): whether this process
 * collects. The launched process always does, whatever it execs; with "none" nobody else; with a
 * list of names, a descendant whose executable or argv[0] has one of these base names. A process
 * not followed stays inert (no thread, socket, ring or timer) but keeps the environment, so its
 * own children decide for themselves.
 */
static const char *follow_argv0; /* from the constructor's arguments */

/* 1 if name is one of the comma-separated names in list. */
static int follow_list_has(const char *list, const char *name)
{
	size_t n = strlen(name);
	for (const char *p = list; *p;) {
		size_t len = strcspn(p, ",");
		if (n && len == n && memcmp(p, name, n) == 0)
			return 1;
		p += len + (p[len] == ',');
	}
	return 0;
}

static const char *follow_basename(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

/* Decides whether this process collects, and whether its forked copies will (same program). */
static int collector_followed(void)
{
	const char *follow = getenv("CUSCOPE_FOLLOW");
	if (!follow || !*follow || strcmp(follow, "all") == 0)
		return 1;
	int ours = 0;
	if (strcmp(follow, "none") != 0) {
		char exe[4096];
		ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
		if (n > 0) {
			exe[n] = '\0';
			ours = follow_list_has(follow, follow_basename(exe));
		}
		if (!ours && follow_argv0)
			ours = follow_list_has(follow, follow_basename(follow_argv0));
	}
	follow_fork_children = ours;
	const char *launched = getenv("CUSCOPE_LAUNCHED_PID");
	return ours || (launched && strtol(launched, NULL, 10) == (long)getpid());
}

/* Runs when the library is loaded (LD_PRELOAD, NVTX/CUDA injection dlopen, or attach). */
static void collector_init(void)
{
	static int initialised;
	if (initialised)
		return;
	initialised = 1;
	int attached = 0;
	const char *session = getenv(SESSION_ENV);
	if (session && *session && !collector_followed())
		return; /* inert: --follow leaves this process out */
	if (!session || !*session) {
		attached = config_read_rendezvous();
		session = attached ? config_value(SESSION_ENV) : collector_armed_session();
	}
	/* Without a session the library stays inert: loaded but costing nothing. */
	if (!session || !*session || strlen(session) >= sizeof collector_config.session_dir)
		return;
	strcpy(collector_config.session_dir, session);
	collector_config.attached = attached;
	if (attached)
		collector_attach_notices();
	if (collector_thread_key_create() != 0)
		return;
	config_load();
	collector_pid = getpid();
	pthread_atfork(NULL, NULL, collector_atfork_child);
	if (collector_start() != 0)
		return;
	atexit(collector_at_exit);
}

/* glibc passes the program's arguments to constructors: argv[0] for --follow. */
__attribute__((constructor)) static void collector_constructor(int argc, char **argv)
{
	if (argc > 0 && argv && argv[0])
		follow_argv0 = argv[0];
	collector_init();
}

/*
 * Called by `cuscope attach` (through ptrace) when the library is already loaded but inert after a
 * detach: reads the new rendezvous and starts collecting again. Returns 1 when running.
 */
COLLECTOR_EXPORT int cuscope_attach_start(void)
{
	if (!config_read_rendezvous())
		return 0;
	const char *session = config_value(SESSION_ENV);
	if (!session || strlen(session) >= sizeof collector_config.session_dir)
		return 0;
	/* Already collecting, but the viewer did not find the socket (the program was started with
	 * another session root or runtime directory): the sender moves it to the viewer's session,
	 * unless a viewer is connected now. */
	if (atomic_load(&collector_running))
		return sender_move_session(session) == 0;
	strcpy(collector_config.session_dir, session);
	collector_config.attached = 1;
	collector_attach_notices();
	if (collector_pid == 0) {
		collector_thread_key_create();
		pthread_atfork(NULL, NULL, collector_atfork_child);
		atexit(collector_at_exit);
	}
	collector_pid = getpid();
	config_load();
	return collector_start() == 0;
}

/* The sender's detach in attach mode: the viewer left, so collection stops and the library rests. */
void collector_detached(void)
{
	atomic_store_explicit(&collector_running, 0, memory_order_release);
}

/* NVTX entry point, found through NVTX_INJECTION64_PATH. */
COLLECTOR_EXPORT int InitializeInjectionNvtx2(void *get_export_table)
{
	collector_init();
	if (!atomic_load(&collector_running) || getenv("CUSCOPE_NO_NVTX"))
		return 0; /* NVTX then uses its no-op implementation */
	/* NVTX's own entry point: by name, as it fills the NVTX source's table and nothing else. */
	return nvtx_inject(get_export_table);
}

/*
 * CUDA driver entry point, found through CUDA_INJECTION64_PATH: called at the first CUDA call.
 * GPU tracing failing (no CUPTI, another subscriber) is reported through a notice; the driver is
 * always told injection succeeded so the application runs unchanged.
 */
COLLECTOR_EXPORT int InitializeInjection(void)
{
	collector_init();
	cuda_injection_called = 1;
	if (atomic_load(&collector_running) && !getenv("CUSCOPE_NO_GPU")) {
		/* The CUDA driver's call to the GPU source: by name, no other source starts here. */
		cupti_start();
		sender_first_event(); /* GPU records are events: the sender starts now */
	}
	return 1;
}

/*
 * Thread renames, seen the moment they happen (LD_PRELOAD interposition): a short-lived thread
 * may be renamed and gone between two scans of /proc. The real function always runs first.
 */
COLLECTOR_EXPORT int pthread_setname_np(pthread_t thread, const char *name)
{
	static int (*real)(pthread_t, const char *);
	if (!real)
		real = (int (*)(pthread_t, const char *))collector_real("pthread_setname_np");
	if (!real)
		return ENOSYS;
	int rc = real(thread, name);
	/* Another thread's tid is not portably known; the sender's scan picks that rename up. */
	if (rc == 0 && pthread_equal(thread, pthread_self()))
		collector_note_rename(collector_gettid(), name);
	return rc;
}

/*
 * Whether the program's close of a number of ours here is the collecting process's: a vfork child
 * shares our memory (and our thread's TLS) but has its own fd table, and a child made without the
 * fork handlers (_Fork, clone) keeps the parent's pid here; neither may give our numbers up. Our
 * own threads pass too (collector_fd_close).
 */
static int inject_closes_ours(void)
{
	return !collector_thread_own() && collector_pid == (pid_t)syscall(SYS_getpid);
}

/* The program is about to close fd: see collector_fd_app_closing. */
static void inject_app_closing(int fd)
{
	if (collector_fd_app_may_hold(fd) && inject_closes_ours())
		collector_fd_app_closing(fd);
}

/*
 * The program's closes: a number of ours it closes (a daemon's close-everything loop) is given up
 * before it is freed, so the collector never closes or writes the file the program opens on it
 * next (fd.c). The real function always runs, with errno as it leaves it.
 */
COLLECTOR_EXPORT int close(int fd)
{
	static int (*real)(int);
	if (!real)
		real = (int (*)(int))collector_real("close");
	inject_app_closing(fd);
	return real ? real(fd) : (int)syscall(SYS_close, fd);
}

COLLECTOR_EXPORT int dup2(int oldfd, int newfd)
{
	static int (*real)(int, int);
	if (!real)
		real = (int (*)(int, int))collector_real("dup2");
	if (oldfd != newfd)
		inject_app_closing(newfd);
	if (real)
		return real(oldfd, newfd);
#ifdef SYS_dup2
	return (int)syscall(SYS_dup2, oldfd, newfd);
#else
	/* aarch64, riscv: no dup2 system call; dup3 refuses oldfd == newfd, where dup2 checks oldfd. */
	if (oldfd == newfd)
		return fcntl(oldfd, F_GETFD) < 0 ? -1 : newfd;
	return (int)syscall(SYS_dup3, oldfd, newfd, 0);
#endif
}

COLLECTOR_EXPORT int dup3(int oldfd, int newfd, int flags)
{
	static int (*real)(int, int, int);
	if (!real)
		real = (int (*)(int, int, int))collector_real("dup3");
	if (oldfd != newfd)
		inject_app_closing(newfd);
	return real ? real(oldfd, newfd, flags) : (int)syscall(SYS_dup3, oldfd, newfd, flags);
}

/* Every number of ours in [first, last] (close_range's CLOSE_RANGE_CLOEXEC closes nothing now). */
static void inject_app_closing_range(unsigned first, unsigned last)
{
	int checked = 0;
	for (unsigned fd = first; fd <= last && fd < 4096; fd++) {
		if (!collector_fd_app_may_hold((int)fd))
			continue;
		if (!checked++ && !inject_closes_ours())
			return;
		collector_fd_app_closing((int)fd);
	}
}

COLLECTOR_EXPORT int close_range(unsigned first, unsigned last, int flags)
{
	static int (*real)(unsigned, unsigned, int);
	if (!real)
		real = (int (*)(unsigned, unsigned, int))collector_real("close_range");
	/* CLOEXEC closes nothing now; UNSHARE closes in the caller's new private table only. */
	if (!(flags & (4 /* CLOSE_RANGE_CLOEXEC */ | 2 /* CLOSE_RANGE_UNSHARE */)))
		inject_app_closing_range(first, last);
	return real ? real(first, last, flags) : (int)syscall(SYS_close_range, first, last, flags);
}

COLLECTOR_EXPORT void closefrom(int lowfd)
{
	static void (*real)(int);
	if (!real)
		real = (void (*)(int))collector_real("closefrom");
	inject_app_closing_range(lowfd < 0 ? 0 : (unsigned)lowfd, ~0u);
	if (real)
		real(lowfd);
	else
		syscall(SYS_close_range, lowfd < 0 ? 0u : (unsigned)lowfd, ~0u, 0);
}

COLLECTOR_EXPORT int prctl(int option, ...)
{
	static int (*real)(int, ...);
	va_list ap;
	va_start(ap, option);
	unsigned long a2 = va_arg(ap, unsigned long), a3 = va_arg(ap, unsigned long);
	unsigned long a4 = va_arg(ap, unsigned long), a5 = va_arg(ap, unsigned long);
	va_end(ap);
	if (!real)
		real = (int (*)(int, ...))collector_real("prctl");
	if (!real)
		return (int)syscall(SYS_prctl, option, a2, a3, a4, a5);
	int rc = real(option, a2, a3, a4, a5);
	if (rc == 0 && option == PR_SET_NAME)
		collector_note_rename(collector_gettid(), (const char *)a2);
	return rc;
}
