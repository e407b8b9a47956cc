/*
 * GPU hardware metrics, live (an event source): one sampler per physical GPU across the user's
 * processes (gpulock.c), all work on the sender thread (never an application thread). Where
 * CUPTI's PM sampling is usable (CUDA >= 12.6, Hopper and later, profiling permitted, counters
 * free) the GPU samples the metrics pmconfig.c configured into a hardware buffer, which poll
 * decodes every PMSAMPLE_DECODE_NS and evaluates into WIRE_FRAME_GPU_METRICS samples. When refused
 * (privileges, counters held by another profiler such as DCGM or a second rank, virtualised,
 * older CUDA) it falls back to NVML GPM, then to plain NVML utilisation, and says once why.
 */
#include "collector.h"
#include "pmsample_impl.h"
#include "gpulock.h"
#include "pmconfig.h"
#include "source.h"

#include "cuscope/clock.h"
#include "cuscope/safefs.h"
#include "cuscope/session.h"
#include "cuscope/wire.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/prctl.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cupti_pmsampling.h>
#include <cupti_profiler_target.h>
#include <cupti_result.h>
#include <cupti_target.h>

struct pmsample_state pms;

/* ---- settings ---- */

int pmsample_init(const struct collector_config *config)
{
	memset(&pms, 0, sizeof pms);
	/* Without GPU tracing (--no-gpu, no CUDA) it never starts: it waits for tracing to run. */
	pms.enabled = strcmp(config->gpu_metrics, "off") != 0;
	pms.hz = config->gpu_metrics_hz ? config->gpu_metrics_hz : 50;
	if (!config->gpu_metrics[0]) {
		for (size_t i = 0; i < pmconfig_default_count && i < PMCONFIG_METRICS_MAX; i++)
			pms.metrics[pms.metric_count++] = pmconfig_default_metrics[i];
		pms.default_set = 1;
		return 0;
	}
	snprintf(pms.list, sizeof pms.list, "%s", config->gpu_metrics);
	for (char *save = NULL, *m = strtok_r(pms.list, ",", &save);
	     m && pms.metric_count < PMCONFIG_METRICS_MAX; m = strtok_r(NULL, ",", &save))
		pms.metrics[pms.metric_count++] = m;
	pms.enabled = pms.enabled && pms.metric_count > 0;
	return 0;
}

/* ---- output ---- */

void pmsample_flush(void)
{
	sender_gpu_metrics(pms.batch, pms.batch_n);
	pms.samples += pms.batch_n;
	pms.batch_n = 0;
}

void pmsample_emit(const struct pmsample_gpu *g, uint32_t id, uint16_t source, uint64_t start, uint64_t end,
                   double value)
{
	if (!id || value != value || end < start || !start)
		return;
	struct wire_gpu_metric *m = &pms.batch[pms.batch_n++];
	memset(m, 0, sizeof *m);
	m->start_ns = start;
	m->end_ns = end;
	m->value = value;
	memcpy(m->uuid, g->uuid, 16);
	m->metric_id = id;
	m->device = (uint16_t)g->ordinal;
	m->source = source;
	if (pms.batch_n == PMSAMPLE_BATCH)
		pmsample_flush();
}

static uint64_t pmsample_real_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The GPU timestamps' offset to CLOCK_MONOTONIC, from the newest sample's end (pmconfig_clock_offset). */
void pmsample_clock(struct pmsample_gpu *g, uint64_t newest_end)
{
	g->clock_offset = pmconfig_clock_offset(newest_end, clock_mono_ns(), pmsample_real_ns(),
	                                        g->clock_known ? &g->clock_offset : NULL);
	g->clock_known = 1;
}

/* ---- GPUs ---- */

/* The user's private session root as a verified directory fd, or -1. */
static int pmsample_root_fd(void)
{
	char root[PATH_MAX];
	if (session_base_dir(root, sizeof root) != 0)
		return -1;
	/* An fd of the collector's table (the program may take any number meanwhile), checked private. */
	int dir = collector_fd_open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0);
	if (dir < 0)
		return -1;
	if (!collector_fd_check(dir) || safefs_check_dir(dir, getuid(), SAFEFS_PRIVATE) != 0) {
		collector_fd_close(dir);
		return -1;
	}
	return dir;
}

