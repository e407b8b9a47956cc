#!/usr/bin/env bash
# What triggers cost the viewer: `cuscope record` of a busy NVTX workload (tests/progs/trigger_stall
# busy SECONDS RATE: RATE "step" ranges per second, each holding 50 "op" ranges) with no trigger and with
# four (range DUR, range percentile, gpu-idle, gap-explained), ROUNDS (default 5) interleaved
# rounds. Measured: the cuscope process's own CPU time (utime + stime of /proc/PID/stat, its
# children excluded: the workload is not counted), sampled until it exits, as % of its wall time;
# the workload's steps and the events the capture holds per second (so that both rows handled the
# same stream). A third row, one trigger (range DUR), tells the store's feeding (record keeps no
# store without triggers) from the evaluation. Prints medians; passes or fails nothing.
set -u
cd "$(dirname "$0")/../.." || exit 2
B=${BUILD:-build}
CLI=$PWD/$B/bin/cuscope
PROG=$PWD/$B/tests/progs/trigger_stall
SECONDS_RUN=${SECONDS_RUN:-4}
RATE=${RATE:-4000} # steps/s: 51 ranges, 102 events each; 0 = as fast as it goes
ROUNDS=${ROUNDS:-5}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
median() { sort -g | awk '{v[NR]=$1} END {if (NR) print v[int((NR+1)/2)]; else print "n/a"}'; }
hz=$(getconf CLK_TCK)
TRIGGERS=(--trigger 'range:step>50ms' --trigger 'range:op>p99*3' --trigger 'gpu-idle>100ms'
	--trigger 'gap-explained:gc' --dump-dir "$tmp/dumps")

# one MODE: records the workload, appends cuscope's CPU % to $tmp/MODE.cpu and the steps to .steps.
one()
{
	local mode=$1 args=()
	[ "$mode" = triggers ] && args=("${TRIGGERS[@]}")
	[ "$mode" = one ] && args=(--trigger 'range:step>50ms' --dump-dir "$tmp/dumps")
	local t0 t1 last=""
	t0=$(date +%s.%N)
	"$CLI" record -o "$tmp/$mode.cap" "${args[@]}" -- "$PROG" busy "$SECONDS_RUN" "$RATE" >"$tmp/out" 2>"$tmp/err" &
	local pid=$!
	while [ -r "/proc/$pid/stat" ]; do
		s=$(awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null) && [ -n "$s" ] && last=$s
		sleep 0.05
	done
	wait "$pid"
	t1=$(date +%s.%N)
	awk -v c="$last" -v hz="$hz" -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f\n", 100 * c / hz / (b - a)}' \
		>>"$tmp/$mode.cpu"
	sed -n 's/^steps //p' "$tmp/out" >>"$tmp/$mode.steps"
	"$CLI" info "$tmp/$mode.cap" 2>/dev/null | awk -v a="$t0" -v b="$t1" '$1 == "events" {printf "%.0f\n", $2 / (b - a)}' \
		>>"$tmp/$mode.rate"
	rm -f "$tmp/$mode.cap"
	rm -rf "$tmp/dumps"
}

echo "method: cuscope record -- trigger_stall busy $SECONDS_RUN $RATE, $ROUNDS interleaved rounds: none, one, then 4 triggers:"
echo "        ${TRIGGERS[*]:0:8}"
for _ in $(seq "$ROUNDS"); do
	one none
	one one
	one triggers
done
for m in none one triggers; do
	echo "$m: cuscope CPU median $(median <"$tmp/$m.cpu") % of wall (rounds: $(tr '\n' ' ' <"$tmp/$m.cpu")); workload steps median $(median <"$tmp/$m.steps"); events recorded per s median $(median <"$tmp/$m.rate")"
done
