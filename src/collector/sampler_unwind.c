/*
 * The sampler's unwinding (see sampler.c): the fault guard that turns a wild read while a sample
 * unwinds into an abandoned sample, our libunwind address space (loaded when first needed), the
 * unwind of a signal context, and sampler_backtrace for the blocking-call wrappers.
 */
#include "collector.h"
#include "sampler_impl.h"

#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The generic libunwind (not UNW_LOCAL_ONLY): unwinding goes through an address space of our own,
 * so libunwind's local memory validation, which reads, writes and re-creates a pipe by descriptor
 * number behind the program's back, is never used. */
#include <libunwind.h>
#include <setjmp.h>
#include <ucontext.h>

/*
 * Unwinding code without unwind tables (JIT code, some driver libraries) can make libunwind read a
 * wild pointer. While a sample unwinds, SIGSEGV/SIGBUS are ours: a fault abandons that sample
 * (siglongjmp) instead of killing the program. The program's own handlers are put back right
 * after each sample, so they stay in charge of every real fault.
 */
static __thread __attribute__((tls_model("initial-exec"))) sigjmp_buf *unwind_escape;
static struct sigaction program_segv, program_bus; /* dispositions before the sample took over */
static _Atomic uint64_t unwind_faults;

static void sampler_fault(int sig, siginfo_t *info, void *context)
{
	sigjmp_buf *escape = unwind_escape;
	if (escape) {
		unwind_escape = NULL;
		atomic_fetch_add_explicit(&unwind_faults, 1, memory_order_relaxed);
		siglongjmp(*escape, 1);
	}
	/* A real fault in another thread while a sample ran: hand it to the program's disposition;
	 * returning re-executes the faulting instruction under it. */
	const struct sigaction *program = sig == SIGBUS ? &program_bus : &program_segv;
	if ((program->sa_flags & SA_SIGINFO) && program->sa_sigaction &&
	    program->sa_sigaction != sampler_fault) {
		program->sa_sigaction(sig, info, context);
		return;
	}
	if (program->sa_handler != SIG_DFL && program->sa_handler != SIG_IGN &&
	    program->sa_sigaction != sampler_fault) {
		program->sa_handler(sig);
		return;
	}
	sampler_real_sigaction(sig, program, NULL);
}

/*
 * Dispositions are process-wide: the first thread to start unwinding installs the guard and the
 * last one to finish puts the program's handlers back, so no thread unwinds unguarded. A
 * spinlock (not a mutex) because this runs in signal handlers; the handler never nests in itself.
 */
static _Atomic int unwinders;
static atomic_flag guard_lock = ATOMIC_FLAG_INIT;

static void fault_guard_enter(void)
{
	while (atomic_flag_test_and_set_explicit(&guard_lock, memory_order_acquire))
		;
	if (unwinders++ == 0) {
		struct sigaction guard;
		memset(&guard, 0, sizeof guard);
		guard.sa_sigaction = sampler_fault;
		guard.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
		sigemptyset(&guard.sa_mask);
		sampler_real_sigaction(SIGSEGV, &guard, &program_segv);
		sampler_real_sigaction(SIGBUS, &guard, &program_bus);
	}
	atomic_flag_clear_explicit(&guard_lock, memory_order_release);
}

static void fault_guard_leave(void)
{
	while (atomic_flag_test_and_set_explicit(&guard_lock, memory_order_acquire))
		;
	if (--unwinders == 0) {
		sampler_real_sigaction(SIGSEGV, &program_segv, NULL);
		sampler_real_sigaction(SIGBUS, &program_bus, NULL);
	}
	atomic_flag_clear_explicit(&guard_lock, memory_order_release);
}

/*
 * Our address space: registers come from the interrupted context, memory is read directly (a fault
 * is caught by the guard above), unwind tables are found the way libunwind finds local ones.
 */
static const int unwind_greg[17] = {REG_RAX, REG_RDX, REG_RCX, REG_RBX, REG_RSI, REG_RDI,
                                    REG_RBP, REG_RSP, REG_R8,  REG_R9,  REG_R10, REG_R11,
                                    REG_R12, REG_R13, REG_R14, REG_R15, REG_RIP};

static int unwind_access_mem(unw_addr_space_t as, unw_word_t addr, unw_word_t *val, int write, void *arg)
{
	(void)as;
	(void)arg;
	if (write || addr < 4096)
		return -UNW_EINVAL;
	/* libunwind may ask for any address (code bytes when it guesses a frame): a word read at
	 * byte alignment, which x86-64 allows and the type states. */
	typedef unw_word_t unaligned_word __attribute__((aligned(1), may_alias));
	*val = *(const volatile unaligned_word *)addr;
	return 0;
}

static int unwind_access_reg(unw_addr_space_t as, unw_regnum_t reg, unw_word_t *val, int write, void *arg)
{
	(void)as;
	const ucontext_t *uc = arg;
	if (write || reg < 0 || reg > 16)
		return -UNW_EBADREG;
	*val = (unw_word_t)uc->uc_mcontext.gregs[unwind_greg[reg]];
	return 0;
}

static int unwind_access_fpreg(unw_addr_space_t as, unw_regnum_t reg, unw_fpreg_t *val, int write, void *arg)
{
	(void)as, (void)reg, (void)val, (void)write, (void)arg;
	return -UNW_EBADREG;
}

static int unwind_resume(unw_addr_space_t as, unw_cursor_t *cursor, void *arg)
{
	(void)as, (void)cursor, (void)arg;
	return -UNW_EINVAL;
}

static int unwind_proc_name(unw_addr_space_t as, unw_word_t addr, char *buf, size_t len, unw_word_t *off,
                            void *arg)
{
	(void)as, (void)addr, (void)buf, (void)len, (void)off, (void)arg;
	return -UNW_EINVAL;
}

