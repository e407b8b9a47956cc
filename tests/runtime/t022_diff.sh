#!/usr/bin/env bash
# diff: two runs of a program whose change is known (a "sleep" range of 2 ms vs 4 ms, and a range
# only in B) show the p50 doubling with the sign right, one-sided rows, and the order by impact;
# two synthetic GPU captures (kernel 20 us vs 40 us) show the kernel's exact change.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope

CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
cat >"$T/sleeper.c" <<'C'
#include <nvtx3/nvToolsExt.h>
#include <stdlib.h>
#include <time.h>
/* sleeper MS N [extra]: N "sleep" ranges of MS ms, a "fixed" 1 ms range each, and "only-b" once if extra. */
static void nap(long us)
{
	struct timespec ts = {us / 1000000, us % 1000000 * 1000};
	nanosleep(&ts, NULL);
}
int main(int argc, char **argv)
{
	long ms = atol(argv[1]), n = atol(argv[2]);
	for (long i = 0; i < n; i++) {
		nvtxRangePushA("sleep");
		nap(ms * 1000);
		nvtxRangePop();
		nvtxRangePushA("fixed");
		nap(1000);
		nvtxRangePop();
	}
	if (argc > 3) {
		nvtxRangePushA("only-b");
		nap(1000);
		nvtxRangePop();
	}
	return 0;
}
C
cc -O1 -isystem "$CUDA_HOME/include" -o "$T/sleeper" "$T/sleeper.c" -ldl -lpthread 2>"$T/cc.err" ||
	skip "cannot build the NVTX sleeper (NVTX headers in $CUDA_HOME/include?): $(head -c 200 "$T/cc.err")"

cs_record "$T/a.cap" a -- "$T/sleeper" 2 40
[ "$RC" = 0 ] || fail "record A exited $RC: $(head -c 200 "$T/a.err")"
cs_record "$T/b.cap" b -- "$T/sleeper" 4 40 extra
[ "$RC" = 0 ] || fail "record B exited $RC: $(head -c 200 "$T/b.err")"
rc=0
"$CUSCOPE" diff --format=json "$T/a.cap" "$T/b.cap" >"$T/d.json" 2>"$T/d.err" || rc=$?
[ "$rc" = 0 ] || fail "diff exited $rc: $(head -c 200 "$T/d.err")"
"$CUSCOPE" diff "$T/a.cap" "$T/b.cap" >"$T/d.txt" 2>"$T/d.err" || fail "diff (table) failed"
"$PYTHON" - "$T/d.json" "$T/d.txt" <<'PY' || exit 1
import json, sys
def fail(m):
    print(m); sys.exit(1)
D = json.load(open(sys.argv[1]))
rows = {(r["kind"], r["name"], r.get("domain"), r.get("style")): r for r in D["rows"]}
s = rows.get(("nvtx", "sleep", "", "PushPop"))
if not s:
    fail("no sleep row: %r" % list(rows))
if s["count_a"] != 40 or s["count_b"] != 40 or s["in"] != "both":
    fail("sleep counts %r/%r in %r, want 40/40 both" % (s["count_a"], s["count_b"], s["in"]))
ratio = s["p50_b_ns"] / s["p50_a_ns"]
if not 1.6 <= ratio <= 2.4:
    fail("sleep p50 %d -> %d ns: ratio %.2f, want about 2" % (s["p50_a_ns"], s["p50_b_ns"], ratio))
if s["delta_p50_ns"] != s["p50_b_ns"] - s["p50_a_ns"] or s["delta_p50_ns"] <= 0:
    fail("sleep delta_p50_ns %r wrong or not positive" % s["delta_p50_ns"])
if s["delta_total_ns"] != s["total_b_ns"] - s["total_a_ns"] or s["delta_total_ns"] <= 0:
    fail("sleep delta_total_ns %r wrong" % s["delta_total_ns"])
if abs(s["delta_total_pct"] - 100.0 * s["delta_total_ns"] / s["total_a_ns"]) > 0.01:
    fail("sleep delta_total_pct %r" % s["delta_total_pct"])
