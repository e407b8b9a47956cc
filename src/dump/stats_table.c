#include "stats_table.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cuscope/escape.h"
#include "cuscope/xalloc.h"

void stats_table_row(struct table *t, ...)
{
	va_list ap;
	xgrow((void **)&t->cells, &t->cap_cells, (t->rows + 1) * t->col_count, sizeof *t->cells);
	struct cell *row = &t->cells[t->rows * t->col_count];
	va_start(ap, t);
	for (size_t c = 0; c < t->col_count; c++) {
		if (t->cols[c].type == CELL_STR) {
			row[c].str = xstrdup(va_arg(ap, const char *));
		} else if (t->cols[c].type == CELL_BOOL) {
			row[c].num = va_arg(ap, int) != 0;
			row[c].str = NULL;
		} else if (t->cols[c].type == CELL_REAL) {
			row[c].real = va_arg(ap, double);
			row[c].str = NULL;
		} else {
			row[c].num = va_arg(ap, int64_t);
			row[c].str = NULL;
		}
	}
	va_end(ap);
	t->rows++;
}

void stats_table_fini(struct table *t)
{
	for (size_t i = 0; i < t->rows * t->col_count; i++)
		free((char *)t->cells[i].str);
	free(t->cells);
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
				escape_json_fputs(out, cell->str);
			else if (t->cols[c].type == CELL_BOOL)
				fputs(cell->num ? "true" : "false", out);
			else if (t->cols[c].type == CELL_REAL)
				fprintf(out, "%.9g", cell->real);
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
				escape_csv_fputs(out, cell->str);
			else if (t->cols[c].type == CELL_BOOL)
				fputs(cell->num ? "true" : "false", out);
			else if (t->cols[c].type == CELL_REAL)
				fprintf(out, "%.9g", cell->real);
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
		return (int)escape_term_columns(cell->str);
	if (t->cols[c].type == CELL_BOOL)
		return cell->num ? 4 : 5;
	char buf[32];
	if (t->cols[c].type == CELL_REAL)
		return snprintf(buf, sizeof buf, "%.4g", cell->real);
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
		fprintf(out, "%s%*s", c ? "  " : "", t->cols[c].type == CELL_STR ? -width[c] : width[c],
		        t->cols[c].key);
	fputc('\n', out);
	if (!t->rows)
		fputs("(none)\n", out);
	for (size_t r = 0; r < t->rows; r++) {
		for (size_t c = 0; c < t->col_count; c++) {
			const struct cell *cell = &t->cells[r * t->col_count + c];
			if (c)
				fputs("  ", out);
			if (t->cols[c].type == CELL_STR)
				escape_term_field(out, cell->str, (size_t)width[c], 1);
			else if (t->cols[c].type == CELL_BOOL)
				fprintf(out, "%-*s", width[c], cell->num ? "true" : "false");
			else if (t->cols[c].type == CELL_REAL)
				fprintf(out, "%*.4g", width[c], cell->real);
			else
				fprintf(out, "%*" PRId64, width[c], cell->num);
		}
		fputc('\n', out);
	}
}

void stats_table_write(FILE *out, const struct table *t, enum stats_format format, int first)
{
	static void (*const writers[])(FILE *, const struct table *, int) = {
	    [STATS_FORMAT_TABLE] = write_table,
	    [STATS_FORMAT_CSV] = write_csv,
	    [STATS_FORMAT_JSON] = write_json,
	};
	writers[format](out, t, first);
}
