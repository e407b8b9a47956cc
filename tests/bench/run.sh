#!/usr/bin/env bash
# cuscope benchmarks (make bench). Prints numbers with their method; nothing here passes or fails.
set -u
cd "$(dirname "$0")/../.."
B=${BUILD:-build}
CLI=$B/bin/cuscope
PRODUCER=$B/tests/bench/nvtx_producer
export CUSCOPE_COLLECTOR=$PWD/$B/lib/cuscope/libcuscope.so
ROUNDS=${ROUNDS:-5}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

median() { sort -g | awk '{v[NR]=$1} END {if (NR) print v[int((NR+1)/2)]; else print "n/a"}'; }

echo "== 1. NVTX push+pop cost on the application thread =="
echo "method: $PRODUCER, 1M push/pop pairs in batches of 4000 with 1 ms pauses (pauses not timed),"
echo "        $ROUNDS interleaved rounds each: plain (NVTX without a tool = no-op) and under cuscope record."
: >"$tmp/plain"; : >"$tmp/traced"; : >"$tmp/lost"
for r in $(seq "$ROUNDS"); do
	"$PRODUCER" 1000000 4000 1 | awk '{print $4}' >>"$tmp/plain"
	"$CLI" record -o "$tmp/c.cap" -- "$PRODUCER" 1000000 4000 1 | awk '{print $4}' >>"$tmp/traced"
	"$CLI" stats --format=csv "$tmp/c.cap" | awk -F, '/^# losses/{l=1;next} l && $2 ~ /^[0-9]+$/ {s+=$2} END{print s+0}' >>"$tmp/lost"
done
p=$(median <"$tmp/plain"); t=$(median <"$tmp/traced")
echo "plain:  median $p ns/pair   (rounds: $(tr '\n' ' ' <"$tmp/plain"))"
echo "traced: median $t ns/pair   (rounds: $(tr '\n' ' ' <"$tmp/traced"))  events lost per round: $(tr '\n' ' ' <"$tmp/lost")"
awk -v p="$p" -v t="$t" 'BEGIN {printf "added cost: %.1f ns per push+pop pair (%.1f ns per NVTX call)\n", t - p, (t - p) / 2}'

echo
echo "== 2. Collector -> Unix socket -> store throughput on one core =="
echo "method: taskset -c 0 $B/tests/bench/bench_pipeline: producer (2M pairs = 4M events, one burst, 256 MiB ring"
echo "        so nothing is dropped) + collector sender + viewer-side tap and store all pinned to CPU 0;"
echo "        events/s = events stored / time from first frame received to last connection closed."
: >"$tmp/pipe"
for r in $(seq "$ROUNDS"); do
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

echo
echo "== CPU side: 1 kHz stack sampling + blocking-call tracing overhead =="
echo "method: $B/tests/bench/cpu_work times its own work (start-up excluded): 'cpu' = 2 threads of pure"
echo "        computation, 'block' = pipe ping-pong between 2 threads (every read blocks). Interleaved rounds"
echo "        (ROUNDS=$ROUNDS): plain; cuscope record --no-gpu with defaults (1 kHz sampling, blocking calls"
echo "        over 100 us with stacks, counters); cuscope with sampling/OSRT/counters off (the collector's"
echo "        base cost); perf record -g -F 1000 where perf works. Medians; overhead vs plain."
CPU_UNITS=${CPU_UNITS:-4000}
BLOCK_UNITS=${BLOCK_UNITS:-40000}
WORK=$B/tests/bench/cpu_work
perf_ok=0
perf record -q -g -F 1000 -o "$tmp/perf.data" -- true >/dev/null 2>&1 && perf_ok=1
for kind in cpu block; do
	n=$CPU_UNITS
	[ "$kind" = block ] && n=$BLOCK_UNITS
	for cfg in plain cuscope base perf; do : >"$tmp/$kind.$cfg"; done
	for r in $(seq "$ROUNDS"); do
		"$WORK" "$kind" "$n" | awk '{print $2}' >>"$tmp/$kind.plain"
		"$CLI" record --no-gpu -o "$tmp/w.cap" -- "$WORK" "$kind" "$n" 2>/dev/null | awk '{print $2}' >>"$tmp/$kind.cuscope"
		"$CLI" record --no-gpu --sample-hz 0 --osrt-threshold-us off --counters none -o "$tmp/w.cap" -- \
			"$WORK" "$kind" "$n" 2>/dev/null | awk '{print $2}' >>"$tmp/$kind.base"
		[ "$perf_ok" = 1 ] && perf record -q -g -F 1000 -o "$tmp/perf.data" -- "$WORK" "$kind" "$n" 2>/dev/null |
			awk '{print $2}' >>"$tmp/$kind.perf"
	done
	p=$(median <"$tmp/$kind.plain")
	for cfg in plain cuscope base perf; do
		[ -s "$tmp/$kind.$cfg" ] || { echo "$kind $cfg: not available"; continue; }
		m=$(median <"$tmp/$kind.$cfg")
		awk -v k="$kind" -v c="$cfg" -v m="$m" -v p="$p" -v all="$(tr '\n' ' ' <"$tmp/$kind.$cfg")" \
			'BEGIN {printf "%-6s %-8s median %.4f s  overhead %+.1f%%   (rounds: %s)\n", k, c, m, (m / p - 1) * 100, all}'
	done
done
"$CLI" stats --report=hot,osrt "$tmp/w.cap" >/dev/null 2>&1 || true
