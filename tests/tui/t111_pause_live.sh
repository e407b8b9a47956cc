#!/usr/bin/env bash
# Live: space pauses (status says PAUSED and how much newer data waits, everything below stays
# still while the capture goes on), space resumes following; End follows live; pan says scrolled.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog long_running

tm_run_cuscope -- "$PROGS/long_running" -t 20
tm_wait 'LIVE' 20 "live UI"
tm_wait 'loader-1' 10 "thread lane"
sleep 1
tm_keys ' '
tm_wait 'PAUSED \+[0-9.]+(s|ms) / [0-9.]+k? ev newer' 5 "PAUSED with newer data"
sleep 0.5
tm_screen | sed '1d;$d' >"$T/a"
first=$(tm_screen | head -n 1)
sleep 1.5
tm_screen | sed '1d;$d' >"$T/b"
diff -q "$T/a" "$T/b" >/dev/null || fail "screen below the status line moved while paused: $(diff "$T/a" "$T/b" | head -4 | tr '\n' '|')"
[ "$(tm_screen | head -n 1)" != "$first" ] || fail "PAUSED status did not count newer data"
tm_keys ' '
tm_wait '● LIVE +window' 5 "space resumes live"
sleep 1.2
tm_screen | sed '1d;$d' >"$T/c"
diff -q "$T/b" "$T/c" >/dev/null && fail "screen did not move after resuming"
tm_keys Left
tm_wait 'scrolled, End follows' 5 "pan leaves follow mode"
tm_keys End
tm_wait '● LIVE +window' 5 "End follows again"
tm_keys q s
tm_wait_exit 115 20
exit 0
