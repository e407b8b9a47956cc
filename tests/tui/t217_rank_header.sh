#!/usr/bin/env bash
# The process lane group header names the rank a launcher gave the process ("rank N", then the
# program and its pid), with "(restart R)" for a restarted torchelastic worker; a process without a
# rank keeps the plain "program pid" header.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog fork_exec

FE=$PROGS/fork_exec
cs_record "$T/cap" app -- /bin/sh -c "RANK=7 WORLD_SIZE=8 '$FE' & RANK=12 WORLD_SIZE=8 TORCHELASTIC_RESTART_COUNT=1 '$FE' noexec & wait"
[ "$RC" = 0 ] || fail "record exited $RC: $(head -c 300 "$T/app.err")"
tm_run_cuscope view "$T/cap"
tm_wait 'rank 7  fork_exec [0-9]' 15 "view: rank 7 header"
tm_wait 'rank 12 \(restart 1\)  fork_exec [0-9]' 5 "view: rank 12 header (a restarted worker)"
tm_screen_has 'sh [0-9]' || fail "the shell (no rank) lacks its plain header: $(tm_screen | head -20)"
tm_screen_has 'rank -1' && fail "a process without a rank shows rank -1"
tm_keys q
tm_wait_exit 0 10
exit 0
