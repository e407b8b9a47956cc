/*
 * Stats sections. Each section is built as a generic table (named columns, typed cells) and then
 * printed by one of three writers, so table, CSV and JSON always hold the same rows.
 */
#include "cuscope/stats.h"
#include "cuscope/store.h"
#include "cuscope/wire.h"
#include "cuscope/xalloc.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

enum cell_type { CELL_STR, CELL_INT };

struct column {
	const char *key;
	enum cell_type type;
};

struct cell {
	const char *str; /* CELL_STR, owned by the table */
	int64_t num;
};

struct table {
	const char *name;
	const struct column *cols;
	size_t col_count;
	struct cell *cells; /* row-major */
	size_t rows, cap_cells;
};

static void table_row(struct table *t, ...)
{
	va_list ap;
	xgrow((void **)&t->cells, &t->cap_cells, (t->rows + 1) * t->col_count, sizeof *t->cells);
	struct cell *row = &t->cells[t->rows * t->col_count];
	va_start(ap, t);
	for (size_t c = 0; c < t->col_count; c++) {
		if (t->cols[c].type == CELL_STR) {
			row[c].str = xstrdup(va_arg(ap, const char *));
		} else {
			row[c].num = va_arg(ap, int64_t);
			row[c].str = NULL;
		}
	}
	va_end(ap);
	t->rows++;
}

static void table_fini(struct table *t)
{
	for (size_t i = 0; i < t->rows * t->col_count; i++)
		free((char *)t->cells[i].str);
	free(t->cells);
}

/* ---- nvtx ---- */

static const char *const style_names[] = {"PushPop", "StartEnd", "Mark"};

struct nvtx_group {
	uint32_t name_id, domain_id;
	int style;
	uint64_t *durations;
	size_t n, cap;
	uint64_t total;
};

struct nvtx_groups {
	struct nvtx_group *v;
	size_t n, cap;
	/* open addressing index over v */
	uint32_t *slots;
	size_t slot_count;
};

static uint32_t group_hash(uint32_t name, uint32_t domain, int style)
{
	return (name * 2654435761u) ^ (domain * 40503u) ^ (uint32_t)style * 97u;
}

static struct nvtx_group *group_get(struct nvtx_groups *g, uint32_t name, uint32_t domain, int style)
{
	if ((g->n + 1) * 2 > g->slot_count) {
		free(g->slots);
		g->slot_count = g->slot_count ? g->slot_count * 2 : 256;
		g->slots = xcalloc(g->slot_count, sizeof *g->slots);
		for (size_t i = 0; i < g->n; i++) {
			size_t s = group_hash(g->v[i].name_id, g->v[i].domain_id, g->v[i].style) & (g->slot_count - 1);
			while (g->slots[s])
				s = (s + 1) & (g->slot_count - 1);
			g->slots[s] = (uint32_t)i + 1;
		}
	}
	size_t s = group_hash(name, domain, style) & (g->slot_count - 1);
	while (g->slots[s]) {
		struct nvtx_group *e = &g->v[g->slots[s] - 1];
		if (e->name_id == name && e->domain_id == domain && e->style == style)
			return e;
		s = (s + 1) & (g->slot_count - 1);
	}
	xgrow((void **)&g->v, &g->cap, g->n + 1, sizeof *g->v);
	struct nvtx_group *e = &g->v[g->n];
	memset(e, 0, sizeof *e);
	e->name_id = name;
	e->domain_id = domain;
	e->style = style;
	g->slots[s] = (uint32_t)++g->n;
	return e;
}

