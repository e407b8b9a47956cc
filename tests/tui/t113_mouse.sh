#!/usr/bin/env bash
# Mouse (X10 reports, as tmux's TERM=screen asks for): the wheel zooms in and out around the pointer,
# a drag pans the time axis, a click selects the lane under it.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog long_running

cs_record "$T/cap" app -- "$PROGS/long_running" -t 2
[ "$RC" = 0 ] || fail "record exited $RC"
tm_run_cuscope view "$T/cap"
tm_wait 'lr-main' 15 "view"
window() { tm_screen | head -n 1 | grep -oE 'window [0-9.]+m?s'; }
w0=$(window)
# X10: ESC [ M, then button+32, column+33, row+33 (0-based). 96 = wheel up, 97 = wheel down.
tm_keys -l $'\e[M`p*'
sleep 0.5
w1=$(window)
[ "$w1" != "$w0" ] || fail "wheel up did not zoom ($w0)"
tm_keys -l $'\e[Map*'
sleep 0.5
[ "$(window)" != "$w1" ] || fail "wheel down did not zoom back ($w1)"
tm_keys + +
sleep 0.3
axis0=$(tm_screen | sed -n 2p)
tm_keys -l $'\e[M p*'   # press button 1 at column 80
tm_keys -l $'\e[M#\x5a*' # release at column 57: dragged left, the view moves later in time
sleep 0.5
[ "$(tm_screen | sed -n 2p)" != "$axis0" ] || fail "drag did not pan: $axis0"
tm_keys q
tm_wait_exit 0 10
exit 0
