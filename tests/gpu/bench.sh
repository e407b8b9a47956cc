#!/usr/bin/env bash
# GPU overhead benchmarks (report only, never pass/fail): three workloads, each without tracing,
# under `cuscope record` and under nsys, interleaved over several rounds; prints medians, spread
# and the per-round overhead vs no tracing (median and interquartile range over rounds).
#   launch       200k tiny-kernel launches on one stream (CUDA C)    -> launches/s
#   launchx      the same with 8 cheap runtime calls per launch (cudaGetDevice, cudaGetLastError),
#                as a framework's dispatcher makes them                  -> launches/s
#   mlp          launch-bound tiny PyTorch MLP training step         -> ms/step
#   transformer  12-layer transformer training step, bf16, 16x512    -> ms/step
# Every number is the workload's own timing of its loop (warm-up excluded), read from its stdout,
# so nsys's start-up and its (failing) report step do not count.
#
# usage: tests/gpu/bench.sh
# Environment: BENCH_ROUNDS (5), BENCH_LAUNCHES (200000), BENCH_MLP_STEPS (300),
# BENCH_TF_STEPS (30), BENCH_WORKLOADS ("launch mlp transformer"), BENCH_CONFIGS
# ("none cuscope nsys"; also floor, cu-kon, cu-gpu, cu-api, cu-lite, cu-sample, cu-osrt, cu-rtl, cu-cb, cu-cbrt, cu-drv, cu-act, cu-ptid, cu-drvl, cu-nosync, cu-nocopy, cu-nodrv,
# cu-f100, cu-mono, cu-floor, cu-floor-def, cu-kon-nosub, floor-all, cu-gpu-nosync,
# cu-gpu-nocopy: the per-source breakdown described in README.md
# "Overhead (GPU side)"),
# (cu-pre, cu-post: the defaults of two other builds, the cuscope binaries named by CUSCOPE_PRE and
# CUSCOPE_POST, e.g. the commits before and after a redesign, side by side in one run),
# BENCH_CONFIGS_launch/_mlp/_transformer (a subset of BENCH_CONFIGS for that workload),
# BENCH_BUDGET_S (total seconds, 450: no round starts that would not fit),
# (--torch's cost: cu-torch = the defaults with --torch, nsys-torch = nsys --pytorch=autograd-nvtx),
# (GPU hardware metrics' cost: cu-met = the defaults with --gpu-metrics on, off by default),
# BENCH_RUN_TIMEOUT_S (one run, 150), BENCH_GRACE_S (how long a run may go on after its result line,
# 30: nsys writes its report then; the timing is already read), NSYS (path of nsys; default: searched), BUILD, CUSCOPE,
# PYTHON, OUT (if set, the table is also written to $OUT/gpu-bench.txt).
set -u
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
	echo "SKIP: no GPU"
	exit 77
fi
cd "$(dirname "$0")/../.." || exit 2
ROOT=$(pwd)
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
CUSCOPE=${CUSCOPE:-$BUILD/bin/cuscope}
G=$BUILD/tests/gpu
PY=${PYTHON:-python3}
ROUNDS=${BENCH_ROUNDS:-5}
LAUNCHES=${BENCH_LAUNCHES:-200000}
MLP_STEPS=${BENCH_MLP_STEPS:-300}
TF_STEPS=${BENCH_TF_STEPS:-30}
BUDGET=${BENCH_BUDGET_S:-450}
RUN_TIMEOUT=${BENCH_RUN_TIMEOUT_S:-150}
GRACE=${BENCH_GRACE_S:-30} # seconds a run may go on after its result line appeared (nsys's report step)
read -r -a WORKLOADS <<<"${BENCH_WORKLOADS:-launch mlp transformer}"
read -r -a CONFIGS <<<"${BENCH_CONFIGS:-none cuscope nsys}"
START=$SECONDS
T=$(mktemp -d "${TMPDIR:-/tmp}/cuscope-bench.XXXXXX")
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/vals"
: >"$T/notes"

