#!/usr/bin/env bash
# A restarted worker is a group of its own: srun's step (a shell with SLURM_PROCID=0, so rank 0
# itself) runs rank 0's worker (RANK=0, TORCHELASTIC_RESTART_COUNT=0), then, as torchelastic
# does after a failure, a new one (restart 1). `stats` gives rank 0 two rows in "ranks" (restart 0,
# the step with its first worker folded in, and restart 1, the new worker), each with its 4 steps;
# `view` heads the new worker "rank 0 (restart 1)" and the ranks pane (R) lists both rows, the
# second as "0 (restart 1)".
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog rank_steps

RS=$PROGS/rank_steps
cs_record "$T/cap" app -- env SLURM_PROCID=0 /bin/sh -c "
RANK=0 TORCHELASTIC_RESTART_COUNT=0 '$RS' 10
RANK=0 TORCHELASTIC_RESTART_COUNT=1 '$RS' 10"
[ "$RC" = 0 ] || fail "cuscope record exited $RC: $(head -c 300 "$T/app.err")"
cs_stats "$T/cap" "$T/stats.json"

py_check "$T/stats.json" <<'PY'
S = json.load(open(sys.argv[1]))
procs, ranks = S["processes"], S["ranks"]
worker = {p["restart_count"]: p["pid"] for p in procs if p["cmdline"].split()[0].endswith("rank_steps")}
shell = [p["pid"] for p in procs if p["rank"] == 0 and p["restart_count"] == -1]
if sorted(worker) != [0, 1] or len(shell) != 1:
    fail("want the shell (rank 0) and two workers (restart 0 and 1), got %r" % procs)
got = sorted((r["rank"], r["restart"], r["pid"], r["steps"]) for r in ranks)
want = [(0, 0, shell[0], 4), (0, 1, worker[1], 4)]
if got != want:
    fail("ranks rows (rank, restart, pid, steps): want %r, got %r" % (want, got))
PY

tm_run_cuscope view "$T/cap"
tm_wait 'rank 0 \(restart 1\)  rank_steps [0-9]+ ' 15 "view: the restarted worker's header"
tm_screen_has '^rank 0  rank_steps [0-9]+ ' || fail "no header of the first worker: $(tm_screen | head -n 20 | tr '\n' '|')"
tm_keys R
tm_wait 'Ranks by compute time' 5 "R shows the ranks pane"
tm_wait '^ +0 \(restart 1\) +[0-9]+ +4 ' 5 "the ranks pane lists the restarted worker as its own row"
tm_screen_has '^ +0 {13}[ 0-9]+ +4 ' || fail "the ranks pane lacks rank 0's first start: $(tm_screen | tail -n 8 | tr '\n' '|')"
tm_keys q
tm_wait_exit 0 10
exit 0
