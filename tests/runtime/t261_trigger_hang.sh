#!/usr/bin/env bash
# A hang fires: a range that never ends fires at start + DUR (within 2 ms of the instant the
# program printed) although no event follows it (now is the collector's clock: its cost readings
# keep coming while the program is silent); its dump is written; --duration then stops the program
# and its exit status (128 + SIGTERM) comes through.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog trigger_stall
export CUSCOPE

"$CUSCOPE" record -o "$T/cap" --duration 3 --trigger 'range:hang>300ms' --dump-dir "$T/dumps" \
	-- "$PROGS/trigger_stall" hang 300 >"$T/app.out" 2>"$T/err" </dev/null
rc=$?
[ "$rc" = 143 ] || fail "record exited $rc, want 143 (the program, stopped by SIGTERM): $(tail -c 300 "$T/err")"
grep -q '^hung' "$T/app.out" || fail "the program did not reach its hang: $(cat "$T/app.out")"
cs_stats "$T/cap" "$T/stats.json"
"$PYTHON" "$(dirname "$0")/trigger_check.py" "$T/stats.json" "$T/app.out" 'range:hang>300ms' --exact \
	--dumps "$T/dumps" || exit 1
exit 0
