/*
 * Capture diff. Rows are keyed by strings (string ids differ between stores): NVTX ranges by
 * (name, domain, style), kernels by (name, device). Percentiles are nearest-rank, as in stats.
 */
#include "cuscope/diff.h"
#include "cuscope/escape.h"
#include "cuscope/hashmap.h"
#include "cuscope/store.h"
#include "cuscope/u64.h"
#include "cuscope/wire.h"
#include "cuscope/xalloc.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

enum { ROW_NVTX, ROW_KERNEL };

static const char *const style_names[] = {"PushPop", "StartEnd", "Mark"};

struct side {
	uint64_t *durations;
	size_t n, cap;
	uint64_t total, p50;
};

struct drow {
	int kind;            /* ROW_NVTX or ROW_KERNEL */
	char *name, *domain; /* owned */
	int style;           /* nvtx: enum store_range_style */
	uint32_t device;     /* kernels */
	uint64_t hash;
	struct side s[2];
};

struct dtable {
	struct drow *v;
	size_t n, cap;
	struct hashmap map; /* by row_hash: index + 1 */
};

static uint64_t str_hash(uint64_t h, const char *s)
{
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return (h ^ 0xff) * 1099511628211ull;
}

static uint64_t row_hash(int kind, const char *name, const char *domain, int style, uint32_t device)
{
	uint64_t h = 14695981039346656037ull;
	h = (h ^ (uint64_t)kind) * 1099511628211ull;
	h = str_hash(h, name);
	h = str_hash(h, domain);
	h = (h ^ (uint64_t)style) * 1099511628211ull;
	return (h ^ device) * 1099511628211ull;
}

static int row_equal(const struct drow *r, int kind, const char *name, const char *domain, int style,
                     uint32_t device)
{
	return r->kind == kind && r->style == style && r->device == device && strcmp(r->name, name) == 0 &&
	       strcmp(r->domain, domain) == 0;
}

struct row_key {
	const struct dtable *t;
	int kind;
	const char *name, *domain;
	int style;
	uint32_t device;
	uint64_t hash;
};

static int row_key_eq(const void *key, uint32_t ref)
{
	const struct row_key *k = key;
	const struct drow *r = &k->t->v[ref - 1];
	return r->hash == k->hash && row_equal(r, k->kind, k->name, k->domain, k->style, k->device);
}

static uint64_t row_rehash(const void *ctx, uint32_t ref)
{
	const struct dtable *t = ctx;
	return t->v[ref - 1].hash;
}

static struct drow *row_get(struct dtable *t, int kind, const char *name, const char *domain, int style,
                            uint32_t device)
{
	hashmap_reserve(&t->map, 256, row_rehash, t, xcalloc);
	uint64_t h = row_hash(kind, name, domain, style, device);
	struct row_key key = {t, kind, name, domain, style, device, h};
	uint32_t *slot = hashmap_slot(&t->map, h, row_key_eq, &key);
	if (*slot)
		return &t->v[*slot - 1];
	xgrow((void **)&t->v, &t->cap, t->n + 1, sizeof *t->v);
	struct drow *r = &t->v[t->n];
	memset(r, 0, sizeof *r);
	r->kind = kind;
	r->name = xstrdup(name);
	r->domain = xstrdup(domain);
	r->style = style;
	r->device = device;
	r->hash = h;
	hashmap_fill(&t->map, slot, (uint32_t)++t->n);
	return r;
}

static void side_add(struct side *s, uint64_t d)
{
	xgrow((void **)&s->durations, &s->cap, s->n + 1, sizeof *s->durations);
	s->durations[s->n++] = d;
	s->total += d;
}

static void add_range(struct dtable *t, int which, const struct store *st, const struct store_range *r,
                      int style)
{
	struct drow *row =
	    row_get(t, ROW_NVTX, store_string(st, r->name_id), store_string(st, r->domain_id), style, 0);
	side_add(&row->s[which], r->end_ns - r->start_ns);
}

