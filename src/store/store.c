/*
 * Event store: global string ids, processes and their lanes (thread lanes found by tid), and the
 * queries over per-row sorted arrays of completed NVTX ranges. Frames come in through store_ingest.c.
 */
#include "cuscope/store.h"
#include "store_impl.h"
#include "cuscope/hashmap.h"
#include "cuscope/wire.h"
#include "cuscope/xalloc.h"

#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

/* ---- strings ---- */

static uint32_t store_hash(const char *s, size_t n)
{
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (uint8_t)s[i]) * 16777619u;
	return h;
}

/* Interning looks a text up among the global strings (map references are string ids). */
struct string_key {
	const struct store *st;
	const char *text;
	size_t len;
};

static int store_string_eq(const void *key, uint32_t id)
{
	const struct string_key *k = key;
	return k->st->string_len[id] == k->len && memcmp(k->st->strings[id], k->text, k->len) == 0;
}

static uint64_t store_string_hash(const void *ctx, uint32_t id)
{
	const struct store *st = ctx;
	return store_hash(st->strings[id], st->string_len[id]);
}

/* Global id of text, interning it. */
uint32_t store_intern(struct store *st, const char *text, size_t len)
{
	hashmap_reserve(&st->string_map, 4096, store_string_hash, st, xcalloc);
	struct string_key key = {st, text, len};
	uint32_t *slot = hashmap_slot(&st->string_map, store_hash(text, len), store_string_eq, &key);
	if (*slot)
		return *slot;
	if (st->string_count == st->string_cap) {
		size_t cap = st->string_cap;
		xgrow((void **)&st->strings, &cap, st->string_count + 1, sizeof *st->strings);
		st->string_len = xrealloc(st->string_len, cap * sizeof *st->string_len);
		st->string_cap = cap;
	}
	uint32_t id = (uint32_t)st->string_count++;
	st->strings[id] = xstrndup(text, len);
	st->string_len[id] = (uint32_t)len;
	st->string_bytes += len + 1;
	hashmap_fill(&st->string_map, slot, id);
	return id;
}

const char *store_string(const struct store *st, uint32_t id)
{
	return id && id < st->string_count ? st->strings[id] : "";
}

struct store *store_new(void)
{
	struct store *st = xcalloc(1, sizeof *st);
	st->string_count = 1; /* id 0 is "" */
	st->string_cap = 1024;
	st->strings = xcalloc(st->string_cap, sizeof *st->strings);
	st->string_len = xcalloc(st->string_cap, sizeof *st->string_len);
	st->strings[0] = xstrdup("");
	st->string_bytes = 1;
	return st;
}

static void lane_free(struct lane *l)
{
	for (size_t r = 0; r < l->row_count; r++)
		free(l->rows[r].v);
	free(l->rows);
	free(l->open);
	free(l->marks);
	store_gpu_lane_fini(l);
	store_cpu_lane_fini(l);
}

void store_free(struct store *st)
{
	if (!st)
		return;
	for (size_t p = 0; p < st->proc_count; p++) {
		struct process *pr = &st->procs[p];
		for (size_t l = 0; l < pr->lane_count; l++)
			lane_free(&pr->lanes[l]);
		free(pr->lanes);
		free(pr->cmdline);
		hashmap_fini(&pr->tid_map);
		free(pr->pending);
		store_gpu_process_fini(pr);
		store_cpu_process_fini(pr);
		store_cost_process_fini(pr);
		for (size_t n = 0; n < pr->notice_count; n++)
			free(pr->notices[n].text);
		free(pr->notices);
	}
	store_metrics_free(st);
	for (size_t s = 0; s < st->source_cap; s++)
		free(st->sources[s].strmap);
	for (size_t i = 0; i < st->string_count; i++)
		free(st->strings[i]);
	free(st->strings);
	free(st->string_len);
	hashmap_fini(&st->string_map);
	free(st->demangled);
	free(st->short_name);
	store_cpu_fini(st);
	store_args_free(st);
	free(st->sources);
	free(st->capture_clocks);
	free(st->procs);
	hashmap_fini(&st->pid_map);
	free(st);
}

/* ---- lanes ---- */

/* Appends an empty lane to a process. */
struct lane *store_lane_append(struct process *pr, enum store_lane_kind kind, pid_t tid, uint64_t t)
{
	xgrow((void **)&pr->lanes, &pr->lane_cap, pr->lane_count + 1, sizeof *pr->lanes);
	struct lane *l = &pr->lanes[pr->lane_count++];
	memset(l, 0, sizeof *l);
	l->kind = kind;
	l->tid = tid;
	l->first_ns = t;
	return l;
}

/* The thread map finds a thread lane by tid (map references are lane index + 1). */
struct tid_key {
	const struct process *pr;
	pid_t tid;
};

static uint64_t store_tid_hash(pid_t tid)
{
	return (uint32_t)tid * 2654435761u;
}

