#!/usr/bin/env bash
# How a process ended is written only by the viewer that launched it: a peer that sends an EXIT
# frame (claiming "killed by signal 9"), over its socket or in its PID.final, is a protocol error
# of that peer: one line naming it, its stream dropped, the forged end nowhere in the capture,
# and the other process (an honest peer) recorded complete.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
command -v "$PYTHON" >/dev/null || skip "no $PYTHON"

for via in socket final; do
	timeout 60 "$CUSCOPE" record -o "$T/$via.cap" -- env -u LD_PRELOAD "$PYTHON" \
		"$ROOT/tests/runtime/fake_collector.py" forge-exit "$via" >"$T/$via.out" 2>"$T/$via.err"
	rc=$?
	[ "$rc" != 124 ] || fail "$via: record hung"
	[ "$rc" != 0 ] || fail "$via: record exited 0 although a peer forged its end"
	grep -q "fake collector done" "$T/$via.out" || fail "$via: the launched command did not finish"
	forger=$(sed -n 's/^forging child //p' "$T/$via.out")
	[ -n "$forger" ] || fail "$via: the fake collector did not name its forging child"
	grep -q "^cuscope: pid $forger: .*exit record" "$T/$via.err" ||
		fail "$via: no line names pid $forger's exit record: $(tr '\n' '|' <"$T/$via.err")"
	[ "$(grep -c "exit record" "$T/$via.err")" = 1 ] || fail "$via: want one line: $(tr '\n' '|' <"$T/$via.err")"
	"$CUSCOPE" info "$T/$via.cap" >"$T/$via.info" 2>&1 || fail "$via: info failed: $(head -c 300 "$T/$via.info")"
	grep -q "signal 9" "$T/$via.info" && fail "$via: the forged end is in the capture: $(grep -m1 'signal 9' "$T/$via.info")"
	# The honest peer (the launched process) keeps its stream, complete.
	grep -q "^  pid $forger " "$T/$via.info" || fail "$via: pid $forger's HELLO is missing from the capture"
	[ "$(grep -c '^  pid ' "$T/$via.info")" = 2 ] || fail "$via: want 2 processes: $(grep '^  pid ' "$T/$via.info" | tr '\n' '|')"
	[ "$(grep -c 'incomplete' "$T/$via.info")" = 1 ] || fail "$via: want only the forger incomplete: $(grep -A1 '^  pid ' "$T/$via.info" | tr '\n' '|')"
done
exit 0
