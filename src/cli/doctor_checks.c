/*
 * The checks of `cuscope doctor` (the verb and its report are in doctor.c). Every probe is real:
 * perf_event_open on the calling thread, a ptrace seize of a process of our own that is not our
 * descendant, dlopen of the optional libraries in the order the collector loads them.
 */
#include "doctor.h"

#include "cuscope/cli.h"
#include "cuscope/launch.h"
#include "cuscope/log.h"
#include "cuscope/safefs.h"
#include "cuscope/session.h"

#include <cupti_version.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define DOCTOR_PYTHON_TIMEOUT_MS 10000

/* Capability bits (linux/capability.h) we look for in CapEff. */
#define DOCTOR_CAP_SYS_PTRACE 19
#define DOCTOR_CAP_SYS_ADMIN  21
#define DOCTOR_CAP_PERFMON    38

void doctor_say(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, size, fmt, ap);
	va_end(ap);
}

/* Reads the first integer of a /proc file; 0 or -errno. */
static int doctor_read_int(const char *path, long *out)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return -errno;
	int ok = fscanf(f, "%ld", out) == 1;
	fclose(f);
	return ok ? 0 : -EINVAL;
}

/* Whether this process holds capability bit cap in its effective set (/proc/self/status CapEff). */
static int doctor_has_cap(int cap)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[256];
	unsigned long long eff = 0;
	if (!f)
		return 0;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "CapEff: %llx", &eff) == 1)
			break;
	fclose(f);
	return (int)((eff >> cap) & 1);
}

/* The collector library the launcher would inject. */
static void doctor_collector(struct doctor_finding *f)
{
	char path[PATH_MAX];
	if (launch_find_collector(path, sizeof path) == 0) {
		f->status = DOCTOR_OK;
		DETAIL(f, "%s: programs can be launched and attached with the collector", path);
		return;
	}
	const char *env = getenv("CUSCOPE_COLLECTOR");
	f->status = DOCTOR_MISSING;
	if (env && *env) {
		DETAIL(f, "CUSCOPE_COLLECTOR=%s is not a readable file: nothing can be traced", env);
		FIX(f, "point CUSCOPE_COLLECTOR at libcuscope.so, or unset it to use the one installed "
		       "beside this binary");
	} else {
		DETAIL(f,
		       "libcuscope.so is not in ../lib/cuscope/ beside this binary: nothing can be traced");
		FIX(f, "reinstall (make install or make dist keep bin/ and lib/cuscope/ together), or set "
		       "CUSCOPE_COLLECTOR to the library");
	}
}

/* The session root: created 0700 at first use, refused when it is not a private directory of ours. */
static void doctor_session_dir(struct doctor_finding *f)
{
	char root[PATH_MAX], parent[PATH_MAX], name[NAME_MAX + 1];
	f->status = DOCTOR_MISSING;
	if (session_root(root, sizeof root) != 0 ||
	    safefs_split(root, parent, sizeof parent, name, sizeof name) != 0) {
		DETAIL(f, "the session directory's path is too long: nothing can be traced");
		FIX(f, "set CUSCOPE_SESSION_ROOT (or XDG_RUNTIME_DIR) to a shorter directory of your own");
		return;
	}
	int pfd = safefs_open_dir(parent, getuid(), 0);
	if (pfd < 0) {
		DETAIL(f, "%s: its parent %s cannot be used (%s): nothing can be traced", root, parent,
		       pfd == -EPERM || pfd == -ENOTDIR ? "another user may change it" : strerror(-pfd));
		FIX(f, "set CUSCOPE_SESSION_ROOT to a directory only you (or root) can change");
		return;
	}
	int fd = safefs_open_dir_at(pfd, name, getuid(), SAFEFS_PRIVATE);
	if (fd == -ENOENT) {
		if (faccessat(pfd, ".", W_OK | X_OK, AT_EACCESS) == 0) {
			f->status = DOCTOR_OK;
			DETAIL(f, "%s: made private (0700) at the first session", root);
		} else {
			DETAIL(f, "%s cannot be created (%s is not writable): nothing can be traced", root,
			       parent);
			FIX(f, "set CUSCOPE_SESSION_ROOT to a directory you can write");
		}
	} else if (fd < 0) {
		DETAIL(f,
		       "%s is not a private directory of yours (%s): cuscope refuses it, nothing can "
		       "be traced",
		       root,
		       fd == -ENOTDIR ? "not a directory, or a link"
		       : fd == -EPERM ? "another owner, or group/other permission bits"
		                      : strerror(-fd));
		FIX(f,
		    "see `ls -ld %s`: if it is yours, chmod 700 it; else remove it as root, or set "
		    "CUSCOPE_SESSION_ROOT to a directory of your own",
		    root);
	} else if (faccessat(fd, ".", W_OK | X_OK, AT_EACCESS) != 0) {
		DETAIL(f, "%s is not writable: nothing can be traced", root);
		FIX(f, "chmod 700 %s", root);
	} else {
		f->status = DOCTOR_OK;
		DETAIL(f, "%s: private (0700) and yours", root);
	}
	if (fd >= 0)
		close(fd);
	close(pfd);
}

