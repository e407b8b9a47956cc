#!/usr/bin/env bash
# attach --ssh nodeA,nodeB live, clocks refined by collectives: one rank on each "host" (both on
# this machine, so their k-th collectives truly end together) runs NCCL-named kernels in lock-step
# through the stand-in libcupti; nodeB's relay plants a 1 s error in its processes' clock anchors
# (CUSCOPE_TEST_REALTIME_SHIFT_NS, test only, passed by the private sshd), so the anchor alignment
# puts nodeB's kernels 1 s late. The status line shows nodeA as the reference and nodeB's fitted
# correction; the `d` dump of the merged view says in `stats` (clock_alignment) that nodeB was aligned
# by collectives with a correction of -1 s; in its export the last fifth of the collectives end
# together (median gap <= 300 us) while the first ones, moved before the first fit, are 1 s apart.
# Prints the error before and after, and the refits' CPU cost (CUSCOPE_LATENCY=1).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/runtime/sshd_lib.sh
. "$(dirname "$0")/../runtime/sshd_lib.sh"
# shellcheck source=tests/runtime/fake_cupti.sh
. "$(dirname "$0")/../runtime/fake_cupti.sh"
need_fake_cupti
need_prog fake_nccl_ranks
SKEW=1000000000
N=5000
SSHD_SETENV_nodeB=CUSCOPE_TEST_REALTIME_SHIFT_NS=$SKEW
sshd_start

mkfifo "$T/f0" "$T/f1"
export CUSCOPE_CUPTI_PATH=$FAKE_CUPTI WORLD_SIZE=2
RANK=0 arm "$T/roots/nodeA" a -- "$PROGS/fake_nccl_ranks" "$N" "$T/f0" "$T/f1"
pid_a=$ARMED_PID
RANK=1 arm "$T/roots/nodeB" b -- "$PROGS/fake_nccl_ranks" "$N" "$T/f1" "$T/f0"
pid_b=$ARMED_PID
export CUSCOPE_LATENCY=1
TM_WIDTH=220 TM_HEIGHT=50 tm_run_cuscope attach --ssh nodeA,nodeB "2>$T/live.err"
tm_wait 'LIVE' 20 "live UI"
tm_wait 'nodeA: up clock ref \| nodeB: up clock -' 30 "nodeA the reference, nodeB's clock fitted"
# The ranks end; the view keeps everything they sent.
wait_until 120 pid_gone "$pid_a" || fail "rank 0 did not finish its $N collectives"
wait_until 30 pid_gone "$pid_b" || fail "rank 1 did not finish its $N collectives"
sleep 2 # the last refit and the last frames
tm_keys d
tm_wait 'hole capture' 5 "dump scope prompt"
tm_keys w
tm_wait 'dump to file' 5 "dump file prompt"
tm_keys C-u "$T/merged.cuscope" Enter
tm_wait 'dump: wrote' 20 "dump finished message"
tm_keys q
tm_keys d
tm_wait_exit 0 15
"$CUSCOPE" stats --format=json "$T/merged.cuscope" >"$T/merged.json" 2>"$T/merged.err" ||
	fail "stats of the dump: $(cat "$T/merged.err")"
"$CUSCOPE" stats "$T/merged.cuscope" >"$T/merged.table" 2>&1 || fail "stats --format=table of the dump"
timeout 60 "$CUSCOPE" export -o "$T/merged.trace.json" "$T/merged.cuscope" 2>"$T/export.err" ||
	fail "export of the dump: $(cat "$T/export.err")"
"$PYTHON" - "$T/merged.json" "$T/merged.trace.json" "$pid_a" "$pid_b" "$N" "$SKEW" "$T/merged.table" \
	>"$T/check" 2>&1 <<'PY' || fail "$(tail -n 3 "$T/check")"
import json, statistics, sys

def fail(msg):
    print(msg)
    sys.exit(1)

stats = json.load(open(sys.argv[1]))
trace = json.load(open(sys.argv[2]))["traceEvents"]
pid_a, pid_b, n, skew = (int(x) for x in sys.argv[3:7])
rows = {r["host"]: r for r in stats.get("clock_alignment", [])}
if set(rows) != {"nodeA", "nodeB"}:
    fail("clock_alignment rows %r, want nodeA and nodeB" % (stats.get("clock_alignment"),))
if rows["nodeA"]["method"] != "reference":
    fail("nodeA aligned by %r, want reference" % rows["nodeA"]["method"])
b = rows["nodeB"]
if b["method"] != "collectives":
    fail("nodeB aligned by %r, want collectives: %r" % (b["method"], b))
if abs(b["correction_ns"] + skew) > 300000:
    fail("nodeB's correction %d ns, want -%d +- 300 us (the planted anchor error)" % (b["correction_ns"], skew))
if b["matched"] < 8 or not 0 <= b["residual_p50_ns"] <= 300000:
    fail("nodeB's fit: %r" % b)
if "clock_alignment" not in open(sys.argv[7]).read():
    fail("stats --format=table lacks the clock_alignment section")

def ends(pid):
    v = sorted(e["ts"] + e["dur"] for e in trace
               if e.get("ph") == "X" and e.get("cat") == "kernel" and e.get("pid") == pid)
    if len(v) != n:
        fail("pid %d: %d kernels in the dump, want %d" % (pid, len(v), n))
    return v

d = [y - x for x, y in zip(ends(pid_a), ends(pid_b))]  # us
before = statistics.median(d[:50])
after = statistics.median(d[-n // 5:])
if abs(after) > 300:
    fail("the last %d collectives end %.1f us apart (median), want <= 300 us after refinement" % (n // 5, after))
if abs(before - skew / 1000.0) > 300:
    fail("the first 50 collectives end %.1f us apart (median), want the anchor's planted %.0f us"
         % (before, skew / 1000.0))
print("anchor only (first 50): %.1f us apart; refined (last %d): %.1f us apart (p90 %.1f us); "
      "fit: correction %d ns, residual p50 %d ns over %d collectives"
      % (before, n // 5, after, sorted(abs(x) for x in d[-n // 5:])[int(0.9 * (n // 5))],
         b["correction_ns"], b["residual_p50_ns"], b["matched"]))
PY
cat "$T/check"
grep 'clock refits' "$T/live.err" || fail "no refit cost reported: $(cat "$T/live.err")"
exit 0
