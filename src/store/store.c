/*
 * Event store: turns wire frames into per-process lanes of completed NVTX ranges, with global
 * string ids, per-row sorted arrays for binary-searched time queries, and loss counters.
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
	free(st->sources);
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

static struct range_row *lane_row(struct lane *l, size_t row)
{
	if (row >= l->row_count) {
		xgrow((void **)&l->rows, &l->row_cap, row + 1, sizeof *l->rows);
		memset(&l->rows[l->row_count], 0, (row + 1 - l->row_count) * sizeof *l->rows);
		l->row_count = row + 1;
	}
	return &l->rows[row];
}

static void row_append(struct range_row *row, const struct store_range *r)
{
	store_grow((void **)&row->v, &row->cap, row->n + 1, sizeof *row->v);
	row->v[row->n++] = *r;
}

static struct open_range *open_push(struct lane *l)
{
	xgrow((void **)&l->open, &l->open_cap, l->open_count + 1, sizeof *l->open);
	return &l->open[l->open_count++];
}

/* Lowest async row that is free from `start` on (at most ASYNC_ROWS_MAX are looked at). */
static size_t async_pick_row(struct lane *l, uint64_t start)
{
	for (size_t r = 0; r < l->row_count && r < ASYNC_ROWS_MAX; r++)
		if (l->rows[r].busy_until <= start)
			return r;
	return l->row_count;
}

static void async_complete(struct lane *l, struct store_range *r, size_t row)
{
	struct range_row *rr = lane_row(l, row);
	row_append(rr, r);
	rr->busy_until = r->end_ns;
}

/* ---- ingest ---- */

static void process_count_loss(struct process *pr)
{
	pr->unmatched++;
}

static void ingest_event(struct store *st, struct process *pr, struct source *src,
                         const struct wire_event *ev)
{
	uint32_t name = ev->name_id < src->strmap_cap ? src->strmap[ev->name_id] : 0;
	uint32_t domain = ev->domain_id < src->strmap_cap ? src->strmap[ev->domain_id] : 0;
	uint64_t t = ev->time_ns;
	store_note_time(st, t);
	pr->events++;
	st->events++;
	switch (ev->kind) {
	case WIRE_EV_THREAD_NAME: {
		struct lane *l = store_thread_lane(pr, (pid_t)ev->tid, t);
		l->name_id = name;
		if (t < l->first_ns)
			l->first_ns = t;
		l->end_ns = 0;
		break;
	}
	case WIRE_EV_THREAD_EXIT:
		store_thread_lane(pr, (pid_t)ev->tid, t)->end_ns = t;
		break;
	case WIRE_EV_NVTX_PUSH: {
		struct lane *l = store_thread_lane(pr, (pid_t)ev->tid, t);
		struct open_range *o = open_push(l);
		o->range = (struct store_range){t, 0, name, domain};
		o->row = l->open_count - 1;
		o->range_id = 0;
		lane_row(l, o->row);
		break;
	}
	case WIRE_EV_NVTX_POP: {
		struct lane *l = store_thread_lane(pr, (pid_t)ev->tid, t);
		if (!l->open_count) {
			process_count_loss(pr);
			break;
		}
		struct open_range *o = &l->open[--l->open_count];
		o->range.end_ns = t;
		row_append(lane_row(l, o->row), &o->range);
		break;
	}
	case WIRE_EV_NVTX_MARK: {
		struct lane *l = store_thread_lane(pr, (pid_t)ev->tid, t);
		store_grow((void **)&l->marks, &l->mark_cap, l->mark_count + 1, sizeof *l->marks);
		l->marks[l->mark_count++] = (struct store_range){t, t, name, domain};
		break;
	}
	case WIRE_EV_NVTX_START: {
		store_thread_lane(pr, (pid_t)ev->tid, t);
		struct lane *l = &pr->lanes[0];
		/* The end may have been drained from another thread's ring first. */
		for (size_t i = 0; i < pr->pending_count; i++) {
			if (pr->pending[i].range_id == ev->value) {
				struct store_range r = {t, pr->pending[i].end_ns, name, domain};
				pr->pending[i] = pr->pending[--pr->pending_count];
				size_t row = async_pick_row(l, t);
				if (row < ASYNC_ROWS_MAX)
					async_complete(l, &r, row);
				else
					process_count_loss(pr);
				return;
			}
		}
		/* Every end scans the open ranges: their number is bounded, the excess counted. */
		if (l->open_count >= ASYNC_OPEN_MAX) {
			process_count_loss(pr);
			break;
		}
		size_t row = async_pick_row(l, t);
		if (row >= ASYNC_ROWS_MAX) {
			process_count_loss(pr);
			break;
		}
		lane_row(l, row)->busy_until = UINT64_MAX;
		struct open_range *o = open_push(l);
		o->range = (struct store_range){t, 0, name, domain};
		o->row = row;
		o->range_id = ev->value;
		break;
	}
	case WIRE_EV_NVTX_END: {
		store_thread_lane(pr, (pid_t)ev->tid, t);
		struct lane *l = &pr->lanes[0];
		for (size_t i = 0; i < l->open_count; i++) {
			if (l->open[i].range_id == ev->value) {
				struct open_range o = l->open[i];
				memmove(&l->open[i], &l->open[i + 1],
				        (l->open_count - i - 1) * sizeof *l->open);
				l->open_count--;
				o.range.end_ns = t;
				async_complete(l, &o.range, o.row);
				return;
			}
		}
		if (pr->pending_count >= PENDING_END_MAX) {
			process_count_loss(pr);
			break;
		}
		xgrow((void **)&pr->pending, &pr->pending_cap, pr->pending_count + 1, sizeof *pr->pending);
		pr->pending[pr->pending_count++] = (struct pending_end){ev->value, t};
		break;
	}
	case WIRE_EV_OSRT:
	case WIRE_EV_GC:
		store_cpu_event(st, pr, ev, name);
		break;
	default:
		/* Kinds from newer collectors (e.g. categories) carry nothing the store shows yet. */
		break;
	}
}

