/*
 * Names in the store: C++ demangling (kernels here, stack frames in store_cpu.c) through libiberty, and the
 * short labels of demangled kernel names, each cached per string id.
 */
#include "store_impl.h"

#include "cuscope/xalloc.h"

#include <libiberty/demangle.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * Longest name given to the demangler. libstdc++'s __cxa_demangle refuses every name over 1024
 * bytes (its recursion guard counts 2 components per input byte against a limit of 2048), which
 * left long template names (PyTorch's at::native kernels) mangled; libiberty's demangler is told
 * to lift that guard, so the input is bounded here instead: the collector never sends a longer
 * name (WIRE_MAX_STRING), and the demangler's stack use grows with the length.
 */
#define DEMANGLE_MAX_INPUT WIRE_MAX_STRING

/*
 * The mangled name inside nvcc's name for a kernel of internal linkage (static, or in an anonymous
 * namespace): "__nv_static_<N>__<N characters naming the file>_Z..." (NCCL's one-rank reduction is
 * one); the name itself when it has no such prefix.
 */
static const char *nv_static_unwrap(const char *name)
{
	static const char prefix[] = "__nv_static_";
	if (strncmp(name, prefix, sizeof prefix - 1) != 0)
		return name;
	const char *p = name + sizeof prefix - 1;
	size_t n = 0;
	while (*p >= '0' && *p <= '9' && n < 4096)
		n = n * 10 + (size_t)(*p++ - '0');
	if (p[0] != '_' || p[1] != '_' || strnlen(p + 2, n + 2) < n + 2 || strncmp(p + 2 + n, "_Z", 2) != 0)
		return name;
	return p + 2 + n;
}

/* Demangled text of a mangled C++ name (malloc'd), or NULL. */
static char *demangle_alloc(const char *mangled)
{
	mangled = nv_static_unwrap(mangled);
	if (strncmp(mangled, "_Z", 2) != 0 || strnlen(mangled, DEMANGLE_MAX_INPUT + 1) > DEMANGLE_MAX_INPUT)
		return NULL;
	return cplus_demangle_v3(mangled, DMGL_PARAMS | DMGL_ANSI | DMGL_NO_RECURSE_LIMIT);
}

char *store_demangle(const char *mangled, char *buf, size_t size)
{
	char *d = demangle_alloc(mangled);
	if (!d || !size) {
		free(d);
		return NULL;
	}
	snprintf(buf, size, "%s", d);
	free(d);
	return buf;
}

/* Label of a demangled name: the text at template depth 0 before the parameter list, without the
 * return type ("void ns::k<int>(float*)" -> "ns::k"). */
static size_t short_label(const char *s, char *out, size_t size)
{
	static const char anon[] = "(anonymous namespace)";
	size_t o = 0;
	int angle = 0;
	for (const char *p = s; *p && o + sizeof anon < size; p++) {
		if (strncmp(p, anon, sizeof anon - 1) == 0) {
			if (!angle) {
				memcpy(out + o, anon, sizeof anon - 1);
				o += sizeof anon - 1;
			}
			p += sizeof anon - 2;
			continue;
		}
		if (*p == '<') {
			angle++;
			continue;
		}
		if (*p == '>') {
			if (angle)
				angle--;
			continue;
		}
		if (angle)
			continue;
		if (*p == '(')
			break;
		if (*p == ' ') {
			o = 0; /* what came before was a return type */
			continue;
		}
		out[o++] = *p;
	}
	out[o] = '\0';
	return o;
}

static void name_cache_fit(struct store *st, uint32_t id)
{
	if (id < st->name_cache_cap)
		return;
	size_t old = st->name_cache_cap, cap = old;
	xgrow((void **)&st->demangled, &cap, (size_t)id + 1, sizeof *st->demangled);
	st->short_name = xrealloc(st->short_name, cap * sizeof *st->short_name);
	memset(st->demangled + old, 0, (cap - old) * sizeof *st->demangled);
	memset(st->short_name + old, 0, (cap - old) * sizeof *st->short_name);
	st->name_cache_cap = cap;
}

uint32_t store_kernel_name(struct store *st, uint32_t id)
{
	if (!id)
		return 0;
	name_cache_fit(st, id);
	if (!st->demangled[id]) {
		char *d = demangle_alloc(st->strings[id]);
		uint32_t did = d ? store_intern(st, d, strlen(d)) : id;
		free(d);
		name_cache_fit(st, did);
		st->demangled[id] = did;
		st->demangled[did] = did;
		char buf[1024];
		const char *text = st->strings[did];
		size_t n = short_label(text, buf, sizeof buf);
		uint32_t sid = n ? store_intern(st, buf, n) : did;
		name_cache_fit(st, sid);
		st->short_name[did] = sid;
	}
	return st->demangled[id];
}

const char *store_short_name(const struct store *st, uint32_t name_id)
{
	if (name_id < st->name_cache_cap && st->short_name[name_id])
		return store_string(st, st->short_name[name_id]);
	return store_string(st, name_id);
}