static int store_tid_eq(const void *key, uint32_t ref)
{
	const struct tid_key *k = key;
	return k->pr->lanes[ref - 1].tid == k->tid;
}

static uint64_t store_tid_rehash(const void *ctx, uint32_t ref)
{
	const struct process *pr = ctx;
	return store_tid_hash(pr->lanes[ref - 1].tid);
}

/* Index of the lane of thread tid, SIZE_MAX if it has none. */
static size_t store_tid_lane_index(const struct process *pr, pid_t tid)
{
	struct tid_key key = {pr, tid};
	uint32_t ref = hashmap_find(&pr->tid_map, store_tid_hash(tid), store_tid_eq, &key);
	return ref ? ref - 1 : SIZE_MAX;
}

size_t store_thread_lane_find(const struct store *st, size_t process, pid_t tid)
{
	return process < st->proc_count ? store_tid_lane_index(&st->procs[process], tid) : SIZE_MAX;
}

/* The lane of thread tid, created (first seen at t) if new. */
struct lane *store_thread_lane(struct process *pr, pid_t tid, uint64_t t)
{
	size_t index = store_tid_lane_index(pr, tid);
	if (index != SIZE_MAX)
		return &pr->lanes[index];
	/* More threads than a real process has: a crafted stream must not grow a lane per record. */
	if (pr->lane_count >= THREAD_LANES_MAX && tid != -1)
		return store_thread_lane(pr, -1, t);
	struct lane *l = store_lane_append(pr, STORE_LANE_THREAD, tid, t);
	hashmap_reserve(&pr->tid_map, 64, store_tid_rehash, pr, xcalloc);
	struct tid_key key = {pr, tid};
	hashmap_fill(&pr->tid_map, hashmap_slot(&pr->tid_map, store_tid_hash(tid), store_tid_eq, &key),
	             (uint32_t)pr->lane_count);
	return l;
}

/* ---- queries ---- */

uint64_t store_last_ns(const struct store *st)
{
	return st->last_ns;
}

uint64_t store_first_ns(const struct store *st)
{
	return st->first_ns;
}

uint64_t store_event_count(const struct store *st)
{
	return st->events;
}

uint64_t store_generation(const struct store *st)
{
	return st->generation;
}

uint64_t store_process_loss(const struct store *st, size_t process, uint32_t cause)
{
	const struct process *pr = &st->procs[process];
	/* Ends still waiting for their start count as unmatched until (if ever) it arrives. */
	if (cause == WIRE_LOSS_UNMATCHED_POP)
		return pr->unmatched + pr->pending_count;
	return cause < WIRE_LOSS_CAUSE_MAX ? pr->losses[cause] : 0;
}

uint64_t store_loss_count(const struct store *st, uint32_t cause)
{
	uint64_t total = 0;
	for (size_t p = 0; p < st->proc_count; p++)
		total += store_process_loss(st, p, cause);
	return total;
}

uint64_t store_loss_total(const struct store *st)
{
	uint64_t total = 0;
	for (uint32_t c = 1; c < WIRE_LOSS_CAUSE_MAX; c++)
		total += store_loss_count(st, c);
	return total;
}

size_t store_process_count(const struct store *st)
{
	return st->proc_count;
}

void store_process_get(const struct store *st, size_t index, struct store_process_info *out)
{
	const struct process *pr = &st->procs[index];
	out->pid = pr->hello.pid;
	out->ppid = pr->hello.ppid;
	out->cmdline = pr->cmdline ? pr->cmdline : "";
	out->host = pr->hello.host;
	out->start_ns = pr->hello.start_mono_ns;
	out->anchor_mono_ns = pr->hello.anchor_mono_ns;
	out->anchor_real_ns = pr->hello.anchor_real_ns;
	out->features = pr->hello.features;
	out->connected = pr->connected;
	out->exited = pr->exited;
	out->exit_code = pr->exit_code;
	out->final_counts = pr->final_counts;
	out->detached = pr->detached;
	out->detached_ns = pr->detached_ns;
	out->end_recorded = pr->end_recorded;
	out->exit_signal = pr->exit_signal;
	out->events = pr->events;
	out->lane_count = pr->lane_count;
	out->capture = pr->capture;
	uint32_t ids = pr->hello.ids;
	out->rank = ids & WIRE_ID_RANK && pr->hello.rank >= 0 ? pr->hello.rank : -1;
	out->local_rank = ids & WIRE_ID_LOCAL_RANK && pr->hello.local_rank >= 0 ? pr->hello.local_rank : -1;
	out->world_size = ids & WIRE_ID_WORLD_SIZE && pr->hello.world_size >= 0 ? pr->hello.world_size : -1;
	out->restart_count =
	    ids & WIRE_ID_RESTART_COUNT && pr->hello.restart_count >= 0 ? pr->hello.restart_count : -1;
}

