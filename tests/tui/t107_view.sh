#!/usr/bin/env bash
# cuscope view on a recorded capture: thread lanes by name, no LIVE, q exits 0.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog nvtx_threads

cs_record "$T/cap" app -- "$PROGS/nvtx_threads"
[ "$RC" = 0 ] || fail "record exited $RC"
tm_run_cuscope view "$T/cap"
tm_wait 'worker-1' 15 "view: thread lane worker-1"
tm_wait 'renamed-2' 5 "view: renamed thread lane"
tm_screen_has 'LIVE' && fail "view of a capture says LIVE"
tm_keys q
tm_wait_exit 0 10
exit 0
