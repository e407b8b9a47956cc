#!/usr/bin/env bash
# kill -9 of the live viewer: the app runs on to its normal end, writes its done file and its
# final output to the log file named on screen; the shell sees 137.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog long_running

TM_WIDTH=220 tm_run_cuscope -- "$PROGS/long_running" -t 5 -o "$T/done"
tm_wait 'LIVE' 20 "live UI"
tm_pids
tm_screen >"$T/screen"
sleep 0.5
kill -KILL "$CS_PID"
tm_wait_exit 137 10
kill -0 "$APP_PID" 2>/dev/null || fail "app died with the viewer"
wait_until 20 pid_gone "$APP_PID" || fail "app still running 20 s after the viewer died"
[ -s "$T/done" ] || fail "app did not reach its end (no done file) after the viewer was killed"
grep -q 'code=0' "$T/done" || fail "app ended with $(cat "$T/done")"
# The log file: any existing regular file named on the screen other than the app and done file.
log=""
while read -r tok; do
	tok=${tok/#\~/$HOME}
	tok=${tok%%[\)\],;]*}
	case $tok in "$PROGS"/* | "$T/done") continue ;; esac
	if [ -f "$tok" ]; then
		log=$tok
		break
	fi
done < <(grep -oE '(/|~/)[^ │|]+' "$T/screen")
[ -n "$log" ] || fail "no log file path on screen: $(head -n 1 "$T/screen" | tr -s ' ')"
grep -q '^done steps=' "$log" || fail "app's final output not in log $log after the viewer was killed"
exit 0