/* Adds every NVTX range, mark and kernel of st to side `which` of t. */
static void collect(struct dtable *t, int which, const struct store *st)
{
	for (size_t p = 0; p < store_process_count(st); p++) {
		struct store_process_info pi;
		store_process_get(st, p, &pi);
		for (size_t l = 0; l < pi.lane_count; l++) {
			struct store_lane_info li;
			store_lane_get(st, p, l, &li);
			int style =
			    li.kind == STORE_LANE_NVTX_ASYNC ? STORE_STYLE_STARTEND : STORE_STYLE_PUSHPOP;
			for (size_t row = 0; row < li.row_count; row++) {
				const struct store_range *r;
				size_t n = store_lane_row_all(st, p, l, row, &r);
				for (size_t i = 0; i < n; i++)
					add_range(t, which, st, &r[i], style);
			}
			const struct store_range *m;
			size_t n = store_lane_mark_query(st, p, l, 0, UINT64_MAX, &m);
			for (size_t i = 0; i < n; i++)
				add_range(t, which, st, &m[i], STORE_STYLE_MARK);
			if (li.kind != STORE_LANE_GPU_STREAM)
				continue;
			for (size_t row = 0; row < li.gpu_row_count; row++) {
				const struct store_gpu_op *v;
				size_t k = store_lane_gpu_all(st, p, l, row, &v);
				for (size_t i = 0; i < k; i++) {
					if (v[i].kind != WIRE_GPU_KERNEL)
						continue;
					struct drow *r = row_get(
					    t, ROW_KERNEL, store_string(st, v[i].name_id), "", 0, li.device);
					side_add(&r->s[which], v[i].end_ns - v[i].start_ns);
				}
			}
		}
	}
}

static uint64_t abs_delta(uint64_t a, uint64_t b)
{
	return a > b ? a - b : b - a;
}

static int cmp_row(const void *a, const void *b)
{
	const struct drow *x = a, *y = b;
	uint64_t dx = abs_delta(x->s[0].total, x->s[1].total), dy = abs_delta(y->s[0].total, y->s[1].total);
	if (dx != dy)
		return dx > dy ? -1 : 1;
	if (x->kind != y->kind)
		return x->kind - y->kind;
	int c = strcmp(x->name, y->name);
	if (c)
		return c;
	c = strcmp(x->domain, y->domain);
	if (c)
		return c;
	if (x->style != y->style)
		return x->style - y->style;
	return x->device < y->device ? -1 : x->device > y->device;
}

int diff_format_parse(const char *text, enum diff_format *out)
{
	if (strcmp(text, "table") == 0)
		*out = DIFF_FORMAT_TABLE;
	else if (strcmp(text, "json") == 0)
		*out = DIFF_FORMAT_JSON;
	else
		return -EINVAL;
	return 0;
}

static int64_t delta(uint64_t a, uint64_t b)
{
	return b >= a ? (int64_t)(b - a) : -(int64_t)(a - b);
}

/* Percent change from a to b; sets *ok to 0 when a is 0 (no base to compare with). */
static double pct(uint64_t a, uint64_t b, int *ok)
{
	*ok = a != 0;
	return a ? (double)delta(a, b) * 100.0 / (double)a : 0.0;
}

static void json_pct(FILE *out, const char *key, uint64_t a, uint64_t b)
{
	int ok;
	double v = pct(a, b, &ok);
	if (ok)
		fprintf(out, ", \"%s\": %.2f", key, v);
	else
		fprintf(out, ", \"%s\": null", key);
}

static const char *presence(const struct drow *r)
{
	return r->s[0].n && r->s[1].n ? "both" : r->s[0].n ? "a" : "b";
}

static void write_json(FILE *out, const struct dtable *t, const char *na, const char *nb)
{
	fputs("{\"a\": ", out);
	escape_json_fputs(out, na);
	fputs(", \"b\": ", out);
	escape_json_fputs(out, nb);
	fputs(", \"rows\": [", out);
	for (size_t i = 0; i < t->n; i++) {
		const struct drow *r = &t->v[i];
		fprintf(out, "%s\n  {\"kind\": \"%s\", \"name\": ", i ? "," : "",
		        r->kind == ROW_NVTX ? "nvtx" : "kernel");
		escape_json_fputs(out, r->name);
		if (r->kind == ROW_NVTX) {
			fputs(", \"domain\": ", out);
			escape_json_fputs(out, r->domain);
			fprintf(out, ", \"style\": \"%s\"", style_names[r->style]);
		} else {
			fprintf(out, ", \"device\": %" PRIu32, r->device);
		}
		fprintf(out, ", \"in\": \"%s\"", presence(r));
		fprintf(out,
		        ", \"count_a\": %zu, \"count_b\": %zu, \"p50_a_ns\": %" PRIu64
		        ", \"p50_b_ns\": %" PRIu64 ", \"total_a_ns\": %" PRIu64 ", \"total_b_ns\": %" PRIu64,
		        r->s[0].n, r->s[1].n, r->s[0].p50, r->s[1].p50, r->s[0].total, r->s[1].total);
		fprintf(out, ", \"delta_count\": %" PRId64 ", \"delta_p50_ns\": %" PRId64,
		        delta(r->s[0].n, r->s[1].n), delta(r->s[0].p50, r->s[1].p50));
		json_pct(out, "delta_p50_pct", r->s[0].p50, r->s[1].p50);
		fprintf(out, ", \"delta_total_ns\": %" PRId64, delta(r->s[0].total, r->s[1].total));
		json_pct(out, "delta_total_pct", r->s[0].total, r->s[1].total);
		fputc('}', out);
	}
	fprintf(out, "%s]}\n", t->n ? "\n" : "");
}

