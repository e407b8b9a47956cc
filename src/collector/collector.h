/*
 * Shared state of the injected collector (libcuscope.so): configuration, per-thread rings and the
 * emit path application threads call. Application threads only ever write their own ring.
 */
#ifndef CUSCOPE_COLLECTOR_H
#define CUSCOPE_COLLECTOR_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cuscope/rank.h"
#include "cuscope/ring.h"

#define COLLECTOR_EXPORT __attribute__((visibility("default")))

/* A string an application registered once and refers to by handle (NVTX domain, registered string). */
struct collector_string {
	char *text;
	uint32_t length;
	uint32_t id;         /* per-process interned id, valid while generation matches (sender only) */
	uint32_t generation; /* string-table generation the id belongs to */
	uint32_t reserved;
};

/*
 * One entry of a thread's cache of NVTX message pointers (owner thread only). A push whose pointer
 * is in its slot and whose bytes still equal the copy kept there sends only the slot number; the
 * sender maps the slot to the string it interned from the push that filled it. The bytes are
 * compared on every push, so a program that rewrites a buffer in place still gets each name right.
 */
#define COLLECTOR_NAME_SLOTS 64
#define COLLECTOR_NAME_MAX   115 /* longest message a slot keeps (bytes without the NUL) */
#define COLLECTOR_NAME_NONE  0xffu
struct collector_name_slot {
	const char *ptr;                       /* the program's pointer, NULL = empty */
	uint32_t len;                          /* bytes of text without the NUL */
	uint32_t epoch;                        /* collector_names_epoch when filled */
	char text[COLLECTOR_NAME_MAX + 1 + 8]; /* NUL-terminated copy; 8 spare bytes for word reads */
};

/* A thread's ring, linked into the global list the sender walks. */
struct thread_ring {
	struct ring ring;
	struct thread_ring *next; /* written before publication; later only by the sender */
	pid_t tid;
	_Atomic int dead;      /* the thread ended; the sender frees the ring once drained */
	int depth;             /* NVTX push/pop nesting depth, owner thread only */
	int drop_from;         /* 1 + depth of the outermost push not recorded (0 = none): it and every
	                        * push and pop nested inside it are dropped, so recorded nesting stays
	                        * exact. Owner thread only. */
	_Atomic int wake_sent; /* the sender was woken for this ring and has not drained it yet */
	struct collector_name_slot names[COLLECTOR_NAME_SLOTS]; /* owner thread only */
	uint32_t name_ids[COLLECTOR_NAME_SLOTS]; /* sender only: interned id of each slot's string */
	/* Sender only: the last NVTX time sent for this thread. Ticks are converted with a map
	 * re-anchored at each drain (and a process switches from clock_gettime to ticks once), so a
	 * pop converted after its push could come out a few ns before it; a thread's NVTX calls are
	 * in time order, and so are their converted times. */
	uint64_t last_nvtx_ns;
};

/* Bumped before each start of the collector (a new string table): cached names are re-sent. */
extern _Atomic uint32_t collector_names_epoch;

struct collector_config {
	char session_dir[4096];
	size_t ring_bytes;       /* per-thread ring capacity, power of two */
	size_t buffer_bytes;     /* flight-recorder / send queue bound */
	uint32_t wait_viewer_ms; /* at exit, wait this long for a first viewer */
	uint32_t max_strings;
	size_t gpu_buffer_bytes; /* bound on CUPTI activity buffers */
	int attached;            /* started by `cuscope attach`: stop collecting when the viewer leaves */
	int ticks_wanted;        /* CUSCOPE_CLOCK is not "mono" */
	/* Hot paths stamp TSC ticks (COLLECTOR_REC_TICKS), converted by the sender. Set by the sender
	 * thread once it has checked the TSC; each record carries its own flag, so the switch can
	 * happen while application threads write. */
	_Atomic int use_ticks;
	unsigned sample_hz;         /* CPU samples per thread CPU-second, 0 = off */
	uint64_t osrt_threshold_ns; /* blocking calls at least this long are recorded */
	int osrt_enabled;           /* CUSCOPE_OSRT_THRESHOLD_US is not "off" */
	char counters[512];         /* CUSCOPE_COUNTERS: "none", a list, or "" for the default set */
	/* CUSCOPE_OVERHEAD_BUDGET: the CPU-side overhead the collector keeps to, per mille of the
	 * program's own CPU time; 0 = off (what was asked is kept) */
	unsigned overhead_budget_permille;
	uint64_t lazy_start_ns; /* the sender starts its work after this long or the first event */
	struct rank_ids rank;   /* the launcher's labels from this process's own environment */
	int torch;              /* CUSCOPE_TORCH=1 (--torch): the Python hook turns on torch's NVTX ranges */
	/* CUSCOPE_GPU_METRICS: "off", "" (on, the default metrics) or a comma list of metric names */
	char gpu_metrics[2048];
	unsigned gpu_metrics_hz; /* CUSCOPE_GPU_METRICS_HZ: samples per second */
};