/*
 * The sender's calls into CUPTI's PM sampling or NVML for the GPUs: entered only while the program's
 * exit has not closed them (seq_cst on both flags: the closer sees busy, or the sender sees closed).
 */
static int pmsample_enter(void)
{
	atomic_store(&pms.busy, 1);
	if (!atomic_load(&pms.closed))
		return 1;
	atomic_store(&pms.busy, 0);
	return 0;
}

static void pmsample_leave(void)
{
	atomic_store(&pms.busy, 0);
}

/*
 * At the program's exit, before CUPTI's, libnvperf's and the CUDA runtime's own exit handlers (this
 * one is registered after they were loaded, and atexit runs in reverse order): stops PM sampling while
 * the libraries and the context still exist. The collector's final stop runs after them, when calling
 * into them crashed the program (a bf16 GEMM loop under --gpu-metrics on exited with SIGSEGV). Waits
 * for the sender's decode in progress, at most PMSAMPLE_EXIT_WAIT_MS; past that the sampler is left
 * running rather than pulled from under the sender.
 */
static void pmsample_at_exit(void)
{
	if (pms.pid != getpid() || atomic_exchange(&pms.closed, 1))
		return;
	for (int waited = 0; atomic_load(&pms.busy) && waited < PMSAMPLE_EXIT_WAIT_MS; waited++) {
		struct timespec ms = {0, 1000000L};
		nanosleep(&ms, NULL);
	}
	if (atomic_load(&pms.busy))
		return;
	for (size_t i = 0; i < pms.gpu_count; i++)
		if (pms.gpu[i].mode == PMSAMPLE_PM)
			pmsample_pm_release(&pms.gpu[i]);
}

/* Once a sampler started in this process (its libraries are loaded now). */
static void pmsample_hook_exit(void)
{
	if (!atomic_exchange(&pms.exit_hooked, 1))
		atexit(pmsample_at_exit);
}

/*
 * Takes the GPU's lock and starts the best way of sampling it that works; what to say about it
 * (why it fell back, who samples it) goes to its note, said by pmsample_say.
 */
static void pmsample_gpu_begin(struct pmsample_gpu *g, int root, uint64_t now)
{
	pid_t holder = 0;
	int fd = root >= 0 ? gpulock_take(root, g->uuid, &holder) : -ENOENT;
	g->note_head = NULL;
	if (fd == -EBUSY) {
		if (g->mode != PMSAMPLE_ELSEWHERE) {
			g->note_head = "GPU metrics of ";
			g->note_level = WIRE_NOTICE_INFO;
			if (holder)
				snprintf(g->note_tail, sizeof g->note_tail,
				         " come from pid %d (one sampler per GPU)", (int)holder);
			else
				snprintf(g->note_tail, sizeof g->note_tail,
				         " come from another process (one sampler per GPU)");
		}
		g->mode = PMSAMPLE_ELSEWHERE;
		g->retry_ns = now + PMSAMPLE_RETRY_NS;
		return;
	}
	/* Without the root (not ours, or missing) we sample unlocked rather than not at all. */
	/* Registered as ours: it is closed only while the number still is (the program may take it). */
	g->lock_fd = fd >= 0 ? collector_fd_own(fd, S_IFREG) : -1;
	char why_pm[256] = "", why_gpm[160] = "", why_nvml[160] = "";
	g->note_level = WIRE_NOTICE_WARNING;
	if (pmsample_pm_start(g, why_pm, sizeof why_pm) == 0) {
		g->mode = PMSAMPLE_PM;
		pmsample_hook_exit();
		return;
	}
	if (pmsample_gpm_start(g, why_gpm, sizeof why_gpm) == 0) {
		g->mode = PMSAMPLE_GPM;
		pmsample_hook_exit();
		g->note_head = "GPU metrics from NVML GPM on ";
		snprintf(g->note_tail, sizeof g->note_tail, ": %s", why_pm);
		return;
	}
	if (pmsample_util_start(g, why_nvml, sizeof why_nvml) == 0) {
		g->mode = PMSAMPLE_NVML;
		pmsample_hook_exit();
		g->note_head = "GPU metrics from NVML utilisation only on ";
		snprintf(g->note_tail, sizeof g->note_tail, ": %s; %s", why_pm, why_gpm);
		return;
	}
	g->mode = PMSAMPLE_NONE;
	g->note_head = "GPU metrics unavailable on ";
	snprintf(g->note_tail, sizeof g->note_tail, ": %s; %s", why_pm, why_gpm[0] ? why_gpm : why_nvml);
	if (g->lock_fd >= 0) {
		collector_fd_close(g->lock_fd);
		g->lock_fd = -1;
	}
}

