#!/usr/bin/env bash
# `cuscope diff A... -- B...` compares two sets of captures: two runs of two ranks each (rank_steps,
# 4 "step" ranges per rank, one capture per rank), run B's rank 1 made 3x slower. The step row sums
# both ranks of each set (8 steps a side; B's total about 2x A's); the sides are named "FIRST +1
# more"; `diff A B` of two files still names them as given; an empty set, a second '--' and three
# files without '--' are one error line each (exit 2).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog rank_steps

RS=$PROGS/rank_steps
rec()
{
	local name=$1 rank=$2 ms=$3
	RANK=$rank WORLD_SIZE=2 cs_record "$T/$name.cuscope" "$name" -- "$RS" "$ms"
	[ "$RC" = 0 ] || fail "record $name exited $RC: $(head -c 300 "$T/$name.err")"
}
rec a0 0 10
rec a1 1 10
rec b0 0 10
rec b1 1 30

timeout 60 "$CUSCOPE" diff --format=json "$T/a0.cuscope" "$T/a1.cuscope" -- "$T/b0.cuscope" "$T/b1.cuscope" \
	>"$T/sets.json" 2>"$T/sets.err" || fail "diff A A -- B B exited $?: $(head -c 300 "$T/sets.err")"
[ -s "$T/sets.err" ] && fail "diff of sets said: $(head -c 300 "$T/sets.err")"
timeout 60 "$CUSCOPE" diff --format=json "$T/a0.cuscope" "$T/b1.cuscope" >"$T/pair.json" 2>"$T/pair.err" ||
	fail "diff A B exited $?: $(head -c 300 "$T/pair.err")"
timeout 60 "$CUSCOPE" diff "$T/a0.cuscope" "$T/a1.cuscope" -- "$T/b0.cuscope" "$T/b1.cuscope" >"$T/sets.txt" 2>&1 ||
	fail "diff (table) of sets exited $?: $(head -c 300 "$T/sets.txt")"

"$PYTHON" - "$T/sets.json" "$T/pair.json" "$T/a0.cuscope" "$T/b1.cuscope" "$T/sets.txt" <<'PY' >"$T/check" 2>&1 ||
import json, sys
def fail(msg):
    print(msg)
    sys.exit(1)
J = json.load(open(sys.argv[1]))
if J["a"] != sys.argv[3] + " +1 more" or J["b"] != sys.argv[3].replace("a0", "b0") + " +1 more":
    fail("sides named %r and %r" % (J["a"], J["b"]))
step = [r for r in J["rows"] if r["kind"] == "nvtx" and r["name"] == "step"]
if len(step) != 1:
    fail("want one step row, got %r" % step)
s = step[0]
if (s["count_a"], s["count_b"], s["in"]) != (8, 8, "both"):
    fail("step counts %r/%r (%s), want 8/8 in both (two ranks of 4 steps a side)" % (s["count_a"], s["count_b"], s["in"]))
# A: 8 steps of 10 ms (80 ms); B: 4 of 10 and 4 of 30 ms (160 ms); sleeps only run long.
if not (80e6 <= s["total_a_ns"] < 120e6 and 160e6 <= s["total_b_ns"] < 220e6):
    fail("step totals %d / %d ns, want ~80 / ~160 ms" % (s["total_a_ns"], s["total_b_ns"]))
if not (1.5 < s["total_b_ns"] / s["total_a_ns"] < 2.5):
    fail("B/A total %.2f, want about 2" % (s["total_b_ns"] / s["total_a_ns"]))
P = json.load(open(sys.argv[2]))
if (P["a"], P["b"]) != (sys.argv[3], sys.argv[4]):
    fail("diff A B names %r / %r, want the files as given" % (P["a"], P["b"]))
p = [r for r in P["rows"] if r["name"] == "step"][0]
if (p["count_a"], p["count_b"]) != (4, 4):
    fail("diff A B: step counts %r/%r, want 4/4" % (p["count_a"], p["count_b"]))
if "+1 more" not in open(sys.argv[5]).read():
    fail("table does not name the sets")
PY
	fail "$(tail -n 1 "$T/check")"

bad()
{
	local what=$1
	shift
	local rc=0
	timeout 30 "$CUSCOPE" diff "$@" >"$T/bad.out" 2>"$T/bad.err" || rc=$?
	[ "$rc" = 2 ] || fail "$what: exit $rc, want 2"
	[ "$(wc -l <"$T/bad.err")" = 1 ] || fail "$what: want one error line, got: $(cat "$T/bad.err")"
	grep -q '^cuscope: diff: ' "$T/bad.err" || fail "$what: $(cat "$T/bad.err")"
	[ -s "$T/bad.out" ] && fail "$what: wrote output: $(head -c 200 "$T/bad.out")"
	return 0
}
bad "empty B set" "$T/a0.cuscope" --
bad "empty A set" -- "$T/b0.cuscope"
bad "two '--'" "$T/a0.cuscope" -- "$T/b0.cuscope" -- "$T/b1.cuscope"
bad "three files" "$T/a0.cuscope" "$T/a1.cuscope" "$T/b0.cuscope"
exit 0
