#!/usr/bin/env bash
# The live UI passes the app's exit status through: EXITED (code 7) then q -> 7; an app killed
# by SIGTERM -> EXITED, q -> 143.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog exit_code

tm_run_cuscope -- "$PROGS/exit_code" 7
tm_wait 'EXITED \(code 7\)' 20 "status after exit(7)"
tm_keys q
tm_wait_exit 7 10
tm_wait 'exit_code: exiting with code 7' 5 "app stdout replayed after the UI closed"
tm kill-server 2>/dev/null
rm -f "$T/exit"

TMUX_SOCK="$TMUX_SOCK-b"
tm_run_cuscope -- "$PROGS/exit_code" signal 15
tm_wait 'EXITED' 20 "status after the app died by SIGTERM"
tm_keys q
tm_wait_exit 143 10
exit 0
