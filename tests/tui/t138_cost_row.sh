#!/usr/bin/env bash
# The profiler's own cost in the UI (a capture with known cost readings, tests/runtime/cost_capture.c):
# two cost rows under the process that reported it (none under the one that did not) with the
# values at the cursor in their labels, the thread lane marked where the overhead budget reduced
# sampling, the latest back-off notice on the status line, details on Enter, and `?` naming the rows.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
[ -f "$BUILD/obj/libviewer.a" ] || skip "no $BUILD/obj/libviewer.a"
# The generator links the viewer library as built (a sanitized one needs the sanitizers too).
for san in "" "-fsanitize=address,undefined"; do
	# shellcheck disable=SC2086
	cc -O2 $san -I"$ROOT/include" -D_GNU_SOURCE -o "$T/gen" "$ROOT/tests/runtime/cost_capture.c" \
		"$BUILD/obj/libviewer.a" -lzstd -lz -lstdc++ -lm -lpthread 2>"$T/cc.err" && break
done
[ -x "$T/gen" ] || fail "cannot build cost_capture: $(head -c 300 "$T/cc.err")"
"$T/gen" "$T/cost.cap" || fail "cost_capture failed"

TM_WIDTH=120 TM_HEIGHT=30 tm_run_cuscope view --ascii "$T/cost.cap"
# 1 ms added per second: +0.1 %; 5 ms of collector CPU per second (sender 3 + sampling 2).
tm_wait '^ cost \+0\.1% est\. +\|' 10 "view: the cost row with the added time at the cursor"
tm_screen_has '^   collector 5\.0ms/s +\|' || fail "no collector CPU row: $(tm_screen | sed -n 3,6p | tr '\n' '|')"
[ "$(tm_screen | grep -c ' cost ')" = 1 ] || fail "cost rows under a process that sent no cost"
tm_screen_has 'drops 0  overhead budget 3 %: sampling 250/s -> 100/s' || fail "status line lacks the latest back-off: $(tm_screen | head -n 1)"
# The thread lane: its baseline until 8 s, then the reduced mark up to the last reading (20 s of 20.9).
band=$(tm_screen | grep '^-main 4343' | sed 's/^[^|]*|//')
case $band in
*'----~~~~~~~~~~~~~~~~~~~~'*'~~~---') ;;
*) fail "thread lane not marked where sampling was reduced: '$band'" ;;
esac
before=${band%%~*}
[ "${#before}" -gt 30 ] || fail "the reduced mark starts too early (column ${#before}): '$band'"
tm_keys Down Enter
tm_wait 'profiler cost  pid 4343' 5 "details of the cost row"
tm_screen_has 'sampling +here 2\.00 ms/s CPU, est\. \+0\.10 %; setting now 100/s \(reduced\)' || fail "cost details: $(tm_screen | grep -A4 'profiler cost' | tr -s ' ' | tr '\n' '|')"
tm_screen_has "not counted +CUPTI's time inside the driver" || fail "cost details do not say what they leave out"
tm_keys Escape
sleep 0.3 # a lone Esc, not the start of an arrow key's sequence
tm_keys Down Down Enter
tm_wait 'budget +sampling reduced to 250/s by the overhead budget \(asked: 1000/s\)' 5 "details of the reduced thread lane"
tm_keys Escape
sleep 0.3
tm_keys '?'
tm_wait 'cost rows +under a process' 5 "help names the cost rows"
tm_keys Escape
sleep 0.3
tm_keys q
tm_wait_exit 0 10
exit 0