extern struct collector_config collector_config;
/* 1 once the collector runs in this process (session found, sender started). */
extern _Atomic int collector_running;
/*
 * 1 while the dynamic loader's lock may be taken: dl_iterate_phdr, dladdr, dlopen and libunwind
 * (which finds unwind tables through dl_iterate_phdr). A forked child inherits that lock as it was:
 * held for good if another thread of the parent held it at the fork. So in a child it is 0 until a
 * throwaway thread of ours has taken and released the lock once (collector_loader_probe); until
 * then stacks are not unwound and new modules are not looked up, and if that thread never returns,
 * they never are in that child, rather than an application thread hanging on the lock.
 */
extern _Atomic int collector_loader_usable;
/* In a forked child: marks the loader unusable and starts the thread that proves it usable. */
void collector_loader_probe(void);
/* libc's function NAME (of VERSION) behind a wrapper, found when the collector loaded (real.c):
 * never the loader's lock in a forked child. NULL when there is none. */
void *collector_real(const char *name);
void *collector_real_version(const char *name, const char *version);
/* The list of thread rings (pushed by application threads as they make their ring): its head now,
 * for the sender to walk. */
struct thread_ring *collector_rings_head(void);
/* Sender only: takes tr (whose predecessor in the walk was prev, NULL for the head) out of the
 * list; returns tr's predecessor now (the walk's prev for the ring after tr). */
struct thread_ring *collector_rings_unlink(struct thread_ring *prev, struct thread_ring *tr);
/* Rings that could not be made (no memory): events lost on application threads. */
uint64_t collector_rings_lost_no_memory(void);
/* Wakes the sender (any thread, no fd, no lock). */
void collector_wake_sender(void);

/* This thread's ring, created on first use; NULL when not running or out of memory. */
struct thread_ring *collector_thread_ring_slow(void);
/* This thread's ring once made; NULL before, and from the moment the thread starts to exit.
 * initial-exec: read in signal handlers, where lazy TLS allocation must not happen. */
extern __thread struct thread_ring *collector_ring_self __attribute__((tls_model("initial-exec")));
/* The hot path of collector_thread_ring_slow (every NVTX call): two loads. */
static inline struct thread_ring *collector_thread_ring(void)
{
	struct thread_ring *tr = collector_ring_self;
	if (__builtin_expect(tr != NULL, 1) && atomic_load_explicit(&collector_running, memory_order_acquire))
		return tr;
	return collector_thread_ring_slow();
}
/* For signal handlers: this thread's ring, created with signal-safe calls only; NULL if impossible. */
struct thread_ring *collector_thread_ring_in_signal(void);
/* 1 once the calling thread's exit has retired its ring (it records nothing more). */
int collector_thread_exiting(void);
/* 1 while the calling thread is inside the collector (its ring code, unwinding) or is one of the
 * collector's own threads: samples and blocking-call records must not be taken then. */
int collector_thread_busy(void);
/* Marks the calling thread as inside the collector; returns the previous state for leave. */
int collector_thread_enter(void);
void collector_thread_leave(int was);
/* Like leave, but never takes a deferred sample: for signal handlers (their record is not committed yet). */
void collector_thread_restore(int was);
/* Signal handler: defer this thread's sample until it leaves the collector. */
void collector_note_pending_sample(void);
/* CLOCK_MONOTONIC now, ns. */
uint64_t collector_now_ns(void);
/* Cached OS thread id of the caller. */
pid_t collector_gettid(void);
/*
 * Appends one record to the calling thread's ring; text (may be NULL) is copied inline. Never
 * blocks; counts a drop when the ring is full.
 */
