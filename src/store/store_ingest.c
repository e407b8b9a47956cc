/*
 * Event store ingest: turns wire frames into per-process lanes of completed NVTX ranges (push/pop
 * stacks, start/end ranges on async rows, marks), processes by HELLO, notices, losses and exits;
 * GPU, CPU and cost frames go on to their parts.
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
		store_args_range_begun(l, (size_t)(l - pr->lanes), t, name);
		break;
	}
	case WIRE_EV_NVTX_POP: {
		struct lane *l = store_thread_lane(pr, (pid_t)ev->tid, t);
		l->arg_open = 0;
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
		store_args_range_begun(l, (size_t)(l - pr->lanes), t, name);
		break;
	}
	case WIRE_EV_NVTX_START: {
		/* Its fields follow on its thread; the range lives on the async lane. */
		store_args_range_begun(store_thread_lane(pr, (pid_t)ev->tid, t), 0, t, name);
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
		store_thread_lane(pr, (pid_t)ev->tid, t)->arg_open = 0;
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
	case WIRE_EV_NVTX_ARG:
		store_args_event(st, (size_t)(pr - st->procs), store_thread_lane(pr, (pid_t)ev->tid, t), ev,
		                 name, domain);
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
	pr->notices[pr->notice_count++] =
	    (struct notice){.level = wn.level, .topic = wn.topic, .text = text, .seq = ++st->notice_seq};
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

/*
 * The pid map finds the newest process of a (capture, pid) (map references are process index + 1):
 * captures of other hosts may hold the same pids, and their processes are different ones.
 */
struct pid_key {
	const struct store *st;
	uint32_t capture;
	pid_t pid;
};

static uint32_t store_capture_current(const struct store *st)
{
	return st->capture_count ? st->capture_count - 1 : 0;
}

static uint64_t store_pid_hash(uint32_t capture, pid_t pid)
{
	return ((uint64_t)capture << 32 ^ (uint32_t)pid) * 0x9e3779b97f4a7c15ull >> 32;
}

static int store_pid_eq(const void *key, uint32_t ref)
{
	const struct pid_key *k = key;
	const struct process *pr = &k->st->procs[ref - 1];
	return pr->hello.pid == k->pid && pr->capture == k->capture;
}

static uint64_t store_pid_rehash(const void *ctx, uint32_t ref)
{
	const struct store *st = ctx;
	return store_pid_hash(st->procs[ref - 1].capture, st->procs[ref - 1].hello.pid);
}

/* The map slot of pid in the current capture: holds the index + 1 of its newest process, or 0
 * (then fill it to add one). */
static uint32_t *store_pid_slot(struct store *st, pid_t pid)
{
	hashmap_reserve(&st->pid_map, 64, store_pid_rehash, st, xcalloc);
	struct pid_key key = {st, store_capture_current(st), pid};
	return hashmap_slot(&st->pid_map, store_pid_hash(key.capture, pid), store_pid_eq, &key);
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

	/* A pid seen before and no longer connected is the same process after exec (or a reconnect),
	 * when it is of the same host: hosts read into one capture (attach --ssh) reuse each other's
	 * pids. Found through a map, so a capture of many processes is read in linear time. */
	size_t index = st->proc_count;
	uint32_t *slot = store_pid_slot(st, hello.pid);
	if (*slot) {
		const struct process *prev = &st->procs[*slot - 1];
		if (!prev->connected && !prev->exited && strcmp(prev->hello.host, hello.host) == 0)
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
		pr->capture = store_capture_current(st);
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
	case WIRE_FRAME_GPU_METRICS:
		return store_metrics_ingest(st, pr, src, payload, length);
	}
	return 0;
}

uint32_t store_capture_begin(struct store *st)
{
	for (size_t i = 0; i < st->source_cap; i++)
		store_source_closed(st, (int)i);
	st->generation++;
	return st->capture_count++;
}

uint32_t store_capture_count(const struct store *st)
{
	return st->capture_count;
}

void store_capture_set_clock(struct store *st, uint32_t capture, const struct store_capture_clock *clock)
{
	size_t old = st->capture_clock_cap;
	if (capture >= old) {
		xgrow((void **)&st->capture_clocks, &st->capture_clock_cap, (size_t)capture + 1,
		      sizeof *st->capture_clocks);
		memset(st->capture_clocks + old, 0,
		       (st->capture_clock_cap - old) * sizeof *st->capture_clocks);
	}
	st->capture_clocks[capture] = *clock;
}

int store_capture_get_clock(const struct store *st, uint32_t capture, struct store_capture_clock *out)
{
	if (capture >= st->capture_clock_cap || !st->capture_clocks[capture].method)
		return -ENOENT;
	*out = st->capture_clocks[capture];
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
