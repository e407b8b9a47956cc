#!/usr/bin/env bash
# `cuscope view` of a capture recorded with --trigger: the firings it holds are marked on the time
# axis, the view says how many there are, and } { walk them in time order.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog trigger_stall

"$CUSCOPE" record -o "$T/cap" --trigger 'range:step>150ms' --post 100ms \
	-- "$PROGS/trigger_stall" ranges 60 5 20 250 150 >"$T/app.out" 2>"$T/err" </dev/null ||
	fail "record failed: $(tail -c 300 "$T/err")"
n=$(grep -c '^crossing' "$T/app.out")
tm_run_cuscope view "$T/cap"
tm_wait "$n trigger firings in this capture" 20 "count of firings"
tm_screen_has '◆' || fail "no mark for the firings on the axis: $(tm_screen | sed -n 2,3p | tr '\n' '|')"
# } from the cursor (mid-capture) reaches the last firing, { walks back to the first and stops.
for _ in $(seq "$n"); do
	tm_screen_has "\\($n of $n" && break
	tm_keys '}'
	sleep 0.3
done
tm_wait "trigger range:step>150ms fired at [0-9.]+s \\($n of $n" 5 "} to the last firing"
for i in $(seq $((n - 1)) -1 1); do
	tm_keys '{'
	tm_wait "\\($i of $n" 5 "{ back to firing $i"
done
tm_keys '{'
tm_wait 'no trigger firing before the cursor' 5 "{ before the first"
tm_keys q
tm_wait_exit 0 20
exit 0