NSYS=${NSYS:-}
if [ -z "$NSYS" ]; then
	for f in /opt/nvidia/nsight-compute/*/host/target-linux-x64/nsys /opt/nvidia/nsight-systems/*/bin/nsys \
		/usr/local/cuda/bin/nsys "$(command -v nsys 2>/dev/null)"; do
		if [ -n "$f" ] && [ -x "$f" ]; then
			NSYS=$f
			break
		fi
	done
fi
cfgs=()
for c in "${CONFIGS[@]}"; do
	case $c in
	nsys | nsys-torch) if [ -n "$NSYS" ] && [ -x "$NSYS" ]; then cfgs+=("$c"); else echo "$c: nsys not found, skipped" | tee -a "$T/notes"; fi ;;
	cuscope) if [ -x "$CUSCOPE" ]; then cfgs+=(cuscope); else echo "cuscope: $CUSCOPE not built, skipped" | tee -a "$T/notes"; fi ;;
	none) cfgs+=(none) ;;
	floor | floor-all) if [ -f "$G/libfloor_injector.so" ]; then cfgs+=("$c"); else echo "floor: $G/libfloor_injector.so not built, skipped" | tee -a "$T/notes"; fi ;;
	cu-pre) if [ -x "${CUSCOPE_PRE:-}" ]; then cfgs+=("$c"); else echo "$c: CUSCOPE_PRE (a cuscope binary) not set, skipped" | tee -a "$T/notes"; fi ;;
	cu-post) if [ -x "${CUSCOPE_POST:-}" ]; then cfgs+=("$c"); else echo "$c: CUSCOPE_POST (a cuscope binary) not set, skipped" | tee -a "$T/notes"; fi ;;
	cu-floor | cu-floor-def) if [ -x "$CUSCOPE" ] && [ -f "$G/libfloor_injector.so" ]; then cfgs+=("$c"); else echo "$c: cuscope or the floor injector not built, skipped" | tee -a "$T/notes"; fi ;;
	cu-*) if [ -x "$CUSCOPE" ]; then cfgs+=("$c"); else echo "$c: $CUSCOPE not built, skipped" | tee -a "$T/notes"; fi ;;
	*) echo "unknown config $c ignored" | tee -a "$T/notes" ;;
	esac
done
CONFIGS=("${cfgs[@]}")
[ ! -x "$G/launch_bench" ] && echo "launch: $G/launch_bench not built (tests/gpu/build.sh)" | tee -a "$T/notes"

descendants()
{
	local c
	for c in $(pgrep -P "$1" 2>/dev/null); do
		echo "$c"
		descendants "$c"
	done
}

kill_tree()
{
	local pids
	pids="$1 $(descendants "$1" | tr '\n' ' ')"
	# shellcheck disable=SC2086
	kill -TERM $pids 2>/dev/null
	sleep 2
	# shellcheck disable=SC2086
	kill -KILL $pids 2>/dev/null
}

# Waits (up to 60 s) until no process holds the GPU: a run killed after its timing line (a short
# BENCH_GRACE_S, or nsys still writing its report) may still be tearing its CUDA context down, and
# a run started meanwhile measured that (or timed out: seen on the H200 with a 3 s grace).
wait_gpu_free()
{
	local n=0
	while [ "$n" -lt 300 ] && [ -n "$(nvidia-smi --query-compute-apps=pid --format=csv,noheader 2>/dev/null)" ]; do
		sleep 0.2
		n=$((n + 1))
	done
	[ "$n" -ge 300 ] && echo "GPU still in use after 60 s before a run: $(nvidia-smi --query-compute-apps=pid,process_name --format=csv,noheader | tr '\n' ' ')" | tee -a "$T/notes"
}