/* A duration for people: "812ns", "12.3us", "4.56ms", "1.234s" (signed when with_sign). */
static void fmt_dur(char *buf, size_t size, int64_t ns, int with_sign)
{
	const char *sign = ns < 0 ? "-" : with_sign ? "+" : "";
	uint64_t a = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
	if (a < 1000)
		snprintf(buf, size, "%s%" PRIu64 "ns", sign, a);
	else if (a < 1000000)
		snprintf(buf, size, "%s%.2fus", sign, (double)a / 1e3);
	else if (a < 1000000000)
		snprintf(buf, size, "%s%.2fms", sign, (double)a / 1e6);
	else
		snprintf(buf, size, "%s%.3fs", sign, (double)a / 1e9);
}

static void fmt_pct(char *buf, size_t size, uint64_t a, uint64_t b)
{
	int ok;
	double v = pct(a, b, &ok);
	if (!ok)
		snprintf(buf, size, "%s", b ? "new" : "-");
	else if (!b)
		snprintf(buf, size, "gone");
	else
		snprintf(buf, size, "%+.1f%%", v);
}

static void write_table(FILE *out, const struct dtable *t, const char *na, const char *nb)
{
	fputs("A: ", out);
	escape_term_fputs(out, na);
	fputs("\nB: ", out);
	escape_term_fputs(out, nb);
	fputc('\n', out);
	fprintf(out, "%-6s  %-40s  %-16s  %8s  %8s  %10s  %10s  %10s  %8s  %10s  %10s  %11s  %8s\n", "kind",
	        "name", "domain/dev", "count A", "count B", "p50 A", "p50 B", "p50 chg", "p50 %", "total A",
	        "total B", "total chg", "total %");
	if (!t->n)
		fputs("(no NVTX ranges or kernels in either capture)\n", out);
	for (size_t i = 0; i < t->n; i++) {
		const struct drow *r = &t->v[i];
		char where[128], pa[24], pb[24], pd[24], pp[24], ta[24], tb[24], td[24], tp[24];
		if (r->kind == ROW_NVTX)
			snprintf(where, sizeof where, "%s%s%s", r->domain, *r->domain ? " " : "",
			         r->style == STORE_STYLE_PUSHPOP ? "" : style_names[r->style]);
		else
			snprintf(where, sizeof where, "GPU%" PRIu32, r->device);
		fmt_dur(pa, sizeof pa, (int64_t)r->s[0].p50, 0);
		fmt_dur(pb, sizeof pb, (int64_t)r->s[1].p50, 0);
		fmt_dur(pd, sizeof pd, delta(r->s[0].p50, r->s[1].p50), 1);
		fmt_pct(pp, sizeof pp, r->s[0].p50, r->s[1].p50);
		fmt_dur(ta, sizeof ta, (int64_t)r->s[0].total, 0);
		fmt_dur(tb, sizeof tb, (int64_t)r->s[1].total, 0);
		fmt_dur(td, sizeof td, delta(r->s[0].total, r->s[1].total), 1);
		fmt_pct(tp, sizeof tp, r->s[0].total, r->s[1].total);
		/* Names come from the captures: escaped and cut by characters, never raw. */
		fprintf(out, "%-6s  ", r->kind == ROW_NVTX ? "nvtx" : "kernel");
		escape_term_field(out, r->name, 40, 1);
		fputs("  ", out);
		escape_term_field(out, where, 16, 1);
		fprintf(out, "  %8zu  %8zu  %10s  %10s  %10s  %8s  %10s  %10s  %11s  %8s\n", r->s[0].n,
		        r->s[1].n, pa, pb, pd, pp, ta, tb, td, tp);
	}
}

int diff_write(FILE *out, const struct store *a, const char *name_a, const struct store *b,
               const char *name_b, enum diff_format format)
{
	struct dtable t = {0};
	collect(&t, 0, a);
	collect(&t, 1, b);
	for (size_t i = 0; i < t.n; i++) {
		for (int s = 0; s < 2; s++) {
			struct side *sd = &t.v[i].s[s];
			u64_sort(sd->durations, sd->n);
			sd->p50 = u64_percentile(sd->durations, sd->n, 0.50);
			free(sd->durations);
			sd->durations = NULL;
		}
	}
	if (t.n)
		qsort(t.v, t.n, sizeof *t.v, cmp_row);
	if (format == DIFF_FORMAT_JSON)
		write_json(out, &t, name_a, name_b);
	else
		write_table(out, &t, name_a, name_b);
	for (size_t i = 0; i < t.n; i++) {
		free(t.v[i].name);
		free(t.v[i].domain);
	}
	free(t.v);
	hashmap_fini(&t.map);
	return ferror(out) ? -EIO : 0;
}
