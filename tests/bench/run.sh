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
