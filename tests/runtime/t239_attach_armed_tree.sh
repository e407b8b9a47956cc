#!/usr/bin/env bash
# `attach PID` on an armed launcher shows its whole armed tree: a shell started with `run
# --detached` starts two ranks (rank_steps, RANK=0/1); attaching to the shell for a second records
# the shell and both ranks with their rank labels, and stats' ranks section has both.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog rank_steps

export CUSCOPE_SESSION_ROOT=$T/sessions
mkdir -m 0700 "$T/sessions"
RS=$PROGS/rank_steps
"$CUSCOPE" run --detached -- /bin/sh -c "RANK=0 '$RS' 300 & RANK=1 '$RS' 300 & wait" >"$T/run.out" 2>&1 ||
	fail "run --detached failed: $(cat "$T/run.out")"
pid=$(sed -n 's/^pid \([0-9]*\) armed.*/\1/p' "$T/run.out")
[ -n "$pid" ] || fail "run --detached printed no pid: $(cat "$T/run.out")"
BG_PIDS+=("$pid")
wait_until 10 sh -c "[ \$(pgrep -P $pid | wc -l) -ge 2 ]" || fail "the launcher did not start its ranks"
timeout 30 "$CUSCOPE" attach --record -o "$T/tree.cap" --duration 1 "$pid" >"$T/attach.out" 2>"$T/attach.err" ||
	fail "attach exited $?: $(head -c 300 "$T/attach.err")"
cs_stats "$T/tree.cap" "$T/stats.json"
py_check "$T/stats.json" "$T/attach.out" "$pid" <<'PY'
launcher = int(sys.argv[3])
procs = {p["pid"]: p for p in J["processes"]}
if launcher not in procs:
    fail("the launcher %d is not in the capture: %r" % (launcher, sorted(procs)))
kids = sorted(p["rank"] for p in J["processes"] if p["ppid"] == launcher)
if kids != [0, 1]:
    fail("the launcher's children have ranks %r, want [0, 1] (processes %r)" % (kids, [(p["pid"], p["ppid"], p["rank"]) for p in J["processes"]]))
ranks = sorted(r["rank"] for r in J["ranks"])
if ranks != [0, 1]:
    fail("ranks section %r, want ranks 0 and 1" % ranks)
PY
exit 0