/* Says the GPUs' notes, once each: GPUs with the same words in one line ("on GPU0,1,2: ..."). */
static void pmsample_say(void)
{
	for (size_t i = 0; i < pms.gpu_count; i++) {
		struct pmsample_gpu *g = &pms.gpu[i];
		if (!g->note_head)
			continue;
		char list[128];
		int n = snprintf(list, sizeof list, "GPU%d", g->ordinal);
		for (size_t j = i + 1; j < pms.gpu_count; j++) {
			struct pmsample_gpu *h = &pms.gpu[j];
			if (h->note_head != g->note_head || h->note_level != g->note_level ||
			    strcmp(h->note_tail, g->note_tail) != 0)
				continue;
			if (n > 0 && (size_t)n < sizeof list)
				n += snprintf(list + n, sizeof list - (size_t)n, ",%d", h->ordinal);
			h->note_head = NULL;
		}
		collector_notice(g->note_level, "%s%s%s", g->note_head, list, g->note_tail);
		g->note_head = NULL;
	}
}

/* The CUDA devices of the process and their UUIDs (the driver is loaded: tracing runs). */
static int pmsample_devices(char *why, size_t why_size)
{
	void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD | RTLD_LOCAL);
	int (*count)(int *) = cuda ? (int (*)(int *))dlsym(cuda, "cuDeviceGetCount") : NULL;
	int (*get)(int *, int) = cuda ? (int (*)(int *, int))dlsym(cuda, "cuDeviceGet") : NULL;
	int (*uuid)(uint8_t *, int) =
	    cuda ? (int (*)(uint8_t *, int))dlsym(cuda, "cuDeviceGetUuid_v2") : NULL;
	if (cuda && !uuid)
		uuid = (int (*)(uint8_t *, int))dlsym(cuda, "cuDeviceGetUuid");
	int n = 0;
	int rc = count && get && uuid ? count(&n) : -1;
	if (rc != 0 || n <= 0) {
		if (cuda)
			dlclose(cuda);
		/* GPU tracing starts inside the program's cuInit, which may still be under way: the driver
		 * answers CUDA_ERROR_NOT_INITIALIZED until it returns. */
		if (rc == PMSAMPLE_CUDA_ERROR_NOT_INITIALIZED)
			return -EAGAIN;
		snprintf(why, why_size, "the CUDA driver lists no devices here (cuDeviceGetCount: %d)", rc);
		return -ENOENT;
	}
	for (int i = 0; i < n && pms.gpu_count < PMSAMPLE_GPUS_MAX; i++) {
		int dev;
		struct pmsample_gpu *g = &pms.gpu[pms.gpu_count];
		memset(g, 0, sizeof *g);
		g->lock_fd = -1;
		if (get(&dev, i) != 0 || uuid(g->uuid, dev) != 0)
			continue;
		g->ordinal = i;
		char *p = g->uuid_text + sprintf(g->uuid_text, "GPU-");
		for (int b = 0; b < 16; b++) {
			if (b == 4 || b == 6 || b == 8 || b == 10)
				*p++ = '-';
			p += sprintf(p, "%02x", g->uuid[b]);
		}
		pms.gpu_count++;
	}
	dlclose(cuda);
	return 0;
}

static void pmsample_start(void)
{
	char why[160] = "";
	int rc;
	/* Waits on its own thread for the program's cuInit to return; a detach or stop cancels. */
	for (int tries = 0; (rc = pmsample_devices(why, sizeof why)) == -EAGAIN; tries++) {
		if (atomic_load(&pms.start_cancel))
			return;
		if (tries * PMSAMPLE_INIT_POLL_MS >= PMSAMPLE_INIT_WAIT_MS) {
			snprintf(why, sizeof why, "the program's cuInit did not return within %d s",
			         PMSAMPLE_INIT_WAIT_MS / 1000);
			break;
		}
		struct timespec pause = {0, PMSAMPLE_INIT_POLL_MS * 1000000L};
		nanosleep(&pause, NULL);
	}
	if (rc != 0) {
		collector_notice(WIRE_NOTICE_WARNING, "GPU metrics unavailable: %s", why);
		return;
	}
	uint64_t now = clock_mono_ns();
	int root = pmsample_root_fd();
	for (size_t i = 0; i < pms.gpu_count; i++)
		pmsample_gpu_begin(&pms.gpu[i], root, now);
	if (root >= 0)
		collector_fd_close(root);
	pmsample_say();
}

