#!/usr/bin/env bash
# Two builds of cuscope side by side on this machine's hot paths (e.g. the commits before and after
# a redesign): tests/bench/compare.sh DIR_A DIR_B, each a checkout with `make all` and the bench
# programs built (make all build/tests/bench/nvtx_producer build/tests/bench/bench_pipeline
# build/tests/bench/ui_bench). Prints numbers with their method; nothing here passes or fails.
set -u
[ $# = 2 ] || {
	echo "usage: tests/bench/compare.sh DIR_A DIR_B" >&2
	exit 2
}
ROUNDS=${ROUNDS:-7}
UI_EVENTS=${UI_EVENTS:-2000000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for d in "$1" "$2"; do
	for f in bin/cuscope lib/cuscope/libcuscope.so tests/bench/nvtx_producer tests/bench/bench_pipeline tests/bench/ui_bench; do
		[ -e "$d/build/$f" ] || {
			echo "compare.sh: $d/build/$f missing (build it there first)" >&2
			exit 2
		}
	done
done
median() { sort -g | awk '{v[NR]=$1} END {if (NR) print v[int((NR+1)/2)]; else print "n/a"}'; }
spread() { sort -g | awk '{v[NR]=$1} END {if (NR) printf "%s..%s", v[1], v[NR]}'; }

echo "method: $ROUNDS rounds; each round runs A and B once per measure, in a random order:"
echo "  nvtx:  'cuscope record -- nvtx_producer 1000000 4000 1' (1M push/pop pairs in batches of 4000 with"
echo "         1 ms pauses; defaults): ns per pair on the application thread, and its peak RSS (MB)"
echo "  pipe:  taskset -c 0 bench_pipeline (4M events through collector, socket and store on one core): events/s"
echo "  ui:    ui_bench $UI_EVENTS 200 60 (the real UI drawn into a file): live-scroll frame p50 (ms)"
echo "A = $1"
echo "B = $2"
for _ in $(seq "$ROUNDS"); do
	order="A B"
	[ $((RANDOM % 2)) = 1 ] && order="B A"
	for side in $order; do
		d=$1
		[ "$side" = B ] && d=$2
		b=$d/build
		out=$(CUSCOPE_COLLECTOR=$b/lib/cuscope/libcuscope.so "$b/bin/cuscope" record -o "$tmp/c.cap" -- \
			/usr/bin/time -f 'maxrss_kb %M' "$b/tests/bench/nvtx_producer" 1000000 4000 1 2>&1)
		echo "$out" | awk '/ns\/pair|pairs/ && NF >= 4 {print $4; exit}' >>"$tmp/$side.nvtx"
		echo "$out" | awk '/^maxrss_kb/ {printf "%.1f\n", $2 / 1024}' >>"$tmp/$side.rss"
		CUSCOPE_COLLECTOR=$b/lib/cuscope/libcuscope.so CUSCOPE_RING_KB=262144 taskset -c 0 \
			"$b/tests/bench/bench_pipeline" "$b/tests/bench/nvtx_producer" 2000000 2000000 1 2>&1 |
			awk '/^events/ {for (i = 1; i < NF; i++) if ($i == "events_per_s") print $(i+1)}' >>"$tmp/$side.pipe"
		"$b/tests/bench/ui_bench" "$UI_EVENTS" 200 60 200 2>&1 | awk '/^live scroll/ {for (i = 2; i < NF; i++) if ($i == "p50" && $(i-1) == "frame") print $(i+1)}' >>"$tmp/$side.ui"
	done
done
printf '%-28s %-26s %-26s %s\n' measure "A median (min..max)" "B median (min..max)" "B/A of medians"
for m in nvtx:"NVTX ns/pair (traced)" rss:"producer peak RSS, MB" pipe:"pipeline events/s" ui:"UI live frame p50, ms"; do
	k=${m%%:*}
	a=$(median <"$tmp/A.$k")
	b=$(median <"$tmp/B.$k")
	printf '%-28s %-26s %-26s %s\n' "${m#*:}" "$a ($(spread <"$tmp/A.$k"))" "$b ($(spread <"$tmp/B.$k"))" \
		"$(awk -v a="$a" -v b="$b" 'BEGIN {if (a > 0) printf "%.3f", b / a; else print "n/a"}')"
done
