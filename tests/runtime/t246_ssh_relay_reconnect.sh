#!/usr/bin/env bash
# A relay killed on the node (over a private sshd): attach --ssh shows the host as disconnected
# in one line, starts the relay again after its backoff, and the capture goes on past the kill.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/runtime/sshd_lib.sh
. "$(dirname "$0")/sshd_lib.sh"
need_cuscope
need_prog long_running
sshd_start

arm "$T/roots/nodeA" a -- "$PROGS/long_running" -t 60
pid_a=$ARMED_PID
timeout 60 "$CUSCOPE" attach --ssh nodeA --record -o "$T/run-%h.cuscope" --duration 7 \
	>"$T/att.out" 2>"$T/att.err" &
att=$!
BG_PIDS+=("$att")

# The relay of this test's nodeA: a `cuscope relay` whose environment names its session root.
relay_pid()
{
	local p
	for p in $(pgrep -f -- "$CUSCOPE relay"); do
		if tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "CUSCOPE_SESSION_ROOT=$T/roots/nodeA"; then
			echo "$p"
			return 0
		fi
	done
	return 1
}
# shellcheck disable=SC2317 # called through wait_until
has_relay() { relay_pid >/dev/null; }
wait_until 10 has_relay || fail "no relay started on nodeA: $(cat "$T/att.err")"
sleep 2
first=$(relay_pid)
kill -KILL "$first"
# shellcheck disable=SC2317 # called through wait_until
connected_twice() { [ "$(grep -c 'attach: nodeA: connected to' "$T/att.err")" -ge 2 ]; }
wait_until 10 connected_twice || fail "the relay was not started again: $(cat "$T/att.err")"
second=$(relay_pid) || fail "no relay after the reconnect"
[ "$second" != "$first" ] || fail "the same relay pid $first after its kill"
bg_wait "$att" 30
[ "$RC" = 0 ] || fail "attach --ssh exited $RC: $(cat "$T/att.err")"
grep -q 'attach: nodeA: disconnected (the relay ended); retrying in 1 s' "$T/att.err" || fail "no disconnected line: $(cat "$T/att.err")"
kill -0 "$pid_a" || fail "the armed program did not survive"
"$CUSCOPE" stats --format=json "$T/run-nodeA.cuscope" >"$T/stats.json" 2>"$T/stats.err" ||
	fail "stats failed: $(cat "$T/stats.err")"
"$PYTHON" - "$T/stats.json" "$pid_a" <<'PY' || exit 1
import json, sys
d = json.load(open(sys.argv[1]))
pid = int(sys.argv[2])
# Two streams of the one process: the killed relay's (cut short) and the new relay's, which
# ends with the detach's final counts.
streams = [p["status"] for p in d["processes"] if p["pid"] == pid]
if len(streams) != 2 or not any("detached" in s for s in streams):
    print("want two streams of pid %d, the last detached: %r" % (pid, streams)); sys.exit(1)
PY
exit 0
