#!/usr/bin/env bash
# At the highest --sample-hz the CLI accepts, sampling cannot livelock the program: a CPU-bound
# thread runs at most 1.5x and a two-thread pipe ping-pong at most 2x its time under --sample-hz 0
# (same test, interleaved, medians of 3, all pinned to one CPU so that both share it alike); with
# perf-event sampling too. When samples would cost more than the overhead budget (default 3%) the
# rate is lowered with one notice that says so, and stats reports requested, set and achieved rates
# per process. One over the cap is one clear error line.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog sample_stress
MAX=10000

rc=0
"$CUSCOPE" record --sample-hz $((MAX + 1)) -o "$T/over.cap" -- true >/dev/null 2>"$T/over.err" || rc=$?
[ "$rc" = 2 ] || fail "--sample-hz $((MAX + 1)) exited $rc, want 2"
one_line_error "$T/over.err" "--sample-hz over the cap"
grep -q "at most $MAX" "$T/over.err" || fail "cap message: $(cat "$T/over.err")"

pin=()
command -v taskset >/dev/null && pin=(taskset -c 0)

# run_one NAME HZ MODE WORK N: one recorded run; appends the program's own seconds to $T/NAME.
run_one()
{
	local name=$1 hz=$2 mode=$3
	shift 3
	CUSCOPE_SAMPLER_MODE=$mode timeout 120 "${pin[@]}" "$CUSCOPE" record --sample-hz "$hz" \
		-o "$T/$name.cap" -- "$PROGS/sample_stress" "$@" >"$T/$name.out" 2>"$T/$name.err" </dev/null ||
		fail "record --sample-hz $hz ($mode) of $* failed: $(head -c 300 "$T/$name.err")"
	sed -n 's/^seconds //p' "$T/$name.out" >>"$T/$name.times"
	rm -f "$T/$name.cap"
}

median() { sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }

for r in 1 2 3; do
	run_one cpu0 0 timer cpu 3000
	run_one cpumax $MAX timer cpu 3000
	run_one cpuperf $MAX perf cpu 3000
	run_one pp0 0 timer pingpong 20000
	run_one ppmax $MAX timer pingpong 20000
done
check_ratio()
{
	local base over bound=$3
	base=$(median <"$T/$1.times")
	over=$(median <"$T/$2.times")
	awk -v b="$base" -v o="$over" -v m="$bound" 'BEGIN {exit !(b > 0 && o / b <= m)}' ||
		fail "$2 took ${over}s vs ${base}s at --sample-hz 0: over ${bound}x (rounds: $(tr '\n' ' ' <"$T/$2.times")| $(tr '\n' ' ' <"$T/$1.times"))"
}
check_ratio cpu0 cpumax 1.5
check_ratio cpu0 cpuperf 1.5
check_ratio pp0 ppmax 2.0

# The rate actually set and achieved, and the notice that says it was lowered.
CUSCOPE_SAMPLER_MODE=perf "$CUSCOPE" record --sample-hz $MAX -o "$T/rate.cap" -- "$PROGS/sample_stress" cpu 3000 \
	>"$T/rate.out" 2>"$T/rate.err" </dev/null || fail "record for the rate check failed: $(head -c 300 "$T/rate.err")"
"$CUSCOPE" info "$T/rate.cap" >"$T/info.txt" 2>&1 || fail "info failed: $(head -c 300 "$T/info.txt")"
n=$(grep -cE "overhead budget 3%: CPU sampling $MAX -> [0-9]+ samples/s \(estimated cost [0-9.]+%\)" "$T/info.txt")
[ "$n" = 1 ] || fail "want one 'CPU sampling $MAX -> N' notice, got $n: $(grep -i sampling "$T/info.txt" | head -3)"
cs_stats "$T/rate.cap" "$T/stats.json"
py_check "$T/stats.json" <<PY
pid = J["processes"][0]["pid"]
c = {r["event"]: r["value"] for r in J["counters"] if r["pid"] == pid and r["tid"] == pid}
for k in ("sampling-requested-hz", "sampling-hz", "sampling-achieved-hz"):
    if k not in c:
        fail("counters lack %s for pid %d: %r" % (k, pid, sorted(c)))
if c["sampling-requested-hz"] != $MAX:
    fail("requested %r, want $MAX" % c["sampling-requested-hz"])
if not (0 < c["sampling-hz"] < $MAX):
    fail("set rate %r not lowered below $MAX" % c["sampling-hz"])
if not (0 < c["sampling-achieved-hz"] <= 1.5 * c["sampling-hz"] + 300):
    fail("achieved %r vs set %r" % (c["sampling-achieved-hz"], c["sampling-hz"]))
PY
exit 0
