#!/usr/bin/env bash
# What CPython's perf trampolines (PYTHONPERFSUPPORT=1, CPython >= 3.12) cost a Python-heavy loop:
# plain interpreter and under `cuscope record`, each with and without the trampolines, ROUNDS
# interleaved rounds (default 7), medians of the loop's own CPU time and wall time. Prints numbers;
# not a pass/fail test. Skips visibly without a CPython >= 3.12.
#   tests/bench/python_perf.sh [PYTHON]     (default: newest /root/.pyenv/versions/3.1[2-9]*)
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CUSCOPE=${CUSCOPE:-$ROOT/build/bin/cuscope}
ROUNDS=${ROUNDS:-7}
PY=${1:-}
if [ -z "$PY" ]; then
	for v in /usr/bin/python3.1[2-9] /root/.pyenv/versions/3.1[2-9]*/bin/python3; do
		[ -n "$PY" ] && break
		[ -x "$v" ] && PY=$v
	done
fi
if [ -z "$PY" ] || ! "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then
	echo "SKIP: no CPython >= 3.12 found (give one as the first argument)"
	exit 0
fi
"$PY" -c 'import sysconfig, sys; sys.exit(not sysconfig.get_config_var("PY_HAVE_PERF_TRAMPOLINE"))' ||
	{ echo "SKIP: $PY is built without perf trampolines"; exit 0; }
T=$(mktemp -d /tmp/cuscope-pybench.XXXXXX)
trap 'rm -rf "$T"' EXIT
# Many small Python calls: the trampoline is one extra native frame per Python frame entered.
cat >"$T/loop.py" <<'PYEOF'
import os, time
def leaf(x):
    return x * 3 + 1
def mid(n):
    s = 0
    for i in range(n):
        s += leaf(i)
    return s
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
c0, w0 = time.process_time(), time.perf_counter()
t = 0
for _ in range(300):
    t += mid(20000)
t += fib(27)
print("cpu_ms %.1f wall_ms %.1f pid %d" % ((time.process_time() - c0) * 1e3, (time.perf_counter() - w0) * 1e3, os.getpid()))
PYEOF
declare -A CPU WALL
modes="plain plain+perf cuscope cuscope+perf"
for _ in $(seq "$ROUNDS"); do
	for m in $modes; do
		env=()
		case $m in *+perf) env=(PYTHONPERFSUPPORT=1) ;; esac
		case $m in
		plain*) out=$(env "${env[@]}" "$PY" "$T/loop.py") ;;
		cuscope*)
			[ -x "$CUSCOPE" ] || continue
			out=$(env "${env[@]}" "$CUSCOPE" record -o "$T/c.cuscope" -- "$PY" "$T/loop.py" 2>/dev/null)
			rm -f "$T/c.cuscope" ;;
		esac
		read -r _ cpu _ wall _ pid <<<"$out"
		CPU[$m]+="$cpu "
		WALL[$m]+="$wall "
		# The map the trampolines wrote (removed by cuscope itself where it turned them on).
		case $m in *+perf) rm -f "/tmp/perf-$pid.map" ;; esac
	done
done
median() { tr ' ' '\n' | grep . | sort -g | awk '{v[NR]=$1} END {if (NR) print v[int((NR+1)/2)]; else print "-"}'; }
echo "python: $PY ($("$PY" -V 2>&1)), $ROUNDS interleaved rounds, medians (ms)"
printf '%-14s %10s %10s\n' mode cpu_ms wall_ms
for m in $modes; do
	[ -n "${CPU[$m]:-}" ] || continue
	printf '%-14s %10s %10s\n' "$m" "$(echo "${CPU[$m]}" | median)" "$(echo "${WALL[$m]}" | median)"
done
