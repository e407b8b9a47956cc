#!/usr/bin/env bash
# Perfetto protobuf vs Chrome JSON export of one recorded capture (make bench runs it; alone:
# tests/bench/export_perfetto.sh [PAIRS]). Prints numbers with their method; passes or fails nothing.
set -u
cd "$(dirname "$0")/../.." || exit 1
B=${BUILD:-build}
CLI=$B/bin/cuscope
PRODUCER=$B/tests/bench/nvtx_producer
PAIRS=${1:-${EXPORT_PAIRS:-10000000}}
ROUNDS=${EXPORT_ROUNDS:-3}
export CUSCOPE_COLLECTOR=$PWD/$B/lib/cuscope/libcuscope.so
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

median() { sort -g | awk '{v[NR]=$1} END {if (NR) print v[int((NR+1)/2)]; else print "n/a"}'; }

echo "== Export: Perfetto protobuf vs Chrome JSON =="
echo "method: 'cuscope record --no-gpu --sample-hz 0 -- $PRODUCER $PAIRS 10000 1' (one thread, NVTX"
echo "        push/pop pairs in batches of 10,000), then 'cuscope export' of the capture as JSON and with"
echo "        --format=perfetto, each $ROUNDS times alternating; wall time and peak RSS (/usr/bin/time %e %M) of"
echo "        the export (loading the capture included), medians; sizes of the outputs (uncompressed)."
if [ ! -x "$PRODUCER" ] || [ ! -x "$CLI" ]; then
	echo "cannot run: $PRODUCER or $CLI not built (make all bench)"
	exit 0
fi
"$CLI" record --no-gpu --sample-hz 0 -o "$tmp/p.cap" -- "$PRODUCER" "$PAIRS" 10000 1 >/dev/null 2>"$tmp/rec.err" ||
	{ echo "record failed: $(tail -n 1 "$tmp/rec.err")"; exit 0; }
events=$("$CLI" info "$tmp/p.cap" | sed -n 's/^events *\([0-9]*\).*/\1/p')
echo "capture: $(stat -c %s "$tmp/p.cap") bytes, events (cuscope info): $events"
: >"$tmp/t.json"; : >"$tmp/t.perfetto"
for _ in $(seq "$ROUNDS"); do
	for fmt in json perfetto; do
		/usr/bin/time -f '%e %M' -o "$tmp/time" "$CLI" export --format="$fmt" -o "$tmp/out.$fmt" "$tmp/p.cap" ||
			{ echo "export --format=$fmt failed"; exit 0; }
		cat "$tmp/time" >>"$tmp/t.$fmt"
		stat -c %s "$tmp/out.$fmt" >"$tmp/size.$fmt"
	done
done
for fmt in json perfetto; do
	printf '%-9s %6.1f MB  export %5.1f s  peak RSS %5.0f MiB  (rounds, s: %s)\n' "$fmt" \
		"$(awk '{print $1 / 1e6}' "$tmp/size.$fmt")" "$(awk '{print $1}' "$tmp/t.$fmt" | median)" \
		"$(awk '{print $2 / 1024}' "$tmp/t.$fmt" | median)" "$(awk '{printf "%s ", $1}' "$tmp/t.$fmt")"
done
awk -v j="$(cat "$tmp/size.json")" -v p="$(cat "$tmp/size.perfetto")" \
	'BEGIN {printf "perfetto / json size: %.3f (%.1fx smaller); bytes per event: json %.1f, perfetto %.1f (a range = one event)\n", p / j, j / p, j / '"${events:-1}"', p / '"${events:-1}"'}'
