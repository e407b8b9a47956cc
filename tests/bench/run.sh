#!/usr/bin/env bash
# cuscope benchmarks (make bench). Prints numbers with their method; nothing here passes or fails.
# `tests/bench/run.sh cpu` or `budget` runs that section alone.
set -u
cd "$(dirname "$0")/../.." || exit 1
B=${BUILD:-build}
CLI=$B/bin/cuscope
PRODUCER=$B/tests/bench/nvtx_producer
export CUSCOPE_COLLECTOR=$PWD/$B/lib/cuscope/libcuscope.so
ROUNDS=${ROUNDS:-5}
CPU_PIN=${CPU_PIN:-0}
CPU_ROUNDS=${CPU_ROUNDS:-7} # the CPU workloads are short and this VM is noisy
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

median() { sort -g | awk '{v[NR]=$1} END {if (NR) print v[int((NR+1)/2)]; else print "n/a"}'; }

# The overhead budget (`tests/bench/run.sh budget` runs this section alone).
budget_section()
{
	local work=$B/tests/bench/cpu_work cost=$B/tests/cost_frames rounds=${BUDGET_ROUNDS:-7}
	local pp_units=${BUDGET_PINGPONG_UNITS:-400000} cpu_units=${BUDGET_CPU_UNITS:-3000}
	echo "== Overhead budget: where a program made expensive to sample settles, A/B, and the live estimate =="
	echo "method: $work, pinned with taskset -c $CPU_PIN (program, collector threads and recorder share one CPU)."
	echo "        'block $pp_units' (2-thread pipe ping-pong) under: none; cuscope record --no-gpu --sample-hz 10000"
	echo "        (budget 3%, the default); the same with --overhead-budget off; and 'lite' = --sample-hz 0"
	echo "        --osrt-threshold-us off --counters none (the collector running, no CPU-side source: what being"
	echo "        there costs, which no source's estimate holds). 'cpu $cpu_units' (2 computing threads)"
	echo "        under none and record --no-gpu (defaults). $rounds rounds, each config once per round in a new"
	echo "        random order; per round overhead = (traced - none) / none, of wall = the program's own timing of"
	echo "        its work, and of cpu = user+sys of the program's process (/usr/bin/time inside the recording: the"
	echo "        collector's threads included, other load on the machine not); median and interquartile range."
	echo "        Live estimate (the capture's final cost frames, read with $cost): added = sum of added_ns"
	echo "        of sampling, blocking calls, counters and NVTX; own = sum of own_cpu_ns (the collector's threads);"
	echo "        est(added) = added / (process cpu - added - own), est(all) = (added + own) / (process cpu - added - own);"
	echo "        medians over the rounds. est(all) is what the cpu A/B measures; est(added) is what the budget keeps."
	echo "        settled = est(added) over the second half of the run only (from the cost frames' cumulative"
	echo "        readings at mid-run and at the end; program cpu there = wall - added - own, which holds while the"
	echo "        pinned CPU stays busy, as with the ping-pong): where the budget settled after its start-up steps."
	if [ ! -x "$work" ] || [ ! -x "$cost" ]; then
		echo "cannot run: $work or $cost not built (make tests-build bench)"
		return
	fi
	local cfgs=${BUDGET_CONFIGS:-none budget off lite cpunone cpudef} cfg pair base
	for cfg in $cfgs; do : >"$tmp/b.$cfg"; : >"$tmp/b.$cfg.over"; : >"$tmp/b.$cfg.est"; : >"$tmp/b.$cfg.settled"; done
	for _ in $(seq "$rounds"); do
		# shellcheck disable=SC2086 # one config per word
		for cfg in $(printf '%s\n' $cfgs | shuf); do
			local rec="$CLI record --no-gpu -o $tmp/b.$cfg.cap" timed="/usr/bin/time -f %U_%S -o $tmp/b.time"
			case $cfg in
			none) taskset -c "$CPU_PIN" $timed "$work" block "$pp_units" ;;
			budget) taskset -c "$CPU_PIN" $rec --sample-hz 10000 -- $timed "$work" block "$pp_units" 2>/dev/null ;;
			off) taskset -c "$CPU_PIN" $rec --sample-hz 10000 --overhead-budget off -- $timed "$work" block "$pp_units" 2>/dev/null ;;
			lite) taskset -c "$CPU_PIN" $rec --sample-hz 0 --osrt-threshold-us off --counters none -- $timed "$work" block "$pp_units" 2>/dev/null ;;
			cpunone) taskset -c "$CPU_PIN" $timed "$work" cpu "$cpu_units" ;;
			cpudef) taskset -c "$CPU_PIN" $rec -- $timed "$work" cpu "$cpu_units" 2>/dev/null ;;
			esac | awk -v t="$(cat "$tmp/b.time" 2>/dev/null)" '$1 == "seconds" {print $2}' >"$tmp/round.$cfg"
			# wall and cpu seconds on one line
			tr '_' ' ' <"$tmp/b.time" | awk -v w="$(cat "$tmp/round.$cfg")" 'NF == 2 && w != "" {print w, $1 + $2}' >"$tmp/round.$cfg.wc"
			mv "$tmp/round.$cfg.wc" "$tmp/round.$cfg"
			rm -f "$tmp/b.time"
			[ -f "$tmp/b.$cfg.cap" ] || continue
			"$cost" "$tmp/b.$cfg.cap" | awk -v c="$(awk '{print $2}' "$tmp/round.$cfg")" '
				{ for (i = 2; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
				  k = f["pid"] SUBSEP f["source"]; src[k] = f["source"]
				  last_added[k] = f["added_ns"]; last_own[k] = f["own_cpu_ns"] }
				# the last (cumulative) entry of each source of each traced process (/usr/bin/time is one)
				END { a = 0; o = 0
				      for (k in last_added) { if (src[k] != "sender" && src[k] != "gpu") a += last_added[k]; o += last_own[k] }
				      a /= 1e9; o /= 1e9
				      if (c > a + o) printf "%.2f %.2f\n", a / (c - a - o) * 100, (a + o) / (c - a - o) * 100 }' >>"$tmp/b.$cfg.est"
			"$cost" "$tmp/b.$cfg.cap" | awk '
				{ for (i = 2; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
				  k = f["pid"] SUBSEP f["source"]; n[k]++; src[k] = f["source"]
				  t[k, n[k]] = f["time_ns"]; ad[k, n[k]] = f["added_ns"]; ow[k, n[k]] = f["own_cpu_ns"]
				  if (lo == "" || f["time_ns"] < lo) lo = f["time_ns"]; if (f["time_ns"] > hi) hi = f["time_ns"] }
				END { mid = (lo + hi) / 2; a = 0; o = 0; span = 0
				      for (k in n) { for (j = 1; j < n[k] && t[k, j] < mid; j++) ;
				                     if (src[k] != "sender" && src[k] != "gpu") a += ad[k, n[k]] - ad[k, j]
				                     o += ow[k, n[k]] - ow[k, j]
				                     if (t[k, n[k]] - t[k, j] > span) span = t[k, n[k]] - t[k, j] }
				      if (span > a + o) printf "%.2f\n", a / (span - a - o) * 100 }' >>"$tmp/b.$cfg.settled"
			rm -f "$tmp/b.$cfg.cap"
		done
		for cfg in $cfgs; do
			[ -s "$tmp/round.$cfg" ] && cat "$tmp/round.$cfg" >>"$tmp/b.$cfg"
		done
		for pair in budget:none off:none lite:none cpudef:cpunone; do
			cfg=${pair%%:*}
			base=$(cat "$tmp/round.${pair##*:}" 2>/dev/null)
			[ -s "$tmp/round.$cfg" ] && [ -n "$base" ] &&
				awk -v b="$base" '{split(b, x, " "); printf "%.2f %.2f\n", ($1 - x[1]) / x[1] * 100, ($2 - x[2]) / x[2] * 100}' \
					"$tmp/round.$cfg" >>"$tmp/b.$cfg.over"
		done
		rm -f "$tmp"/round.*
	done
	local what col
	for pair in "none:pingpong, none" "budget:pingpong, --sample-hz 10000, budget 3%" "off:pingpong, --sample-hz 10000, budget off" "lite:pingpong, lite (no CPU-side source)" "cpunone:cpu, none" "cpudef:cpu, defaults (budget 3%)"; do
		cfg=${pair%%:*}
		what=${pair#*:}
		[ -s "$tmp/b.$cfg" ] || continue # not among BUDGET_CONFIGS
		printf '  %-40s median wall %s s, cpu %s s (rounds, wall/cpu: %s)\n' "$what" "$(awk '{print $1}' "$tmp/b.$cfg" | median)" \
			"$(awk '{print $2}' "$tmp/b.$cfg" | median)" "$(awk '{printf "%s/%s ", $1, $2}' "$tmp/b.$cfg")"
		for col in 1:wall 2:cpu; do
			[ -s "$tmp/b.$cfg.over" ] && awk -v c="${col%%:*}" '{print $c}' "$tmp/b.$cfg.over" | sort -g | awk -v n="${col#*:}" '{v[NR] = $1}
				function q(p,  h, l) { h = (NR - 1) * p + 1; l = int(h); return v[l] + (h - l) * (v[l + 1 < NR ? l + 1 : NR] - v[l]) }
				END { printf "  %40s A/B %-4s overhead median %+.1f%%  IQR %+.1f%% .. %+.1f%%\n", "", n, q(0.5), q(0.25), q(0.75) }'
		done
		[ -s "$tmp/b.$cfg.est" ] && printf '  %40s live estimate median: est(added) %.2f%%, est(all) %.2f%%\n' "" \
			"$(awk '{print $1}' "$tmp/b.$cfg.est" | median)" "$(awk '{print $2}' "$tmp/b.$cfg.est" | median)"
		[ -s "$tmp/b.$cfg.settled" ] && printf '  %40s settled (second half): est(added) median %.2f%% (rounds: %s)\n' "" \
			"$(median <"$tmp/b.$cfg.settled")" "$(tr '\n' ' ' <"$tmp/b.$cfg.settled")"
	done
}
# The CPU workloads against perf record -g (`tests/bench/run.sh cpu` runs this section alone).
cpu_section()
{
	echo
	echo "== CPU side: overhead per source (sampling, blocking calls, counters) against perf record -g =="
	echo "method: $B/tests/bench/cpu_work times its own work (start-up excluded): 'cpu' = 2 threads of pure"
	echo "        computation; 'pingpong' = a pipe ping-pong between 2 threads (every read blocks); 'loader' = 8"
	echo "        threads moving buffers through a mutex/condvar queue and a pipe with a few us of compute each"
	echo "        (data-loader-like: blocks and wakes all the time). Every run pinned with taskset -c $CPU_PIN"
	echo "        (the workload, the collector's thread and the recorder share one CPU, so what cuscope spends"
	echo "        anywhere shows; ping-pong on 2 free cores is bimodal). Each round runs every config once,"
	echo "        in a new random order (CPU_ROUNDS=$CPU_ROUNDS); cuscope always 'record --no-gpu' (no GPU here):"
	echo "          none      no tracing"
	echo "          nothing   --sample-hz 0 --osrt-threshold-us off --counters none (collector, nothing CPU-side)"
	echo "          +sample   + stack sampling at the default 1 kHz of thread CPU time"
	echo "          +block    + blocking calls over the default 100 us, with stacks"
	echo "          +counters + default counters = cuscope's defaults"
	echo "          perf      perf record -g -F 1000 (frame-pointer call graphs, 1 kHz: the anchor)"
	echo "        per round: overhead = (traced - none) / none of that round; median and interquartile range."
	CPU_UNITS=${CPU_UNITS:-2000}
	PINGPONG_UNITS=${PINGPONG_UNITS:-60000}
	LOADER_UNITS=${LOADER_UNITS:-40000}
	WORK=$B/tests/bench/cpu_work
	if [ ! -x "$WORK" ]; then
		echo "$WORK not built (make bench builds it): CPU section skipped"
		return
	fi
	PIN="taskset -c $CPU_PIN"
	perf_ok=0
	perf record -q -g -F 1000 -o "$tmp/perf.data" -- true >/dev/null 2>&1 && perf_ok=1
	[ "$perf_ok" = 1 ] || echo "perf record -g does not work here (not installed, or perf_event_paranoid): no perf column"
	LITE="--sample-hz 0 --osrt-threshold-us off"
	cpu_configs="none nothing +sample +block +counters perf"
	# cpu_cmd CONFIG: the command prefix that runs a workload under CONFIG.
	cpu_cmd()
	{
		local rec="$CLI record --no-gpu -o $tmp/w.cap"
		case $1 in
		none) echo "" ;;
		nothing) echo "$rec $LITE --counters none --" ;;
		+sample) echo "$rec --osrt-threshold-us off --counters none --" ;;
		+block) echo "$rec --counters none --" ;;
		+counters) echo "$rec --" ;;
		perf) echo "perf record -q -g -F 1000 -o $tmp/perf.data --" ;;
		esac
	}
	# iqr_line NAME FILE: median and interquartile range of the per-round overheads (%) in FILE.
	iqr_line()
	{
		sort -g "$2" | awk -v n="$1" '{v[NR] = $1}
			function q(p,  h, l) { h = (NR - 1) * p + 1; l = int(h); return v[l] + (h - l) * (v[l + 1 < NR ? l + 1 : NR] - v[l]) }
			END { if (!NR) { printf "  %-9s not available\n", n; exit }
			      printf "  %-9s overhead median %+7.1f%%   IQR %+7.1f%% .. %+7.1f%%   (rounds:", n, q(0.5), q(0.25), q(0.75)
			      for (i = 1; i <= NR; i++) printf " %+.0f", v[i]; print "%)" }'
	}
	for kind in cpu pingpong loader; do
		case $kind in
		cpu) arg="cpu $CPU_UNITS" ;;
		pingpong) arg="block $PINGPONG_UNITS" ;;
		loader) arg="loader $LOADER_UNITS" ;;
		esac
		for cfg in $cpu_configs; do : >"$tmp/$kind.$cfg"; : >"$tmp/$kind.$cfg.over"; done
		for _ in $(seq "$CPU_ROUNDS"); do
			# A new order every round, so that the machine's other load does not favour one config.
			# shellcheck disable=SC2086 # one config per word
			for cfg in $(printf '%s\n' $cpu_configs | shuf); do
				[ "$cfg" = perf ] && [ "$perf_ok" = 0 ] && continue
				# shellcheck disable=SC2046 # the prefix is words
				$PIN $(cpu_cmd "$cfg") "$WORK" $arg 2>/dev/null | awk '$1 == "seconds" {print $2}' >"$tmp/round.$cfg"
			done
			base=$(cat "$tmp/round.none")
			for cfg in $cpu_configs; do
				[ -s "$tmp/round.$cfg" ] || continue
				cat "$tmp/round.$cfg" >>"$tmp/$kind.$cfg"
				[ "$cfg" != none ] && [ -n "$base" ] &&
					awk -v t="$(cat "$tmp/round.$cfg")" -v b="$base" 'BEGIN {printf "%.2f\n", (t - b) / b * 100}' >>"$tmp/$kind.$cfg.over"
			done
			rm -f "$tmp"/round.*
		done
		echo "-- $kind ($WORK $arg): none median $(median <"$tmp/$kind.none") s (rounds: $(tr '\n' ' ' <"$tmp/$kind.none"))"
		for cfg in $cpu_configs; do
			[ "$cfg" = none ] && continue
			iqr_line "$cfg" "$tmp/$kind.$cfg.over"
		done
	done
}

