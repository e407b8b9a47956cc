#!/usr/bin/env bash
# The ranks stats section: three ranks started by one shell under `cuscope record`, rank 1's steps
# made 4x slower on purpose (rank_steps 40 vs 10) and with a forked worker. `stats --report=ranks`
# lists rank 1 first in JSON and in the table, one row per rank (the worker folded in, the shell
# without a rank left out), 4 steps each ("step", not the more frequent aten::mul ranges), no GPU
# data so nccl_ns = gpu_idle_ns = 0 and gpu ""; `--step-range forward` takes the nested range;
# a capture without ranks has an empty section; an empty --step-range is one clear error.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog rank_steps

RS=$PROGS/rank_steps
cs_record "$T/cap" app -- /bin/sh -c "
RANK=0 '$RS' 10 & a=\$!
RANK=1 '$RS' 40 worker & b=\$!
RANK=2 '$RS' 10 & c=\$!
wait \$a; wait \$b; wait \$c"
[ "$RC" = 0 ] || fail "cuscope record exited $RC: $(head -c 300 "$T/app.err")"
stats()
{
	local out=$1
	shift
	timeout 60 "$CUSCOPE" stats "$@" >"$out" 2>"$out.err" || fail "cuscope stats $* exited $?: $(head -c 300 "$out.err")"
	[ -s "$out.err" ] && fail "cuscope stats $* said: $(head -c 300 "$out.err")"
	return 0
}
stats "$T/ranks.json" --report=ranks,processes --format=json "$T/cap"
stats "$T/ranks.txt" --report=ranks --format=table "$T/cap"
stats "$T/fwd.json" --report=ranks --format=json --step-range forward "$T/cap"
cs_record "$T/plain" plain -- "$RS" 5
[ "$RC" = 0 ] || fail "cuscope record (no ranks) exited $RC: $(head -c 300 "$T/plain.err")"
stats "$T/plain.json" --format=json "$T/plain"

# The full capture-without-ranks JSON first (the prelude checks every section is there).
py_check "$T/plain.json" "$T/ranks.json" "$T/ranks.txt" "$T/fwd.json" "$(hostname)" <<'PY'
R = json.load(open(sys.argv[2]))
procs = R["processes"]
ranks = R["ranks"]
own = {}  # rank -> pid of the process started by the shell
for p in procs:
    if p["rank"] >= 0 and not any(q["pid"] == p["ppid"] and q["rank"] == p["rank"] for q in procs):
        own[p["rank"]] = p["pid"]
if sorted(own) != [0, 1, 2] or len(procs) != 5:
    fail("want the shell, 3 ranks and rank 1's worker, got %r" % procs)
if [r["rank"] for r in ranks] != [1, 0, 2] and [r["rank"] for r in ranks] != [1, 2, 0]:
    fail("want rank 1 (the slow one) first and one row per rank, got %r" % ranks)
for r in ranks:
    if r["pid"] != own[r["rank"]] or r["host"] != sys.argv[5] or r["gpu"] != "":
        fail("rank %d: pid/host/gpu %r, want %d, %s, ''" % (r["rank"], r, own[r["rank"]], sys.argv[5]))
    if r["steps"] != 4 or r["nccl_ns"] != 0 or r["gpu_idle_ns"] != 0:
        fail("rank %d: want 4 steps, no NCCL nor GPU idle time: %r" % (r["rank"], r))
    want = 40e6 if r["rank"] == 1 else 10e6
    if not want <= r["step_p50_ns"] <= r["step_p99_ns"] < want + 30e6:
        fail("rank %d: step p50/p99 %r, want about %d ns" % (r["rank"], r, want))
    if not 4 * want <= r["compute_ns"] < 4 * (want + 30e6):
        fail("rank %d: compute_ns %d, want about 4 x %d" % (r["rank"], r["compute_ns"], want))
# The table: a heading line, then rank 1's row first.
lines = [l.split() for l in open(sys.argv[3]).read().splitlines() if l.strip()]
head = [i for i, l in enumerate(lines) if l[:2] == ["host", "rank"]]
if not head or lines[head[0]] != ["host", "rank", "pid", "gpu", "steps", "step_p50_ns", "step_p99_ns",
                                  "nccl_ns", "compute_ns", "gpu_idle_ns", "restart", "steps_inferred"]:
    fail("table lacks the ranks heading:\n" + open(sys.argv[3]).read())
first = lines[head[0] + 1]
if first[1] != "1" or first[2] != str(own[1]) or len(lines) != head[0] + 4:
    fail("table: want rank 1 first and 3 rows:\n" + open(sys.argv[3]).read())
# --step-range forward: the nested half-step range, same order.
fwd = json.load(open(sys.argv[4]))["ranks"]
if fwd[0]["rank"] != 1 or len(fwd) != 3:
    fail("--step-range forward: want rank 1 first of 3, got %r" % fwd)
for r in fwd:
    want = 20e6 if r["rank"] == 1 else 5e6
    if r["steps"] != 4 or not want <= r["step_p50_ns"] < want + 15e6:
        fail("--step-range forward: rank %d %r, want 4 steps of about %d ns" % (r["rank"], r, want))
if J.get("ranks") != []:
    fail("a capture without ranks: want an empty ranks section, got %r" % J.get("ranks"))
PY

rc=0
"$CUSCOPE" stats --step-range= "$T/cap" >"$T/bad.out" 2>"$T/bad.err" || rc=$?
[ "$rc" = 2 ] || fail "stats --step-range= exited $rc, want 2"
one_line_error "$T/bad.err" "stats --step-range="
[ -s "$T/bad.out" ] && fail "stats --step-range= printed: $(head -c 200 "$T/bad.out")"
exit 0
