#!/usr/bin/env bash
# The live UI on a threaded NVTX program: status line LIVE with the command and app pid, thread
# lanes by name, then EXITED (code 0) after the app ends; q quits with the app's code and the
# app's stdout is replayed on the terminal afterwards.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog long_running

tm_run_cuscope -- "$PROGS/long_running" -t 6 -n 2 -o "$T/done"
tm_wait 'LIVE' 20 "live UI"
tm_pids
tm_screen | head -n 1 >"$T/status"
grep -q "long_running" "$T/status" || fail "status line lacks the command: $(cat "$T/status")"
grep -qw "$APP_PID" "$T/status" || fail "status line lacks app pid $APP_PID: $(cat "$T/status")"
grep -qE 'drops [0-9]+' "$T/status" || fail "status line lacks 'drops N': $(cat "$T/status")"
for lane in lr-main loader-0 loader-1; do
	tm_wait "$lane" 10 "thread lane $lane"
done
tm_wait "long_running $APP_PID|long_running +$APP_PID" 5 "process header 'name pid'"
tm_wait 'EXITED \(code 0\)' 20 "status after the app exits"
[ -f "$T/done" ] || fail "app did not write its done file"
tm_keys q
tm_wait_exit 0 10
tm_wait 'done steps=[0-9]+ loads=[0-9]+ code=0' 5 "app stdout replayed after the UI closed"
exit 0