o = rows.get(("nvtx", "only-b", "", "PushPop"))
if not o or o["in"] != "b" or o["count_a"] != 0 or o["count_b"] != 1 or o["delta_total_pct"] is not None:
    fail("only-b row %r" % o)
if D["rows"][0]["name"] != "sleep":
    fail("first row %r, want sleep (largest |total change|)" % D["rows"][0]["name"])
imp = [abs(r["total_b_ns"] - r["total_a_ns"]) for r in D["rows"]]
if imp != sorted(imp, reverse=True):
    fail("rows not sorted by |total change|: %r" % imp)
T = open(sys.argv[2]).read().splitlines()
line = [l for l in T if l.split()[:2] == ["nvtx", "sleep"]]
if not line or "+" not in line[0]:
    fail("table lacks a sleep row with a + change: %r" % line)
if not any(l.split()[:2] == ["nvtx", "only-b"] and "new" in l for l in T):
    fail("table only-b row does not say new")
PY

# Reversed: the sign flips.
"$CUSCOPE" diff --format=json "$T/b.cap" "$T/a.cap" >"$T/r.json" 2>/dev/null || fail "reverse diff failed"
"$PYTHON" - "$T/r.json" <<'PY' || exit 1
import json, sys
rows = {(r["kind"], r["name"]): r for r in json.load(open(sys.argv[1]))["rows"]}
s = rows[("nvtx", "sleep")]
if s["delta_p50_ns"] >= 0 or s["delta_total_pct"] >= 0:
    print("reverse diff: sleep change %r / %r%%, want negative" % (s["delta_p50_ns"], s["delta_total_pct"])); sys.exit(1)
if rows[("nvtx", "only-b")]["in"] != "a":
    print("reverse diff: only-b in %r, want a" % rows[("nvtx", "only-b")]["in"]); sys.exit(1)
PY

# Synthetic GPU captures: the kernel doubles exactly.
cc -O2 -I"$ROOT/include" -D_GNU_SOURCE -o "$T/gen" "$ROOT/tests/bench/gen_capture.c" "$BUILD/obj/libviewer.a" \
	-lzstd -lz -lstdc++ -lm -lpthread 2>"$T/cc.err" || fail "cannot build gen_capture: $(head -c 300 "$T/cc.err")"
"$T/gen" "$T/ga.cap" 500 20000 50000 >/dev/null || fail "gen A"
"$T/gen" "$T/gb.cap" 700 40000 50000 >/dev/null || fail "gen B"
"$CUSCOPE" diff --format=json "$T/ga.cap" "$T/gb.cap" >"$T/g.json" 2>"$T/g.err" || fail "diff of synthetic captures failed"
"$PYTHON" - "$T/g.json" <<'PY' || exit 1
import json, sys
rows = {(r["kind"], r["name"]): r for r in json.load(open(sys.argv[1]))["rows"]}
k = rows.get(("kernel", "kernel(float*, int)"))
want = dict(device=0, count_a=500, count_b=700, p50_a_ns=20000, p50_b_ns=40000, delta_p50_ns=20000, delta_p50_pct=100.0,
            total_a_ns=500 * 20000, total_b_ns=700 * 40000, delta_total_ns=700 * 40000 - 500 * 20000, delta_total_pct=180.0)
for key, v in want.items():
    if not k or k[key] != v:
        print("kernel row %s = %r, want %r (row %r)" % (key, k and k[key], v, k)); sys.exit(1)
st = rows[("nvtx", "step")]
if (st["count_a"], st["count_b"], st["p50_a_ns"], st["p50_b_ns"], st["delta_p50_pct"]) != (500, 700, 50000, 50000, 0.0):
    print("step row %r" % st); sys.exit(1)
PY
# usage errors: one line, exit 2
for args in "" "$T/ga.cap" "--format=xml $T/ga.cap $T/gb.cap" "$T/ga.cap $T/nonexistent"; do
	rc=0
	# shellcheck disable=SC2086
	"$CUSCOPE" diff $args >/dev/null 2>"$T/e.err" || rc=$?
	[ "$rc" = 2 ] || fail "diff $args exited $rc, want 2"
	one_line_error "$T/e.err" "diff $args"
done
exit 0