static uint64_t pmsample_thread_cpu(void)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The start thread: what would hold the sender up for a few hundred ms, off its back. */
static void *pmsample_start_main(void *arg)
{
	(void)arg;
	collector_mark_own_thread();
	collector_register_own_tid(collector_gettid());
	prctl(PR_SET_NAME, "cuscope-gpumet");
	pmsample_start();
	atomic_store(&pms.start_cpu_ns, pmsample_thread_cpu());
	atomic_store(&pms.start_state, PMSAMPLE_STARTED);
	return NULL;
}

/* Sender thread: waits for the start thread (a stop or detach while it runs). */
static void pmsample_join_start(int cancel)
{
	if (pms.start_joinable) {
		if (cancel)
			atomic_store(&pms.start_cancel, 1);
		pthread_join(pms.start_thread, NULL);
		pms.start_joinable = 0;
	}
}

/* Sender thread: the names of what each GPU samples, interned once the start is done. */
static void pmsample_name(void)
{
	for (size_t i = 0; i < pms.gpu_count; i++) {
		struct pmsample_gpu *g = &pms.gpu[i];
		if (g->mode == PMSAMPLE_PM)
			for (size_t k = 0; k < pmconfig_used(g->cfg); k++) {
				const char *n = pmconfig_used_name(g->cfg, k);
				g->ids[k] = sender_intern(n, strlen(n));
			}
		if (g->mode == PMSAMPLE_GPM)
			for (size_t k = 0; k < PMSAMPLE_GPM_COUNT; k++)
				g->nvml_ids[k] = sender_intern(pmsample_gpm_metrics[k].name,
				                               strlen(pmsample_gpm_metrics[k].name));
		if (g->mode == PMSAMPLE_NVML && !pms.util_id)
			pms.util_id = sender_intern("nvml:gpu_util", strlen("nvml:gpu_util"));
	}
	pms.named = 1;
}

/* Sender thread: starts the start thread once the program initialised CUDA; 1 once it is done. */
static int pmsample_ready(uint64_t now_ns)
{
	if (pms.started)
		return 1;
	int state = atomic_load(&pms.start_state);
	if (state == PMSAMPLE_IDLE) {
		/* The GPUs exist for us once the program initialised CUDA (GPU tracing started). */
		if (!now_ns || !cupti_running())
			return 0;
		pms.pid = getpid();
		atomic_store(&pms.start_cancel, 0);
		atomic_store(&pms.start_state, PMSAMPLE_STARTING);
		sigset_t all, old;
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		pms.start_joinable = pthread_create(&pms.start_thread, NULL, pmsample_start_main, NULL) == 0;
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		if (!pms.start_joinable) /* no thread: here, then */
			pmsample_start_main(NULL);
		return 0;
	}
	if (state != PMSAMPLE_STARTED)
		return 0;
	pmsample_join_start(0);
	pms.started = 1;
	return 1;
}

