#!/usr/bin/env bash
# The status line shows the program's basename and arguments cut from the middle, with the pid
# always visible: a program in a 200-character directory, given a long argument, on an 80-column
# pane (the name used to be cut to "long_runn" there, and a long path pushed the rest off).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog long_running

long="$T"
while [ ${#long} -lt 200 ]; do long="$long/a_long_checkout_directory"; done
mkdir -p "$long" || fail "cannot make $long"
cp "$PROGS/long_running" "$long/long_running" || fail "cannot copy long_running"

TM_WIDTH=80 tm_run_cuscope -- "$long/long_running" -t 20 -n 2 -o "$long/done"
tm_wait 'LIVE' 20 "live UI"
tm_pids
tm_screen | head -n 1 >"$T/status"
status=$(cat "$T/status")
grep -qE "▸ long_running( -t|…)" "$T/status" || fail "status line lacks the basename: $status"
grep -qw "pid $APP_PID" "$T/status" || fail "status line lacks 'pid $APP_PID': $status"
grep -q "…" "$T/status" || fail "status line has no mark where the middle was cut: $status"
grep -q "y/done pid $APP_PID" "$T/status" || fail "status line lost the end of the arguments: $status"
grep -q "LIVE" "$T/status" || fail "status line lost the state: $status"
tm_keys q
tm_wait 'Target running' 5 "quit prompt"
tm_keys s
wait_until 10 test -s "$T/exit" || fail "cuscope did not exit after [s]top"
exit 0
