/* Launchers, rank group labels and communication kernels (see rankgroup.h). */
#include "cuscope/rankgroup.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuscope/xalloc.h"

/* Orders keys by capture, host, pid (the lookup's order); 0 when they name one process. */
static int rankgroup_cmp_where(const struct rankgroup_key *x, uint32_t capture, const char *host, pid_t pid)
{
	if (x->capture != capture)
		return x->capture < capture ? -1 : 1;
	int h = strcmp(x->host ? x->host : "", host ? host : "");
	if (h)
		return h < 0 ? -1 : 1;
	return x->pid < pid ? -1 : x->pid > pid;
}

static int rankgroup_cmp_key(const void *a, const void *b)
{
	const struct rankgroup_key *x = a, *y = b;
	int c = rankgroup_cmp_where(x, y->capture, y->host, y->pid);
	if (c)
		return c;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

void rankgroup_keys_sort(struct rankgroup_key *keys, size_t n)
{
	qsort(keys, n, sizeof *keys, rankgroup_cmp_key);
}

size_t rankgroup_keys_find(const struct rankgroup_key *keys, size_t n, uint32_t capture, const char *host,
                           pid_t pid)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (rankgroup_cmp_where(&keys[mid], capture, host, pid) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && rankgroup_cmp_where(&keys[lo], capture, host, pid) == 0 ? keys[lo].index : SIZE_MAX;
}

/* A launcher and one rank found under it. */
struct rankgroup_pair {
	size_t launcher;
	int32_t rank;
};

static int rankgroup_cmp_pair(const void *a, const void *b)
{
	const struct rankgroup_pair *x = a, *y = b;
	if (x->launcher != y->launcher)
		return x->launcher < y->launcher ? -1 : 1;
	return x->rank < y->rank ? -1 : x->rank > y->rank;
}

void rankgroup_launchers(const struct rankgroup_proc *procs, size_t n, size_t *out)
{
	size_t ranked = 0;
	for (size_t i = 0; i < n; i++) {
		out[i] = 0;
		ranked += procs[i].rank >= 0;
	}
	if (!ranked) /* the common case, once per frame: nothing to sort */
		return;
	struct rankgroup_key *keys = xcalloc(n, sizeof *keys);
	for (size_t i = 0; i < n; i++)
		keys[i] = (struct rankgroup_key){procs[i].capture, procs[i].pid, i, procs[i].host};
	rankgroup_keys_sort(keys, n);
	struct rankgroup_pair *pairs = NULL;
	size_t count = 0, cap = 0;
	for (size_t j = 0; j < n; j++) {
		if (procs[j].rank < 0)
			continue;
		size_t q = j;
		for (size_t hops = 0; hops < n; hops++) {
			size_t parent =
			    rankgroup_keys_find(keys, n, procs[q].capture, procs[q].host, procs[q].ppid);
			if (parent == SIZE_MAX || parent == q || parent == j)
				break;
			if (procs[parent].rank < 0) {
				xgrow((void **)&pairs, &cap, count + 1, sizeof *pairs);
				pairs[count++] = (struct rankgroup_pair){parent, procs[j].rank};
			}
			q = parent;
		}
	}
	if (count)
		qsort(pairs, count, sizeof *pairs, rankgroup_cmp_pair);
	for (size_t k = 0; k < count; k++)
		if (k == 0 || rankgroup_cmp_pair(&pairs[k - 1], &pairs[k]) != 0)
			out[pairs[k].launcher]++;
	free(pairs);
	free(keys);
}

int32_t rankgroup_restart(int32_t restart_count)
{
	return restart_count > 0 ? restart_count : 0;
}

void rankgroup_label(int32_t rank, int32_t restart_count, size_t launcher_ranks, char *buf, size_t size)
{
	if (rank >= 0 && rankgroup_restart(restart_count))
		snprintf(buf, size, "rank %d (restart %d)", (int)rank, (int)restart_count);
	else if (rank >= 0)
		snprintf(buf, size, "rank %d", (int)rank);
	else if (launcher_ranks)
		snprintf(buf, size, "launcher: %zu rank%s", launcher_ranks, launcher_ranks == 1 ? "" : "s");
	else
		snprintf(buf, size, "%s", "");
}

int rankgroup_is_nccl_kernel(const char *name)
{
	static const char anon[] = "(anonymous namespace)::", one_rank[] = "oneRankReduce";
	if (!name)
		return 0;
	if (strncmp(name, "void ", 5) == 0)
		name += 5;
	if (strncmp(name, "nccl", 4) == 0)
		return 1;
	/* A one-rank communicator's reduction, NCCL's file-local oneRankReduce<...> (ncclLaunchOneRank). */
	if (strncmp(name, anon, sizeof anon - 1) == 0)
		name += sizeof anon - 1;
	if (strncmp(name, one_rank, sizeof one_rank - 1) != 0)
		return 0;
	char next = name[sizeof one_rank - 1];
	return next == '\0' || next == '<' || next == '(';
}
