/* Rank labels from a launcher's environment variables (see rank.h). */
#include "cuscope/rank.h"
#include "cuscope/wire.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int rank_parse(const char *text, int32_t *out)
{
	if (!text || !*text)
		return -EINVAL;
	int64_t v = 0;
	for (const char *c = text; *c; c++) {
		if (*c < '0' || *c > '9')
			return -EINVAL;
		v = v * 10 + (*c - '0');
		if (v > INT32_MAX)
			return -EINVAL;
	}
	*out = (int32_t)v;
	return 0;
}

/* Where each label is read from, first set one wins. */
static const struct rank_source {
	uint32_t bit;
	size_t offset;
	const char *names[5];
} rank_sources[] = {
    {WIRE_ID_RANK,
     offsetof(struct rank_ids, rank),
     {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"}},
    {WIRE_ID_LOCAL_RANK,
     offsetof(struct rank_ids, local_rank),
     {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"}},
    {WIRE_ID_WORLD_SIZE,
     offsetof(struct rank_ids, world_size),
     {"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS"}},
    {WIRE_ID_RESTART_COUNT, offsetof(struct rank_ids, restart_count), {"TORCHELASTIC_RESTART_COUNT"}},
};

/* Copies a bad value for a notice: short, and only characters safe anywhere. */
static void rank_note_bad(struct rank_ids *out, const char *name, const char *value)
{
	if (out->bad_name[0])
		return;
	snprintf(out->bad_name, sizeof out->bad_name, "%s", name);
	size_t i = 0;
	for (; value[i] && i < sizeof out->bad_value - 1; i++) {
		char c = value[i];
		int ok = (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		         c == '_' || c == '+' || c == '-';
		out->bad_value[i] = ok ? c : '?';
	}
	out->bad_value[i] = '\0';
}

void rank_read(struct rank_ids *out, rank_getenv_fn get, void *ctx)
{
	memset(out, 0, sizeof *out);
	for (size_t s = 0; s < sizeof rank_sources / sizeof rank_sources[0]; s++) {
		const struct rank_source *src = &rank_sources[s];
		for (size_t n = 0; n < 5 && src->names[n]; n++) {
			const char *v = get(src->names[n], ctx);
			if (!v)
				continue;
			int32_t value;
			if (rank_parse(v, &value) == 0) {
				memcpy((char *)out + src->offset, &value, sizeof value);
				out->ids |= src->bit;
			} else {
				rank_note_bad(out, src->names[n], v);
			}
			break; /* the first one set decides: a bad one is not replaced by another's value */
		}
	}
}
