#!/usr/bin/env bash
# A target killed by SIGKILL leaves no final counts: `cuscope view` of its capture says so on the
# process's header ("incomplete: final counts missing; killed by signal 9"), never "exited".
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog exit_code

"$CUSCOPE" record -o "$T/kill.cuscope" -- "$PROGS/exit_code" signal 9 >"$T/k.out" 2>"$T/k.err" </dev/null
rc=$?
[ "$rc" = 137 ] || fail "record of a SIGKILLed target exited $rc, want 137"
TM_WIDTH=160 TM_HEIGHT=30 tm_run_cuscope view "$T/kill.cuscope"
tm_wait 'exit_code [0-9]+ .*incomplete: final counts missing; killed by signal 9' 10 "view: the header says the counts are missing"
tm_screen_has 'exited \(code' && fail "the killed process is shown as exited normally"
tm_keys q
tm_wait_exit 0 10
exit 0