/* Widens the store's first/last times to include t (0 = no time). */
void store_note_time(struct store *st, uint64_t t)
{
	if (t) {
		if (!st->first_ns || t < st->first_ns)
			st->first_ns = t;
		if (t > st->last_ns)
			st->last_ns = t;
	}
}

static void ingest_notice(struct store *st, struct process *pr, const void *payload, uint32_t length)
{
	struct wire_notice wn;
	memcpy(&wn, payload, sizeof wn);
	char *text = xstrndup((const char *)payload + sizeof wn, length - sizeof wn);
	/* One line for the user: a newline or control byte ends up as a space. */
	for (char *c = text; *c; c++)
		if ((unsigned char)*c < 0x20)
			*c = ' ';
	xgrow((void **)&pr->notices, &pr->notice_cap, pr->notice_count + 1, sizeof *pr->notices);
	pr->notices[pr->notice_count++] = (struct notice){wn.level, text, ++st->notice_seq};
}

static struct source *source_get(struct store *st, int source)
{
	if ((size_t)source >= st->source_cap) {
		size_t old = st->source_cap;
		size_t cap = old;
		xgrow((void **)&st->sources, &cap, (size_t)source + 1, sizeof *st->sources);
		memset(&st->sources[old], 0, (cap - old) * sizeof *st->sources);
		st->source_cap = cap;
	}
	return &st->sources[source];
}

/* The pid map finds the newest process of a pid (map references are process index + 1). */
struct pid_key {
	const struct store *st;
	pid_t pid;
};

static uint64_t store_pid_hash(pid_t pid)
{
	return (uint32_t)pid * 2654435761u;
}

static int store_pid_eq(const void *key, uint32_t ref)
{
	const struct pid_key *k = key;
	return k->st->procs[ref - 1].hello.pid == k->pid;
}

static uint64_t store_pid_rehash(const void *ctx, uint32_t ref)
{
	const struct store *st = ctx;
	return store_pid_hash(st->procs[ref - 1].hello.pid);
}

/* The map slot of pid: holds the index + 1 of its newest process, or 0 (then fill it to add one). */
static uint32_t *store_pid_slot(struct store *st, pid_t pid)
{
	hashmap_reserve(&st->pid_map, 64, store_pid_rehash, st, xcalloc);
	struct pid_key key = {st, pid};
	return hashmap_slot(&st->pid_map, store_pid_hash(pid), store_pid_eq, &key);
}