# run_one WORKLOAD CONFIG: runs it once, appends the value to $T/vals/WORKLOAD.CONFIG.
run_one()
{
	local w=$1 c=$2 key cmd=() pre=() pid i=0 seen=-1 val
	case $w in
	launch) key=launches_per_s cmd=("$G/launch_bench" "$LAUNCHES") ;;
	launchx) key=launches_per_s cmd=("$G/launch_bench" "$LAUNCHES" 8) ;;
	mlp) key=ms_per_step cmd=("$PY" tests/gpu/bench_torch.py --model mlp --steps "$MLP_STEPS") ;;
	transformer) key=ms_per_step cmd=("$PY" tests/gpu/bench_torch.py --model transformer --steps "$TF_STEPS") ;;
	esac
	local rec=("$CUSCOPE" record -o "$T/b.cuscope")
	local lite=(--sample-hz 0 --osrt-threshold-us off --counters none)
	case $c in
	none) pre=() ;;
	floor) pre=(env "CUDA_INJECTION64_PATH=$G/libfloor_injector.so") ;;
	# The floor injector with every activity kind cuscope enables, from the start.
	floor-all) pre=(env "CUDA_INJECTION64_PATH=$G/libfloor_injector.so" FLOOR_KINDS=kernel,memcpy,memset,sync,overhead,device,context,stream) ;; # as up to commit 1d37f41
	cu-gpu) pre=(env CUSCOPE_CUDA_API=none CUSCOPE_NO_NVTX=1 "${rec[@]}" "${lite[@]}" --) ;;
	cu-api) pre=(env CUSCOPE_NO_NVTX=1 "${rec[@]}" "${lite[@]}" --) ;;
	cu-lite) pre=("${rec[@]}" "${lite[@]}" --) ;;
	cu-sample) pre=("${rec[@]}" --osrt-threshold-us off --counters none --) ;;
	cu-osrt) pre=("${rec[@]}" --counters none --) ;;
	cu-rtl) pre=(env CUSCOPE_CUDA_API=runtime-launch "${rec[@]}" "${lite[@]}" --) ;;
	cu-cb) pre=(env CUSCOPE_CUDA_API=callback "${rec[@]}" "${lite[@]}" --) ;;
	cu-cbrt) pre=(env CUSCOPE_CUDA_API=callback-runtime "${rec[@]}" "${lite[@]}" --) ;;
	cu-drv) pre=(env CUSCOPE_CUDA_API=driver "${rec[@]}" "${lite[@]}" --) ;;
	cu-act) pre=(env CUSCOPE_CUDA_API=activity "${rec[@]}" "${lite[@]}" --) ;;
	cu-ptid) pre=(env CUSCOPE_CUPTI_PTHREAD_IDS=1 "${rec[@]}" "${lite[@]}" --) ;;
	cu-drvl) pre=(env CUSCOPE_CUDA_API=driver-launch "${rec[@]}" "${lite[@]}" --) ;;
	cu-nosync) pre=(env CUSCOPE_GPU_KINDS_OFF=sync "${rec[@]}" "${lite[@]}" --) ;;
	cu-nocopy) pre=(env CUSCOPE_GPU_KINDS_OFF=memcpy,memset "${rec[@]}" "${lite[@]}" --) ;;
	# cu-gpu without one group of activity kinds.
	cu-gpu-nosync) pre=(env CUSCOPE_GPU_KINDS_OFF=sync CUSCOPE_CUDA_API=none CUSCOPE_NO_NVTX=1 "${rec[@]}" "${lite[@]}" --) ;;
	cu-gpu-nocopy) pre=(env CUSCOPE_GPU_KINDS_OFF=memcpy,memset CUSCOPE_CUDA_API=none CUSCOPE_NO_NVTX=1 "${rec[@]}" "${lite[@]}" --) ;;
	cu-nodrv) pre=(env CUSCOPE_CUDA_API=runtime "${rec[@]}" "${lite[@]}" --) ;;
	cu-f100) pre=(env CUSCOPE_FLUSH_MS=100 "${rec[@]}" "${lite[@]}" --) ;;
	cu-mono) pre=(env CUSCOPE_CUPTI_MONO_CLOCK=1 "${rec[@]}" "${lite[@]}" --) ;;
	# The floor injector's CUPTI under cuscope's preloaded collector with its GPU side off: what
	# cuscope's presence costs besides CUPTI (interposers, Python hook, threads), lite and defaults.
	cu-floor) pre=("${rec[@]}" "${lite[@]}" --no-gpu -- env "CUDA_INJECTION64_PATH=$G/libfloor_injector.so") ;;
	cu-floor-def) pre=("${rec[@]}" --no-gpu -- env "CUDA_INJECTION64_PATH=$G/libfloor_injector.so") ;;
	cu-kon-nosub) pre=(env CUSCOPE_KERNELS_ONLY=1 CUSCOPE_CUDA_API=none CUSCOPE_NO_NVTX=1 CUSCOPE_CUPTI_NO_SUBSCRIBE=1 "${rec[@]}" "${lite[@]}" --) ;;
	cu-kon) pre=(env CUSCOPE_KERNELS_ONLY=1 CUSCOPE_CUDA_API=none CUSCOPE_NO_NVTX=1 "${rec[@]}" "${lite[@]}" --) ;;
	cuscope) pre=("${rec[@]}" --) ;;
	cu-pre) pre=("$CUSCOPE_PRE" record -o "$T/b.cuscope" --) ;;
	cu-post) pre=("$CUSCOPE_POST" record -o "$T/b.cuscope" --) ;;
	cu-torch) pre=("${rec[@]}" --torch --) ;;
	cu-met) pre=("${rec[@]}" --gpu-metrics on --) ;;
	nsys) pre=("$NSYS" profile "--trace=cuda,nvtx" -o "$T/nsys-out" --force-overwrite true) ;;
	nsys-torch) pre=("$NSYS" profile "--trace=cuda,nvtx" --pytorch=autograd-nvtx -o "$T/nsys-out" --force-overwrite true) ;;
	*)
		echo "$w/$c: unknown configuration, not run" | tee -a "$T/notes"
		return
		;;
	esac
	wait_gpu_free
	# The loop below may read run.out before the new run's redirection truncates it: the previous
	# run's result line would count as this one's and kill it after BENCH_GRACE_S. Until the
	# redirection has made the new run.out there is none to read (grep -s).
	rm -f "$T/run.out" "$T/run.err"
	# PYTHONUNBUFFERED: the result line is read while the workload still runs (its teardown may be
	# killed after BENCH_GRACE_S); a block-buffered stdout would lose it.
	PYTHONUNBUFFERED=1 BENCH_T0_NS=$(date +%s%N) "${pre[@]}" "${cmd[@]}" >"$T/run.out" 2>"$T/run.err" </dev/null &
	pid=$!
	while kill -0 "$pid" 2>/dev/null; do
		i=$((i + 1))
		if [ "$seen" -lt 0 ] && grep -qs "^$key " "$T/run.out"; then
			seen=$i
		fi
		if [ "$i" -gt $((RUN_TIMEOUT * 5)) ] || { [ "$seen" -ge 0 ] && [ $((i - seen)) -gt $((GRACE * 5)) ]; }; then
			kill_tree "$pid"
			break
		fi
		sleep 0.2
	done
	wait "$pid" 2>/dev/null
	local rc=$? run_s
	run_s=$(awk -v i="$i" 'BEGIN { printf "%.1f", i * 0.2 }')
	val=$(sed -n "s/^$key \([0-9.][0-9.]*\).*/\1/p" "$T/run.out" | tail -n 1)
	# The collector's own estimate of what it added (info's cost line), to set beside the A/B figure.
	if [ -n "$val" ] && [ -f "$T/b.cuscope" ]; then
		local est
		# the process with the most events (a wrapper script may come first)
		est=$("$CUSCOPE" info "$T/b.cuscope" 2>/dev/null |
			sed -n 's/^  pid .*(\([0-9]*\) events.*/E \1/p; s/.*cost: .*est\. +\([0-9.]*\) %.*/C \1/p' |
			awk '$1 == "E" { ev = $2 } $1 == "C" && ev + 0 >= best + 0 { best = ev; est = $2 } END { if (est != "") print est }')
		[ -n "$est" ] && echo "$r $est" >>"$T/vals/$w.$c.est_pct"
	fi
	rm -rf "$T/b.cuscope" "$T"/nsys-out*
	if [ -n "$val" ]; then
		echo "$r $val" >>"$T/vals/$w.$c"
		local extra x
		for extra in first_step_s rss_mb gpu_used_mb; do
			x=$(sed -n "s/^$extra \([0-9.][0-9.]*\).*/\1/p" "$T/run.out" | tail -n 1)
			[ -n "$x" ] && echo "$r $x" >>"$T/vals/$w.$c.$extra"
		done
		printf '  %-11s %-8s %s\n' "$w" "$c" "$val"
	else
		echo "$w/$c: no $key line (exit status $rc after ~${run_s} s); stderr: $(grep -v '^[[:space:]]*$' "$T/run.err" | tail -n 2 | tr '\n' '|' | cut -c1-200)" | tee -a "$T/notes"
	fi
}

