#!/usr/bin/env bash
# Matching collectives with unequal counts and a capture without any: rank 0 launches 200
# NCCL-named kernels, rank 1 the same 200 in lock-step and then 10 more (its anchor planted 2.5 s
# off, CUSCOPE_TEST_REALTIME_SHIFT_NS, test only), and a third capture of a program without NCCL
# kernels (anchor planted -1.7 s). `stats A B C`: B aligned by collectives on the common prefix (200
# matched, 10 unmatched), C by its anchor; at most one warning line per capture; `export A B C` puts
# the k-th kernels of A and B together within 100 us of their true gap (median over the 200). The
# sanitized CLI (when built) reads them the same way with no report.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/runtime/fake_cupti.sh
. "$(dirname "$0")/fake_cupti.sh"
need_fake_cupti
need_prog fake_nccl_ranks

N=200
EXTRA=10
mkfifo "$T/f0" "$T/f1"
pids=()
for r in 0 1; do
	RANK=$r WORLD_SIZE=2 CUSCOPE_CUPTI_PATH=$FAKE_CUPTI CUSCOPE_TEST_REALTIME_SHIFT_NS=$((r * 2500000000)) \
		"$CUSCOPE" record -o "$T/r$r.cuscope" -- "$PROGS/fake_nccl_ranks" "$N" "$T/f$r" "$T/f$((1 - r))" \
		ncclDevKernel_AllReduce_Sum_f32_RING_LL $((r * EXTRA)) >"$T/r$r.out" 2>"$T/r$r.err" </dev/null &
	pids+=($!)
	BG_PIDS+=($!)
done
CUSCOPE_CUPTI_PATH=$FAKE_CUPTI CUSCOPE_TEST_REALTIME_SHIFT_NS=-1700000000 \
	"$CUSCOPE" record -o "$T/plain.cuscope" -- "$PROGS/fake_cuda_app" 50 0 0 >"$T/plain.out" 2>"$T/plain.err" </dev/null &
pids+=($!)
BG_PIDS+=($!)
for i in 0 1 2; do
	bg_wait "${pids[$i]}" 120
	[ "$RC" = 0 ] || fail "record $i exited $RC: $(tail -c 300 "$T/"*.err)"
done
for r in 0 1; do
	timeout 60 "$CUSCOPE" export -o "$T/r$r.alone.json" "$T/r$r.cuscope" 2>"$T/r$r.alone.err" ||
		fail "export of rank $r alone exited $?: $(head -c 300 "$T/r$r.alone.err")"
done
caps=("$T/r0.cuscope" "$T/r1.cuscope" "$T/plain.cuscope")
timeout 60 "$CUSCOPE" stats --format=json "${caps[@]}" >"$T/abc.stats" 2>"$T/abc.stats.err" ||
	fail "stats A B C exited $?: $(head -c 300 "$T/abc.stats.err")"
timeout 60 "$CUSCOPE" export -o "$T/abc.json" "${caps[@]}" 2>"$T/abc.export.err" ||
	fail "export A B C exited $?: $(head -c 300 "$T/abc.export.err")"

"$PYTHON" - "$T/abc.stats" "$T/abc.stats.err" "$T/abc.json" "$T/r0.out" "$T/r1.out" "$T/r0.alone.json" \
	"$T/r1.alone.json" "$N" "$EXTRA" "${caps[@]}" <<'PY' >"$T/check" 2>&1 || fail "$(tail -n 1 "$T/check")"
import json, statistics, sys

def fail(msg):
    print(msg)
    sys.exit(1)

stats = json.load(open(sys.argv[1]))
errs = open(sys.argv[2]).read().splitlines()
trace = json.load(open(sys.argv[3]))["traceEvents"]
pids = [int(open(p).read().split()[3]) for p in sys.argv[4:6]]
n, extra = int(sys.argv[8]), int(sys.argv[9])
caps = sys.argv[10:13]

rows = stats.get("clock_alignment")
if not isinstance(rows, list) or len(rows) != 3:
    fail("clock_alignment %r, want 3 rows" % (rows,))
methods = [r.get("method") for r in rows]
if methods != ["reference", "collectives", "anchor"]:
    fail("methods %r, want reference, collectives, anchor" % methods)
if rows[1].get("matched") != n or rows[1].get("unmatched") != extra:
    fail("B: matched %r unmatched %r, want %d and %d: %r" % (rows[1].get("matched"), rows[1].get("unmatched"), n, extra, rows[1]))
# At most one warning line per capture, each a "cuscope: " line about (first naming) its file.
subjects = []
for line in errs:
    named = [(line.find(c), c) for c in caps if c in line]
    if not line.startswith("cuscope: ") or not named:
        fail("stats said: %r" % errs)
    subjects.append(min(named)[1])
if len(set(subjects)) != len(subjects):
    fail("more than one warning line about a capture: %r" % errs)

def kernel_ends(events, pid):
    return sorted(e["ts"] + e["dur"] for e in events if e.get("ph") == "X" and e.get("cat") == "kernel" and e.get("pid") == pid)

truth = []
for pid, path in zip(pids, sys.argv[6:8]):
    J = json.load(open(path))
    truth.append([J["otherData"]["time_base_ns"] / 1000.0 + t for t in kernel_ends(J["traceEvents"], pid)])
got = [kernel_ends(trace, p) for p in pids]
if [len(v) for v in got] != [n, n + extra]:
    fail("kernels in the export: %r, want %d and %d" % ([len(v) for v in got], n, n + extra))
true_med = statistics.median(b - a for a, b in zip(truth[0][:n], truth[1][:n]))
med = statistics.median(b - a for a, b in zip(got[0], got[1][:n]))
if abs(med - true_med) > 100:
    fail("B's kernels end %.1f us after A's (median), truly %.1f us" % (med, true_med))
print("median gap %.1f us, true %.1f us" % (med, true_med))
PY
tail -n 1 "$T/check"

if [ -x "$CUSCOPE_ASAN" ]; then
	export ASAN_OPTIONS=abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
	timeout 120 "$CUSCOPE_ASAN" stats --format=json --report=clock_alignment "${caps[@]}" >"$T/san.stats" \
		2>"$T/san.stats.err" || fail "sanitized stats A B C exited $?: $(head -c 300 "$T/san.stats.err")"
	timeout 120 "$CUSCOPE_ASAN" export -o "$T/san.json" "${caps[@]}" 2>"$T/san.export.err" ||
		fail "sanitized export A B C exited $?: $(head -c 300 "$T/san.export.err")"
	no_sanitizer_report "$T/san.stats.err" "$T/san.export.err"
	"$PYTHON" - "$T/abc.stats" "$T/san.stats" <<'PY' || fail "sanitized stats differ"
import json, sys
a, b = (json.load(open(p))["clock_alignment"] for p in sys.argv[1:3])
if a != b:
    print("clock_alignment %r, sanitized %r" % (a, b))
    sys.exit(1)
PY
else
	echo "note: $CUSCOPE_ASAN not built: the sanitized read was not run"
fi
exit 0
