#!/usr/bin/env bash
# The hot panel on a Python thread (CPython >= 3.12, else a visible SKIP):
# - recorded with --python-perf, H on the MainThread lane (named by the Python hook) opens it in
#   inclusive order with Python functions only, FILE:QUALNAME, crunch/leaf on top; i switches to self
#   order (interpreter leaves) and back; the ? help lists i;
# - recorded without it, the panel says once on the message line that --python-perf would show
#   Python functions.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
PY=${PYTHON312:-}
if [ -z "$PY" ]; then
	for v in /usr/bin/python3.1[2-9] /root/.pyenv/versions/3.1[2-9]*/bin/python3; do
		[ -x "$v" ] && { PY=$v; break; }
	done
fi
[ -n "$PY" ] || skip "SKIP: no CPython >= 3.12 on this machine (set PYTHON312)"
"$PY" -c 'import sys, sysconfig; sys.exit(sys.version_info < (3, 12) or not sysconfig.get_config_var("PY_HAVE_PERF_TRAMPOLINE"))' ||
	skip "SKIP: $PY is not a CPython >= 3.12 with perf trampolines"
cat >"$T/hot.py" <<'PYEOF'
import time
def leaf(x):
    return x * 3 + 1
def crunch(n):
    s = 0
    for i in range(n):
        s += leaf(i)
    return s
deadline = time.monotonic() + 1.0
while time.monotonic() < deadline:
    crunch(2000)
print("done")
PYEOF
for mode in perf plain; do
	opt=()
	[ "$mode" = perf ] && opt=(--python-perf)
	timeout 60 "$CUSCOPE" record "${opt[@]}" -o "$T/$mode.cuscope" -- "$PY" "$T/hot.py" >"$T/$mode.out" 2>"$T/$mode.err" </dev/null ||
		fail "record ($mode) failed: $(head -c 300 "$T/$mode.err")"
done

# Selects the MainThread lane (rows below the process header, where the selection starts).
select_main()
{
	local n
	n=$(tm_screen | awk '/^[^ ]*python3[^ ]* [0-9]+ / && !base { base = NR } base && /^[^ ]*MainThread [0-9]+ / { print NR - base; exit }')
	[ -n "$n" ] || fail "no MainThread row: $(tm_screen | head -n 8 | tr -s ' ' | tr '\n' '|')"
	for ((i = 0; i < n; i++)); do tm_keys Down; done
}

TM_WIDTH=160 TM_HEIGHT=40 tm_run_cuscope view "$T/perf.cuscope"
tm_wait 'MainThread' 15 "view: MainThread lane"
tm_keys '?'
tm_wait ' i +hot functions by self / inclusive samples' 5 "? help lists the i key"
tm_keys Escape
select_main
tm_keys H
tm_wait 'Python functions \(inclusive\) of MainThread [0-9]+ in view: [0-9]+ samples +\(i: self' 5 "inclusive Python panel"
tm_screen >"$T/incl.txt"
rows=$(grep -A2 'Python functions (inclusive) of MainThread' "$T/incl.txt" | tail -n 2 | awk '{print $4}' | sed 's|.*/||' | sort | tr '\n' ' ')
[ "$rows" = "hot.py:crunch hot.py:leaf " ] || fail "top inclusive rows: '$rows', want hot.py:crunch and hot.py:leaf: $(grep -A3 'Python functions' "$T/incl.txt" | tr '\n' '|')"
tm_keys i
tm_wait 'Hot functions of MainThread [0-9]+ in view: [0-9]+ samples +\(i: inclusive' 5 "i: self order"
first=$(tm_screen | grep -A1 'Hot functions of MainThread' | tail -n 1)
echo "$first" | grep -q 'hot.py:' && fail "self order leads with a Python frame, want the interpreter: '$first'"
tm_keys i
tm_wait 'Python functions \(inclusive\) of MainThread' 5 "i: back to inclusive"
tm_screen_has 'with --python-perf' && fail "the --python-perf hint shows on a capture that has Python frames"
tm_keys q
tm_wait_exit 0 10
tmux -L "$TMUX_SOCK" kill-server 2>/dev/null
rm -f "$T/exit"

TM_WIDTH=160 TM_HEIGHT=40 tm_run_cuscope view "$T/plain.cuscope"
tm_wait 'MainThread' 15 "view (no --python-perf): MainThread lane"
select_main
tm_keys H
tm_wait 'with --python-perf \(CPython >= 3.12\) stacks show Python functions' 5 "the --python-perf hint"
tm_keys q
tm_wait_exit 0 10
exit 0
