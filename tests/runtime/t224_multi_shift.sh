#!/usr/bin/env bash
# Captures are aligned through their CLOCK_REALTIME anchors, not their CLOCK_MONOTONIC times: three
# `cuscope record` runs of nvtx_at started together, two of them with a planted anchor offset
# (CUSCOPE_TEST_REALTIME_SHIFT_NS, test only: as if that host's wall clock were off by it), +2.5 s
# and -1.7 s. `export A B C` places each capture's first step by its anchor: B 2.5 s after A, C
# 1.7 s before (the files of the later hosts move, none wraps), within 3 ms once the programs' own
# wake-up differences are taken out. `stats A B C` reads them all.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog nvtx_at

at=$(($(date +%s%N) + 1500000000))
pids=()
for x in a:0 b:2500000000 c:-1700000000; do
	n=${x%%:*}
	CUSCOPE_TEST_REALTIME_SHIFT_NS=${x#*:} "$CUSCOPE" record -o "$T/$n.cuscope" -- "$PROGS/nvtx_at" "$at" \
		>"$T/$n.out" 2>"$T/$n.err" </dev/null &
	pids+=($!)
	BG_PIDS+=($!)
done
for i in 0 1 2; do
	bg_wait "${pids[$i]}" 60
	[ "$RC" = 0 ] || fail "record $i exited $RC: $(head -c 300 "$T/"*.err)"
done

timeout 60 "$CUSCOPE" export -o "$T/abc.json" "$T/a.cuscope" "$T/b.cuscope" "$T/c.cuscope" 2>"$T/abc.err" ||
	fail "export A B C exited $?: $(head -c 300 "$T/abc.err")"
[ -s "$T/abc.err" ] && fail "export A B C said: $(head -c 300 "$T/abc.err")"
timeout 60 "$CUSCOPE" stats --format=json "$T/c.cuscope" "$T/b.cuscope" "$T/a.cuscope" >"$T/cba.json" 2>"$T/cba.err" ||
	fail "stats C B A exited $?: $(head -c 300 "$T/cba.err")"

"$PYTHON" - "$T/abc.json" "$T/a.out" "$T/b.out" "$T/c.out" "$T/cba.json" <<'PY' || exit 1
import json, sys
def fail(msg):
    print(msg)
    sys.exit(1)
def out(path):
    words = open(path).read().split()
    return int(words[words.index("pid") + 1]), int(words[words.index("start") + 1])
J = json.load(open(sys.argv[1]))
runs = {n: out(sys.argv[i]) for n, i in (("a", 2), ("b", 3), ("c", 4))}
first = {}
for e in J["traceEvents"]:
    if e.get("name") == "step" and e.get("ph") in ("X", "B"):
        first[e["pid"]] = min(first.get(e["pid"], e["ts"]), e["ts"])
for n, (pid, _) in runs.items():
    if pid not in first:
        fail("no step range of %s (pid %d) in the export: %r" % (n, pid, first))
shift_us = {"a": 0.0, "b": 2.5e6, "c": -1.7e6}
pa, sa = runs["a"]
for n in ("b", "c"):
    pid, start = runs[n]
    want = (start - sa) / 1000.0 + shift_us[n]
    got = first[pid] - first[pa]
    if abs(got - want) > 3000:
        fail("%s's first step %.0f us after a's, want %.0f us (planted %+.0f us)" % (n, got, want, shift_us[n]))
# The earliest event is C's: nothing before the time base.
if min(first.values()) < 0:
    fail("an export time before its base: %r" % first)
S = json.load(open(sys.argv[5]))
caps = sorted((p["pid"], p["capture"]) for p in S["processes"])
want = sorted([(runs["c"][0], 0), (runs["b"][0], 1), (runs["a"][0], 2)])
if caps != want:
    fail("stats C B A: processes (pid, capture) %r, want %r" % (caps, want))
PY
exit 0
