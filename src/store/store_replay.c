/*
 * The identity of every source (connected or not) as wire frames: what a new segment of the live capture
 * file needs before any further frame of a source so that it reads on its own (process identity,
 * the source's strings under their own ids, thread names, GPU devices and contexts, loss counters,
 * push/pop ranges still open).
 */
#include "store_impl.h"

#include "cuscope/xalloc.h"

#include <stdlib.h>
#include <string.h>

struct replay {
	const struct store *st;
	int source;
	store_emit_fn emit;
	void *ctx;
	uint32_t *local; /* global string id -> the source's id, 0 = the source never sent it */
	int rc;
};

static void replay_frame(struct replay *r, uint32_t type, const void *payload, size_t length)
{
	if (!r->rc)
		r->rc = r->emit(r->ctx, r->source, type, payload, (uint32_t)length);
}

static uint32_t replay_local(const struct replay *r, uint32_t global)
{
	return global < r->st->string_count ? r->local[global] : 0;
}

static void replay_hello(struct replay *r, const struct process *pr)
{
	const char *cmd = pr->cmdline ? pr->cmdline : "";
	size_t len = strlen(cmd) + 1; /* argv joined by spaces: one argument */
	if (len > 65536)
		len = 65536;
	struct wire_hello h = pr->hello;
	h.cmdline_len = (uint32_t)len;
	char *buf = xmalloc(sizeof h + len);
	memcpy(buf, &h, sizeof h);
	memcpy(buf + sizeof h, cmd, len - 1);
	buf[sizeof h + len - 1] = '\0';
	replay_frame(r, WIRE_FRAME_HELLO, buf, sizeof h + len);
	free(buf);
}

static void replay_strings(struct replay *r, const struct source *src)
{
	size_t cap = 256;
	char *buf = xmalloc(cap);
	for (size_t id = 1; id < src->strmap_cap; id++) {
		uint32_t g = src->strmap[id];
		if (!g || g >= r->st->string_count)
			continue;
		struct wire_string ws = {(uint32_t)id, r->st->string_len[g]};
		size_t need = sizeof ws + ws.length;
		if (need > cap) {
			cap = need;
			buf = xrealloc(buf, cap);
		}
		memcpy(buf, &ws, sizeof ws);
		memcpy(buf + sizeof ws, r->st->strings[g], ws.length);
		replay_frame(r, WIRE_FRAME_STRING, buf, need);
	}
	free(buf);
}

/* Thread names and the push/pop ranges still open, in one EVENTS frame per lane. */
static void replay_threads(struct replay *r, const struct process *pr)
{
	for (size_t i = 0; i < pr->lane_count; i++) {
		const struct lane *l = &pr->lanes[i];
		if (l->kind != STORE_LANE_THREAD)
			continue;
		struct wire_event *ev = xcalloc(l->open_count * (1 + WIRE_ARGS_MAX) + 1, sizeof *ev);
		size_t n = 0;
		if (l->name_id) {
			ev[n].time_ns = l->first_ns;
			ev[n].tid = (uint32_t)l->tid;
			ev[n].name_id = replay_local(r, l->name_id);
			ev[n].kind = WIRE_EV_THREAD_NAME;
			n += ev[n].name_id != 0;
		}
		for (size_t k = 0; k < l->open_count; k++) {
			const struct open_range *o = &l->open[k];
			ev[n] = (struct wire_event){.time_ns = o->range.start_ns,
			                            .tid = (uint32_t)l->tid,
			                            .name_id = replay_local(r, o->range.name_id),
			                            .domain_id = replay_local(r, o->range.domain_id),
			                            .kind = WIRE_EV_NVTX_PUSH};
			n++;
			/* Its payload's fields, as they followed it (those whose names this source sent). */
			struct store_arg args[WIRE_ARGS_MAX];
			size_t na = store_range_args(r->st, (size_t)(pr - r->st->procs), i, &o->range, args,
			                             WIRE_ARGS_MAX);
			for (size_t a = 0; a < na; a++) {
				ev[n] = (struct wire_event){.time_ns = o->range.start_ns,
				                            .value = args[a].value,
				                            .tid = (uint32_t)l->tid,
				                            .name_id = replay_local(r, args[a].name_id),
				                            .domain_id = replay_local(r, args[a].text_id),
				                            .kind = WIRE_EV_NVTX_ARG,
				                            .flags = (uint16_t)args[a].type};
				n += ev[n].name_id != 0;
			}
		}
		if (n)
			replay_frame(r, WIRE_FRAME_EVENTS, ev, n * sizeof *ev);
		free(ev);
	}
}

