#!/usr/bin/env bash
# record --trigger range:step>150ms: three planted long steps (250 ms, more than --post apart) fire
# each within 2 ms of start + 150 ms (the program prints that instant in CLOCK_MONOTONIC); every
# firing is in the capture's stats "triggers" section with a dump in --dump-dir (0600, no
# .partial left) that reads with `cuscope stats` and lists its own firing; the program's exit
# code comes through.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog trigger_stall
export CUSCOPE

"$CUSCOPE" record -o "$T/cap" --trigger 'range:step>150ms' --pre 1s --post 150ms --dump-dir "$T/dumps" \
	-- "$PROGS/trigger_stall" ranges 60 5 20 250 150 >"$T/app.out" 2>"$T/err" </dev/null
rc=$?
[ "$rc" = 0 ] || fail "record exited $rc, want the program's 0: $(tail -c 300 "$T/err")"
[ "$(stat -c %a "$T/dumps")" = 700 ] || fail "--dump-dir was made with mode $(stat -c %a "$T/dumps"), want 700"
cs_stats "$T/cap" "$T/stats.json"
"$PYTHON" "$(dirname "$0")/trigger_check.py" "$T/stats.json" "$T/app.out" 'range:step>150ms' \
	--dumps "$T/dumps" || exit 1
n=$(find "$T/dumps" -name '*.cuscope' | wc -l)
[ "$n" -ge 3 ] || fail "$n dumps in --dump-dir, want one per firing (3)"
grep -q "trigger range:step>150ms fired" "$T/err" || fail "record did not say a trigger fired: $(head -c 300 "$T/err")"
exit 0