static int ingest_hello(struct store *st, struct source *src, const void *payload, uint32_t length)
{
	struct wire_hello hello;
	memcpy(&hello, payload, sizeof hello);
	hello.host[sizeof hello.host - 1] = '\0';
	const char *argv = (const char *)payload + sizeof hello;
	char *cmdline = xstrndup(argv, hello.cmdline_len);
	/* argv is NUL-separated: join with spaces, dropping the trailing NUL. */
	size_t n = hello.cmdline_len;
	while (n > 0 && cmdline[n - 1] == '\0')
		n--;
	for (size_t i = 0; i < n; i++)
		if (cmdline[i] == '\0')
			cmdline[i] = ' ';
	cmdline[n] = '\0';

	/* A pid seen before and no longer connected is the same process after exec (or a reconnect).
	 * Found through a map, so a capture of many processes is read in linear time. */
	size_t index = st->proc_count;
	uint32_t *slot = store_pid_slot(st, hello.pid);
	if (*slot) {
		const struct process *prev = &st->procs[*slot - 1];
		if (!prev->connected && !prev->exited)
			index = *slot - 1;
	}
	if (index == st->proc_count) {
		if (*slot)
			*slot = (uint32_t)st->proc_count + 1; /* the newest process of the pid */
		else
			hashmap_fill(&st->pid_map, slot, (uint32_t)st->proc_count + 1);
		xgrow((void **)&st->procs, &st->proc_cap, st->proc_count + 1, sizeof *st->procs);
		struct process *pr = &st->procs[st->proc_count++];
		memset(pr, 0, sizeof *pr);
		pr->exit_code = -1;
		store_lane_append(pr, STORE_LANE_NVTX_ASYNC, 0, hello.start_mono_ns);
	}
	struct process *pr = &st->procs[index];
	free(pr->cmdline);
	pr->cmdline = cmdline;
	pr->hello = hello;
	pr->connected = 1;
	pr->final_counts = 0; /* a new stream (after exec): its own final counts are awaited */
	pr->detached = 0;
	src->active = 1;
	src->had_hello = 1;
	src->process = index;
	if (src->strmap)
		memset(src->strmap, 0, src->strmap_cap * sizeof *src->strmap);
	(void)length;
	return 0;
}

static int store_feed_frame(struct store *st, int source, uint32_t type, const void *payload, uint32_t length,
                            const char **cause);

int store_feed(struct store *st, int source, uint32_t type, const void *payload, uint32_t length,
               const char **cause)
{
	int rc = store_feed_frame(st, source, type, payload, length, cause);
	if (rc == 0 && st->memory_limit)
		store_evict_after_feed(st, length);
	return rc;
}

/* One frame into the store (store_feed without the memory bound). */
static int store_feed_frame(struct store *st, int source, uint32_t type, const void *payload, uint32_t length,
                            const char **cause)
{
	if (source < 0) {
		*cause = "invalid source";
		return -EINVAL;
	}
	int rc = wire_frame_check(type, payload, length, cause);
	if (rc)
		return rc;
	struct source *src = source_get(st, source);
	st->generation++;
	if (type == WIRE_FRAME_HELLO)
		return ingest_hello(st, src, payload, length);
	if (!src->active) {
		*cause = "frame before handshake";
		return -EPROTO;
	}
	struct process *pr = &st->procs[src->process];
	switch (type) {
	case WIRE_FRAME_STRING: {
		struct wire_string ws;
		memcpy(&ws, payload, sizeof ws);
		/* Ids are dense from 1 up to the collector's cap (at most 2^24): a larger one is hostile. */
		if (ws.id > WIRE_MAX_STRING_ID) {
			*cause = "string id out of range";
			return -EPROTO;
		}
		/* Ids come dense from 1: one far beyond the strings this source sent would size the map
		 * by itself (a crafted stream, 2^24 entries per source); it is ignored, its name empty. */
		if (ws.id > 2 * src->strings + 1024)
			break;
		src->strings++;
		size_t cap = src->strmap_cap;
		if (ws.id >= cap) {
			xgrow((void **)&src->strmap, &cap, (size_t)ws.id + 1, sizeof *src->strmap);
			memset(&src->strmap[src->strmap_cap], 0,
			       (cap - src->strmap_cap) * sizeof *src->strmap);
			src->strmap_cap = cap;
		}
		src->strmap[ws.id] = store_intern(st, (const char *)payload + sizeof ws, ws.length);
		break;
	}
	case WIRE_FRAME_EVENTS: {
		size_t count = length / sizeof(struct wire_event);
		/* Frames are not aligned in the byte stream: copy each record out. */
		const char *bytes = payload;
		for (size_t i = 0; i < count; i++) {
			struct wire_event ev;
			memcpy(&ev, bytes + i * sizeof ev, sizeof ev);
			ingest_event(st, pr, src, &ev);
		}
		break;
	}
	case WIRE_FRAME_LOSSES: {
		size_t count = length / sizeof(struct wire_loss);
		for (size_t i = 0; i < count; i++) {
			struct wire_loss loss;
			memcpy(&loss, (const char *)payload + i * sizeof loss, sizeof loss);
			if (loss.cause > 0 && loss.cause < WIRE_LOSS_CAUSE_MAX)
				pr->losses[loss.cause] = loss.count;
		}
		break;
	}
	case WIRE_FRAME_BYE: {
		struct wire_bye bye;
		memcpy(&bye, payload, sizeof bye);
		pr->final_counts = 1;
		/* A detach is not an end: the process ran on, its counts are final up to time_ns. */
		if (bye.flags & WIRE_BYE_DETACHED) {
			pr->detached = 1;
			pr->detached_ns = bye.time_ns;
		} else {
			pr->exited = 1;
			pr->detached = 0;
		}
		if (bye.exit_code >= 0)
			pr->exit_code = bye.exit_code;
		if (bye.time_ns > st->last_ns)
			st->last_ns = bye.time_ns;
		break;
	}
	case WIRE_FRAME_NOTICE:
		ingest_notice(st, pr, payload, length);
		break;
	case WIRE_FRAME_EXIT: {
		struct wire_exit ex;
		memcpy(&ex, payload, sizeof ex);
		pr->exited = 1;
		pr->end_recorded = 1;
		pr->exit_code = ex.signal > 0 ? -1 : ex.exit_code;
		pr->exit_signal = ex.signal > 0 && ex.signal < 128 ? ex.signal : 0;
		break;
	}
	case WIRE_FRAME_GPU:
	case WIRE_FRAME_GPU_DEVICE:
		return store_gpu_ingest(st, pr, src, type, payload, length);
	case WIRE_FRAME_STACKS:
	case WIRE_FRAME_COUNTERS:
		return store_cpu_ingest(st, pr, src, type, payload, length);
	case WIRE_FRAME_COST:
		store_cost_ingest(st, pr, payload, length);
		break;
	}
	return 0;
}