if [ "${1:-}" = cpu ]; then
	cpu_section
	exit 0
fi
if [ "${1:-}" = budget ]; then
	budget_section
	exit 0
fi

for prog in "$PRODUCER" "$B/tests/bench/bench_pipeline"; do
	if [ ! -x "$prog" ]; then
		echo "tests/bench/run.sh: $prog is not built; 'make bench' builds the benchmark programs and runs this" >&2
		exit 1
	fi
done

echo "== 1. NVTX push+pop cost on the application thread =="
echo "method: $PRODUCER, 1M push/pop pairs (nvtxRangePushA of one literal + nvtxRangePop) in batches of"
echo "        4000 with 1 ms pauses (pauses not timed), $ROUNDS interleaved rounds: plain (NVTX without a"
echo "        tool = no-op) then under 'cuscope record' (defaults). ns/pair = wall time of the batches / pairs;"
echo "        cpu = the thread's own CPU time / pairs (leaves out time it sat preempted). Added cost per"
echo "        round = traced - plain of that round; median and spread (min..max) over the rounds."
: >"$tmp/plain"; : >"$tmp/traced"; : >"$tmp/lost"; : >"$tmp/added"; : >"$tmp/cpu"
for _ in $(seq "$ROUNDS"); do
	p=$("$PRODUCER" 1000000 4000 1 | awk '{print $4}')
	t=$("$CLI" record -o "$tmp/c.cap" -- "$PRODUCER" 1000000 4000 1 | awk '{print $4, $6}')
	echo "$p" >>"$tmp/plain"
	echo "${t% *}" >>"$tmp/traced"
	echo "${t#* }" >>"$tmp/cpu"
	awk -v p="$p" -v t="${t% *}" 'BEGIN {printf "%.1f\n", t - p}' >>"$tmp/added"
	# The capture's own total ("losses N events"): every cause, nothing else summed.
	"$CLI" info "$tmp/c.cap" | awk '/^losses/ {print $2; f=1} END {if (!f) print "?"}' >>"$tmp/lost"