static void group_add(struct nvtx_groups *g, const struct store_range *r, int style)
{
	struct nvtx_group *e = group_get(g, r->name_id, r->domain_id, style);
	xgrow((void **)&e->durations, &e->cap, e->n + 1, sizeof *e->durations);
	uint64_t d = r->end_ns - r->start_ns;
	e->durations[e->n++] = d;
	e->total += d;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static int cmp_group_total(const void *a, const void *b)
{
	const struct nvtx_group *x = a, *y = b;
	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	if (x->n != y->n)
		return x->n > y->n ? -1 : 1;
	return x->name_id < y->name_id ? -1 : x->name_id > y->name_id;
}

/* Nearest-rank percentile of sorted values (q in (0,1]). */
static uint64_t percentile(const uint64_t *sorted, size_t n, double q)
{
	size_t rank = (size_t)(q * (double)n + 0.999999999);
	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	return sorted[rank - 1];
}

static const struct column nvtx_cols[] = {
	{"name", CELL_STR},     {"domain", CELL_STR}, {"style", CELL_STR}, {"count", CELL_INT}, {"total_ns", CELL_INT},
	{"min_ns", CELL_INT},   {"p50_ns", CELL_INT}, {"p99_ns", CELL_INT}, {"max_ns", CELL_INT},
};

static void section_nvtx(const struct store *st, struct table *t)
{
	struct nvtx_groups g = {0};
	for (size_t p = 0; p < store_process_count(st); p++) {
		struct store_process_info pi;
		store_process_get(st, p, &pi);
		for (size_t l = 0; l < pi.lane_count; l++) {
			struct store_lane_info li;
			store_lane_get(st, p, l, &li);
			int style = li.kind == STORE_LANE_NVTX_ASYNC ? 1 : 0;
			for (size_t row = 0; row < li.row_count; row++) {
				const struct store_range *r;
				size_t n = store_lane_row_all(st, p, l, row, &r);
				for (size_t i = 0; i < n; i++)
					group_add(&g, &r[i], style);
			}
			const struct store_range *m;
			size_t n = store_lane_mark_query(st, p, l, 0, UINT64_MAX, &m);
			for (size_t i = 0; i < n; i++)
				group_add(&g, &m[i], 2);
		}
	}
	if (g.n)
		qsort(g.v, g.n, sizeof *g.v, cmp_group_total);
	for (size_t i = 0; i < g.n; i++) {
		struct nvtx_group *e = &g.v[i];
		qsort(e->durations, e->n, sizeof *e->durations, cmp_u64);
		table_row(t, store_string(st, e->name_id), store_string(st, e->domain_id), style_names[e->style],
			  (int64_t)e->n, (int64_t)e->total, (int64_t)e->durations[0],
			  (int64_t)percentile(e->durations, e->n, 0.50), (int64_t)percentile(e->durations, e->n, 0.99),
			  (int64_t)e->durations[e->n - 1]);
		free(e->durations);
	}
	free(g.v);
	free(g.slots);
}

/* ---- threads, processes, losses ---- */

static const struct column thread_cols[] = {{"pid", CELL_INT}, {"tid", CELL_INT}, {"name", CELL_STR}};

static void section_threads(const struct store *st, struct table *t)
{
	for (size_t p = 0; p < store_process_count(st); p++) {
		struct store_process_info pi;
		store_process_get(st, p, &pi);
		for (size_t l = 0; l < pi.lane_count; l++) {
			struct store_lane_info li;
			store_lane_get(st, p, l, &li);
			if (li.kind == STORE_LANE_THREAD)
				table_row(t, (int64_t)pi.pid, (int64_t)li.tid, li.name);
		}
	}
}

static const struct column process_cols[] = {{"pid", CELL_INT}, {"ppid", CELL_INT}, {"cmdline", CELL_STR}};

static void section_processes(const struct store *st, struct table *t)
{
	for (size_t p = 0; p < store_process_count(st); p++) {
		struct store_process_info pi;
		store_process_get(st, p, &pi);
		table_row(t, (int64_t)pi.pid, (int64_t)pi.ppid, pi.cmdline);
	}
}

static const struct column loss_cols[] = {{"cause", CELL_STR}, {"count", CELL_INT}};

static void section_losses(const struct store *st, struct table *t)
{
	for (uint32_t cause = 1; cause < WIRE_LOSS_CAUSE_MAX; cause++)
		table_row(t, wire_loss_cause_name(cause), (int64_t)store_loss_count(st, cause));
}

struct section {
	const char *name;
	const struct column *cols;
	size_t col_count;
	void (*build)(const struct store *st, struct table *t);
};

#define COLS(a) a, sizeof a / sizeof a[0]
static const struct section sections[] = {
	{"nvtx", COLS(nvtx_cols), section_nvtx},
	{"threads", COLS(thread_cols), section_threads},
	{"processes", COLS(process_cols), section_processes},
	{"losses", COLS(loss_cols), section_losses},
};

/* ---- writers ---- */

static void json_string(FILE *out, const char *s)
{
	fputc('"', out);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '"':
			fputs("\\\"", out);
			break;
		case '\\':
			fputs("\\\\", out);
			break;
		case '\n':
			fputs("\\n", out);
			break;
		case '\t':
			fputs("\\t", out);
			break;
		case '\r':
			fputs("\\r", out);
			break;
		default:
			if (*p < 0x20)
				fprintf(out, "\\u%04x", *p);
			else
				fputc(*p, out);
		}
	}
	fputc('"', out);
}