void store_source_closed(struct store *st, int source)
{
	if (source < 0 || (size_t)source >= st->source_cap)
		return;
	struct source *src = &st->sources[source];
	if (src->active) {
		st->procs[src->process].connected = 0;
		src->active = 0;
		st->generation++;
	}
}

/* Records the exit status of a process the caller launched (the collector cannot know it). */
void store_process_set_exit(struct store *st, pid_t pid, int exit_code)
{
	for (size_t p = 0; p < st->proc_count; p++) {
		if (st->procs[p].hello.pid == pid) {
			st->procs[p].exited = 1;
			st->procs[p].exit_code = exit_code;
			st->generation++;
		}
	}
}

const char *store_process_end_text(const struct store_process_info *pi, char *buf, size_t size)
{
	buf[0] = '\0';
	if (pi->detached) {
		/* Signed: a crafted capture may put the detach before the start. */
		double at = (double)(int64_t)(pi->detached_ns - pi->start_ns) / 1e9;
		snprintf(buf, size, "detached at %+.3fs, still running", at);
		return buf;
	}
	if (pi->final_counts || pi->connected)
		return buf;
	if (pi->end_recorded && pi->exit_signal)
		snprintf(buf, size, "incomplete: final counts missing; killed by signal %d", pi->exit_signal);
	else if (pi->end_recorded)
		snprintf(buf, size, "incomplete: final counts missing; exited (code %d)", pi->exit_code);
	else
		snprintf(buf, size, "incomplete: final counts missing; ended abruptly");
	return buf;
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
	out->gpu_row_count = l->gpu_row_count;
	out->gpu_ops = l->gpu_ops;
	out->device = l->device;
	out->stream = l->stream;
	out->is_default = l->is_default;
	out->kernels = l->kernels;
	if (l->kind == STORE_LANE_GPU_STREAM)
		out->name = l->label;
}

size_t store_notice_count(const struct store *st, size_t process)
{
	return process < st->proc_count ? st->procs[process].notice_count : 0;
}

const char *store_notice_get(const struct store *st, size_t process, size_t index, uint32_t *level,
                             uint64_t *seq)
{
	const struct notice *n = &st->procs[process].notices[index];
	if (level)
		*level = n->level;
	if (seq)
		*seq = n->seq;
	return n->text;
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
	return bytes + store_gpu_memory_bytes(st) + store_cpu_memory_bytes(st) + store_cost_memory_bytes(st);
}