static void replay_gpu(struct replay *r, const struct process *pr)
{
	size_t device_count, ctx_count;
	const struct gpu_device *devices = store_gpu_devices(pr, &device_count);
	const struct gpu_context *ctx = store_gpu_contexts(pr, &ctx_count);
	for (size_t i = 0; i < device_count; i++) {
		const struct gpu_device *d = &devices[i];
		struct wire_gpu_device wd = {.device = d->device,
		                             .name_id = replay_local(r, d->name_id),
		                             .global_memory_bytes = d->global_memory_bytes,
		                             .sm_count = d->sm_count,
		                             .cc_major = d->cc_major,
		                             .cc_minor = d->cc_minor};
		memcpy(wd.uuid, d->uuid, sizeof wd.uuid);
		replay_frame(r, WIRE_FRAME_GPU_DEVICE, &wd, sizeof wd);
	}
	for (size_t i = 0; i < ctx_count; i++) {
		struct wire_gpu_event ev;
		memset(&ev, 0, sizeof ev);
		ev.kind = WIRE_GPU_CONTEXT;
		ev.context = ctx[i].context;
		ev.device = ctx[i].device;
		ev.stream = ctx[i].null_stream;
		replay_frame(r, WIRE_FRAME_GPU, &ev, sizeof ev);
	}
}

static void replay_losses(struct replay *r, const struct process *pr)
{
	struct wire_loss loss[WIRE_LOSS_CAUSE_MAX];
	size_t n = 0;
	for (uint32_t c = 1; c < WIRE_LOSS_CAUSE_MAX; c++)
		if (pr->losses[c])
			loss[n++] = (struct wire_loss){c, 0, pr->losses[c]};
	if (n)
		replay_frame(r, WIRE_FRAME_LOSSES, loss, n * sizeof *loss);
}

/* The newest cost reading of each source, so a new live file keeps the totals and back-offs. */
static void replay_cost(struct replay *r, size_t process)
{
	struct wire_cost cost[WIRE_COST_SOURCE_MAX];
	size_t n = 0;
	for (uint32_t c = 1; c < WIRE_COST_SOURCE_MAX; c++) {
		struct store_cost sc;
		if (store_cost_get(r->st, process, c, &sc) != 0)
			continue;
		cost[n++] = (struct wire_cost){.time_ns = sc.time_ns,
		                               .own_cpu_ns = sc.cpu_ns,
		                               .added_ns = sc.added_ns,
		                               .events = sc.events,
		                               .source = c,
		                               .backoffs = sc.backoffs,
		                               .level = sc.level,
		                               .flags = sc.reduced ? WIRE_COST_REDUCED : 0};
	}
	if (n)
		replay_frame(r, WIRE_FRAME_COST, cost, n * sizeof *cost);
}

int store_replay_identity(const struct store *st, store_emit_fn emit, void *ctx)
{
	struct replay r = {.st = st, .emit = emit, .ctx = ctx};
	/* A process's cost goes with its newest stream only (an exec continues it in a later one). */
	size_t *cost_source = xcalloc(st->proc_count + 1, sizeof *cost_source);
	for (size_t s = 0; s < st->source_cap; s++)
		if (st->sources[s].had_hello && st->sources[s].process < st->proc_count)
			cost_source[st->sources[s].process] = s + 1;
	for (size_t s = 0; s < st->source_cap && !r.rc; s++) {
		const struct source *src = &st->sources[s];
		if (!src->had_hello)
			continue;
		const struct process *pr = &st->procs[src->process];
		r.source = (int)s;
		r.local = xcalloc(st->string_count, sizeof *r.local);
		for (size_t id = src->strmap_cap; id-- > 1;)
			if (src->strmap[id] && src->strmap[id] < st->string_count)
				r.local[src->strmap[id]] = (uint32_t)id;
		replay_hello(&r, pr);
		replay_strings(&r, src);
		replay_threads(&r, pr);
		replay_gpu(&r, pr);
		replay_losses(&r, pr);
		if (cost_source[src->process] == s + 1)
			replay_cost(&r, src->process);
		if (pr->exited) {
			struct wire_bye bye = {.time_ns = 0, .exit_code = pr->exit_code};
			replay_frame(&r, WIRE_FRAME_BYE, &bye, sizeof bye);
		} else if (pr->detached) {
			struct wire_bye bye = {pr->detached_ns, pr->exit_code, WIRE_BYE_DETACHED};
			replay_frame(&r, WIRE_FRAME_BYE, &bye, sizeof bye);
		}
		free(r.local);
	}
	free(cost_source);
	return r.rc;
}
