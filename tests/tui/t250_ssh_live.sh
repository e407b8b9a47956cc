#!/usr/bin/env bash
# attach --ssh nodeA,nodeB live over a private sshd: both hosts' armed processes show as lanes in
# one view, the status line says each host is up; q, d (detach) leaves and the processes run on.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/runtime/sshd_lib.sh
. "$(dirname "$0")/../runtime/sshd_lib.sh"
need_cuscope
need_prog long_running
sshd_start

arm "$T/roots/nodeA" a -- "$PROGS/long_running" -t 60 -n 1
pid_a=$ARMED_PID
arm "$T/roots/nodeB" b -- "$PROGS/long_running" -t 60 -n 3
pid_b=$ARMED_PID
TM_WIDTH=200 TM_HEIGHT=50 tm_run_cuscope attach --ssh nodeA,nodeB
tm_wait 'LIVE' 20 "live UI"
tm_wait 'nodeA: up \| nodeB: up' 20 "both hosts up in the status line"
tm_wait "long_running +$pid_a" 15 "nodeA's process header"
tm_wait "long_running +$pid_b" 15 "nodeB's process header"
tm_wait 'loader-2' 10 "nodeB's third loader lane"
tm_keys q
tm_keys d
tm_wait_exit 0 15
if ! kill -0 "$pid_a" || ! kill -0 "$pid_b"; then
	fail "an armed process did not survive the detach"
fi
exit 0
