#!/usr/bin/env bash
# GPU triggers through the stand-in libcupti (real collector path, CPU only): the program sleeps
# 80 ms between two kernels; gpu-idle>30ms fires within 2 ms of the first kernel's end + 30 ms and
# gap-explained:sleep (the launching thread was in nanosleep) within 2 ms of the gap's start +
# --gap-ms; gap-explained:read does not fire; gpu-idle>500ms never fires (no gap that long after
# the first kernel, which CUDA's slow first launch delays by 600 ms). The two firings, 10 ms apart,
# fall in one window and share one dump.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/runtime/fake_cupti.sh
. "$(dirname "$0")/fake_cupti.sh"
need_fake_cupti
need_prog trigger_stall
export CUSCOPE

FAKE_CUPTI_FIRST_CALL_MS=600 CUSCOPE_CUPTI_PATH=$FAKE_CUPTI "$CUSCOPE" record -o "$T/cap" --gap-ms 20 \
	--trigger 'gpu-idle>30ms' --trigger 'gap-explained:sleep' --trigger 'gap-explained:read' \
	--trigger 'gpu-idle>500ms' --dump-dir "$T/dumps" -- "$PROGS/trigger_stall" gap 80 30 >"$T/idle.out" 2>"$T/err" </dev/null
rc=$?
[ "$rc" = 0 ] || fail "record exited $rc: $(tail -c 300 "$T/err")"
cs_stats "$T/cap" "$T/stats.json"
"$PYTHON" "$(dirname "$0")/trigger_check.py" "$T/stats.json" "$T/idle.out" 'gpu-idle>30ms' --exact || exit 1
# The same gap, explained: its crossing is the gap's start + --gap-ms (20 ms).
sed 's/^crossing \([0-9]*\)/echo crossing $((\1 - 10000000))/e' "$T/idle.out" >"$T/gap.out"
"$PYTHON" "$(dirname "$0")/trigger_check.py" "$T/stats.json" "$T/gap.out" 'gap-explained:sleep' --exact ||
	exit 1
"$PYTHON" - "$T/stats.json" <<'PY' || exit 1
import json, sys
rows = json.load(open(sys.argv[1]))["triggers"]
for r in rows:
    if r["expr"] in ("gap-explained:read", "gpu-idle>500ms"):
        print("%s fired: %r" % (r["expr"], r)); sys.exit(1)
    if r["expr"] == "gap-explained:sleep" and r["cause"] != "sleep":
        print("gap-explained:sleep row says cause %r" % r["cause"]); sys.exit(1)
files = {r["file"] for r in rows}
if len(rows) != 2 or len(files) != 1 or "" in files:
    print("the two firings of one window name dumps %r, want one shared file" % sorted(files)); sys.exit(1)
PY
n=$(find "$T/dumps" -type f | wc -l)
[ "$n" = 1 ] || fail "$n files in --dump-dir for one window, want 1: $(ls "$T/dumps")"
exit 0