static void csv_string(FILE *out, const char *s)
{
	if (!strpbrk(s, ",\"\n\r")) {
		fputs(s, out);
		return;
	}
	fputc('"', out);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', out);
		fputc(*s, out);
	}
	fputc('"', out);
}

static void write_json(FILE *out, const struct table *t, int first)
{
	fprintf(out, "%s\n  \"%s\": [", first ? "" : ",", t->name);
	for (size_t r = 0; r < t->rows; r++) {
		fprintf(out, "%s\n    {", r ? "," : "");
		for (size_t c = 0; c < t->col_count; c++) {
			const struct cell *cell = &t->cells[r * t->col_count + c];
			fprintf(out, "%s\"%s\": ", c ? ", " : "", t->cols[c].key);
			if (t->cols[c].type == CELL_STR)
				json_string(out, cell->str);
			else
				fprintf(out, "%" PRId64, cell->num);
		}
		fputc('}', out);
	}
	fprintf(out, "%s]", t->rows ? "\n  " : "");
}

static void write_csv(FILE *out, const struct table *t, int first)
{
	fprintf(out, "%s# %s\n", first ? "" : "\n", t->name);
	for (size_t c = 0; c < t->col_count; c++)
		fprintf(out, "%s%s", c ? "," : "", t->cols[c].key);
	fputc('\n', out);
	for (size_t r = 0; r < t->rows; r++) {
		for (size_t c = 0; c < t->col_count; c++) {
			const struct cell *cell = &t->cells[r * t->col_count + c];
			if (c)
				fputc(',', out);
			if (t->cols[c].type == CELL_STR)
				csv_string(out, cell->str);
			else
				fprintf(out, "%" PRId64, cell->num);
		}
		fputc('\n', out);
	}
}

static int cell_width(const struct table *t, size_t r, size_t c)
{
	const struct cell *cell = &t->cells[r * t->col_count + c];
	if (t->cols[c].type == CELL_STR)
		return (int)strlen(cell->str);
	char buf[32];
	return snprintf(buf, sizeof buf, "%" PRId64, cell->num);
}

static void write_table(FILE *out, const struct table *t, int first)
{
	int width[16];
	fprintf(out, "%s== %s ==\n", first ? "" : "\n", t->name);
	for (size_t c = 0; c < t->col_count; c++) {
		width[c] = (int)strlen(t->cols[c].key);
		for (size_t r = 0; r < t->rows; r++) {
			int w = cell_width(t, r, c);
			if (w > width[c])
				width[c] = w;
		}
		if (t->cols[c].type == CELL_STR && width[c] > 60)
			width[c] = 60;
	}
	for (size_t c = 0; c < t->col_count; c++)
		fprintf(out, "%s%*s", c ? "  " : "", t->cols[c].type == CELL_STR ? -width[c] : width[c], t->cols[c].key);
	fputc('\n', out);
	if (!t->rows)
		fputs("(none)\n", out);
	for (size_t r = 0; r < t->rows; r++) {
		for (size_t c = 0; c < t->col_count; c++) {
			const struct cell *cell = &t->cells[r * t->col_count + c];
			if (c)
				fputs("  ", out);
			if (t->cols[c].type == CELL_STR)
				fprintf(out, "%-*.*s", width[c], width[c], cell->str);
			else
				fprintf(out, "%*" PRId64, width[c], cell->num);
		}
		fputc('\n', out);
	}
}

int stats_format_parse(const char *text, enum stats_format *out)
{
	static const struct {
		const char *name;
		enum stats_format format;
	} names[] = {{"table", STATS_FORMAT_TABLE}, {"csv", STATS_FORMAT_CSV}, {"json", STATS_FORMAT_JSON}};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		if (strcmp(text, names[i].name) == 0) {
			*out = names[i].format;
			return 0;
		}
	}
	return -EINVAL;
}

int stats_write(FILE *out, const struct store *st, enum stats_format format)
{
	static void (*const writers[])(FILE *, const struct table *, int) = {
		[STATS_FORMAT_TABLE] = write_table,
		[STATS_FORMAT_CSV] = write_csv,
		[STATS_FORMAT_JSON] = write_json,
	};
	if (format == STATS_FORMAT_JSON)
		fputc('{', out);
	for (size_t s = 0; s < sizeof sections / sizeof sections[0]; s++) {
		struct table t = {sections[s].name, sections[s].cols, sections[s].col_count, NULL, 0, 0};
		sections[s].build(st, &t);
		writers[format](out, &t, s == 0);
		table_fini(&t);
	}
	if (format == STATS_FORMAT_JSON)
		fputs("\n}\n", out);
	return ferror(out) ? -EIO : 0;
}