int collector_emit(uint16_t kind, uint32_t subject_tid, uint64_t value,
                   const struct collector_string *name_ref, const struct collector_string *domain_ref,
                   const char *text, size_t text_len);
/*
 * Like collector_emit, but refuses unless `headroom` bytes stay free afterwards: pushes leave room
 * for the pops that close already-open ranges, so nesting survives a full ring. Returns 1 if
 * written, 0 if dropped (counted).
 */
int collector_emit_reserved(size_t headroom, uint16_t kind, uint32_t subject_tid, uint64_t value,
                            const struct collector_string *name_ref,
                            const struct collector_string *domain_ref, const char *text, size_t text_len);
/* Marks the calling thread as one of the collector's own (never traced). */
void collector_mark_own_thread(void);
/* 1 on one of the collector's own threads. */
int collector_thread_own(void);
/* Once per start: the key whose destructor retires an ending thread's ring; 0 or -1. */
int collector_thread_key_create(void);
/* Forked child: forgets the parent's rings; with collecting, also this thread's identity. */
void collector_rings_after_fork(int collecting);
/* A thread renamed itself (interposed pthread_setname_np/prctl): recorded on its ring. */
void collector_note_rename(pid_t tid, const char *name);
/* Records a tid of the collector's own threads so thread scans leave it out. */
void collector_register_own_tid(pid_t tid);
/* 1 if tid is one of the collector's own threads. */
int collector_is_own_tid(pid_t tid);

/* Record flag on WIRE_EV_THREAD_NAME: the kernel name changed (pthread_setname_np/prctl), not NVTX. */
#define COLLECTOR_NAME_FROM_KERNEL 1u
/* Record flag: time_ns (and value, for blocking-call ranges) hold clock_ticks(), not ns. */
#define COLLECTOR_REC_TICKS 0x8000u
/* A timestamp for a ring record on an application thread: ticks where usable (a few ns), else ns. */
uint64_t collector_stamp(uint16_t *flags);

/*
 * Compact ring records for NVTX push and pop, the hottest events: a pair is 32 bytes instead of
 * 2 x 48 + text. Both are the 8 bytes of a ring_record's header and a timestamp; the tid is the
 * ring owner's. A push's low flag byte is its name slot (COLLECTOR_NAME_NONE: none); after the
 * timestamp come, each only when its flag is set, the category (8 bytes), the domain pointer, the
 * registered string's pointer, then text_len bytes of message when the message is new to its
 * slot (or not cacheable). A pop may carry the domain pointer.
 */
#define COLLECTOR_REC_NVTX_PUSH 201
#define COLLECTOR_REC_NVTX_POP  202
#define COLLECTOR_REC_DOMAIN    0x4000u /* flag: a domain pointer follows */
#define COLLECTOR_REC_NAME_REF  0x2000u /* flag: a registered string's pointer follows */
#define COLLECTOR_REC_CATEGORY  0x1000u /* flag: the category follows (uint32 and 4 zero bytes) */
#define COLLECTOR_REC_SLOT_MASK 0x00ffu /* push: the name slot */
struct collector_rec_nvtx {
	uint16_t size, kind, text_len, flags;
	uint64_t time; /* ticks (COLLECTOR_REC_TICKS) or CLOCK_MONOTONIC ns */
};
_Static_assert(sizeof(struct collector_rec_nvtx) == 16, "collector_rec_nvtx layout");

/*
 * A CUDA API call recorded by CUPTI callback (cupti_api.c): 32 bytes on the calling thread's ring,
 * whose owner is the caller. Both times are stamped alike (COLLECTOR_REC_TICKS or ns).
 */
#define COLLECTOR_REC_CUDA_API 203
struct collector_rec_cuda_api {
	uint16_t size, kind, cbid, flags;
	uint64_t start, end;
	uint32_t correlation_id;
	uint32_t domain; /* CUpti_CallbackDomain: runtime or driver */
};
_Static_assert(sizeof(struct collector_rec_cuda_api) == 32, "collector_rec_cuda_api layout");
/* Writes one on the calling thread's ring; start was stamped by collector_stamp with start_flags.
 * Returns 1 if written, 0 if dropped (counted) or not collecting. Keeps errno. */
