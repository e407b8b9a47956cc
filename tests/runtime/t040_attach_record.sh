#!/usr/bin/env bash
# cuscope attach --record on a running C program started without cuscope: exit 0, the capture's
# samples put its hot function first on its thread, and the program finishes with its normal
# output and exit code.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog attach_target

"$PROGS/attach_target" 6 >"$T/app.out" 2>&1 &
app=$!
BG_PIDS+=("$app")
sleep 0.5
timeout 60 "$CUSCOPE" attach --record -o "$T/cap" --duration 2 "$app" >"$T/att.out" 2>"$T/att.err"
rc=$?
[ "$rc" = 0 ] || fail "attach exited $rc: $(cat "$T/att.err")"
wait "$app"
app_rc=$?
[ "$app_rc" = 3 ] || fail "the target exited $app_rc after the attach, want its own 3"
grep -q '^attach_target done bursts=1' "$T/app.out" || fail "the target's output changed: $(cat "$T/app.out")"
"$CUSCOPE" stats --format=json "$T/cap" >"$T/stats.json" 2>"$T/stats.err" || fail "stats failed: $(cat "$T/stats.err")"
"$PYTHON" - "$T/stats.json" "$app" <<'PY' || exit 1
import json, sys
d = json.load(open(sys.argv[1]))
pid = int(sys.argv[2])
rows = [r for r in d["hot"] if r["pid"] == pid and r["tid"] == pid]
if not rows:
    print("no samples for the main thread of pid %d" % pid); sys.exit(1)
top = max(rows, key=lambda r: r["samples"])
if top["function"] != "cuscope_attach_hot":
    print("hottest function is %r, want cuscope_attach_hot" % top["function"]); sys.exit(1)
if top["samples"] < 100:
    print("only %d samples of the hot function in 2 s" % top["samples"]); sys.exit(1)
PY
exit 0
