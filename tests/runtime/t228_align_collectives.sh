#!/usr/bin/env bash
# Captures aligned by matching NCCL collectives: two ranks (RANK=0, 1), each under its own `cuscope
# record` with the stand-in libcupti, launch the same 200 NCCL-named kernels in lock-step (a barrier
# through two FIFOs before each); rank 1's clock anchor is planted 2.5 s off
# (CUSCOPE_TEST_REALTIME_SHIFT_NS, test only). Both run on this host, so the k-th kernels truly end
# together. `stats A B` says rank 1's capture was aligned by collectives with a residual (p50) of at
# most 100 us, and `export A B` puts the k-th kernels' ends within 100 us (median over all k); the
# same with the files named the other way round. With kernels not named nccl* the captures keep the
# anchor alignment, and its planted 2.5 s error shows in the export.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/runtime/fake_cupti.sh
. "$(dirname "$0")/fake_cupti.sh"
need_fake_cupti
need_prog fake_nccl_ranks

N=200
SHIFT=2500000000

# pair NAME KERNEL: records both ranks into $T/NAME-0.cuscope and $T/NAME-1.cuscope.
pair()
{
	local name=$1 kernel=$2 r pids=()
	mkfifo "$T/$name-f0" "$T/$name-f1"
	for r in 0 1; do
		RANK=$r WORLD_SIZE=2 CUSCOPE_CUPTI_PATH=$FAKE_CUPTI \
			CUSCOPE_TEST_REALTIME_SHIFT_NS=$((r * SHIFT)) \
			"$CUSCOPE" record -o "$T/$name-$r.cuscope" -- "$PROGS/fake_nccl_ranks" "$N" \
			"$T/$name-f$r" "$T/$name-f$((1 - r))" "$kernel" >"$T/$name-$r.out" 2>"$T/$name-$r.err" </dev/null &
		pids+=($!)
		BG_PIDS+=($!)
	done
	for r in 0 1; do
		bg_wait "${pids[$r]}" 120
		[ "$RC" = 0 ] || fail "$name: record of rank $r exited $RC: $(tail -c 300 "$T/$name-$r.err")"
		# Alone, a capture keeps its own CLOCK_MONOTONIC: the truth, both ranks being on this host.
		timeout 60 "$CUSCOPE" export -o "$T/$name-$r.alone.json" "$T/$name-$r.cuscope" 2>"$T/$name-$r.alone.err" ||
			fail "$name: export of rank $r alone exited $?: $(head -c 300 "$T/$name-$r.alone.err")"
	done
}

# check NAME WANT_METHOD WANT_GAP_US FIRST SECOND: stats and export of the pair in that order: the
# second file's capture aligned by WANT_METHOD; (rank 1's k-th kernel end - rank 0's) in the export,
# median over k, within 100 us of WANT_GAP_US plus its true value (from the captures alone, one
# clock); prints the error of that median against the truth (the residual of the planted offset).
check()
{
	local name=$1 method=$2 gap=$3 a=$4 b=$5
	timeout 60 "$CUSCOPE" stats --format=json "$T/$name-$a.cuscope" "$T/$name-$b.cuscope" \
		>"$T/$name-$a$b.stats" 2>"$T/$name-$a$b.stats.err" ||
		fail "$name: stats $a $b exited $?: $(head -c 300 "$T/$name-$a$b.stats.err")"
	timeout 60 "$CUSCOPE" stats "$T/$name-$a.cuscope" "$T/$name-$b.cuscope" >"$T/$name-$a$b.table" 2>&1 ||
		fail "$name: stats --format=table $a $b exited $?"
	timeout 60 "$CUSCOPE" export -o "$T/$name-$a$b.json" "$T/$name-$a.cuscope" "$T/$name-$b.cuscope" \
		>"$T/$name-$a$b.export.out" 2>"$T/$name-$a$b.export.err" ||
		fail "$name: export $a $b exited $?: $(head -c 300 "$T/$name-$a$b.export.err")"
	[ -s "$T/$name-$a$b.export.out" ] && fail "$name: export printed on stdout: $(head -c 200 "$T/$name-$a$b.export.out")"
	"$PYTHON" - "$T/$name-$a$b.stats" "$T/$name-$a$b.json" "$T/$name-0.out" "$T/$name-1.out" \
		"$method" "$gap" "$N" "$T/$name-$a$b.table" "$T/$name-0.alone.json" "$T/$name-1.alone.json" \
		<<'PY' >"$T/$name-$a$b.check" 2>&1 ||
import json, statistics, sys

def fail(msg):
    print(msg)
    sys.exit(1)

stats = json.load(open(sys.argv[1]))
trace = json.load(open(sys.argv[2]))["traceEvents"]
pids = []
for path in sys.argv[3:5]:
    words = open(path).read().split()
    pids.append(int(words[words.index("pid") + 1]))
method, gap_us, n = sys.argv[5], float(sys.argv[6]), int(sys.argv[7])
table = open(sys.argv[8]).read()

def kernel_ends(trace, pid):
    v = sorted(e["ts"] + e["dur"] for e in trace if e.get("ph") == "X" and e.get("cat") == "kernel" and e.get("pid") == pid)
    if len(v) != n:
        fail("pid %d: %d kernels in the export, want %d" % (pid, len(v), n))
    return v

# The truth: each capture alone, in CLOCK_MONOTONIC ns (this host's, both).
truth = []
for pid, path in zip(pids, sys.argv[9:11]):
    J = json.load(open(path))
    base = J["otherData"]["time_base_ns"]
    truth.append([base / 1000.0 + t for t in kernel_ends(J["traceEvents"], pid)])
true_d = [b - a for a, b in zip(truth[0], truth[1])]
d = [b - a for a, b in zip(kernel_ends(trace, pids[0]), kernel_ends(trace, pids[1]))]
med, true_med = statistics.median(d), statistics.median(true_d)
if abs(med - gap_us - true_med) > 100:
    fail("rank 1's kernels end %.1f us after rank 0's (median of %d), want %.0f + %.1f (true) +- 100 us"
         % (med, n, gap_us, true_med))
result = ("median gap %.1f us (true %.1f us, lock-step |gap| p50 %.1f p90 %.1f us): error %.1f us"
      % (med, true_med, statistics.median(abs(x) for x in true_d), sorted(abs(x) for x in true_d)[int(0.9 * n)],
         med - gap_us - true_med))
rows = stats.get("clock_alignment")
if not isinstance(rows, list) or len(rows) != 2:
    fail("stats: clock_alignment %r, want one row per capture" % (rows,))
row = rows[1]
if row.get("method") != method:
    fail("stats: the second capture aligned by %r, want %r: %r" % (row.get("method"), method, rows))
if method == "collectives":
    if row.get("matched") != n:
        fail("stats: %r collectives matched, want %d: %r" % (row.get("matched"), n, row))
    if not 0 <= row.get("residual_p50_ns", -1) <= 100000:
        fail("stats: residual p50 %r ns, want <= 100 us: %r" % (row.get("residual_p50_ns"), row))
if "clock_alignment" not in table or method not in table:
    fail("stats --format=table lacks the clock_alignment section or %r" % method)

print(result)
PY
		fail "$name ($a $b): $(tail -n 1 "$T/$name-$a$b.check")"
	echo "$name ($a $b): $(tail -n 1 "$T/$name-$a$b.check")"
}

pair nccl ncclDevKernel_AllReduce_Sum_f32_RING_LL
check nccl collectives 0 0 1
check nccl collectives 0 1 0
pair plain fake_kernel_allreduce
check plain anchor 2500000 0 1
exit 0
