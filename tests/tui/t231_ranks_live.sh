#!/usr/bin/env bash
# The ranks pane while live: two ranks (rank 1's steps 2x longer) under `cuscope --`; R early shows
# the pane before all steps are done, and its rows follow the run (recomputed while the store grows,
# at most once a second): rank 1's step count goes up to 4 and it ends first, marked the straggler.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog rank_steps

RS=$PROGS/rank_steps
tm_run_cuscope -- /bin/sh -c "\"RANK=0 '$RS' 300 & RANK=1 '$RS' 600 & wait\""
tm_wait 'LIVE' 20 "live UI"
tm_keys R
tm_wait 'Ranks by compute time' 5 "R shows the ranks pane while live"
# A row for rank 1 with fewer than 4 steps first (its 600 ms steps are under way) ...
tm_wait '^ +1 +[0-9]+ +[0-3] ' 10 "rank 1's row while its steps run"
# ... then all 4, first and marked.
tm_wait '^ +1 +[0-9]+ +4 +[0-9.]+ms .*< straggler' 20 "rank 1 with 4 steps, the straggler"
tm_screen_has '^ +0 +[0-9]+ +4 +[0-9.]+ms' || fail "rank 0's row lacks its 4 steps: $(tm_screen | tail -n 8 | tr -s ' ' | tr '\n' '|')"
tm_wait 'EXITED \(code 0\)' 20 "status after the ranks exit"
tm_keys q
tm_wait_exit 0 10
exit 0
