#!/usr/bin/env bash
# The hot panel of a Python thread recorded after `cuscope attach` (interpreter frames only): its
# one-time hint says Python function names are unavailable after attach and to start the program under
# cuscope, not to add --python-perf to the attach (which cannot turn perf trampolines on).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
[ "$(id -u)" = 0 ] || skip "SKIP: attach to a non-child process needs root here (ptrace)"
PY=$("$PYTHON" -c 'import sys; print(sys.executable)' 2>/dev/null)
[ -x "$PY" ] || skip "SKIP: no python3 interpreter found"

cat >"$T/spin.py" <<'PYEOF'
import threading, time
def spin():
    end = time.monotonic() + 5
    while time.monotonic() < end:
        sum(range(1000))
t = threading.Thread(target=spin, name="spinner")
t.start()
print("ready", flush=True)
t.join()
PYEOF
"$PY" "$T/spin.py" >"$T/py.out" 2>&1 &
app=$!
BG_PIDS+=("$app")
wait_until 10 file_has "$T/py.out" '^ready' || fail "the Python program did not start: $(cat "$T/py.out")"
timeout 60 "$CUSCOPE" attach --record -o "$T/py.cuscope" --duration 1.5 "$app" >/dev/null 2>"$T/att.err" ||
	fail "attach failed: $(head -c 300 "$T/att.err")"
wait "$app"

TM_WIDTH=140 tm_run_cuscope view "$T/py.cuscope"
tm_wait 'CAPTURE' 15 "view of the attach capture"
tm_keys H
tm_wait 'Hot functions of [^ ]+ [0-9]+ in view' 5 "hot panel of the spinning thread"
tm_wait 'Python function names unavailable after attach: start the program under cuscope' 5 "attach hint"
tm_screen_has 'with --python-perf' && fail "the hint suggests --python-perf after attach"
tm_keys q
tm_wait_exit 0 10
exit 0
