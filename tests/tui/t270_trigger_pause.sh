#!/usr/bin/env bash
# Live mode with --trigger: the view pauses by itself at the first firing, centred on it, says
# which trigger fired and marks it on the time axis; } and { walk between firings (] [ stay the
# GPU-gap keys); the help lists } {; the program's exit code comes through at the end; each
# firing's window is dumped into --dump-dir.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog trigger_stall

# Three 250 ms steps among 5 ms ones, ~350 ms apart; the trigger re-arms after 100 ms.
tm_run_cuscope --trigger "'range:step>150ms'" --post 100ms --dump-dir "$T/dumps" -- "$PROGS/trigger_stall" ranges 60 5 20 250 150 2000
tm_wait 'trigger range:step>150ms fired at [0-9.]+s \(1 of 1' 20 "first firing message"
tm_wait 'PAUSED' 5 "the view paused on the firing"
tm_screen_has '◆' || fail "no mark for the firing on the screen: $(tm_screen | sed -n 2,4p | tr '\n' '|')"
# Once the others fired, } goes forward through them and { back.
sleep 2.5
tm_keys '}'
tm_wait 'trigger range:step>150ms fired at [0-9.]+s \(2 of 3' 5 "} to the second firing"
tm_keys '}'
tm_wait '\(3 of 3' 5 "} to the third firing"
tm_keys '}'
tm_wait 'no trigger firing after the cursor' 5 "} past the last"
tm_keys '{'
tm_wait '\(2 of 3' 5 "{ back to the second"
tm_keys ']'
tm_wait 'no GPU idle gap after the cursor' 5 "] still the GPU-gap key"
tm_keys '?'
tm_wait '\} \{ +next / previous trigger firing' 5 "help lists } {"
tm_keys Escape
tm_wait 'exited \(code 0\)' 20 "the program ended"
tm_keys q
tm_wait_exit 0 20
# Live mode dumps each window from its own capture file too.
n=$(find "$T/dumps" -name '*.cuscope' | wc -l)
[ "$n" = 3 ] || fail "$n dumps in --dump-dir, want 3 (one per firing)"
for f in "$T"/dumps/*.cuscope; do
	"$CUSCOPE" stats --format=json "$f" >"$T/d.json" 2>"$T/d.err" || fail "stats of $f failed: $(cat "$T/d.err")"
	grep -q '"expr": "range:step>150ms"' "$T/d.json" || fail "dump $f lists no firing"
done
exit 0