/* Opens and closes one perf event on the calling thread; 0 or -errno. */
static int doctor_perf_try(uint32_t type, uint64_t config, int user_only)
{
	struct perf_event_attr attr;
	memset(&attr, 0, sizeof attr);
	attr.size = sizeof attr;
	attr.type = type;
	attr.config = config;
	attr.disabled = 1;
	attr.exclude_kernel = attr.exclude_hv = (unsigned)user_only;
	long fd = syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return -errno;
	close((int)fd);
	return 0;
}

/* Why a perf event was refused, in words. */
static const char *doctor_perf_why(int err)
{
	switch (err) {
	case -EACCES:
	case -EPERM:
		return "not permitted";
	case -ENOENT:
	case -EOPNOTSUPP:
	case -ENODEV:
		return "this CPU or VM exposes no hardware PMU";
	case -ENOSYS:
		return "this kernel has no perf events";
	default:
		return strerror(-err);
	}
}

/*
 * Perf events as the collector opens them: the perf-mode sampler's task-clock (user and kernel),
 * the counters' retry with user space only, and a hardware event (cycles) both ways.
 */
static void doctor_perf(struct doctor_finding *f)
{
	long paranoid = 99;
	int have_paranoid = doctor_read_int("/proc/sys/kernel/perf_event_paranoid", &paranoid) == 0;
	char level[64] = "";
	if (have_paranoid)
		snprintf(level, sizeof level, "kernel.perf_event_paranoid=%ld", paranoid);
	else
		snprintf(level, sizeof level, "no kernel.perf_event_paranoid");
	int sw = doctor_perf_try(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, 0);
	int sw_user = sw == 0 ? 0 : doctor_perf_try(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, 1);
	int hw = doctor_perf_try(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, 0);
	int hw_user = hw == 0 ? 0 : doctor_perf_try(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, 1);
	int denied = sw_user == -EACCES || sw_user == -EPERM || hw_user == -EACCES || hw_user == -EPERM;
	const char *lower = "as root: sysctl -w kernel.perf_event_paranoid=1 (lasts until reboot; a file "
	                    "in /etc/sysctl.d/ keeps it)";
	if (sw_user != 0) {
		f->status = DOCTOR_MISSING;
		DETAIL(f,
		       "perf events refused (%s; %s): no hardware counters, no perf-mode sampling; "
		       "timer sampling and /proc counters still work",
		       doctor_perf_why(sw_user), level);
		if (denied)
			FIX(f, "%s", lower);
		else
			FIX(f, "none needed for the defaults; a kernel with perf events (not gVisor) adds "
			       "hardware counters");
		return;
	}
	if (hw == 0 && sw == 0) {
		f->status = DOCTOR_OK;
		DETAIL(f, "software and hardware events (--counters cycles,instructions,...) work (%s)",
		       level);
		return;
	}
	f->status = DOCTOR_LIMITED;
	if (hw_user == 0) {
		DETAIL(f,
		       "software and hardware events work for user space only (%s): counters leave "
		       "out kernel time",
		       level);
		FIX(f, "%s", lower);
		return;
	}
	DETAIL(f,
	       "software events work%s; hardware counters (--counters cycles,instructions) refused: "
	       "%s (%s)",
	       sw == 0 ? "" : " for user space only", doctor_perf_why(hw_user), level);
	if (hw_user == -EACCES || hw_user == -EPERM || sw != 0)
		FIX(f, "%s%s", lower,
		    hw_user == -EACCES || hw_user == -EPERM
		        ? ""
		        : " (kernel time; hardware counters also need a PMU)");
	else
		FIX(f, "none inside this machine: a VM needs its hypervisor to pass the PMU through; "
		       "sampling and software counters are unaffected");
}