void pmsample_poll(uint64_t now_ns)
{
	if (!pms.enabled)
		return;
	if (!now_ns && atomic_load(&pms.start_state) == PMSAMPLE_STARTING)
		pmsample_join_start(1); /* final: what it started is decoded once; a wait for cuInit ends */
	/* Closed by the program's exit: not even the names are read (the exit freed the configs). */
	if (!pmsample_ready(now_ns) || !pmsample_enter())
		return;
	if (!pms.named)
		pmsample_name();
	uint64_t now = now_ns ? now_ns : clock_mono_ns();
	if (now_ns && now < pms.next_ns) {
		pmsample_leave();
		return;
	}
	pms.next_ns = now + 1000000000ull / pms.hz;
	int root = -2;
	for (size_t i = 0; i < pms.gpu_count; i++) {
		struct pmsample_gpu *g = &pms.gpu[i];
		switch (g->mode) {
		case PMSAMPLE_PM:
			if (!now_ns || now - g->prev_ns >= PMSAMPLE_DECODE_NS) {
				pmsample_pm_decode(g);
				g->prev_ns = now;
			}
			break;
		case PMSAMPLE_GPM:
			pmsample_gpm_poll(g, now);
			break;
		case PMSAMPLE_NVML:
			pmsample_util_poll(g, now);
			break;
		case PMSAMPLE_ELSEWHERE:
			/* The sampling process may have ended: its lock went with it. */
			if (now_ns && now >= g->retry_ns) {
				if (root == -2)
					root = pmsample_root_fd();
				pmsample_gpu_begin(g, root, now);
				pmsample_say();
				pms.named = 0; /* a GPU it takes over needs its names */
			}
			break;
		case PMSAMPLE_NONE:
			break;
		}
	}
	pmsample_leave();
	if (root >= 0)
		collector_fd_close(root);
	pmsample_flush();
}

/* Lets go of every GPU (detach, or the process is done with us); a later attach starts again. */
void pmsample_detach(void)
{
	if (pms.pid == getpid()) {
		pmsample_join_start(1);
		if (atomic_load(&pms.start_state) == PMSAMPLE_STARTED)
			pms.started = 1;
	}
	if (pms.started && pms.pid == getpid()) {
		/* After the program's exit closed them, CUPTI and NVML are not called again. */
		int open = pmsample_enter();
		for (size_t i = 0; i < pms.gpu_count; i++) {
			struct pmsample_gpu *g = &pms.gpu[i];
			if (g->mode == PMSAMPLE_PM && open)
				pmsample_pm_release(g);
			if (g->gpm[0] && pms.nv.gpm_free && open)
				pms.nv.gpm_free(g->gpm[0]);
			if (g->gpm[1] && pms.nv.gpm_free && open)
				pms.nv.gpm_free(g->gpm[1]);
			if (g->lock_fd >= 0)
				collector_fd_close(g->lock_fd);
			memset(g, 0, sizeof *g);
			g->lock_fd = -1;
		}
		if (open)
			pmsample_leave();
	}
	pms.gpu_count = 0;
	pms.started = 0;
	pms.named = 0;
	pms.batch_n = 0;
	atomic_store(&pms.start_state, PMSAMPLE_IDLE);
}

/* Final flush: what the GPU sampled up to now, then no more. */
void pmsample_stop(void)
{
	if (atomic_load(&pms.start_state) == PMSAMPLE_IDLE || pms.pid != getpid())
		return;
	pmsample_poll(0);
	pmsample_detach();
	pms.enabled = 0;
}

/*
 * A forked child: the parent's CUPTI and NVML state is not ours; its copies of the lock fds are
 * closed (while still ours: nothing of the program ran yet) so that the lock ends with the sampler.
 */
void pmsample_after_fork(void)
{
	for (size_t i = 0; i < pms.gpu_count; i++)
		if (pms.gpu[i].lock_fd >= 0)
			collector_fd_close(pms.gpu[i].lock_fd);
	int enabled = pms.enabled;
	unsigned hz = pms.hz;
	memset(pms.gpu, 0, sizeof pms.gpu);
	pms.gpu_count = 0;
	pms.started = 0;
	pms.named = 0;
	/* A start thread of the parent does not exist here. */
	pms.start_joinable = 0;
	atomic_store(&pms.start_state, PMSAMPLE_IDLE);
	atomic_store(&pms.start_cpu_ns, 0);
	/* The parent's exit hook is the child's too (atexit survives fork); it acts for the pid that
	 * started, which the child becomes when it starts its own samplers. */
	atomic_store(&pms.closed, 0);
	atomic_store(&pms.busy, 0);
	pms.batch_n = 0;
	pms.samples = 0;
	pms.cu.profiler_ready = 0;
	pms.enabled = enabled;
	pms.hz = hz;
}

int pmsample_running(void)
{
	return pms.started && pms.gpu_count > 0;
}

uint64_t pmsample_start_cpu_ns(void)
{
	return atomic_load(&pms.start_cpu_ns);
}

void pmsample_cost(struct wire_cost *cost)
{
	cost->events = pms.samples;
	cost->level = pmsample_running() ? pms.hz : 0;
}
