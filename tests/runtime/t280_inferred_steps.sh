#!/usr/bin/env bash
# Steps without annotations, through the real collector: tests/progs/fake_train_loop launches, through the
# stand-in libcupti, 40 iterations of a small model's kernels (warm-up with autotuning kernels, an eval
# every 7th step, a logging kernel every 10th, 3 to 6 layers a step) after a 2 ms data-loading pause, with
# no NVTX, as rank 0 (RANK=0 WORLD_SIZE=1). `cuscope stats` lists 40 +- 1 steps under nvtx as "step" in
# domain "inferred" (style Inferred), each about the iteration's length; the ranks section counts the
# same steps for rank 0, marked inferred; the Chrome export holds the same count of "step" ranges of
# category "inferred" on the process's "step (inferred)" track, and the Perfetto export equals the JSON
# (tests/runtime/perfetto_check.py; that part is skipped, with a line, without the perfetto wheel); the
# ASan/UBSan CLI infers the same, reporting nothing. The same program with 2 iterations infers nothing (no
# evidence of a loop).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/runtime/fake_cupti.sh
. "$(dirname "$0")/fake_cupti.sh"
need_fake_cupti
need_prog fake_train_loop

N=40
loop_record()
{
	local name=$1 steps=$2
	RANK=0 WORLD_SIZE=1 FAKE_CUPTI_FIRST_CALL_MS=150 CUSCOPE_CUPTI_PATH=$FAKE_CUPTI \
		cs_record "$T/$name.cap" "$name" -- "$PROGS/fake_train_loop" "$steps"
	[ "$RC" = 0 ] || fail "$name: cuscope record exited $RC, want the program's 0: $(tail -c 300 "$T/$name.err")"
	grep -q "^steps $steps\$" "$T/$name.out" || fail "$name: the loop did not finish: $(head -c 300 "$T/$name.out")"
	cs_stats "$T/$name.cap" "$T/$name.stats.json"
	timeout 60 "$CUSCOPE" export -o "$T/$name.json" "$T/$name.cap" 2>"$T/$name.export.err" ||
		fail "$name: cuscope export failed: $(head -c 300 "$T/$name.export.err")"
}

loop_record loop "$N"
py_check "$T/loop.stats.json" /dev/null "$T/loop.json" "$N" <<'PY'
n = int(sys.argv[4])
rows = [r for r in J["nvtx"] if r["domain"] == "inferred"]
if len(rows) != 1 or rows[0]["name"] != "step" or rows[0]["style"] != "Inferred":
    fail("want one inferred 'step' row under nvtx, got %r" % J["nvtx"])
s = rows[0]
if abs(s["count"] - n) > 1:
    fail("inferred %d steps, the loop ran %d" % (s["count"], n))
# An iteration: the 2 ms pause and 18..33 launches. Only the median is bounded: on a loaded
# machine one step can be descheduled for 100 ms (seen at load 7), while iterations merged or cut
# wrongly move the median itself (and the count above).
if not 2000000 <= s["p50_ns"] <= 20000000:
    fail("inferred step durations look wrong: %r" % s)
ranks = J["ranks"]
if len(ranks) != 1 or ranks[0]["rank"] != 0 or ranks[0]["steps_inferred"] is not True or ranks[0]["steps"] != s["count"]:
    fail("ranks: want rank 0 with the %d inferred steps, got %r" % (s["count"], ranks))
E = json.load(open(sys.argv[3]))["traceEvents"]
steps = [e for e in E if e.get("ph") == "X" and e.get("cat") == "inferred"]
tracks = {e["tid"]: e["args"]["name"] for e in E if e.get("ph") == "M" and e.get("name") == "thread_name"}
if len(steps) != s["count"] or any(e["name"] != "step" or tracks.get(e["tid"]) != "step (inferred)" for e in steps):
    fail("export: %d inferred ranges (want %d) on tracks %r" % (len(steps), s["count"], {tracks.get(e["tid"]) for e in steps}))
if [e["args"]["step"] for e in steps] != list(range(1, len(steps) + 1)) or any(e["args"]["start"] != "launch" for e in steps):
    fail("export: steps not numbered in order or not started at their launch: %r" % steps[:2])
PY

# The Perfetto export against the JSON (a Python with the official protos, as t162 finds one).
PFPY=$BUILD/venv/bin/python
if [ -x "$PFPY" ] && "$PFPY" -c 'import perfetto.protos.perfetto.trace.perfetto_trace_pb2' 2>/dev/null; then
	timeout 60 "$CUSCOPE" export --format=perfetto -o "$T/loop.pftrace" "$T/loop.cap" 2>"$T/pf.err" ||
		fail "perfetto export failed: $(head -c 300 "$T/pf.err")"
	"$PFPY" "$ROOT/tests/runtime/perfetto_check.py" "$T/loop.pftrace" "$T/loop.json" "$T/loop.sum" >"$T/pf.check" ||
		fail "perfetto export: $(cat "$T/pf.check")"
	grep -q 'step (inferred)' "$T/loop.sum" || fail "perfetto export: no 'step (inferred)' track in $(head -c 300 "$T/loop.sum")"
else
	echo "t280: perfetto part skipped: no $PFPY with the perfetto wheel (make deps installs it)"
fi

# The same stats and exports from the ASan/UBSan CLI: the same steps, nothing reported.
[ -x "$CUSCOPE_ASAN" ] || fail "$CUSCOPE_ASAN not built (make BUILD=build-asan ASAN=1 build-asan/bin/cuscope)"
cs_stats -b "$CUSCOPE_ASAN" "$T/loop.cap" "$T/asan.stats.json"
for f in chrome perfetto; do
	timeout 120 "$CUSCOPE_ASAN" export --format=$f -o "$T/asan.$f" "$T/loop.cap" 2>"$T/asan.$f.err" ||
		fail "ASan export --format=$f failed: $(head -c 300 "$T/asan.$f.err")"
done
no_sanitizer_report "$T/asan.stats.json.err" "$T/asan.chrome.err" "$T/asan.perfetto.err"
grep -q '"domain": *"inferred"' "$T/asan.stats.json" || fail "the ASan CLI's stats lack the inferred steps"
cmp -s <(grep -o '"domain": *"inferred"[^}]*' "$T/loop.stats.json") \
	<(grep -o '"domain": *"inferred"[^}]*' "$T/asan.stats.json") ||
	fail "the ASan CLI inferred other steps: $(grep -o '"domain": *"inferred"[^}]*' "$T/asan.stats.json")"

# Two iterations are no loop: nothing inferred.
loop_record short 2
py_check "$T/short.stats.json" <<'PY'
if [r for r in J["nvtx"] if r["domain"] == "inferred"] or J["ranks"][0]["steps_inferred"]:
    fail("2 iterations: want nothing inferred, got %r / %r" % (J["nvtx"], J["ranks"]))
PY
exit 0
