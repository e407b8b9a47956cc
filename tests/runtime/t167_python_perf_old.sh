#!/usr/bin/env bash
# --python-perf on a Python without perf trampolines (CPython < 3.12) says so once, in one line,
# even when the program starts more processes of that Python; the program runs to its own exit
# code. And on a CPython >= 3.12 with trampolines nothing is said. Visible SKIP without such
# interpreters (PYTHON_OLD / PYTHON312 name them; else /usr/bin and pyenv's versions are looked at).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
OLD=${PYTHON_OLD:-}
if [ -z "$OLD" ]; then
	for v in /usr/bin/python3.1[01] /usr/bin/python3.[89] /root/.pyenv/versions/3.1[01].*/bin/python3 \
		/root/.pyenv/versions/3.[89].*/bin/python3; do
		[ -x "$v" ] && { OLD=$v; break; }
	done
fi
[ -n "$OLD" ] || skip "SKIP: no CPython 3.8-3.11 on this machine (set PYTHON_OLD)"
"$OLD" -c 'import sys; sys.exit(not (3, 8) <= sys.version_info < (3, 12))' || skip "SKIP: $OLD is not CPython 3.8-3.11"
VER=$("$OLD" -c 'import sys; print("%d.%d" % sys.version_info[:2])')

cat >"$T/kids.py" <<'PYEOF'
import subprocess, sys
for _ in range(2):
    subprocess.run([sys.executable, "-c", "print('kid')"], check=True)
print("done")
sys.exit(5)
PYEOF
RC=0
timeout 60 "$CUSCOPE" record --python-perf -o "$T/cap" -- "$OLD" "$T/kids.py" >"$T/app.out" 2>"$T/app.err" </dev/null || RC=$?
[ "$RC" = 5 ] || fail "record exited $RC, want the program's 5: $(head -c 300 "$T/app.err")"
[ "$(grep -c '^kid$' "$T/app.out")" = 2 ] || fail "the children did not run: $(head -c 200 "$T/app.out")"
n=$(grep -c 'python-perf' "$T/app.err")
[ "$n" = 1 ] || fail "want one --python-perf line for 3 processes, got $n: $(cat "$T/app.err")"
grep -q "^cuscope: warning: pid [0-9]*: --python-perf: Python $VER has no perf trampolines (CPython 3.12 or later has): stacks show interpreter frames, not Python functions$" "$T/app.err" ||
	fail "the line does not say what is unavailable: $(cat "$T/app.err")"

NEW=${PYTHON312:-}
if [ -z "$NEW" ]; then
	for v in /usr/bin/python3.1[2-9] /root/.pyenv/versions/3.1[2-9]*/bin/python3; do
		[ -x "$v" ] && { NEW=$v; break; }
	done
fi
if [ -n "$NEW" ] && "$NEW" -c 'import sys, sysconfig; sys.exit(sys.version_info < (3, 12) or not sysconfig.get_config_var("PY_HAVE_PERF_TRAMPOLINE"))'; then
	RC=0
	timeout 60 "$CUSCOPE" record --python-perf -o "$T/cap2" -- "$NEW" "$T/kids.py" >"$T/new.out" 2>"$T/new.err" </dev/null || RC=$?
	[ "$RC" = 5 ] || fail "record ($NEW) exited $RC: $(head -c 300 "$T/new.err")"
	! grep -q 'python-perf' "$T/new.err" || fail "$NEW has trampolines, yet: $(cat "$T/new.err")"
else
	echo "note: no CPython >= 3.12 with trampolines: its silence not checked" >&2
fi
exit 0