pid_t doctor_ptrace_target;

/* Runs in a probe child: seizes doctor_ptrace_target (a sibling) as `cuscope attach` would. */
static void doctor_ptrace(struct doctor_finding *f)
{
	long scope = -1;
	int yama = doctor_read_int("/proc/sys/kernel/yama/ptrace_scope", &scope) == 0;
	int cap = doctor_has_cap(DOCTOR_CAP_SYS_PTRACE);
	int err = 0;
	if (doctor_ptrace_target <= 0)
		err = ECHILD;
	else if (ptrace(PTRACE_SEIZE, doctor_ptrace_target, NULL, NULL) != 0)
		err = errno;
	/* Our exit detaches; the target is never stopped. */
	char why[128];
	if (yama)
		snprintf(why, sizeof why, "kernel.yama.ptrace_scope=%ld%s", scope,
		         scope == 1   ? ": descendants only"
		         : scope == 2 ? ": CAP_SYS_PTRACE only"
		         : scope >= 3 ? ": no attach at all"
		                      : "");
	else
		snprintf(why, sizeof why, "no Yama");
	if (!err) {
		f->status = DOCTOR_OK;
		DETAIL(f, "cuscope attach can load the collector into %s (%s%s)",
		       cap ? "any running process" : "your running processes", why,
		       cap ? ", CAP_SYS_PTRACE" : "");
		return;
	}
	f->status = DOCTOR_LIMITED;
	DETAIL(f,
	       "cuscope attach cannot load the collector into a running process (ptrace: %s; %s%s); "
	       "armed processes (cuscope run --detached) can still be attached",
	       strerror(err), why, cap ? ", CAP_SYS_PTRACE" : "");
	if (yama && scope >= 3)
		FIX(f, "ptrace stays off until reboot (ptrace_scope 3): start programs with `cuscope run "
		       "--detached` to attach later");
	else if (yama && scope >= 1)
		FIX(f, "attach as root, or as root: sysctl -w kernel.yama.ptrace_scope=0; or start "
		       "programs with `cuscope run --detached`");
	else
		FIX(f, "a container or seccomp policy forbids ptrace (docker: --cap-add=SYS_PTRACE); or "
		       "start programs with `cuscope run --detached`");
}

/* Opens a library the way the collector's dlopen would and says where it came from. */
static void *doctor_dlopen(const char *name, int flags, const char *probe_symbol, char *where,
                           size_t where_size)
{
	void *h = dlopen(name, flags);
	if (!h)
		return NULL;
	Dl_info info;
	void *sym = probe_symbol ? dlsym(h, probe_symbol) : NULL;
	if (sym && dladdr(sym, &info) && info.dli_fname)
		snprintf(where, where_size, "%s", info.dli_fname);
	else
		snprintf(where, where_size, "%s", name);
	return h;
}

/* libunwind as the sampler loads it (src/collector/sampler_unwind.c, sampler_unwind_load). */
static void doctor_libunwind(struct doctor_finding *f)
{
	char where[PATH_MAX] = "";
	if (!dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL)) {
		dlopen("liblzma.so.5", RTLD_NOW | RTLD_LOCAL);
		dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
	}
	/* The collector is x86_64 only: it names the x86_64 library and its _Ux86_64_ symbols. */
	void *h = doctor_dlopen("libunwind-x86_64.so.8", RTLD_NOW | RTLD_LOCAL, "_Ux86_64_init_remote", where,
	                        sizeof where);
	if (!h)
		h = doctor_dlopen("libunwind-x86_64.so", RTLD_NOW | RTLD_LOCAL, "_Ux86_64_init_remote", where,
		                  sizeof where);
	if (h && dlsym(h, "_Ux86_64_init_remote") && dlsym(h, "_Ux86_64_step")) {
		f->status = DOCTOR_OK;
		DETAIL(f, "%s: CPU samples carry call stacks", where);
		return;
	}
	f->status = DOCTOR_MISSING;
	DETAIL(f, "libunwind-x86_64.so.8 %s: no CPU sampling (no stacks, no hot functions)",
	       h ? "lacks _Ux86_64_init_remote" : "not found");
	FIX(f, "apt install libunwind8 (dnf install libunwind), or use the `make dist` bundle, which "
	       "carries it");
}

