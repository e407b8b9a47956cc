#!/usr/bin/env bash
# Several captures in one `stats`: two `cuscope record` runs of nvtx_at with RANK=0 and RANK=1,
# started together, then `stats --format=json A B` has both processes (apart, even if their pids
# were equal) with their ranks, this host and their capture (0, 1), and sums their ranges; the
# table form has the host column too.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog nvtx_at

host=$(hostname)
at=$(($(date +%s%N) + 1500000000))
RANK=0 WORLD_SIZE=2 "$CUSCOPE" record -o "$T/a.cuscope" -- "$PROGS/nvtx_at" "$at" >"$T/a.out" 2>"$T/a.err" </dev/null &
a=$!
BG_PIDS+=("$a")
RANK=1 WORLD_SIZE=2 "$CUSCOPE" record -o "$T/b.cuscope" -- "$PROGS/nvtx_at" "$at" >"$T/b.out" 2>"$T/b.err" </dev/null &
b=$!
BG_PIDS+=("$b")
bg_wait "$a" 60
[ "$RC" = 0 ] || fail "record a exited $RC: $(head -c 300 "$T/a.err")"
bg_wait "$b" 60
[ "$RC" = 0 ] || fail "record b exited $RC: $(head -c 300 "$T/b.err")"

timeout 60 "$CUSCOPE" stats --format=json "$T/a.cuscope" "$T/b.cuscope" >"$T/ab.json" 2>"$T/ab.err" ||
	fail "stats A B exited $?: $(head -c 300 "$T/ab.err")"
[ -s "$T/ab.err" ] && fail "stats A B said: $(head -c 300 "$T/ab.err")"
timeout 60 "$CUSCOPE" stats --report=processes "$T/a.cuscope" "$T/b.cuscope" >"$T/ab.txt" 2>&1 ||
	fail "stats (table) A B exited $?: $(head -c 300 "$T/ab.txt")"

py_check "$T/ab.json" "$T/a.out" "$T/b.out" "$host" "$T/ab.txt" <<'PY'
pid_a = int(OUT.split()[1])
pid_b = int(open(sys.argv[3]).read().split()[1])
host = sys.argv[4]
procs = J["processes"]
if len(procs) != 2:
    fail("want 2 processes, got %r" % procs)
got = sorted((p["pid"], p["rank"], p["world_size"], p["host"], p["capture"]) for p in procs)
want = sorted([(pid_a, 0, 2, host, 0), (pid_b, 1, 2, host, 1)])
if got != want:
    fail("processes (pid, rank, world_size, host, capture) %r, want %r" % (got, want))
steps = [r for r in J["nvtx"] if r["name"] == "step"]
if len(steps) != 1 or steps[0]["count"] != 6:
    fail("want 6 step ranges of both captures in one row, got %r" % steps)
if not (20e6 <= steps[0]["min_ns"] and steps[0]["p50_ns"] < 60e6):
    fail("step durations look wrong: %r" % steps[0])
table = open(sys.argv[5]).read()
head = [l for l in table.splitlines() if "cmdline" in l]
if not head or "host" not in head[0] or "capture" not in head[0]:
    fail("table has no host/capture column:\n" + table[:1000])
if table.count(" " + host + " ") < 2 and table.count(host) < 2:
    fail("table does not show the host of both processes:\n" + table[:1000])
PY

pid_a=$(awk '$1 == "pid" {print $2}' "$T/a.out")
pid_b=$(awk '$1 == "pid" {print $2}' "$T/b.out")
tm_run_cuscope view "$T/a.cuscope" "$T/b.cuscope"
tm_wait "rank 0  nvtx_at $pid_a" 15 "view A B: rank 0's header"
tm_wait "rank 1  nvtx_at $pid_b" 5 "view A B: rank 1's header"
tm_screen_has 'a.cuscope \+1 more' || fail "view A B: title lacks 'a.cuscope +1 more': $(tm_screen | head -n 1)"
tm_keys q
tm_wait_exit 0 10
exit 0