int collector_emit_cuda_api(uint64_t start, uint16_t start_flags, uint32_t correlation_id, uint16_t cbid,
                            uint32_t domain);
/*
 * The decoded fields of an NVTX extended payload (nvtx.c), written right after the push, start or
 * mark they belong to: a generic ring record whose text is up to WIRE_ARGS_MAX struct
 * nvtxpayload_arg (nvtxpayload.h); the sender sends one WIRE_EV_NVTX_ARG per field.
 */
#define COLLECTOR_REC_NVTX_ARGS 204
/* Sender thread: the wire event of a recorded API call (cupti_api.c). */
void cupti_api_ring_record(const struct collector_rec_cuda_api *rec, uint32_t tid);

/*
 * NVTX fast path on the owner thread's ring tr (from collector_thread_ring): a push of an ASCII
 * message (NULL = none), cached by pointer; a push of text already converted or of a registered
 * string (never cached); a pop. Never block, keep errno; return 1 if written, 0 if dropped
 * (counted).
 */
int collector_nvtx_push(struct thread_ring *tr, const char *msg, uint32_t category,
                        const struct collector_string *domain);
int collector_nvtx_push_text(struct thread_ring *tr, const char *text, size_t len, uint32_t category,
                             const struct collector_string *domain, const struct collector_string *name_ref);
int collector_nvtx_pop(struct thread_ring *tr, const struct collector_string *domain);
/* Counts one record dropped on purpose (a pop whose push was dropped). */
void collector_count_drop(struct thread_ring *tr);
/*
 * Emits a range record [start_ns, end_ns) of `kind` named by name_ref, with an optional stack
 * (return addresses, caller first) as its inline text. Returns 1 if written.
 */
int collector_emit_stack(uint16_t kind, uint64_t start_ns, uint64_t end_ns,
                         const struct collector_string *name_ref, const uint64_t *pcs, size_t depth);
/* Blocking-call tracing: threshold and on/off (from the environment at start). */
void osrt_init(uint64_t threshold_ns, int enabled);
/* Makes a heap copy of text as a collector_string (NULL on allocation failure). */
struct collector_string *collector_string_new(const char *text, size_t length);

/* Attach mode: the sender calls this after stopping, leaving the library inert. */
void collector_detached(void);

/* Sender thread, once the lazy start is over: sampling and the clock choice (collector side). */
void collector_begin(void);

struct wire_gpu_event;
struct wire_gpu_device;