done
spread() { sort -g | awk '{v[NR]=$1} END {if (NR) printf "%s..%s", v[1], v[NR]}'; }
echo "plain:  median $(median <"$tmp/plain") ns/pair, spread $(spread <"$tmp/plain")   (rounds: $(tr '\n' ' ' <"$tmp/plain"))"
echo "traced: median $(median <"$tmp/traced") ns/pair, spread $(spread <"$tmp/traced")   (rounds: $(tr '\n' ' ' <"$tmp/traced"))"
echo "traced, thread CPU time: median $(median <"$tmp/cpu") ns/pair, spread $(spread <"$tmp/cpu")"
echo "events lost per round: $(tr '\n' ' ' <"$tmp/lost")"
a=$(median <"$tmp/added")
awk -v a="$a" -v s="$(spread <"$tmp/added")" 'BEGIN {printf "added cost: median %.1f ns per push+pop pair (%.1f ns per NVTX call), spread %s\n", a, a / 2, s}'

echo
echo "== 1b. NVTX at 1 M ranges/s for 10 s on one thread, default settings: losses =="
echo "method: 'cuscope record -- $PRODUCER paced 1000000 10 MODE' (defaults: 2 MiB rings, sampling, blocking"
echo "        calls, counters), PACED_ROUNDS=${PACED_ROUNDS:-3} rounds per mode: 1000 push/pop pairs every 1 ms"
echo "        (a late step catches up at 2x at most). MODE sleep: the thread sleeps between steps; busy: it"
echo "        spins, keeping its core, so the collector's sender and the recorder share the other one."
echo "        Reported: pairs and rate achieved, ns/pair of the steps, events in the capture and losses by"
echo "        cause ('cuscope info'); 'lost' must be 0 for 'no loss'. Sender: CPU time of the collector's"
echo "        cuscope-sender thread (/proc, read every 0.2 s until the program ends) per event drained."
# sender_cpu PID: the CPU seconds of PID's cuscope-sender thread, read every 0.2 s until PID ends
# (the last reading, so at most 0.2 s of its work is missed).
sender_cpu()
{
	local last=0 f
	while kill -0 "$1" 2>/dev/null; do
		for f in /proc/"$1"/task/*; do
			[ "$(cat "$f/comm" 2>/dev/null)" = cuscope-sender ] &&
				last=$(awk '{sub(/^.*\) /, ""); print ($12 + $13) / 100}' "$f/stat" 2>/dev/null)
		done
		sleep 0.2
	done
	echo "${last:-0}"
}
for mode in sleep busy; do
	for _ in $(seq "${PACED_ROUNDS:-3}"); do
		"$CLI" record -o "$tmp/p.cap" -- "$PRODUCER" paced 1000000 10 "$mode" >"$tmp/p.out" 2>/dev/null &
		rec=$!
		app=
		for _ in $(seq 50); do
			app=$(pgrep -P "$rec" -f nvtx_producer | head -1)
			[ -n "$app" ] && break
			sleep 0.1
		done
		scpu=$( [ -n "$app" ] && sender_cpu "$app" || echo "?")
		wait "$rec"
		out=$(cat "$tmp/p.out")
		"$CLI" info "$tmp/p.cap" >"$tmp/p.info" 2>&1
		events=$(awk '/^events/ {print $2}' "$tmp/p.info")
		lost=$(awk '/^losses/ {print $2}' "$tmp/p.info")
		causes=$(awk '/^losses/ {l=1; next} l && /^  [a-z_]+ +[0-9]+$/ {printf "%s=%s ", $1, $2; next} {l=0}' "$tmp/p.info")
		echo "$mode: $(echo "$out" | awk '{printf "%s pairs in %s s = %.0f pairs/s, %s ns/pair", $2, $4, $6, $8}'), events $events, lost ${lost:-?} ${causes}$(awk -v c="$scpu" -v e="$events" 'BEGIN {if (c + 0 > 0 && e > 0) printf "; sender thread %.2f s CPU = %.1f ns/event", c, c * 1e9 / e}')"
	done
done
rm -f "$tmp/p.cap"

echo
echo "== 2. Collector -> Unix socket -> store throughput on one core =="
echo "method: taskset -c 0 $B/tests/bench/bench_pipeline: producer (2M pairs = 4M events, one burst, 256 MiB ring"
echo "        so nothing is dropped) + collector sender + viewer-side tap and store all pinned to CPU 0;"
echo "        events/s = events stored / time from first frame received to last connection closed."
: >"$tmp/pipe"
for _ in $(seq "$ROUNDS"); do
	CUSCOPE_RING_KB=262144 taskset -c 0 "$B/tests/bench/bench_pipeline" "$PRODUCER" 2000000 2000000 1 >"$tmp/out" 2>&1
	grep '^events' "$tmp/out" | tee -a "$tmp/pipe.lines"
	awk '/^events/ {for (i = 1; i < NF; i++) if ($i == "events_per_s") print $(i+1)}' "$tmp/out" >>"$tmp/pipe"
done
echo "median events/s on one core: $(median <"$tmp/pipe")"
echo "(wire bytes/event: fixed 32-byte records plus framing; store bytes/event: range arrays of 24 bytes per"
echo " push/pop pair plus indexes, from store_memory_bytes())"

echo
echo "== UI frame cost, terminal bytes, store bytes/event (tests/bench/ui_bench.c) =="
echo "method: a synthetic store fed through store_feed with hand-made HELLO/STRING/EVENTS/GPU frames (half NVTX"
echo "        push/pop on 4 threads, half GPU kernels/copies on 2 streams, 2 minutes of capture, a 50 ms GPU gap"
echo "        every second); the real UI drawn with newterm into a file (TERM=xterm-256color, 200x60); frame time ="
echo "        ui_draw wall time; bytes/frame = growth of that file (what a terminal would receive). Live scroll:"
echo "        following now, 33 ms newer per frame. Full repaint: clearok(curscr) + redraw. UI_BENCH_EVENTS"
echo "        overrides the sizes (default: 10M and 100M events; 100M needs ~3 GB RAM and ~15 s to build)."
make --no-print-directory "$B/tests/bench/ui_bench" >/dev/null || echo "cannot build $B/tests/bench/ui_bench"
for n in ${UI_BENCH_EVENTS:-10000000 100000000}; do
	echo "-- $n events"
	"$B/tests/bench/ui_bench" "$n" 200 60 200
done

echo
echo "== Capture write/read speed, bytes/event on disk, export of 10M events =="
echo "method: tests/bench/gen_capture.c writes a synthetic capture through capture_writer_* (one process, per step"
echo "        NVTX push/pop x2 + a CUDA launch + a kernel, every 10th step a mark, a start/end range, memcpy,"
echo "        memset and sync: 6.8 events/step); write speed = events / wall time of the generator. Read speed ="
echo "        events / wall time of 'cuscope stats --report=processes' (capture_read into the store, no tables)."
echo "        bytes/event from 'cuscope info'. Export: 'cuscope export -o OUT' wall time and peak RSS"
echo "        (/usr/bin/time -v), next to the peak RSS of the read alone: the difference is the exporter's own"
echo "        memory. A recorded nvtx_producer capture (1M push/pop pairs) gives real-capture numbers."
GEN_EVENTS=${GEN_EVENTS:-10000000}
cc -O2 -Iinclude -D_GNU_SOURCE -o "$tmp/gen_capture" tests/bench/gen_capture.c "$B/obj/libviewer.a" \
	-lzstd -lz -lstdc++ -lm -lpthread || echo "cannot build gen_capture"
now_s() { date +%s.%N; }
wall_rss() { # wall_rss CMD...: prints "WALL_S PEAK_RSS_KB"
	/usr/bin/time -f '%e %M' -o "$tmp/time" "$@" >/dev/null 2>"$tmp/cmd.err"
	cat "$tmp/time"
}
steps=$((GEN_EVENTS * 10 / 68))
t0=$(now_s)
"$tmp/gen_capture" "$tmp/gen.cap" "$steps" >"$tmp/gen.truth"
t1=$(now_s)
events=$(sed 's/.*"events": \([0-9]*\).*/\1/' "$tmp/gen.truth")
awk -v e="$events" -v a="$t0" -v b="$t1" 'BEGIN {printf "write: %d events in %.2f s = %.1f M events/s\n", e, b - a, e / (b - a) / 1e6}'
"$CLI" info "$tmp/gen.cap" | sed -n 's/^size *//p; s/^events *//p' | sed 's/^/synthetic capture: /'
read -r rw rr < <(wall_rss "$CLI" stats --report=processes "$tmp/gen.cap")
awk -v e="$events" -v w="$rw" -v r="$rr" 'BEGIN {printf "read:  %.2f s = %.1f M events/s, peak RSS %.0f MiB (the store)\n", w, e / w / 1e6, r / 1024}'
read -r ew er < <(wall_rss "$CLI" export -o "$tmp/gen.json" "$tmp/gen.cap")
awk -v e="$events" -v w="$ew" -v r="$er" -v rr="$rr" -v s="$(stat -c %s "$tmp/gen.json")" \
	'BEGIN {printf "export: %.2f s for %d events (read included), %.0f MiB JSON, peak RSS %.0f MiB (+%.1f MiB over the read)\n", w, e, s / 1048576, r / 1024, (r - rr) / 1024}'
rm -f "$tmp/gen.json"
read -r gw gr < <(wall_rss "$CLI" export -o "$tmp/gen.json.gz" "$tmp/gen.cap")
awk -v w="$gw" -v r="$gr" -v s="$(stat -c %s "$tmp/gen.json.gz")" \
	'BEGIN {printf "export .gz (zlib level 1): %.2f s, %.0f MiB, peak RSS %.0f MiB\n", w, s / 1048576, r / 1024}'
rm -f "$tmp/gen.json.gz" "$tmp/gen.cap"
"$CLI" record -o "$tmp/p.cap" -- "$PRODUCER" 1000000 4000 1 >/dev/null 2>&1
pe=$("$CLI" info "$tmp/p.cap" | awk '/^events/ {print $2}')
"$CLI" info "$tmp/p.cap" | sed -n 's/^events *//p' | sed 's/^/recorded nvtx_producer: /'
read -r pw _ < <(wall_rss "$CLI" stats --report=processes "$tmp/p.cap")
awk -v e="$pe" -v w="$pw" 'BEGIN {printf "recorded read: %.2f s = %.1f M events/s\n", w, e / w / 1e6}'

cpu_section

echo
echo "== CPU side: host memory, short-lived children, the recorder's own CPU =="
echo "method: peak RSS (/usr/bin/time %M) of '$WORK loader 4000' (9 threads) run plain and as the"
echo "        traced process under 'cuscope record --no-gpu' (time runs inside the recording, so its RSS is"
echo "        the traced program's alone). Short-lived children: wall time of sh -c 'for i in 1..200:"
echo "        /bin/true' plain and under record (defaults): (traced - plain) / 200. Recorder CPU: user+sys"
echo "        of 'cuscope record' minus that of the traced loader (measured by time inside the recording)"
echo "        while recording '$WORK loader $LOADER_UNITS' with defaults, unpinned. Medians of $ROUNDS rounds."
: >"$tmp/rss.plain"; : >"$tmp/rss.traced"; : >"$tmp/true.plain"; : >"$tmp/true.traced"; : >"$tmp/viewer"
# shellcheck disable=SC2016 # expanded by the shell that runs the loop
loop='for i in $(seq 200); do /bin/true; done'
for _ in $(seq "$ROUNDS"); do
	/usr/bin/time -f '%M' -o "$tmp/t1" "$WORK" loader 4000 >/dev/null && cat "$tmp/t1" >>"$tmp/rss.plain"
	"$CLI" record --no-gpu -o "$tmp/w.cap" -- /usr/bin/time -f '%M' -o "$tmp/t2" "$WORK" loader 4000 >/dev/null 2>&1 &&
		cat "$tmp/t2" >>"$tmp/rss.traced"
	t0=$(now_s); sh -c "$loop"; t1=$(now_s)
	awk -v a="$t0" -v b="$t1" 'BEGIN {print (b - a) * 1000}' >>"$tmp/true.plain"
	t0=$(now_s); "$CLI" record --no-gpu -o "$tmp/w.cap" -- sh -c "$loop" 2>/dev/null; t1=$(now_s)
	awk -v a="$t0" -v b="$t1" 'BEGIN {print (b - a) * 1000}' >>"$tmp/true.traced"
	/usr/bin/time -f '%U %S %e' -o "$tmp/outer" "$CLI" record --no-gpu -o "$tmp/w.cap" -- \
		/usr/bin/time -f '%U %S' -o "$tmp/inner" "$WORK" loader "$LOADER_UNITS" >/dev/null 2>&1 &&
		paste "$tmp/outer" "$tmp/inner" | awk '{printf "%.3f %.1f\n", $1 + $2 - $4 - $5, ($1 + $2 - $4 - $5) / $3 * 100}' >>"$tmp/viewer"
done
awk -v p="$(median <"$tmp/rss.plain")" -v t="$(median <"$tmp/rss.traced")" \
	'BEGIN {printf "host RSS: plain %.1f MiB, traced %.1f MiB: the collector adds %.1f MiB (9 threads, default buffers)\n", p / 1024, t / 1024, (t - p) / 1024}'
awk -v p="$(median <"$tmp/true.plain")" -v t="$(median <"$tmp/true.traced")" \
	'BEGIN {printf "short-lived children: 200 x /bin/true plain %.0f ms, under record %.0f ms: %.2f ms per child\n", p, t, (t - p) / 200}'
echo "recorder CPU (user+sys) while recording the loader: median $(awk '{print $1}' "$tmp/viewer" | median) s, $(awk '{print $2}' "$tmp/viewer" | median)% of the run's wall time (rounds: $(awk '{printf "%s s ", $1}' "$tmp/viewer"))"

echo
budget_section

echo
./tests/bench/export_perfetto.sh
