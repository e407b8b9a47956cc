#!/usr/bin/env bash
# cuscope view: zoom (axis switches to ms), details overlay (NVTX range with parent/children), find
# and next match, go to, fold, NVTX panel (toggle, focus, jump to slowest), help lists every key.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog long_running

cs_record "$T/cap" app -- "$PROGS/long_running" -t 2
[ "$RC" = 0 ] || fail "record exited $RC"
tm_run_cuscope view "$T/cap"
tm_wait 'lr-main' 15 "view: main thread lane"
tm_wait 'NVTX ranges' 5 "NVTX panel shown by default"
tm_wait ' step +[0-9]+ +[0-9.]+ms' 5 "panel row for step with n and p50"

# Help: generated from the key table, every binding listed.
tm_keys '?'
tm_wait 'cuscope keys' 5 "help overlay"
for k in 'space' 'Home' 'End' 'Enter' 'n N' 'Tab' 'Esc' 'PgUp PgDn'; do
	tm_screen_has "$k" || fail "help lacks '$k'"
done
tm_keys Escape
tm_wait_gone 'cuscope keys' 5 "Esc did not close the help"

# Zoom in until the axis is in milliseconds.
tm_keys + + + + +
tm_wait 'ms *$' 5 "axis labelled in ms after zooming in"
tm_screen | sed -n 2p | grep -q 'time .*s +' || fail "axis base missing: $(tm_screen | sed -n 2p)"
tm_keys - - - - - - - -
tm_wait ' s *$' 5 "axis back in seconds after zooming out"

# Find: jumps to a 'fwd' range and selects its lane; Enter shows its details with the parent.
tm_keys / f w d Enter
sleep 0.5
tm_keys Enter
tm_wait 'NVTX range +fwd' 5 "details of the found range"
tm_screen_has 'parent +step' || fail "details lack the parent step: $(tm_screen | grep -A8 'event details' | tr -s ' ' | tr '\n' '|')"
tm_screen_has 'thread +lr-main' || fail "details lack the thread"
tm_screen_has 'duration +[0-9.]+ms' || fail "details lack the duration"
tm_keys Escape
tm_wait_gone 'event details' 5 "Esc did not close the details"
# n moves to the next match: the axis changes.
before=$(tm_screen | sed -n 2p)
tm_keys n
sleep 0.5
[ "$(tm_screen | sed -n 2p)" != "$before" ] || fail "n did not move the view"
tm_keys / z z z n o n e Enter
tm_wait "no match for 'zzznone'" 5 "find without a match says so"

# Go to a time: the axis shows it.
tm_keys g 1 . 5 Enter
sleep 0.5
tm_screen | sed -n 2p | grep -qE 'time 1s \+.* 500 |1\.5' || fail "g 1.5 did not show 1.5 s: $(tm_screen | sed -n 2p)"

# Fold the process: thread rows disappear; unfold brings them back.
tm_keys Home
for _ in 1 2 3 4 5 6 7 8; do tm_keys Up; done
tm_keys f
tm_wait_gone 'loader-0' 5 "folding the process left its thread rows"
tm_keys f
tm_wait 'loader-0' 5 "unfold the process"

# NVTX panel: h hides it, h shows it, Tab + Enter jumps to the slowest instance.
tm_keys h
tm_wait_gone 'NVTX ranges' 5 "h did not hide the NVTX panel"
tm_keys h
tm_wait 'NVTX ranges' 5 "h shows the panel again"
tm_keys Tab
tm_wait 'Enter: slowest' 5 "panel focus"
tm_keys Enter
tm_wait 'slowest [a-z]+: [0-9.]+ms' 5 "jump to the slowest instance"
tm_keys Tab q
tm_wait_exit 0 10
exit 0
