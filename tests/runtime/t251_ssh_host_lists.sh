#!/usr/bin/env bash
# The hosts of attach --ssh from a file (--hosts FILE: one per line, comments) and from the Slurm
# job's node list (--slurm-nodes: SLURM_JOB_NODELIST "node[1-2]"): both record one capture per
# host, named by the host (run-node1.cuscope), each with that host's armed process only. Naming the hosts twice, or
# --slurm-nodes outside a job, is one error line (exit 2). No sshd: --via runs the relays.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/runtime/sshd_lib.sh
. "$(dirname "$0")/sshd_lib.sh"
need_cuscope
need_prog long_running

declare -A pid_of
for h in node1 node2; do
	mkdir -m 700 "$T/$h"
	arm "$T/$h" "$h" -- "$PROGS/long_running" -t 60
	pid_of[$h]=$ARMED_PID
done
printf '# the job'"'"'s nodes\nnode1\n\n  node2   # the second\n' >"$T/hosts"

check()
{
	local what=$1 h
	shift
	timeout 60 "$@" --via "env CUSCOPE_SESSION_ROOT=$T/{host}" --record -o "$T/$what-%h.cuscope" \
		--duration 1 >"$T/$what.out" 2>"$T/$what.err" || fail "$what: attach exited $?: $(cat "$T/$what.err")"
	for h in node1 node2; do
		"$CUSCOPE" stats --format=json "$T/$what-$h.cuscope" >"$T/$what-$h.json" 2>"$T/$what.stats.err" ||
			fail "$what: no capture for $h: $(cat "$T/$what.stats.err")"
		"$PYTHON" - "$T/$what-$h.json" "${pid_of[$h]}" >"$T/check" 2>&1 <<'PY' || fail "$what: $h's capture: $(cat "$T/check")"
import json, sys
pids = sorted(p["pid"] for p in json.load(open(sys.argv[1]))["processes"])
if pids != [int(sys.argv[2])]:
    print("processes %r, want that host's armed %s only" % (pids, sys.argv[2]))
    sys.exit(1)
PY
	done
}
check file "$CUSCOPE" attach --hosts "$T/hosts"
SLURM_JOB_NODELIST='node[1-2]' check slurm "$CUSCOPE" attach --slurm-nodes

bad()
{
	local what=$1 rc=0
	shift
	timeout 30 "$@" >"$T/bad.out" 2>"$T/bad.err" || rc=$?
	[ "$rc" = 2 ] || fail "$what: exit $rc, want 2: $(cat "$T/bad.err")"
	[ "$(wc -l <"$T/bad.err")" = 1 ] || fail "$what: want one line, got: $(cat "$T/bad.err")"
	return 0
}
bad "--hosts with --ssh" "$CUSCOPE" attach --ssh node1 --hosts "$T/hosts" --record -o "$T/x-%h.cuscope"
bad "--slurm-nodes outside a job" env -u SLURM_JOB_NODELIST "$CUSCOPE" attach --slurm-nodes --record -o "$T/x-%h.cuscope"
bad "a host file that is a directory" "$CUSCOPE" attach --hosts "$T" --record -o "$T/x-%h.cuscope"
ls "$T"/x-* >/dev/null 2>&1 && fail "a bad invocation wrote a capture"
exit 0
