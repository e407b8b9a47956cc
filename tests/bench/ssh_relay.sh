#!/usr/bin/env bash
# attach --ssh's own cost (issue 15): 2 "hosts" (nodeA, nodeB: one private sshd on 127.0.0.1,
# two session roots, as tests/runtime/t245) with RANKS armed ranks each, every rank making RATE
# NVTX events/s (tests/bench/nvtx_producer paced), recorded by `cuscope attach --ssh nodeA,nodeB
# --record` for SECONDS. Reports the attach process's CPU (utime+stime, its ssh children not
# counted) and each relay's, per second of wall time, and what the captures hold ('cuscope
# info'). Needs root and sshd. Prints numbers; nothing here passes or fails.
# usage: tests/bench/ssh_relay.sh [RATE]   (default 100000; RANKS=8 SECONDS_RUN=10)
set -u
RATE=${1:-100000}
RANKS=${RANKS:-8}
SECONDS_RUN=${SECONDS_RUN:-10}
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/runtime/sshd_lib.sh
. "$(dirname "$0")/../runtime/sshd_lib.sh"
PRODUCER=$BUILD/tests/bench/nvtx_producer
[ -x "$PRODUCER" ] || fail "build $PRODUCER first (make $PRODUCER)"
sshd_start
CLK_TCK=$(getconf CLK_TCK)
for h in nodeA nodeB; do
	for r in $(seq 0 $((RANKS - 1))); do
		RANK=$r WORLD_SIZE=$RANKS arm "$T/roots/$h" "$h-$r" -- "$PRODUCER" paced "$RATE" $((SECONDS_RUN + 5)) sleep
	done
done
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null; }
"$CUSCOPE" attach --ssh nodeA,nodeB --record -o "$T/run-%h.cuscope" --duration "$SECONDS_RUN" \
	2>"$T/att.err" &
att=$!
start=$(date +%s.%N)
declare -A relay_ticks
att_ticks=0
while kill -0 "$att" 2>/dev/null; do
	t=$(cpu_ticks "$att") && att_ticks=${t:-$att_ticks}
	for p in $(pgrep -f -- "$CUSCOPE relay"); do
		if tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -q "^CUSCOPE_SESSION_ROOT=$T/roots/"; then
			t=$(cpu_ticks "$p") && [ -n "$t" ] && relay_ticks[$p]=$t
		fi
	done
	sleep 0.2
done
wait "$att"
rc=$?
wall=$(echo "$(date +%s.%N) - $start" | bc)
echo "attach --ssh: exit $rc, ${wall%????????} s wall, $RANKS ranks x 2 hosts x $RATE events/s"
echo "  attach CPU: $(echo "scale=1; 100 * $att_ticks / $CLK_TCK / $wall" | bc) % of one core"
for p in "${!relay_ticks[@]}"; do
	echo "  relay $p CPU: $(echo "scale=1; 100 * ${relay_ticks[$p]} / $CLK_TCK / $wall" | bc) % of one core"
done
for h in nodeA nodeB; do
	echo "  $h: $("$CUSCOPE" info "$T/run-$h.cuscope" | grep -E '^(events|losses|processes)' | tr '\n' ' ')"
done
grep -v 'connected to' "$T/att.err" | head -5
