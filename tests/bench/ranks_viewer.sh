#!/usr/bin/env bash
# The viewer's own cost with many ranks (issue 14): RANKS processes with RANK/WORLD_SIZE set, each
# making RATE NVTX events/s (paced push/pop pairs, tests/bench/nvtx_producer) for SECONDS, under
# one `cuscope record` and under the live UI (`cuscope -- …` in a detached tmux, 200x60). Reports
# the cuscope process's own CPU (utime+stime of all its threads, children not counted, read from
# /proc until it exits) per second of wall time, its peak RSS (VmHWM), and the events recorded and
# lost ('cuscope info'). Prints numbers with their method; nothing here passes or fails.
# usage: tests/bench/ranks_viewer.sh [RATE...]   (default: 100000 500000)
set -u
cd "$(dirname "$0")/../.." || exit 1
B=${BUILD:-build}
CLI=$PWD/$B/bin/cuscope
PRODUCER=$PWD/$B/tests/bench/nvtx_producer
RANKS=${RANKS:-16}
SECONDS_RUN=${SECONDS_RUN:-10}
if [ ! -x "$CLI" ] || [ ! -x "$PRODUCER" ]; then
	echo "ranks_viewer.sh: build first (make all $B/tests/bench/nvtx_producer)" >&2
	exit 2
fi
tmp=$(mktemp -d)
trap 'tmux kill-server -L cs-ranks-bench 2>/dev/null; rm -rf "$tmp"' EXIT
CLK_TCK=$(getconf CLK_TCK)

cat >"$tmp/launcher.sh" <<LAUNCH
#!/usr/bin/env bash
# RANKS ranks as a launcher starts them (torchrun/srun set these in each worker's environment).
for r in \$(seq 0 $((RANKS - 1))); do
	RANK=\$r LOCAL_RANK=\$r WORLD_SIZE=$RANKS "$PRODUCER" paced "\$1" $SECONDS_RUN sleep >/dev/null &
done
wait
LAUNCH
chmod +x "$tmp/launcher.sh"

# watch PID: prints "cpu_s wall_s hwm_mb" of PID's own threads, read every 0.1 s until it exits.
watch_proc()
{
	local pid=$1 t0 cpu=0 hwm=0 s
	t0=$(date +%s.%N)
	while [ -r "/proc/$pid/stat" ]; do
		s=$(sed 's/^.*) //' "/proc/$pid/stat" 2>/dev/null | awk '{print $12 + $13}')
		[ -n "$s" ] && cpu=$s
		s=$(awk '/^VmHWM/ {print $2}' "/proc/$pid/status" 2>/dev/null)
		[ -n "$s" ] && hwm=$s
		sleep 0.1
	done
	awk -v c="$cpu" -v t0="$t0" -v now="$(date +%s.%N)" -v h="$hwm" -v k="$CLK_TCK" \
		'BEGIN {printf "%.2f %.2f %.1f\n", c / k, now - t0, h / 1024}'
}

echo "method: $RANKS processes (RANK=0..$((RANKS - 1)), WORLD_SIZE=$RANKS) each making RATE NVTX events/s"
echo "        (nvtx_producer paced RATE/2 pairs/s, $SECONDS_RUN s, sleeping between 1 ms steps), started by one"
echo "        launcher script under (a) cuscope record -o FILE and (b) the live UI, cuscope -- launcher, in a"
echo "        detached tmux 200x60. cpu = utime+stime of the cuscope process's own threads (not its"
echo "        children), read from /proc every 0.1 s until it exits (live: read at the end of the run, the"
echo "        wall time counted from the launch); 'cores' = cpu / wall; rss = VmHWM (live: the store in memory)."
echo "        Machine: $(nproc) CPUs ($(uname -m)); the producers share them."
printf '%-8s %-7s %10s %8s %8s %10s %12s %8s\n' mode rate/rank "events/s" cpu_s wall_s cores rss_MB lost
for rate in "${@:-100000 500000}"; do
	for rate1 in $rate; do
		pairs=$((rate1 / 2))
		"$CLI" record -o "$tmp/r.cap" -- "$tmp/launcher.sh" "$pairs" >/dev/null 2>"$tmp/r.err" &
		rec=$!
		m=$(watch_proc "$rec")
		wait "$rec"
		ev=$("$CLI" info "$tmp/r.cap" 2>/dev/null | awk '/^events/ {print $2; exit}')
		lost=$("$CLI" info "$tmp/r.cap" 2>/dev/null | awk '/^losses/ {print $2; f=1} END {if (!f) print 0}')
		read -r cpu wall hwm <<<"$m"
		printf '%-8s %-7s %10s %8s %8s %10s %12s %8s\n' record "$rate1" "$(awk -v e="${ev:-0}" -v w="$wall" 'BEGIN {printf "%.0f", e / w}')" \
			"$cpu" "$wall" "$(awk -v c="$cpu" -v w="$wall" 'BEGIN {printf "%.2f", c / w}')" "$hwm" "${lost:-?}"
		# Live: the UI draws while the ranks run.
		tmux -L cs-ranks-bench new-session -d -x 200 -y 60 "$CLI -- $tmp/launcher.sh $pairs"
		sleep 1
		pid=$(pgrep -f "^$CLI -- $tmp/launcher.sh" | head -1)
		if [ -z "$pid" ]; then
			echo "live    $rate1  cuscope did not start"
			continue
		fi
		# CPU while the ranks run: from the launch to the end of the run (+1 s), then quit.
		sleep "$SECONDS_RUN"
		cpu=$(sed 's/^.*) //' "/proc/$pid/stat" 2>/dev/null | awk -v k="$CLK_TCK" '{printf "%.2f", ($12 + $13) / k}')
		hwm=$(awk '/^VmHWM/ {printf "%.1f", $2 / 1024}' "/proc/$pid/status" 2>/dev/null)
		wall=$((SECONDS_RUN + 1))
		printf '%-8s %-7s %10s %8s %8s %10s %12s %8s\n' live "$rate1" "-" "${cpu:-?}" "$wall" \
			"$(awk -v c="${cpu:-0}" -v w="$wall" 'BEGIN {printf "%.2f", c / w}')" "${hwm:-?}" "-"
		tmux -L cs-ranks-bench send-keys q 2>/dev/null
		sleep 1
		tmux -L cs-ranks-bench send-keys y 2>/dev/null
		sleep 1
		tmux -L cs-ranks-bench kill-server 2>/dev/null
	done
done
