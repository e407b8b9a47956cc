#!/usr/bin/env bash
# q while the app runs asks [d]etach / [s]top. s stops the app and cuscope exits with the app's
# status; d leaves the app running to its normal end.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog long_running

# stop
tm_run_cuscope -- "$PROGS/long_running" -o "$T/done"
tm_wait 'LIVE' 20 "live UI"
tm_pids
tm_keys q
tm_wait '\[d\]etach' 5 "quit prompt"
tm_wait '\[s\]top' 1 "quit prompt"
kill -0 "$APP_PID" 2>/dev/null || fail "the quit prompt alone ended the app"
tm_keys s
wait_until 15 pid_gone "$APP_PID" || fail "[s]top: app $APP_PID still running after 15 s"
wait_until 15 test -s "$T/exit" || fail "[s]top: cuscope did not exit"
got=$(sed -n 's/^EXIT=//p' "$T/exit")
if [ -f "$T/done" ]; then
	want=$(sed -n 's/.*code=//p' "$T/done")
	[ "$got" = "$want" ] || fail "[s]top: cuscope exited $got, the app exited $want"
else
	[ "$got" -gt 128 ] || fail "[s]top: app killed without finishing, but cuscope exited $got"
fi
tm kill-server 2>/dev/null
rm -f "$T/exit" "$T/done"

# detach
TMUX_SOCK="$TMUX_SOCK-b"
tm_run_cuscope -- "$PROGS/long_running" -t 6 -o "$T/done"
tm_wait 'LIVE' 20 "live UI"
tm_pids
tm_keys q
tm_wait '\[d\]etach' 5 "quit prompt"
tm_keys d
wait_until 10 test -s "$T/exit" || fail "[d]etach: cuscope did not exit"
[ -f "$T/done" ] && fail "[d]etach: the app ended before its time (test too slow?)"
kill -0 "$APP_PID" 2>/dev/null || fail "[d]etach: the app died with the viewer"
wait_until 20 test -s "$T/done" || fail "[d]etach: app did not finish its run after the viewer left"
grep -q 'code=0' "$T/done" || fail "[d]etach: app ended with $(cat "$T/done")"
exit 0