/* libpfm4 as the counters load it (src/collector/counters.c, counters_add_pfm). */
static void doctor_libpfm(struct doctor_finding *f)
{
	char where[PATH_MAX] = "";
	void *h = doctor_dlopen("libpfm.so.4", RTLD_NOW | RTLD_LOCAL, "pfm_initialize", where, sizeof where);
	int (*initialize)(void) = h ? (int (*)(void))dlsym(h, "pfm_initialize") : NULL;
	int rc = initialize ? initialize() : -1;
	if (rc == 0 && dlsym(h, "pfm_get_os_event_encoding")) {
		f->status = DOCTOR_OK;
		DETAIL(f, "%s: --counters takes libpfm4 event names of this CPU", where);
		return;
	}
	f->status = DOCTOR_MISSING;
	if (!h)
		DETAIL(f, "libpfm.so.4 not found: --counters knows only cycles, instructions, "
		          "LLC-load-misses and the software counters");
	else
		DETAIL(f,
		       "%s does not initialise (pfm_initialize: %d): --counters knows only perf's own "
		       "names",
		       where, rc);
	FIX(f, "apt install libpfm4 (dnf install libpfm) if you want CPU-specific counters");
}

/* libcupti as the collector finds it (src/collector/cupti.c, cupti_open); keep the two in step. */
static void *doctor_cupti_open(char *where, size_t where_size, char *why, size_t why_size)
{
	static const char *const names[] = {"libcupti.so.13", "libcupti.so.12", "libcupti.so"};
	const char *probe = "cuptiGetVersion";
	const char *override = getenv("CUSCOPE_CUPTI_PATH");
	if (override && *override) {
		void *h = doctor_dlopen(override, RTLD_NOW | RTLD_GLOBAL, probe, where, where_size);
		if (!h)
			snprintf(why, why_size, "cannot load CUSCOPE_CUPTI_PATH=%s: %s", override, dlerror());
		return h;
	}
	const char *cuda_home = getenv("CUDA_HOME");
	const char *const dirs[] = {cuda_home, "/usr/local/cuda"};
	char path[PATH_MAX];
	for (size_t d = 0; d < 2; d++) {
		if (!dirs[d])
			continue;
		const char *const subdirs[] = {"extras/CUPTI/lib64", "lib64"};
		for (size_t s = 0; s < 2; s++) {
			snprintf(path, sizeof path, "%s/%s/libcupti.so", dirs[d], subdirs[s]);
			void *h = doctor_dlopen(path, RTLD_NOW | RTLD_GLOBAL, probe, where, where_size);
			if (h)
				return h;
		}
	}
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		void *h = doctor_dlopen(names[i], RTLD_NOW | RTLD_GLOBAL, probe, where, where_size);
		if (h)
			return h;
	}
	snprintf(why, why_size, "libcupti not found (CUDA_HOME, /usr/local/cuda, the loader's path)");
	return NULL;
}

