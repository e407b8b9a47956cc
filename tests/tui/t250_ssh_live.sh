#!/usr/bin/env bash
# attach --ssh nodeA,nodeB live over a private sshd: both hosts' armed processes show as lanes in
# one view, the status line says each host is up; `d` dumps the merged capture (both hosts'
# processes in one file, named by host); q, d (detach) leaves and the processes run on.
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
tm_keys d
tm_wait 'hole capture' 5 "dump scope prompt"
tm_keys w
tm_wait 'dump to file' 5 "dump file prompt"
tm_keys C-u "$T/merged.cuscope" Enter
tm_wait 'dump: wrote' 15 "dump finished message"
"$CUSCOPE" stats --format=json "$T/merged.cuscope" >"$T/merged.json" 2>"$T/merged.err" ||
	fail "stats of the dump: $(cat "$T/merged.err")"
"$PYTHON" - "$T/merged.json" "$pid_a" "$pid_b" >"$T/merged.check" 2>&1 <<'PY' || fail "dump: $(cat "$T/merged.check")"
import json, sys
procs = json.load(open(sys.argv[1]))["processes"]
got = sorted(p["pid"] for p in procs)
want = sorted(int(a) for a in sys.argv[2:4])
if not set(want) <= set(got):
    print("processes %r, want both hosts' %r" % (got, want))
    sys.exit(1)
PY
tm_keys q
tm_keys d
tm_wait_exit 0 15
if ! kill -0 "$pid_a" || ! kill -0 "$pid_b"; then
	fail "an armed process did not survive the detach"
fi
exit 0