/* Queues a one-line message for the user (any thread; the first 8 are kept and shown to viewers). */
void collector_notice(uint32_t level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* collector_notice for a notice a viewer acts on: topic is an enum wire_notice_topic. */
void collector_notice_about(uint32_t level, uint32_t topic, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Sender-thread services for the GPU decoder. */
uint32_t sender_intern(const char *text, size_t length);
/* Changes whenever interned ids are reset (after fork), so caches of ids can be dropped. */
uint32_t sender_string_generation(void);
void sender_gpu_event(const struct wire_gpu_event *ev);
void sender_gpu_device(const struct wire_gpu_device *dev);
void sender_gpu_context(const struct wire_gpu_event *ev);

/* CUPTI: start on the first CUDA call (InitializeInjection); 0 or -1 (a notice says why). */
int cupti_start(void);
/* Attach mode, viewer gone: flush and ask CUPTI to detach (cuptiFinalize at the next API exit). */
void cupti_detach(void);
/* Sender thread: hands over what CUPTI completed so far and decodes it; tracing goes on. */
void cupti_flush(void);
/* Starts CUPTI in a process whose CUDA is already up (attach): also dumps existing devices,
 * contexts and streams. Call from a collector thread. */
int cupti_start_late(void);
/* Exit: stop the flush thread and force out every record (bounded). */
void cupti_stop(void);
/* Sender thread: decodes completed CUPTI buffers; returns records decoded. */
size_t cupti_drain(void);
int cupti_running(void);
/* The dlopen handle of the libcupti in use while GPU tracing runs, else NULL (pmsample.c). */
void *cupti_library(void);
/* GPU-side loss counters by wire cause. */
uint64_t cupti_loss(uint32_t cause);
void cupti_forget_after_fork(void);

/* Ring record kinds private to the collector (beyond the wire event kinds). */
#define COLLECTOR_REC_SAMPLE 200 /* text = uint64 return addresses, leaf first */

/* CPU sampling at hz per thread CPU-second; 0 disables. Claims the signal at start-up (before the
 * program can take every free one); sampling itself starts with sampler_begin. Returns 0 or -1
 * (a notice says why). */
int sampler_init(unsigned hz);
/* Sender thread, when the lazy start ends: measures the signal's cost and starts sampling the
 * threads the sender finds. 0 or -1. */
int sampler_begin(void);
/* Sender thread: start/stop sampling a thread found in / gone from /proc/self/task. */
void sampler_thread_added(pid_t tid);
void sampler_thread_removed(pid_t tid);
void sampler_stop(void);
void sampler_forget_after_fork(void);
uint64_t sampler_skipped(void);
/* Sender thread, periodically: keeps the sampling cost in budget, follows a claimed signal, reports
 * the requested/set/achieved rates; sampler_poll(0) reports now (at exit). */
void sampler_poll(uint64_t now_ns);
/* Before an exec (application thread): disarms every timer and perf event and takes this
 * thread's pending signals of ours, the program's mask restored exactly; returns 1 if it did
 * (then sampler_exec_end must follow if the exec fails), 0 when the sampler is not ours here. */
int sampler_exec_begin(void);
/* After a failed exec: arms sampling again. */
void sampler_exec_end(void);
/* The caller's stack (return addresses, the caller's own frame first) without libunwind's
 * descriptor-based memory validation; for application threads outside signal handlers. */
int sampler_backtrace(uint64_t *pcs, int max);

/* Per-thread counters (sender thread): open on thread found, close on gone, read periodically;
 * counters_poll(0) forces a read of everything (at exit). */
int counters_init(const char *list);
void counters_thread_added(pid_t tid);
void counters_thread_removed(pid_t tid);
/* A traced thread's own last word as it ended (its THREAD_EXIT record): its CPU time, context
 * switches and page faults then, sent as its final counter values (the sender's procfs poll can
 * no longer see a thread that is gone). */
struct collector_thread_final {
	uint64_t cpu_ns, switches, faults;
};
void counters_thread_final(pid_t tid, uint64_t now_ns, const struct collector_thread_final *final);
void counters_poll(uint64_t now_ns);
void counters_forget_after_fork(void);
/* Sender service for GPU hardware metrics: queues n samples as one GPU_METRICS frame. */
struct wire_gpu_metric;
void sender_gpu_metrics(const struct wire_gpu_metric *samples, size_t n);
/* Sender service for counters: queues one COUNTERS record. */
void sender_counter(uint64_t time_ns, pid_t tid, const char *event, uint64_t value);

/* Symbolisation (sender thread): address -> interned "function\x1fmodule" id. */
uint32_t symbolize_pc(uint64_t pc, int is_return_address);
void symbolize_forget(void);

/*
 * File descriptors the collector creates. The program may close any number at any time (daemons
 * close 3..1023 at start) and get it back for a file of its own, so every fd the collector opens
 * is registered with its identity (st_dev/st_ino/st_rdev/type, and the perf event id for perf
 * fds), checked before each use, and closed only while it is still ours. Sender-side threads
 * only: application threads never use an fd of the collector.
 */
/* Takes ownership of fd, just created by the collector as a socket (type S_IFSOCK) or a perf
 * event (type 0): records its identity. Returns fd, or -1: closed when it cannot be recorded, left
 * alone when the number shows anything else (the program took it before we looked). */
int collector_fd_own(int fd, mode_t type);
/* 1 if fd still refers to the file the collector registered; 0 if the number is no longer ours
 * (the registration is dropped: the number belongs to the program now). */
int collector_fd_check(int fd);
/* Closes fd if it is still ours and forgets it; returns 0, or -1 when the number was not ours
 * (left alone). */
int collector_fd_close(int fd);
/* Forgets fd without closing it (a forked child that must leave inherited numbers alone). */
void collector_fd_forget(int fd);
/* Whether fd may be a number of ours (one atomic load: the program's close wrappers look before
 * anything costlier). */
int collector_fd_app_may_hold(int fd);
/* Brackets a use of an fd of ours that no helper here wraps (the viewer stream's send): 0 when the
 * program gave the number up (then no use, and no end); else the program's close of it waits for
 * collector_fd_use_end. */
int collector_fd_use_begin(int fd);
void collector_fd_use_end(int fd);
/* The program is about to close fd (close, dup2/dup3 onto it, close_range, closefrom): a number
 * of ours is given up, after any use of it under way on a collector thread has ended (waited at
 * most ~20 ms). Only in the collecting process (not a vfork child sharing our memory) and never
 * on a collector thread (it would wait on itself): those close through collector_fd_close. */
void collector_fd_app_closing(int fd);
/* Forked child, first thing: the table is usable again (its lock may have been held). */
void collector_fd_after_fork(void);

/*
 * Short-lived fds (a /proc file, a module's ELF file, the perf map, the log) go through the same
 * table: a thread of the program may close the number between our open and our close and open its
 * own file on it. Each helper checks the identity before every read, write or getdents64 and closes
 * only while the number is still ours; when it is not, what was read through it is dropped (it may
 * be the program's) and the number is forgotten, never closed.
 */
/* open(2) of path (O_CLOEXEC | O_NOCTTY added), registered when the fd is the file path names:
 * fd, or -errno (-EBADF: the number became the program's before it was registered). */
int collector_fd_open(const char *path, int flags, mode_t mode);
struct stat;
/* fstat of an fd of ours; 0, or -EBADF when the number is not ours anymore. */
int collector_fd_fstat(int fd, struct stat *st);
/* pread through an fd of ours: bytes, 0 at the end, -EBADF (not ours anymore) or -errno. */
ssize_t collector_fd_pread(int fd, void *buf, size_t len, off_t off);
/* write(2) through an fd of ours (its signature, so it can be passed as a writer): -1 with errno
 * EBADF when the number is not ours anymore. */
ssize_t collector_fd_write(int fd, const void *buf, size_t len);
/* Reads a small file whole (at most cap - 1 bytes, NUL-terminated; never through a final link):
 * its length, or -errno; -EBADF when the fd was taken over (buf is then emptied). */
ssize_t collector_fd_read_file(const char *path, char *buf, size_t cap);
/* Appends len bytes to path (created 0600, never through a link): 0 or -errno. */
int collector_fd_append(const char *path, const void *buf, size_t len);
/*
 * Hands each whole line of an fd of ours from *pos on to line_fn (NUL in place of its '\n'; lines
 * longer than 8 KiB are skipped), until line_fn returns nonzero or the file ends; *pos moves past
 * the lines handed over (a partial last line stays). 0, or -EBADF / -errno: the caller drops what
 * line_fn got (collector_fd_close's answer says the same at the end).
 */
int collector_fd_read_lines(int fd, off_t *pos, int (*line_fn)(char *line, size_t len, void *ctx), void *ctx);
/* A directory listed with getdents64 through an fd of ours. */
struct collector_fd_dir {
	int fd;
	int err; /* 1 at the end, -errno after a failure or once the fd is not ours */
	size_t pos, end;
	_Alignas(8) char buf[8192];
};
/* 0 or -errno. */
int collector_fd_dir_open(struct collector_fd_dir *d, const char *path);
/* The next entry's name ("." and ".." included), or NULL at the end or on a failure. */
const char *collector_fd_dir_next(struct collector_fd_dir *d);
/* Closes the directory; 0 only when every entry was listed through an fd that stayed ours, else
 * -errno: the names given may be incomplete or the program's, and must be dropped. */
int collector_fd_dir_close(struct collector_fd_dir *d);

/* NVTX injection entry (exported): fills the NVTX CORE and CORE2 tables. */
int nvtx_inject(void *get_export_table);
/* NVTX extended payloads not decoded (WIRE_LOSS_PAYLOAD_UNDECODED), for the sender's losses. */
uint64_t nvtx_payload_lost(uint32_t cause);

#endif
