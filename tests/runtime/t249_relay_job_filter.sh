#!/usr/bin/env bash
# attach --ssh --job ID relays only the processes whose environment has SLURM_JOB_ID=ID (another
# job's armed process of the same user on the node is left alone). No sshd: --via runs the relay.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/runtime/sshd_lib.sh
. "$(dirname "$0")/sshd_lib.sh"
need_cuscope
need_prog long_running

mkdir -m 700 "$T/node1"
SLURM_JOB_ID=77 arm "$T/node1" mine -- "$PROGS/long_running" -t 60
mine=$ARMED_PID
SLURM_JOB_ID=778 arm "$T/node1" other -- "$PROGS/long_running" -t 60
other=$ARMED_PID
timeout 60 "$CUSCOPE" attach --ssh node1 --via "env CUSCOPE_SESSION_ROOT=$T/{host}" --job 77 \
	--record -o "$T/run-%h.cuscope" --duration 2 >"$T/att.out" 2>"$T/att.err"
rc=$?
[ "$rc" = 0 ] || fail "attach --ssh --job exited $rc: $(cat "$T/att.err")"
"$CUSCOPE" stats --format=json "$T/run-node1.cuscope" >"$T/stats.json" 2>"$T/stats.err" ||
	fail "stats failed: $(cat "$T/stats.err")"
"$PYTHON" - "$T/stats.json" "$mine" "$other" <<'PY' || exit 1
import json, sys
d = json.load(open(sys.argv[1]))
pids = sorted({p["pid"] for p in d["processes"]})
if pids != [int(sys.argv[2])]:
    print("want only job 77's pid %s, got %r (job 778's is %s)" % (sys.argv[2], pids, sys.argv[3])); sys.exit(1)
PY
# The other job's process still has no viewer: a plain attach still finds it armed.
timeout 60 env CUSCOPE_SESSION_ROOT="$T/node1" "$CUSCOPE" attach --record -o "$T/other.cuscope" \
	--duration 1 "$other" >/dev/null 2>"$T/other.err" || fail "the other job's process: $(cat "$T/other.err")"
exit 0