/* CUPTI: found where the collector looks, has what it needs, and is not older than our headers. */
static void doctor_cupti(struct doctor_finding *f)
{
	/* What cupti_resolve requires (the rest is optional there). */
	static const char *const required[] = {
	    "cuptiGetVersion",
	    "cuptiSubscribe",
	    "cuptiEnableCallback",
	    "cuptiActivityEnable",
	    "cuptiActivityRegisterCallbacks",
	    "cuptiActivityFlushAll",
	    "cuptiActivityGetNextRecord",
	    "cuptiActivityGetNumDroppedRecords",
	};
	const unsigned built = CUPTI_API_VERSION;
	char where[PATH_MAX] = "", why[PATH_MAX + 256] = "";
	void *h = doctor_cupti_open(where, sizeof where, why, sizeof why);
	f->status = DOCTOR_MISSING;
	const char *fix_install = "install CUDA's CUPTI (%u or newer; it is in the toolkit) or set "
	                          "CUSCOPE_CUPTI_PATH to its libcupti.so";
	if (!h) {
		DETAIL(f, "%s: no GPU lanes (kernels, copies, syncs); CPU and NVTX lanes still work", why);
		FIX(f, fix_install, built / 10000 * 10000);
		return;
	}
	for (size_t i = 0; i < sizeof required / sizeof required[0]; i++)
		if (!dlsym(h, required[i])) {
			DETAIL(f, "%s lacks %s (too old for this collector): no GPU lanes", where,
			       required[i]);
			FIX(f, fix_install, built / 10000 * 10000);
			return;
		}
	uint32_t version = 0;
	int (*get_version)(uint32_t *) = (int (*)(uint32_t *))dlsym(h, "cuptiGetVersion");
	int rc = get_version(&version);
	if (rc != 0 || version == 0) {
		DETAIL(f, "%s: cuptiGetVersion failed (%d): no GPU lanes", where, rc);
		FIX(f, fix_install, built / 10000 * 10000);
		return;
	}
	/* The collector's rule (cupti_start): the same major API, or newer. */
	if (version < built / 10000 * 10000) {
		DETAIL(f, "%s is CUPTI API %u, older than the %u this cuscope was built for: no GPU lanes",
		       where, version, built);
		FIX(f, fix_install, built / 10000 * 10000);
		return;
	}
	f->status = DOCTOR_OK;
	DETAIL(f,
	       "%s, CUPTI API %u (built for %u); a program that loads its own libcupti (PyTorch) "
	       "has that one used",
	       where, version, built);
}

typedef struct doctor_nvml_device *doctor_nvml_device_t;

/* The GPUs NVML sees (libnvidia-ml.so.1, as the UI loads it in src/ui/nvml.c). */
static void doctor_gpu(struct doctor_finding *f)
{
	f->status = DOCTOR_MISSING;
	void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		DETAIL(f, "no NVIDIA driver library (libnvidia-ml.so.1): no GPU to trace here; CPU and "
		          "NVTX lanes work");
		FIX(f, "on a GPU machine install the NVIDIA driver; nothing to do on a CPU-only one");
		return;
	}
	int (*init)(void) = (int (*)(void))dlsym(h, "nvmlInit_v2");
	int (*count)(unsigned *) = (int (*)(unsigned *))dlsym(h, "nvmlDeviceGetCount_v2");
	int (*by_index)(unsigned, doctor_nvml_device_t *) =
	    (int (*)(unsigned, doctor_nvml_device_t *))dlsym(h, "nvmlDeviceGetHandleByIndex_v2");
	int (*get_name)(doctor_nvml_device_t, char *, unsigned) =
	    (int (*)(doctor_nvml_device_t, char *, unsigned))dlsym(h, "nvmlDeviceGetName");
	int (*driver)(char *, unsigned) = (int (*)(char *, unsigned))dlsym(h, "nvmlSystemGetDriverVersion");
	const char *(*error_string)(int) = (const char *(*)(int))dlsym(h, "nvmlErrorString");
	if (!init || !count || !by_index || !get_name) {
		DETAIL(f, "libnvidia-ml.so.1 lacks the NVML calls cuscope uses (a stub or a very old "
		          "driver)");
		FIX(f, "install a current NVIDIA driver");
		return;
	}
	int rc = init();
	if (rc != 0) {
		DETAIL(f, "nvmlInit failed: %s: no GPU to trace",
		       error_string && error_string(rc) ? error_string(rc) : "error");
		FIX(f, "check `nvidia-smi`: load the driver (modprobe nvidia), make /dev/nvidia* "
		       "readable, or give the container the GPUs (--gpus all)");
		return;
	}
	unsigned n = 0;
	char version[96] = "?";
	if (driver)
		driver(version, sizeof version);
	if (count(&n) != 0 || n == 0) {
		DETAIL(f, "NVIDIA driver %s loaded but no GPU visible: no GPU to trace", version);
		FIX(f, "check CUDA_VISIBLE_DEVICES and `nvidia-smi -L`; a container needs the GPUs passed "
		       "in");
		return;
	}
	char names[400] = "";
	size_t used = 0;
	for (unsigned i = 0; i < n && used + 1 < sizeof names; i++) {
		doctor_nvml_device_t dev;
		char name[96] = "?";
		if (by_index(i, &dev) == 0)
			get_name(dev, name, sizeof name);
		int w = snprintf(names + used, sizeof names - used, "%s%u %s", i ? ", " : "", i, name);
		if (w < 0)
			break;
		used += (size_t)w;
	}
	f->status = DOCTOR_OK;
	DETAIL(f, "%u GPU%s (%s), driver %s", n, n == 1 ? "" : "s", names, version);
}

