#!/usr/bin/env bash
# The viewer's terminal hangs up (an SSH drop: SIGHUP to the viewer): the viewer detaches and
# leaves; the app runs on to its normal end with exit code 0.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog long_running

tm_run_cuscope -- "$PROGS/long_running" -t 5 -o "$T/done"
tm_wait 'LIVE' 20 "live UI"
tm_pids
sleep 0.5
kill -HUP "$CS_PID"
wait_until 10 pid_gone "$CS_PID" || fail "viewer still running 10 s after SIGHUP"
kill -0 "$APP_PID" 2>/dev/null || fail "app died when the viewer's terminal hung up"
wait_until 20 pid_gone "$APP_PID" || fail "app still running 20 s after the hangup"
[ -s "$T/done" ] || fail "app did not reach its end (no done file) after the hangup"
grep -q 'code=0' "$T/done" || fail "app ended with $(cat "$T/done")"
exit 0
