#!/usr/bin/env bash
# attach --ssh nodeA,nodeB --record over a private sshd: each host's armed process is relayed
# over real SSH into its own capture (-o run-%h), tagged with the --ssh name; ssh ran with
# BatchMode=yes; the programs run on after the detach with their final counts recorded.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/runtime/sshd_lib.sh
. "$(dirname "$0")/sshd_lib.sh"
need_cuscope
need_prog long_running
sshd_start

arm "$T/roots/nodeA" a -- "$PROGS/long_running" -t 60
pid_a=$ARMED_PID
arm "$T/roots/nodeB" b -- "$PROGS/long_running" -t 60
pid_b=$ARMED_PID
timeout 60 "$CUSCOPE" attach --ssh nodeA,nodeB --record -o "$T/run-%h.cuscope" --duration 3 \
	>"$T/att.out" 2>"$T/att.err"
rc=$?
[ "$rc" = 0 ] || fail "attach --ssh exited $rc: $(cat "$T/att.err")"
grep -q 'BatchMode=yes' "$T/ssh.args" || fail "ssh ran without BatchMode=yes: $(cat "$T/ssh.args")"
[ "$(grep -c "'relay'" "$T/ssh.args")" = 2 ] || fail "want one relay per host: $(cat "$T/ssh.args")"
for n in nodeA nodeB; do
	grep -q "attach: $n: connected to" "$T/att.err" || fail "no connected line for $n: $(cat "$T/att.err")"
done
# Nothing else on stderr: a relay's own stderr (a sanitizer report, an error) would show here.
[ "$(grep -vc 'connected to vm\|connected to [^ ]* (cuscope' "$T/att.err")" = 0 ] ||
	fail "unexpected lines from attach --ssh: $(cat "$T/att.err")"
if ! kill -0 "$pid_a" || ! kill -0 "$pid_b"; then
	fail "an armed program did not survive the detach"
fi
"$CUSCOPE" stats --format=json "$T/run-nodeA.cuscope" "$T/run-nodeB.cuscope" >"$T/stats.json" \
	2>"$T/stats.err" || fail "stats failed: $(cat "$T/stats.err")"
"$PYTHON" - "$T/stats.json" "$pid_a" "$pid_b" <<'PY' || exit 1
import json, sys
d = json.load(open(sys.argv[1]))
want = {int(sys.argv[2]): "nodeA", int(sys.argv[3]): "nodeB"}
procs = {p["pid"]: p for p in d["processes"]}
for pid, host in want.items():
    p = procs.get(pid)
    if p is None:
        print("pid %d (%s) not in the captures: %s" % (pid, host, sorted(procs))); sys.exit(1)
    if p["host"] != host:
        print("pid %d has host %r, want %r" % (pid, p["host"], host)); sys.exit(1)
    if "detached" not in p["status"]:
        print("pid %d status %r: want its final counts (detached)" % (pid, p["status"])); sys.exit(1)
steps = [r for r in d["nvtx"] if r["name"] == "step"]
if not steps or steps[0]["count"] < 2 * 100:
    print("want >= 200 step ranges from 2 x 3 s, got %r" % steps); sys.exit(1)
PY
exit 0
