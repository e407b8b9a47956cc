#!/usr/bin/env bash
# What cuscope costs a dispatch-bound PyTorch step besides CUPTI (report only, never pass/fail):
# tests/bench/torch_cpu_step.py (CPU PyTorch, no GPU needed) without tracing and under
# `cuscope record --no-gpu` with the CPU sources off ("lite": the preloaded collector, its Python
# hook and threads), each source alone on top of lite, and the defaults; interleaved, the order
# rotated each round; per round, overhead = (traced - none)/none; median and interquartile range.
#
# usage: tests/bench/torch_cpu_step.sh
# Environment: PYTHON (a python3 with torch; default python3), ROUNDS (7), STEPS (1500), BUILD.
set -u
cd "$(dirname "$0")/../.." || exit 2
B=${BUILD:-build}
CLI=$B/bin/cuscope
PY=${PYTHON:-python3}
ROUNDS=${ROUNDS:-7}
STEPS=${STEPS:-1500}
W=tests/bench/torch_cpu_step.py
if ! "$PY" -c 'import torch' 2>/dev/null; then
	echo "SKIP: $PY has no torch (set PYTHON to one that has)"
	exit 77
fi
[ -x "$CLI" ] || {
	echo "$CLI not built (make)"
	exit 2
}
T=$(mktemp -d "${TMPDIR:-/tmp}/cuscope-torchcpu.XXXXXX")
trap 'rm -rf "$T"' EXIT
configs=(none lite sample osrt counters defaults)
options()
{
	case $1 in
	lite) echo "--sample-hz 0 --osrt-threshold-us off --counters none" ;;
	sample) echo "--osrt-threshold-us off --counters none" ;;
	osrt) echo "--sample-hz 0 --counters none" ;;
	counters) echo "--sample-hz 0 --osrt-threshold-us off" ;;
	defaults) echo "" ;;
	esac
}
echo "method: $W $STEPS steps (torch $("$PY" -c 'import torch; print(torch.__version__)')), $ROUNDS rounds of ${configs[*]},"
echo "        cuscope record --no-gpu OPTIONS; lite = --sample-hz 0 --osrt-threshold-us off --counters none"
n=${#configs[@]}
for ((r = 1; r <= ROUNDS; r++)); do
	for ((k = 0; k < n; k++)); do
		c=${configs[$(((k + r - 1) % n))]}
		if [ "$c" = none ]; then
			v=$("$PY" "$W" "$STEPS" | sed -n 's/^ms_per_step //p')
		else
			# shellcheck disable=SC2046
			v=$("$CLI" record --no-gpu $(options "$c") -o "$T/c.cap" -- "$PY" "$W" "$STEPS" 2>/dev/null | sed -n 's/^ms_per_step //p')
			rm -f "$T/c.cap"
		fi
		[ -n "$v" ] && echo "$r $c $v" >>"$T/vals"
	done
done
"$PY" - "$T/vals" "${configs[@]}" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    r, c, v = line.split()
    rows.setdefault(int(r), {})[c] = float(v)
for c in sys.argv[2:]:
    vals = [d[c] for d in rows.values() if c in d]
    over = [(d[c] - d["none"]) / d["none"] * 100 for d in rows.values() if c in d and "none" in d]
    if not vals:
        print("%-9s n/a" % c)
        continue
    q = statistics.quantiles(over, n=4, method="inclusive") if len(over) > 1 else over * 3
    print("%-9s %.3f ms/step  overhead %+.1f%%  IQR [%+.1f, %+.1f]  (n=%d)" % (c, statistics.median(vals), statistics.median(over), q[0], q[-1], len(over)))
PY
