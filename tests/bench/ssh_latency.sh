#!/usr/bin/env bash
# attach --ssh's end-to-end latency, event -> screen (issue 15): 2 "hosts" (nodeA, nodeB: one
# private sshd on 127.0.0.1, two session roots, as tests/runtime/t245) with RANKS armed ranks each
# (tests/progs/long_running: ~100 step ranges/s and 2 loader threads), the live view in a detached
# tmux (200x50) for SECONDS with CUSCOPE_LATENCY=1: per EVENTS frame, its oldest and newest
# event's CLOCK_MONOTONIC time to the end of the first frame drawn after it arrived (one machine:
# one clock), for events from 3 s after the start (before: the armed ranks' past, in a burst). Also the viewer's CPU. Needs root and sshd. Prints numbers; nothing passes or fails.
# usage: tests/bench/ssh_latency.sh   (RANKS=8 SECONDS_RUN=10; VIA=1: the relays without ssh, by
# --via 'env CUSCOPE_SESSION_ROOT=...', to tell ssh's part from the rest)
set -u
RANKS=${RANKS:-8}
SECONDS_RUN=${SECONDS_RUN:-10}
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/runtime/sshd_lib.sh
. "$(dirname "$0")/../runtime/sshd_lib.sh"
need_prog long_running
sshd_start
for h in nodeA nodeB; do
	for r in $(seq 0 $((RANKS - 1))); do
		RANK=$r arm "$T/roots/$h" "$h-$r" -- "$PROGS/long_running" -t $((SECONDS_RUN + 20))
	done
done
export CUSCOPE_LATENCY=1
via=()
[ "${VIA:-0}" = 1 ] && via=(--via "'env CUSCOPE_SESSION_ROOT=$T/roots/{host}'")
TM_WIDTH=200 TM_HEIGHT=50 tm_run_cuscope attach --ssh nodeA,nodeB "${via[@]}"
tm_wait 'nodeA: up \| nodeB: up' 20 "both hosts up"
viewer=$(pgrep -f -- "^$CUSCOPE attach --ssh nodeA,nodeB" | head -1)
CLK_TCK=$(getconf CLK_TCK)
t0=$(awk '{print $14 + $15}' "/proc/$viewer/stat")
sleep "$SECONDS_RUN"
t1=$(awk '{print $14 + $15}' "/proc/$viewer/stat")
tm_keys q
tm_keys d
tm_wait_exit 0 15
echo "2 hosts x $RANKS ranks, ${SECONDS_RUN} s: viewer CPU $(echo "scale=1; 100 * ($t1 - $t0) / $CLK_TCK / $SECONDS_RUN" | bc) % of one core"
tm_screen | grep -o 'latency: .*'