/* The NVIDIA driver's profiling restriction (GPU hardware metrics, not kernel tracing). */
static void doctor_gpu_profiling(struct doctor_finding *f)
{
	FILE *p = fopen("/proc/driver/nvidia/params", "re");
	f->status = DOCTOR_MISSING;
	if (!p) {
		DETAIL(f, "no NVIDIA kernel driver loaded (/proc/driver/nvidia/params absent): nothing "
		          "to profile here");
		FIX(f, "on a GPU machine load the NVIDIA driver; nothing to do on a CPU-only one");
		return;
	}
	char line[256];
	long admin_only = -1;
	while (fgets(line, sizeof line, p))
		if (sscanf(line, "RmProfilingAdminOnly: %ld", &admin_only) == 1)
			break;
	fclose(p);
	int admin = doctor_has_cap(DOCTOR_CAP_SYS_ADMIN);
	if (admin_only < 0) {
		f->status = DOCTOR_LIMITED;
		DETAIL(f, "the driver does not say whether GPU profiling is admin-only "
		          "(no RmProfilingAdminOnly): kernel tracing is not affected");
		return;
	}
	if (admin_only == 0 || admin) {
		f->status = DOCTOR_OK;
		DETAIL(f, "GPU performance counters allowed (RmProfilingAdminOnly: %ld%s)", admin_only,
		       admin_only ? ", you are admin" : "");
		return;
	}
	f->status = DOCTOR_LIMITED;
	DETAIL(f, "GPU performance counters are for admins only (RmProfilingAdminOnly: 1): kernel "
	          "tracing works, GPU hardware metrics (CUPTI profiling, Nsight Compute) do not");
	FIX(f, "as root: echo 'options nvidia NVreg_RestrictProfilingToAdminUsers=0' > "
	       "/etc/modprobe.d/nvidia-profiling.conf, then reload the driver or reboot");
}

/* Finds prog on PATH as execvp would; 0 with its path in out, or -ENOENT. */
static int doctor_which(const char *prog, char *out, size_t size)
{
	const char *path = getenv("PATH");
	if (!path || !*path)
		return -ENOENT;
	while (*path) {
		size_t len = strcspn(path, ":");
		int n = len ? snprintf(out, size, "%.*s/%s", (int)len, path, prog)
		            : snprintf(out, size, "./%s", prog);
		if (n > 0 && (size_t)n < size && access(out, X_OK) == 0)
			return 0;
		path += len;
		if (*path == ':')
			path++;
	}
	return -ENOENT;
}

/* Runs argv with stdin /dev/null, collecting its stdout into out; its exit status or -errno. */
static int doctor_run_program(char *const argv[], char *out, size_t size, int timeout_ms)
{
	int fds[2];
	if (pipe2(fds, O_CLOEXEC) != 0)
		return -errno;
	pid_t pid = fork();
	if (pid < 0) {
		int err = errno;
		close(fds[0]);
		close(fds[1]);
		return -err;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (null >= 0) {
			dup2(null, 0);
			dup2(null, 2);
		}
		dup2(fds[1], 1);
		execv(argv[0], argv);
		_exit(127);
	}
	close(fds[1]);
	size_t used = 0;
	struct timespec start;
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		long waited = (now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000;
		struct pollfd pfd = {fds[0], POLLIN, 0};
		if (waited >= timeout_ms || poll(&pfd, 1, (int)(timeout_ms - waited)) <= 0) {
			kill(pid, SIGKILL);
			break;
		}
		ssize_t n = read(fds[0], out + used, size - 1 - used);
		if (n <= 0)
			break;
		used += (size_t)n;
		if (used + 1 >= size)
			break;
	}
	out[used] = '\0';
	close(fds[0]);
	int status;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (WIFSIGNALED(status))
		return -ETIMEDOUT;
	return WEXITSTATUS(status);
}