static unw_addr_space_t unwind_space;
static pthread_once_t unwind_once = PTHREAD_ONCE_INIT;

/*
 * libunwind is loaded when it is first needed (sampling starts, or a blocking call's stack), not
 * with the collector: a short-lived child never maps it and the libraries it brings.
 */
#define UNWIND_NAME_(sym) #sym
#define UNWIND_NAME(sym)  UNWIND_NAME_(sym) /* the libunwind macros name the generic x86_64 symbols */
static struct {
	__typeof__(unw_get_accessors) *get_accessors;
	__typeof__(unw_create_addr_space) *create_addr_space;
	__typeof__(unw_set_caching_policy) *set_caching_policy;
	__typeof__(unw_init_remote) *init_remote;
	__typeof__(unw_get_reg) *get_reg;
	__typeof__(unw_step) *step;
	unw_addr_space_t *local_addr_space;
} unw;

/* Loads libunwind and finds what we use; 0 or -1. */
static int sampler_unwind_load(void)
{
	/* Our run path ($ORIGIN/.., where `make dist` bundles libunwind) applies to what we dlopen, not
	 * to what those libraries need, and a loaded library matches later by soname. So the generic
	 * part first, from the same place as the x86_64 part (never a bundled one mixed with the
	 * system's); liblzma (a stable ABI) only where the system has none, so the program's own
	 * stays the system's. */
	if (!dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL)) {
		dlopen("liblzma.so.5", RTLD_NOW | RTLD_LOCAL);
		dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
	}
	void *lib = dlopen("libunwind-x86_64.so.8", RTLD_NOW | RTLD_LOCAL);
	if (!lib)
		lib = dlopen("libunwind-x86_64.so", RTLD_NOW | RTLD_LOCAL);
	if (!lib)
		return -1;
	unw.get_accessors = (__typeof__(unw.get_accessors))dlsym(lib, UNWIND_NAME(unw_get_accessors));
	unw.create_addr_space =
	    (__typeof__(unw.create_addr_space))dlsym(lib, UNWIND_NAME(unw_create_addr_space));
	unw.set_caching_policy =
	    (__typeof__(unw.set_caching_policy))dlsym(lib, UNWIND_NAME(unw_set_caching_policy));
	unw.init_remote = (__typeof__(unw.init_remote))dlsym(lib, UNWIND_NAME(unw_init_remote));
	unw.get_reg = (__typeof__(unw.get_reg))dlsym(lib, UNWIND_NAME(unw_get_reg));
	unw.step = (__typeof__(unw.step))dlsym(lib, UNWIND_NAME(unw_step));
	unw.local_addr_space = (unw_addr_space_t *)dlsym(lib, UNWIND_NAME(unw_local_addr_space));
	return unw.get_accessors && unw.create_addr_space && unw.set_caching_policy && unw.init_remote &&
	               unw.get_reg && unw.step && unw.local_addr_space
	           ? 0
	           : -1;
}

static void sampler_unwind_create(void)
{
	if (sampler_unwind_load() != 0)
		return;
	unw_accessors_t acc = *unw.get_accessors(*unw.local_addr_space);
	acc.access_mem = unwind_access_mem;
	acc.access_reg = unwind_access_reg;
	acc.access_fpreg = unwind_access_fpreg;
	acc.resume = unwind_resume;
	acc.get_proc_name = unwind_proc_name;
	unw_addr_space_t space = unw.create_addr_space(&acc, 0);
	/* Cache per thread so unwinding never takes a global lock inside the signal handler. */
	if (space)
		unw.set_caching_policy(space, UNW_CACHE_PER_THREAD);
	unwind_space = space;
}

/* Creates our address space (once, outside any signal handler); 0 or -1. */
int sampler_unwind_init(void)
{
	pthread_once(&unwind_once, sampler_unwind_create);
	return unwind_space ? 0 : -1;
}

/* Unwinds a context into pcs (leaf first); a fault ends the walk early. */
size_t sampler_unwind(void *context, uint64_t *pcs, size_t max)
{
	volatile size_t depth = 0;
	if (!unwind_space || !atomic_load_explicit(&collector_loader_usable, memory_order_acquire))
		return 0;
	fault_guard_enter();
	sigjmp_buf escape;
	if (sigsetjmp(escape, 1) == 0) {
		unwind_escape = &escape;
		unw_cursor_t cursor;
		if (unw.init_remote(&cursor, unwind_space, context) == 0) {
			do {
				unw_word_t ip = 0;
				if (unw.get_reg(&cursor, UNW_REG_IP, &ip) < 0 || ip == 0)
					break;
				pcs[depth] = ip;
				depth = depth + 1;
			} while (depth < max && unw.step(&cursor) > 0);
		}
	}
	/* A fault ended the walk: keep the frames found so far (the leaf is the useful part). */
	unwind_escape = NULL;
	fault_guard_leave();
	return depth;
}

int sampler_backtrace(uint64_t *pcs, int max)
{
	ucontext_t uc;
	/* Loading libunwind (dlopen) takes the loader's lock too. */
	if (max <= 0 || !atomic_load_explicit(&collector_loader_usable, memory_order_acquire) ||
	    sampler_unwind_init() != 0 || getcontext(&uc) != 0)
		return 0;
	size_t depth = sampler_unwind(&uc, pcs, (size_t)max);
	/* The first frame is this function: the caller's own frame comes next. */
	if (depth > 0) {
		memmove(pcs, pcs + 1, (depth - 1) * sizeof *pcs);
		depth--;
	}
	return (int)depth;
}
