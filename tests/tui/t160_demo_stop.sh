#!/usr/bin/env bash
# `make demo` (contrib/demo.sh) ends 0 when the user stops the demo: q then [s]top, or Ctrl-C and
# then q. A real failure of the traced program is still passed through (CUSCOPE_DEMO_CMD).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog long_running exit_code

# demo_start [ENV=VALUE...]: runs contrib/demo.sh in a 120x40 pane; its exit status goes to $T/exit.
demo_start()
{
	rm -f "$T/exit"
	tm_start 120 40 "cd '$ROOT' && env BUILD='$BUILD' $* contrib/demo.sh; echo EXIT=\$? >'$T/exit'; exec sleep 3600"
}

# demo_exit WANT WHAT: waits for the demo to end with status WANT.
demo_exit()
{
	wait_until 20 test -s "$T/exit" || fail "$2: the demo did not end; screen: $(tm_screen | head -n 2 | tr -s ' ' | tr '\n' '|')"
	local got
	got=$(sed -n 's/^EXIT=//p' "$T/exit")
	[ "$got" = "$1" ] || fail "$2: the demo ended $got, want $1"
}

# The app under the demo's cuscope (pane shell -> demo.sh -> cuscope -> app).
demo_app_found()
{
	local shpid demo cs
	shpid=$(tm display-message -p -t t '#{pane_pid}')
	demo=$(pgrep -P "$shpid" | head -n 1)
	cs=$(pgrep -P "${demo:-0}" -x cuscope | head -n 1)
	APP_PID=$(pgrep -P "${cs:-0}" | head -n 1)
	[ -n "$APP_PID" ]
}

# [s]top from the quit prompt: the program ends by SIGTERM; the demo ends 0.
demo_start
tm_wait 'LIVE' 30 "demo live UI"
wait_until 10 demo_app_found || fail "no program under the demo's cuscope"
tm_keys q
tm_wait '\[s\]top' 5 "quit prompt"
tm_keys s
wait_until 15 pid_gone "$APP_PID" || fail "[s]top: program $APP_PID still running"
demo_exit 0 "[s]top"
tm kill-server 2>/dev/null

# Ctrl-C: the program ends by SIGINT, the UI says so, q leaves; the demo ends 0.
TMUX_SOCK="$TMUX_SOCK-b"
demo_start
tm_wait 'LIVE' 30 "demo live UI"
wait_until 10 demo_app_found || fail "no program under the demo's cuscope"
sleep 0.5
tm_keys C-c
wait_until 10 pid_gone "$APP_PID" || fail "Ctrl-C: program $APP_PID still running"
tm_wait 'EXITED' 10 "status after Ctrl-C"
tm_keys q
demo_exit 0 "Ctrl-C, q"
tm kill-server 2>/dev/null

# A program that fails: its status is the demo's.
TMUX_SOCK="$TMUX_SOCK-c"
demo_start CUSCOPE_DEMO_CMD="'$PROGS/exit_code 3'"
tm_wait 'EXITED \(code 3\)' 30 "status of the failing program"
tm_keys q
demo_exit 3 "a failing program"
exit 0