void store_lane_get(const struct store *st, size_t process, size_t lane, struct store_lane_info *out)
{
	const struct lane *l = &st->procs[process].lanes[lane];
	out->kind = l->kind;
	out->pid = st->procs[process].hello.pid;
	out->tid = l->tid;
	out->name = store_string(st, l->name_id);
	out->first_ns = l->first_ns;
	out->end_ns = l->end_ns;
	out->row_count = l->row_count;
	out->open_count = l->open_count;
	out->mark_count = l->mark_count;
	store_gpu_lane_info(l, out);
}

size_t store_notice_count(const struct store *st, size_t process)
{
	return process < st->proc_count ? st->procs[process].notice_count : 0;
}

void store_notice_get(const struct store *st, size_t process, size_t index, struct store_notice_info *out)
{
	const struct notice *n = &st->procs[process].notices[index];
	*out =
	    (struct store_notice_info){.text = n->text, .level = n->level, .topic = n->topic, .seq = n->seq};
}

uint64_t store_notice_total(const struct store *st)
{
	return st->notice_seq;
}

/* First index in v[0..n) whose end_ns > t (ranges on a row are sorted by start and by end). */
static size_t first_ending_after(const struct store_range *v, size_t n, uint64_t t)
{
	return timerow_bound(v, n, sizeof *v, TIMEROW_END, t, 1);
}

/* First index whose start_ns >= t. */
static size_t first_starting_at(const struct store_range *v, size_t n, uint64_t t)
{
	return timerow_bound(v, n, sizeof *v, TIMEROW_START, t, 0);
}

size_t store_lane_row_query(const struct store *st, size_t process, size_t lane, size_t row, uint64_t from_ns,
                            uint64_t to_ns, const struct store_range **out)
{
	const struct lane *l = &st->procs[process].lanes[lane];
	if (row >= l->row_count || from_ns >= to_ns) {
		*out = NULL;
		return 0;
	}
	const struct range_row *r = &l->rows[row];
	size_t lo = first_ending_after(r->v, r->n, from_ns);
	size_t hi = first_starting_at(r->v, r->n, to_ns);
	/* An empty row has no array at all: never NULL + 0. */
	*out = hi > lo ? r->v + lo : NULL;
	return hi > lo ? hi - lo : 0;
}

size_t store_lane_row_all(const struct store *st, size_t process, size_t lane, size_t row,
                          const struct store_range **out)
{
	const struct lane *l = &st->procs[process].lanes[lane];
	if (row >= l->row_count) {
		*out = NULL;
		return 0;
	}
	*out = l->rows[row].v;
	return l->rows[row].n;
}

void store_lane_open_get(const struct store *st, size_t process, size_t lane, size_t index,
                         struct store_range *out, size_t *row)
{
	const struct open_range *o = &st->procs[process].lanes[lane].open[index];
	*out = o->range;
	*row = o->row;
}

size_t store_lane_mark_query(const struct store *st, size_t process, size_t lane, uint64_t from_ns,
                             uint64_t to_ns, const struct store_range **out)
{
	const struct lane *l = &st->procs[process].lanes[lane];
	if (!l->mark_count) {
		*out = NULL;
		return 0;
	}
	size_t lo = first_starting_at(l->marks, l->mark_count, from_ns);
	size_t hi = first_starting_at(l->marks, l->mark_count, to_ns);
	*out = l->marks + lo;
	return hi > lo ? hi - lo : 0;
}

size_t store_memory_bytes(const struct store *st)
{
	size_t bytes = sizeof *st + st->proc_cap * sizeof *st->procs + st->source_cap * sizeof *st->sources;
	bytes += st->string_cap * (sizeof *st->strings + sizeof *st->string_len) +
	         hashmap_bytes(&st->string_map) + hashmap_bytes(&st->pid_map);
	bytes += st->string_bytes;
	for (size_t s = 0; s < st->source_cap; s++)
		bytes += st->sources[s].strmap_cap * sizeof *st->sources[s].strmap;
	for (size_t p = 0; p < st->proc_count; p++) {
		const struct process *pr = &st->procs[p];
		bytes += pr->lane_cap * sizeof *pr->lanes + hashmap_bytes(&pr->tid_map);
		bytes += pr->pending_cap * sizeof *pr->pending;
		for (size_t l = 0; l < pr->lane_count; l++) {
			const struct lane *ln = &pr->lanes[l];
			bytes += ln->row_cap * sizeof *ln->rows + ln->open_cap * sizeof *ln->open;
			bytes += ln->mark_cap * sizeof *ln->marks;
			for (size_t r = 0; r < ln->row_count; r++)
				bytes += ln->rows[r].cap * sizeof *ln->rows[r].v;
		}
	}
	return bytes + store_gpu_memory_bytes(st) + store_cpu_memory_bytes(st) + store_cost_memory_bytes(st) +
	       store_args_memory_bytes(st);
}
