#!/usr/bin/env bash
# Ranks: several processes started by one shell under `cuscope record`, each with the labels a
# launcher sets (RANK, LOCAL_RANK, WORLD_SIZE, TORCHELASTIC_RESTART_COUNT). stats shows each
# process's rank; a child with no variable of its own (exec'd, or forked without exec like a
# DataLoader worker) has its parent's rank; the shell has none (-1); a value that is not a rank
# is ignored with one notice and leaves the rank unknown. `info` prints the labels.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog fork_exec

FE=$PROGS/fork_exec
cs_record "$T/cap" app -- /bin/sh -c "
RANK=0 LOCAL_RANK=0 WORLD_SIZE=3 '$FE' & a=\$!
RANK=1 LOCAL_RANK=1 WORLD_SIZE=3 TORCHELASTIC_RESTART_COUNT=2 '$FE' noexec & b=\$!
RANK=x2 WORLD_SIZE=3 SLURM_PROCID=2 '$FE' noexec bad & c=\$!
wait \$a; wait \$b; wait \$c"
[ "$RC" = 0 ] || fail "cuscope record exited $RC, want 0: $(head -c 300 "$T/app.err")"
cs_stats "$T/cap" "$T/stats.json"
timeout 60 "$CUSCOPE" info "$T/cap" >"$T/info.txt" 2>&1 || fail "cuscope info exited $?: $(head -c 300 "$T/info.txt")"

py_check "$T/stats.json" "$T/info.txt" "$FE" "$T/app.err" <<'PY'
info = open(sys.argv[2]).read()
err = open(sys.argv[4]).read()
fe = sys.argv[3]
want = {  # cmdline -> (rank, local_rank, world_size, restart_count, processes)
    fe: (0, 0, 3, -1, 1),
    fe + " child": (0, 0, 3, -1, 1),            # exec'd child: the environment it inherited
    fe + " noexec": (1, 1, 3, 2, 2),           # and its forked worker
    fe + " noexec bad": (-1, -1, 3, -1, 2),    # RANK=x2 ignored, not replaced by SLURM_PROCID
}
seen = {}
for p in J["processes"]:
    got = (p.get("rank"), p.get("local_rank"), p.get("world_size"), p.get("restart_count"))
    if p["cmdline"].startswith("/bin/sh"):
        if got != (-1, -1, -1, -1):
            fail("the shell has labels %r, want none" % (got,))
        continue
    if p["cmdline"] not in want:
        fail("unexpected process %r" % p)
    w = want[p["cmdline"]]
    if got != w[:4]:
        fail("%s (pid %d): labels %r, want %r" % (p["cmdline"], p["pid"], got, w[:4]))
    seen[p["cmdline"]] = seen.get(p["cmdline"], 0) + 1
for cmd, w in want.items():
    if seen.get(cmd, 0) != w[4]:
        fail("%d processes %r, want %d (processes: %r)" % (seen.get(cmd, 0), cmd, w[4], J["processes"]))
# One notice, from the process that read RANK=x2 (its forked worker starts with no notices).
if err.count("RANK=x2 is not a rank (a decimal 0..2147483647): ignored") != 1 or err.count("is not a rank") != 1:
    fail("want one notice on RANK=x2, got:\n" + err[:2000])
if info.count("    rank 0 of 3, local rank 0\n") != 2 or info.count("    rank 1 of 3, local rank 1, restart 2\n") != 2:
    fail("cuscope info lacks the rank lines:\n" + info[:3000])
if info.count("    rank -1 of 3\n") != 2:
    fail("cuscope info: want 'rank -1 of 3' for the bad rank's processes:\n" + info[:3000])
PY
exit 0
