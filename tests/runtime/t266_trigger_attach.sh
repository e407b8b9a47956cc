#!/usr/bin/env bash
# `cuscope attach --record --trigger` on an armed process (run --detached): long steps planted
# while it is recorded fire within 2 ms of their crossings, with dumps that read on their own and
# say how much of their pre-window the stream held (the recording began mid-run).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog trigger_stall
export CUSCOPE
mkdir -m 700 "$T/sess"
export CUSCOPE_SESSION_ROOT=$T/sess

# ~12 s of 10 ms steps; every 40th runs 250 ms (crossing at 150 ms).
"$CUSCOPE" run --detached -- "$PROGS/trigger_stall" ranges 800 10 40 250 150 >"$T/run.out" 2>"$T/run.err"
pid=$(sed -n 's/^pid \([0-9]*\) armed.*/\1/p' "$T/run.out")
[ -n "$pid" ] || fail "run --detached did not say its pid: $(cat "$T/run.out" "$T/run.err")"
BG_PIDS+=("$pid")
log=$(sed -n 's/.*output in \(.*\)$/\1/p' "$T/run.out")
sleep 1
"$CUSCOPE" attach --record -o "$T/cap" --duration 3 --trigger 'range:step>150ms' --pre 10s --post 100ms \
	--dump-dir "$T/dumps" "$pid" >"$T/attach.out" 2>"$T/attach.err" </dev/null ||
	fail "attach --record exited $?: $(tail -c 300 "$T/attach.err")"
cs_stats "$T/cap" "$T/stats.json"
# Only the crossings that fall inside the recording are expected.
"$PYTHON" - "$T/stats.json" "$log" "$T/dumps" <<'PY' || exit 1
import json, os, subprocess, sys
rows = [r for r in json.load(open(sys.argv[1]))["triggers"] if r["expr"] == "range:step>150ms"]
crossings = [int(l.split()[1]) for l in open(sys.argv[2]) if l.startswith("crossing ")]
if not rows:
    print("no firing while attached (crossings so far: %d)" % len(crossings)); sys.exit(1)
first, last = min(r["time_ns"] for r in rows), max(r["time_ns"] for r in rows)
for c in crossings:
    if first - 1e9 <= c <= last and not any(abs(r["time_ns"] - c) <= 2e6 for r in rows):
        print("crossing %d inside the recording has no firing within 2 ms" % c); sys.exit(1)
for r in rows:
    if not any(abs(r["time_ns"] - c) <= 2e6 for c in crossings):
        print("firing at %d matches no planted crossing" % r["time_ns"]); sys.exit(1)
    if not (0 < r["pre_held_ns"] < r["pre_ns"]):
        print("pre_held_ns %d of %d: the stream began mid-run, want less than all" % (r["pre_held_ns"], r["pre_ns"])); sys.exit(1)
    if r["file"]:
        p = subprocess.run([os.environ["CUSCOPE"], "stats", "--format=json", r["file"]], capture_output=True, text=True)
        if p.returncode or not any(x["time_ns"] == r["time_ns"] for x in json.loads(p.stdout)["triggers"]):
            print("dump %s does not read or lacks its firing: %s" % (r["file"], p.stderr[:200])); sys.exit(1)
PY
kill -TERM "$pid" 2>/dev/null
exit 0