echo "GPU: $(nvidia-smi -L | head -n 1)"
echo "workloads: ${WORKLOADS[*]}; configs: ${CONFIGS[*]}; rounds: $ROUNDS; nsys: ${NSYS:-none}"
round_s=0
done_rounds=0
for ((r = 1; r <= ROUNDS; r++)); do
	elapsed=$((SECONDS - START))
	if [ "$r" -gt 1 ] && [ $((elapsed + round_s)) -gt "$BUDGET" ]; then
		echo "stopping after $done_rounds rounds: the next would pass the ${BUDGET}s budget" | tee -a "$T/notes"
		break
	fi
	t0=$SECONDS
	echo "round $r"
	for w in "${WORKLOADS[@]}"; do
		case $w in launch | launchx) [ ! -x "$G/launch_bench" ] && continue ;; esac
		# interleaved, with the order rotated each round so no config always runs first
		# BENCH_CONFIGS_<workload> narrows the configurations for one workload (e.g. floor only where
		# it is cheap to run), keeping the rotation.
		var=BENCH_CONFIGS_$w
		wcfgs=()
		for c in "${CONFIGS[@]}"; do
			if [ -z "${!var:-}" ] || [[ " ${!var} " == *" $c "* ]]; then
				wcfgs+=("$c")
			fi
		done
		n=${#wcfgs[@]}
		for ((k = 0; k < n; k++)); do
			run_one "$w" "${wcfgs[$(((k + r - 1) % n))]}"
		done
	done
	round_s=$((SECONDS - t0))
	done_rounds=$r
done

"$PY" - "$T/vals" "$T/notes" "$done_rounds" "$((SECONDS - START))" "${WORKLOADS[*]}" "${CONFIGS[*]}" <<'PY' | tee "$T/table"
import os, statistics, sys
vals, notes, rounds, secs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
works, cfgs = sys.argv[5].split(), sys.argv[6].split()
unit = {"launch": "launches/s", "launchx": "launches/s", "mlp": "ms/step", "transformer": "ms/step"}
def load(w, c):
    p = os.path.join(vals, "%s.%s" % (w, c))
    out = {}
    if os.path.exists(p):
        for line in open(p):
            r, v = line.split()
            out[int(r)] = float(v)
    return out
def quartiles(xs):
    xs = sorted(xs)
    if len(xs) < 2:
        return xs[0], xs[0]
    q = statistics.quantiles(xs, n=4, method="inclusive")
    return q[0], q[2]
print()
print("==== cuscope GPU overhead (%s rounds, %s s) ====" % (rounds, secs))
print("value: median and min-max of the workload's own timing. overhead: per round, (traced - none)/none")
print("of that round's time per launch or step (+ = slower); median over rounds and its interquartile range.")
print("%-12s %-13s %-11s %10s %23s %9s %17s" % ("workload", "config", "unit", "median", "min - max", "overhead", "IQR"))
for w in works:
    base = load(w, "none")
    for c in cfgs:
        v = load(w, c)
        if not v:
            print("%-12s %-13s %-11s %10s" % (w, c, unit.get(w, "?"), "n/a"))
            continue
        xs = list(v.values())
        m = statistics.median(xs)
        f = (lambda x: "%.0f" % x) if w.startswith("launch") else (lambda x: "%.3f" % x)
        ovs, iqr = "-", ""
        if c != "none":
            ov = []
            for r, x in v.items():
                if r in base:
                    b = base[r]
                    ov.append((b / x - 1) * 100 if w.startswith("launch") else (x / b - 1) * 100)
            if ov:
                ovs = "%+.1f%%" % statistics.median(ov)
                lo, hi = quartiles(ov)
                iqr = "[%+.1f, %+.1f]" % (lo, hi)
        print("%-12s %-13s %-11s %10s %10s - %-10s %9s %17s  (n=%d)" % (w, c, unit.get(w, "?"), f(m), f(min(xs)), f(max(xs)), ovs, iqr, len(xs)))
# What else a tracer adds: time to the first step (from exec, including the tracer's start-up),
# the process's peak RSS (an injected collector lives in it; nsys's own processes are not
# counted) and device memory in use at the end. Medians, and the difference to "none".
extras = [("first_step_s", "s"), ("rss_mb", "MB"), ("gpu_used_mb", "MB")]
print()
print("%-12s %-13s %22s %22s %22s" % ("workload", "config", "first step (s)", "peak RSS (MB)", "GPU memory (MB)"))
for w in works:
    for c in cfgs:
        cells = []
        for key, _ in extras:
            v = load(w, c + "." + key)
            b = load(w, "none." + key)
            if not v:
                cells.append("n/a")
                continue
            m = statistics.median(v.values())
            cell = "%.2f" % m if key == "first_step_s" else "%.0f" % m
            if c != "none" and b:
                d = m - statistics.median(b.values())
                cell += (" (%+.2f)" % d) if key == "first_step_s" else (" (%+.0f)" % d)
            cells.append(cell)
        if any(x != "n/a" for x in cells):
            print("%-12s %-13s %22s %22s %22s" % (w, c, cells[0], cells[1], cells[2]))
# The live estimate (cost rows / info: added time of the program's threads over the whole run,
# start-up included; CUPTI's time in the driver not counted) beside the A/B overhead.
for w in works:
    for c in cfgs:
        e = load(w, c + ".est_pct")
        if e:
            print("%-12s %-13s collector's own estimate: median +%.1f%% (n=%d)" % (w, c, statistics.median(e.values()), len(e)))
# Paired per round: the defaults' overhead minus nsys's, in points (negative = cheaper than nsys).
for w in works:
    base, cu, ns = load(w, "none"), load(w, "cuscope"), load(w, "nsys")
    d = []
    for r in cu:
        if r in base and r in ns:
            b = base[r]
            if w.startswith("launch"):
                d.append((b / cu[r] - b / ns[r]) * 100)
            else:
                d.append((cu[r] - ns[r]) / b * 100)
    if d:
        lo, hi = quartiles(d)
        print("%-12s defaults - nsys, per round: median %+.1f points, IQR [%+.1f, %+.1f], %d of %d rounds cheaper than nsys"
              % (w, statistics.median(d), lo, hi, sum(1 for x in d if x <= 0), len(d)))
text = open(notes).read().strip()
if text:
    print("notes:")
    for line in text.splitlines():
        print("  " + line)
PY
if [ -n "${OUT:-}" ] && mkdir -p "$OUT" 2>/dev/null; then
	cp "$T/table" "$OUT/gpu-bench.txt"
fi
exit 0
