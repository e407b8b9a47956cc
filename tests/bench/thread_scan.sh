#!/usr/bin/env bash
# The collector's sender CPU time with many threads to scan: `sleepers` (N threads blocked for
# SECONDS) recorded by each build in turn, interleaved over ROUNDS rounds, in two configurations:
# lite (--sample-hz 0 --counters none: the /proc/self/task scan and its comm reads dominate) and
# defaults. Prints each run and the median per build and configuration. Reports; never fails.
#   tests/bench/thread_scan.sh [BUILD...]   (default: build)
# Environment: ROUNDS (5), BENCH_SECONDS (10), THREADS (200).
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
ROUNDS=${ROUNDS:-5}
SECONDS_EACH=${BENCH_SECONDS:-10}
THREADS=${THREADS:-200}
[ $# -gt 0 ] || set -- "$ROOT/build"
out=$(mktemp)
trap 'rm -f "$out" /tmp/thread_scan.$$.cap' EXIT
for r in $(seq 1 "$ROUNDS"); do
	for conf in lite defaults; do
		for b in "$@"; do
			opts=()
			[ "$conf" = lite ] && opts=(--sample-hz 0 --counters none)
			ms=$("$b/bin/cuscope" record "${opts[@]}" -o /tmp/thread_scan.$$.cap -- \
				"$b/tests/progs/sleepers" "$THREADS" "$SECONDS_EACH" | awk '/^sender_cpu_ms/ {print $2}')
			echo "round $r $conf $b sender_cpu_ms ${ms:-?}"
			echo "$conf $b ${ms:-nan}" >>"$out"
		done
	done
done
echo "medians (sender CPU ms over $SECONDS_EACH s, $THREADS threads, $ROUNDS rounds):"
for conf in lite defaults; do
	for b in "$@"; do
		awk -v c="$conf" -v b="$b" '$1 == c && $2 == b {print $3}' "$out" | sort -n |
			awk -v c="$conf" -v b="$b" '{v[NR] = $1} END {m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "  %-8s %s: %s ms (min %s, max %s)\n", c, b, m, v[1], v[NR]}'
	done
done
