#!/usr/bin/env bash
# After `cuscope attach` to a running CPython, the Python hook (thread names, GC pauses, perf maps) is
# missing: the capture says so once ("Python ... unavailable after attach: start the program under
# cuscope"), the program runs on to its own exit code; a C program attached gets no such line.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog attach_target
[ "$(id -u)" = 0 ] || skip "SKIP: attach to a non-child process needs root here (ptrace)"
# The interpreter itself, not a launcher script (pyenv's shim is bash until it execs).
PY=$("$PYTHON" -c 'import sys; print(sys.executable)' 2>/dev/null)
[ -x "$PY" ] || skip "SKIP: no python3 interpreter found"
WANT='Python thread names, GC pauses and Python function names unavailable after attach: start the program under cuscope'

cat >"$T/spin.py" <<'PYEOF'
import sys, threading, time
def spin():
    end = time.monotonic() + 6
    while time.monotonic() < end:
        sum(range(1000))
t = threading.Thread(target=spin, name="spinner")
t.start()
print("ready", flush=True)
t.join()
sys.exit(7)
PYEOF
"$PY" "$T/spin.py" >"$T/py.out" 2>&1 &
app=$!
BG_PIDS+=("$app")
wait_until 10 file_has "$T/py.out" '^ready' || fail "the Python program did not start: $(cat "$T/py.out")"
timeout 60 "$CUSCOPE" attach --record -o "$T/py.cuscope" --duration 1.5 "$app" >"$T/att.out" 2>"$T/att.err"
rc=$?
[ "$rc" = 0 ] || fail "attach to Python exited $rc: $(head -c 300 "$T/att.err")"
n=$(grep -cF "$WANT" "$T/att.err")
[ "$n" = 1 ] || fail "want the Python-after-attach line once on stderr, got $n: $(tr '\n' '|' <"$T/att.err")"
grep -F "$WANT" "$T/att.err" | grep -q "^cuscope: warning: pid $app: " || fail "the line does not name pid $app: $(grep -F "$WANT" "$T/att.err")"
wait "$app"
app_rc=$?
[ "$app_rc" = 7 ] || fail "the Python program exited $app_rc after the attach, want its own 7"

"$PROGS/attach_target" 4 >"$T/c.out" 2>&1 &
capp=$!
BG_PIDS+=("$capp")
sleep 0.5
timeout 60 "$CUSCOPE" attach --record -o "$T/c.cuscope" --duration 1 "$capp" >/dev/null 2>"$T/c.err" || fail "attach to C exited non-zero: $(head -c 300 "$T/c.err")"
grep -q 'attached to a running process' "$T/c.err" || fail "attach to C lost its own notice: $(tr '\n' '|' <"$T/c.err")"
grep -qF 'Python' "$T/c.err" && fail "attach to a C program speaks of Python: $(grep -F Python "$T/c.err")"
wait "$capp"
exit 0
