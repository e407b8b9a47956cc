/*
 * The collector's record-writing fast path, private to the collector: inlined into inject.c's
 * emit functions and into the NVTX entry points (nvtx.c), so that a common NVTX push or pop is
 * one function call from the program with no further calls, no errno traffic and a handful of
 * cache lines.
 */
#ifndef CUSCOPE_COLLECTOR_EMIT_H
#define CUSCOPE_COLLECTOR_EMIT_H

#include "cuscope/clock.h"
#include "collector.h"

#include <signal.h>
#include <string.h>

#define EMIT_INLINE static inline __attribute__((always_inline))

/* Set while this thread is inside the collector's ring code: a sample, or an NVTX call from a
 * signal handler, must not write the ring then. initial-exec: read in signal handlers. */
extern __thread volatile sig_atomic_t collector_in_ring __attribute__((tls_model("initial-exec")));
/* A sample arrived while this thread was inside the collector: taken when it leaves. */
extern __thread volatile sig_atomic_t collector_sample_pending __attribute__((tls_model("initial-exec")));

/* After a record was committed, the rare work: the deferred sample, a wake for the sender. */
void collector_after_write_slow(struct thread_ring *tr);

/* The body of collector_stamp. */
EMIT_INLINE uint64_t emit_stamp(uint16_t *flags)
{
	if (__builtin_expect(atomic_load_explicit(&collector_config.use_ticks, memory_order_relaxed), 1)) {
		*flags |= COLLECTOR_REC_TICKS;
		return clock_ticks();
	}
	return clock_mono_ns();
}

/* Enters the ring code; the fences keep the compiler from moving ring writes across. */
EMIT_INLINE void emit_enter(void)
{
	collector_in_ring = 1;
	atomic_signal_fence(memory_order_seq_cst);
}

EMIT_INLINE void emit_leave(void)
{
	atomic_signal_fence(memory_order_seq_cst);
	collector_in_ring = 0;
}

/* After a commit, outside the ring code: a deferred sample, a wake once per half ring. */
EMIT_INLINE void emit_written(struct thread_ring *tr)
{
	if (__builtin_expect(collector_sample_pending, 0) ||
	    __builtin_expect(ring_used_upper_bound(&tr->ring) > (tr->ring.mask + 1) / 2, 0))
		collector_after_write_slow(tr);
}

/* Reserves need bytes in tr's ring: the inlined common case, else the general one (which pads or
 * counts a drop). Sets no errno. */
EMIT_INLINE void *emit_space(struct thread_ring *tr, size_t need, size_t headroom)
{
	void *p = ring_try_reserve(&tr->ring, need, headroom);
	return __builtin_expect(p != NULL, 1) ? p : ring_reserve_bytes(&tr->ring, need, headroom);
}

/*
 * Room a push leaves free so that the pops of open ranges still fit in a nearly full ring: 16 KiB
 * (680 pops with a domain), at most an eighth of the ring so that a small ring takes pushes at all.
 */
EMIT_INLINE size_t emit_push_headroom(const struct thread_ring *tr)
{
	size_t eighth = (tr->ring.mask + 1) / 8;
	return eighth < 16384 ? eighth : 16384;
}

/* Loads 8 bytes from p (any alignment). */
EMIT_INLINE uint64_t emit_load8(const char *p)
{
	uint64_t v;
	memcpy(&v, p, sizeof v);
	return v;
}

/*
 * 1 if the program's string msg still equals the slot's copy (its len bytes and the NUL after).
 * Compared in 8-byte words when every word read stays in the page of msg's first byte (readable:
 * msg is a string there), so reading past a shorter string can never fault; byte by byte else.
 * (Like an optimised strlen, it may read bytes past the string's end within that page: memory
 * checkers that track bytes, such as valgrind's memcheck, can report those reads.)
 */
EMIT_INLINE int emit_name_matches(const struct collector_name_slot *slot, const char *msg)
{
	size_t n = (size_t)slot->len + 1;
	size_t span = n < 8 ? 8 : n;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	if (((uintptr_t)msg & 4095) + span <= 4096) {
		if (n < 8) {
			uint64_t mask = ~0ull >> (64 - 8 * n);
			return ((emit_load8(msg) ^ emit_load8(slot->text)) & mask) == 0;
		}
		size_t i = 0;
		for (; i + 8 < n; i += 8)
			if (emit_load8(msg + i) != emit_load8(slot->text + i))
				return 0;
		return emit_load8(msg + n - 8) == emit_load8(slot->text + n - 8);
	}
#else
	(void)span;
#endif
	for (size_t i = 0; i < n; i++)
		if (msg[i] != slot->text[i])
			return 0;
	return 1;
}

/* The slot a message pointer caches in (pointers to literals differ in their low bits). */
EMIT_INLINE unsigned emit_name_slot(const char *msg)
{
	return (unsigned)(((uintptr_t)msg * 0x9E3779B97F4A7C15ull) >> 58);
}
_Static_assert(COLLECTOR_NAME_SLOTS == 64, "emit_name_slot yields 6 bits");

/* Writes the 16-byte NVTX record of kind at rec (reserved) and publishes it. */
EMIT_INLINE void emit_nvtx_small(struct thread_ring *tr, struct collector_rec_nvtx *rec, uint16_t kind,
                                 uint16_t flags)
{
	rec->time = emit_stamp(&flags);
	rec->size = sizeof *rec;
	rec->kind = kind;
	rec->text_len = 0;
	rec->flags = flags;
	ring_commit_bytes(&tr->ring, sizeof *rec);
}

/*
 * The common NVTX push, for the NVTX entry points: msg is the message its slot of this thread's
 * cache holds, with no category or domain, and 16 bytes fit without a look at the consumer.
 * Returns 1 if written; 0 leaves everything (the rest of the cases, drops and their counts) to
 * collector_nvtx_push.
 */
EMIT_INLINE int emit_push_cached(struct thread_ring *tr, const char *msg)
{
	if (__builtin_expect(collector_in_ring || !msg, 0))
		return 0;
	emit_enter();
	unsigned index = emit_name_slot(msg);
	const struct collector_name_slot *slot = &tr->names[index];
	struct collector_rec_nvtx *rec;
	if (__builtin_expect(slot->ptr != msg ||
	                         slot->epoch !=
	                             atomic_load_explicit(&collector_names_epoch, memory_order_relaxed) ||
	                         !emit_name_matches(slot, msg) ||
	                         !(rec = ring_try_reserve(&tr->ring, sizeof *rec, emit_push_headroom(tr))),
	                     0)) {
		emit_leave();
		return 0;
	}
	emit_nvtx_small(tr, rec, COLLECTOR_REC_NVTX_PUSH, (uint16_t)index);
	emit_leave();
	emit_written(tr);
	return 1;
}

/* The common NVTX pop (default domain, room without a look at the consumer); 0 leaves it to
 * collector_nvtx_pop. */
EMIT_INLINE int emit_pop_small(struct thread_ring *tr)
{
	if (__builtin_expect(collector_in_ring, 0))
		return 0;
	emit_enter();
	struct collector_rec_nvtx *rec = ring_try_reserve(&tr->ring, sizeof *rec, 0);
	if (__builtin_expect(!rec, 0)) {
		emit_leave();
		return 0;
	}
	emit_nvtx_small(tr, rec, COLLECTOR_REC_NVTX_POP, 0);
	emit_leave();
	emit_written(tr);
	return 1;
}

#endif
