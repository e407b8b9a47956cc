/*
 * Hot functions of a thread lane over a time window: the samples' stacks counted once per distinct
 * stack, then self and total time per function, through the store's public sample and stack queries;
 * ordered by self (leaf) samples or by inclusive samples (Python frames only on Python threads).
 */
#include "cuscope/store.h"
#include "store_impl.h"

#include "cuscope/hashmap.h"
#include "cuscope/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Dense indexes of uint32 keys (0 is never a key), in order of first sight. */
struct key_count {
	struct hashmap map; /* index + 1 */
	uint32_t *keys;     /* index -> key */
	size_t n, cap;
};

struct key_count_key {
	const struct key_count *kc;
	uint32_t key;
};

static int key_count_eq(const void *key, uint32_t ref)
{
	const struct key_count_key *k = key;
	return k->kc->keys[ref - 1] == k->key;
}

static uint64_t key_count_rehash(const void *ctx, uint32_t ref)
{
	const struct key_count *kc = ctx;
	return kc->keys[ref - 1] * 2654435761u;
}

static size_t key_count_get(struct key_count *kc, uint32_t key)
{
	hashmap_reserve(&kc->map, 256, key_count_rehash, kc, xcalloc);
	struct key_count_key k = {kc, key};
	uint32_t *slot = hashmap_slot(&kc->map, key * 2654435761u, key_count_eq, &k);
	if (*slot)
		return *slot - 1;
	xgrow((void **)&kc->keys, &kc->cap, kc->n + 1, sizeof *kc->keys);
	kc->keys[kc->n++] = key;
	hashmap_fill(&kc->map, slot, (uint32_t)kc->n);
	return kc->n - 1;
}

static void key_count_fini(struct key_count *kc)
{
	hashmap_fini(&kc->map);
	free(kc->keys);
}

struct stack_count *store_cpu_count_stacks(const struct store_sample *v, size_t n, size_t *out_n)
{
	struct key_count kc = {0};
	struct stack_count *sc = NULL;
	size_t cap = 0;
	for (size_t i = 0; i < n; i++) {
		if (!v[i].stack_id)
			continue;
		size_t used = kc.n;
		size_t k = key_count_get(&kc, v[i].stack_id);
		if (k == used) {
			xgrow((void **)&sc, &cap, k + 1, sizeof *sc);
			sc[k] = (struct stack_count){v[i].stack_id, 0};
		}
		sc[k].count++;
	}
	*out_n = kc.n;
	key_count_fini(&kc);
	return sc;
}

static int cmp_hot(const void *a, const void *b)
{
	const struct store_hot_function *x = a, *y = b;
	if (x->self != y->self)
		return x->self > y->self ? -1 : 1;
	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return x->frame_id < y->frame_id ? -1 : x->frame_id > y->frame_id;
}

static int cmp_inclusive(const void *a, const void *b)
{
	const struct store_hot_function *x = a, *y = b;
	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	if (x->self != y->self)
		return x->self > y->self ? -1 : 1;
	return x->frame_id < y->frame_id ? -1 : x->frame_id > y->frame_id;
}

/*
 * Self and total samples of every frame in a lane's window: *out (heap) gets one entry per distinct
 * frame in order of first sight, returns their count; *samples = samples in the window.
 */
static size_t hot_accumulate(const struct store *st, size_t process, size_t lane, uint64_t from_ns,
                             uint64_t to_ns, struct store_hot_function **out, uint64_t *samples)
{
	const struct store_sample *v;
	size_t n = store_lane_samples(st, process, lane, from_ns, to_ns, &v);
	if (samples)
		*samples = n;
	*out = NULL;
	if (!n)
		return 0;
	size_t distinct;
	struct stack_count *sc = store_cpu_count_stacks(v, n, &distinct);
	struct key_count fk = {0};
	struct store_hot_function *acc = NULL;
	size_t cap = 0;
	for (size_t i = 0; i < distinct; i++) {
		const uint32_t *f;
		size_t depth = store_stack_frames(st, sc[i].stack_id, &f);
		for (size_t d = 0; d < depth; d++) {
			/* A frame counts once per stack toward total (recursion). */
			size_t e;
			for (e = 0; e < d && f[e] != f[d]; e++)
				;
			size_t used = fk.n;
			size_t k = key_count_get(&fk, f[d]);
			if (k == used) {
				xgrow((void **)&acc, &cap, k + 1, sizeof *acc);
				acc[k] = (struct store_hot_function){f[d], 0, 0, 0};
			}
			if (d == 0)
				acc[k].self += sc[i].count;
			if (e == d)
				acc[k].total += sc[i].count;
		}
	}
	size_t frames = fk.n;
	key_count_fini(&fk);
	free(sc);
	*out = acc;
	return frames;
}

/* Sorts acc[0..n) by cmp, copies the first top_n to out, frees acc; returns how many were copied. */
static size_t hot_top(struct store_hot_function *acc, size_t n, int (*cmp)(const void *, const void *),
                      size_t top_n, struct store_hot_function *out)
{
	if (n)
		qsort(acc, n, sizeof *acc, cmp);
	size_t m = n < top_n ? n : top_n;
	if (m)
		memcpy(out, acc, m * sizeof *out);
	free(acc);
	return m;
}

size_t store_hot_functions(const struct store *st, size_t process, size_t lane, uint64_t from_ns,
                           uint64_t to_ns, size_t top_n, struct store_hot_function *out, uint64_t *samples)
{
	struct store_hot_function *acc;
	size_t n = hot_accumulate(st, process, lane, from_ns, to_ns, &acc, samples);
	return hot_top(acc, n, cmp_hot, top_n, out);
}

size_t store_hot_inclusive(const struct store *st, size_t process, size_t lane, uint64_t from_ns,
                           uint64_t to_ns, size_t top_n, struct store_hot_function *out, uint64_t *samples,
                           int *python)
{
	struct store_hot_function *acc;
	size_t n = hot_accumulate(st, process, lane, from_ns, to_ns, &acc, samples);
	/* On a Python thread every interpreter function is in nearly every stack: only the Python
	 * frames say where the time goes. */
	size_t py = 0;
	for (size_t i = 0; i < n; i++)
		if (store_frame_is_python(st, acc[i].frame_id))
			acc[py++] = acc[i];
	if (python)
		*python = py > 0;
	return hot_top(acc, py ? py : n, cmp_inclusive, top_n, out);
}

int store_frame_is_python(const struct store *st, uint32_t frame_id)
{
	return strncmp(store_frame_function(st, frame_id), STORE_PY_FRAME_PREFIX,
	               sizeof STORE_PY_FRAME_PREFIX - 1) == 0;
}

const char *store_frame_label(const struct store *st, uint32_t frame_id, char *buf, size_t size)
{
	const char *fn = store_frame_function(st, frame_id);
	if (strncmp(fn, STORE_PY_FRAME_PREFIX, sizeof STORE_PY_FRAME_PREFIX - 1) != 0 || !size)
		return fn;
	/* "py::QUALNAME:FILE": a qualified name has no ':', so the first one ends it. */
	const char *name = fn + sizeof STORE_PY_FRAME_PREFIX - 1;
	const char *colon = strchr(name, ':');
	if (!colon || !colon[1] || colon == name)
		return fn;
	snprintf(buf, size, "%s:%.*s", colon + 1, (int)(colon - name), name);
	return buf;
}
