/*
 * Rank labels a launcher (torchrun, mpirun, srun) puts in each process's environment: read by the
 * collector in the traced process and by `cuscope record` for its -o patterns. Labels only: they
 * name a lane group or a file and are never trusted for anything else.
 */
#ifndef CUSCOPE_RANK_H
#define CUSCOPE_RANK_H

#include <stddef.h>
#include <stdint.h>

struct rank_ids {
	uint32_t ids; /* WIRE_ID_* bits: which fields are known */
	int32_t rank;
	int32_t local_rank;
	int32_t world_size;
	int32_t restart_count;
	/* The first variable that was set but not a decimal 0..2^31-1 ("" if none), for one notice. */
	char bad_name[32];
	char bad_value[24]; /* its value, cut and with anything but [0-9A-Za-z_+-] as '?' */
};

/* A variable lookup: getenv, or a test's table. */
typedef const char *(*rank_getenv_fn)(const char *name, void *ctx);

/* Parses a label: a decimal 0..2^31-1 with no sign, space or other text; 0 or -EINVAL. */
int rank_parse(const char *text, int32_t *out);
/*
 * Reads the labels: rank from the first of RANK, OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID
 * that is set, local rank (LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID,
 * SLURM_LOCALID), world size (WORLD_SIZE, OMPI_COMM_WORLD_SIZE, PMI_SIZE, SLURM_NTASKS) and
 * TORCHELASTIC_RESTART_COUNT. A set variable that is not a valid label is ignored (its name
 * goes to bad_name) and does not give way to the next one.
 */
void rank_read(struct rank_ids *out, rank_getenv_fn get, void *ctx);

#endif
