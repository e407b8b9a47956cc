#!/usr/bin/env bash
# Ctrl-C in the live UI is forwarded to the app (which exits 100+SIGINT=102 from its handler):
# EXITED (code 102), then q -> 102.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog long_running

tm_run_cuscope -- "$PROGS/long_running" -o "$T/done"
tm_wait 'LIVE' 20 "live UI"
tm_pids
sleep 0.5
tm_keys C-c
wait_until 10 pid_gone "$APP_PID" || fail "app still running 10 s after Ctrl-C"
grep -q 'code=102' "$T/done" 2>/dev/null || fail "app did not get SIGINT: done file: $(cat "$T/done" 2>&1)"
tm_wait 'EXITED \(code 102\)' 10 "status after Ctrl-C"
tm_keys q
tm_wait_exit 102 10
exit 0