/* python3 on PATH: CPython >= 3.12 built with perf trampolines is what --python-perf needs. */
static void doctor_python(struct doctor_finding *f)
{
	char path[PATH_MAX], out[1024];
	f->status = DOCTOR_MISSING;
	if (doctor_which("python3", path, sizeof path) != 0) {
		DETAIL(f, "no python3 on PATH: --python-perf has nothing to start (C and CUDA programs "
		          "are unaffected)");
		FIX(f, "for Python programs install CPython 3.12 or newer (apt, pyenv, uv python install)");
		return;
	}
	/* No -X perf: it would leave a /tmp/perf-PID.map behind; the build's own flag says it all. */
	char *const argv[] = {path, "-c",
	                      "import sys, sysconfig\n"
	                      "print(sys.implementation.name, '%d.%d.%d' % sys.version_info[:3],\n"
	                      "      int(hasattr(sys, 'is_stack_trampoline_active')),\n"
	                      "      int(sysconfig.get_config_var('PY_HAVE_PERF_TRAMPOLINE') or 0),\n"
	                      "      sys.executable)\n",
	                      NULL};
	int rc = doctor_run_program(argv, out, sizeof out, DOCTOR_PYTHON_TIMEOUT_MS);
	char impl[32], version[32], exe[PATH_MAX];
	int has_fn = 0, has_cfg = 0, major = 0, minor = 0;
	if (rc != 0 ||
	    sscanf(out, "%31s %31s %d %d %4095[^\n]", impl, version, &has_fn, &has_cfg, exe) != 5 ||
	    sscanf(version, "%d.%d", &major, &minor) != 2) {
		f->status = DOCTOR_LIMITED;
		DETAIL(f, "%s does not run (%s): --python-perf cannot be checked", path,
		       rc == -ETIMEDOUT ? "no answer in 10 s"
		       : rc < 0         ? strerror(-rc)
		       : rc             ? "it exited non-zero"
		                        : "unexpected output");
		FIX(f, "run `%s -V` to see why", path);
		return;
	}
	if (strcmp(impl, "cpython") != 0 || major < 3 || (major == 3 && minor < 12) || !has_fn || !has_cfg) {
		f->status = DOCTOR_LIMITED;
		DETAIL(f,
		       "python3 is %s %s (%s)%s: Python stacks show only the interpreter, not your "
		       "functions",
		       impl, version, exe,
		       strcmp(impl, "cpython") != 0 || major < 3 || (major == 3 && minor < 12)
		           ? ", perf trampolines need CPython 3.12+"
		           : ", built without perf trampolines");
		FIX(f, "put CPython 3.12 or newer first on PATH (apt, pyenv, uv python install), then "
		       "use --python-perf");
		return;
	}
	f->status = DOCTOR_OK;
	DETAIL(f,
	       "python3 is CPython %s (%s) with perf trampolines: --python-perf names Python "
	       "functions in CPU stacks",
	       version, exe);
}

const struct doctor_check doctor_checks[] = {
    {"collector", "collector", 0, doctor_collector},
    {"session dir", "session_dir", 0, doctor_session_dir},
    {"perf events", "perf_events", 0, doctor_perf},
    {"ptrace/attach", "ptrace", 1, doctor_ptrace},
    {"libunwind", "libunwind", 1, doctor_libunwind},
    {"libpfm4", "libpfm4", 1, doctor_libpfm},
    {"Python perf", "python_perf", 1, doctor_python},
    {"CUPTI", "cupti", 1, doctor_cupti},
    {"GPU", "gpu", 1, doctor_gpu},
    {"GPU profiling", "gpu_profiling", 0, doctor_gpu_profiling},
};

pid_t doctor_ptrace_target_start(void)
{
	pid_t parent = getpid();
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(0);
		for (;;)
			pause();
	}
	return pid;
}
