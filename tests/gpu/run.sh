#!/usr/bin/env bash
# GPU tests (CUPTI kernels, memcpy, memset, sync, streams, graphs, PyTorch, fork, another CUPTI
# client, live UI). They run only where a GPU answers nvidia-smi; elsewhere this prints a visible
# "SKIP: no GPU" and exits 77. See tests/gpu/README.md for what each check asserts.
#
# usage: tests/gpu/run.sh [SUBSTRING...]   only checks whose name contains one of the substrings
# Environment: BUILD (default build), CUSCOPE (default $BUILD/bin/cuscope), PYTHON (default
# python3), GPU_TEST_BUDGET_S (total seconds, default 450; each check's timeout is cut to what is
# left), OUT (if set, logs, stats JSON and the UI captures are copied to $OUT/gpu-tests/),
# CUSCOPE_KEEP=1 (keep the temporary directory), GPU_KEEP_CAPS=1 (with OUT: the captures too), GPU_LANE_RE (regex of a GPU lane label, default
# 'GPU ?0').
# Ends with a table, one line per check: name, PASS/FAIL/SKIP, numbers or reason; exits 1 on any
# FAIL, else 0.
set -u

# The settings every check reads (also when a test sources this file to run one check).
gpu_init()
{
	ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
	BUILD=${BUILD:-build}
	case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
	CUSCOPE=${CUSCOPE:-$BUILD/bin/cuscope}
	G=$BUILD/tests/gpu
	PY=${PYTHON:-python3}
	BUDGET=${GPU_TEST_BUDGET_S:-450}
	LANE_RE=${GPU_LANE_RE:-GPU ?0}
	CHECK="$PY $ROOT/tests/gpu/check.py"
	START=$SECONDS
	TMUX_SOCK=cuscope-gpu-$$
	TMUX_USED=0
	RES_NAME=() RES_STATUS=() RES_INFO=()
}

cleanup()
{
	if [ "$TMUX_USED" = 1 ]; then
		tmux -L "$TMUX_SOCK" kill-server 2>/dev/null
	fi
	if [ -n "${OUT:-}" ] && mkdir -p "$OUT/gpu-tests" 2>/dev/null; then
		local f
		for f in "$T"/*.out "$T"/*.err "$T"/*.json "$T"/*.txt; do
			[ -f "$f" ] && head -c 2000000 "$f" >"$OUT/gpu-tests/$(basename "$f")"
		done
		# GPU_KEEP_CAPS=1: the captures too (whole, or not at all: a cut capture does not read).
		if [ "${GPU_KEEP_CAPS:-0}" = 1 ]; then
			for f in "$T"/*.cap; do
				[ -f "$f" ] && [ "$(stat -c %s "$f")" -le 30000000 ] && cp "$f" "$OUT/gpu-tests/"
			done
		fi
	fi
	if [ "${CUSCOPE_KEEP:-0}" = 1 ]; then
		echo "kept $T" >&2
	else
		rm -rf "$T"
	fi
}

selected()
{
	local f
	[ "${#FILTERS[@]}" = 0 ] && return 0
	for f in "${FILTERS[@]}"; do
		case $1 in *"$f"*) return 0 ;; esac
	done
	return 1
}

# result NAME STATUS INFO: records one table line (and prints it right away).
result()
{
	RES_NAME+=("$1")
	RES_STATUS+=("$2")
	RES_INFO+=("$3")
	printf '%-5s %-16s %s\n' "$2" "$1" "$3"
}

# tail_of FILE: the last non-empty lines of FILE on one line, for a FAIL reason.
tail_of()
{
	local t
	t=$(grep -v '^[[:space:]]*$' "$1" 2>/dev/null | tail -n 3 | tr '\n' '|' | cut -c1-300)
	echo "${t:-(no output)}"
}

left()
{
	echo $((BUDGET - (SECONDS - START)))
}

# limit SECONDS: SECONDS cut to the time left in the budget (minus a margin).
limit()
{
	local l
	l=$(($(left) - 10))
	[ "$l" -lt "$1" ] && echo "$l" || echo "$1"
}

descendants()
{
	local c
	for c in $(pgrep -P "$1" 2>/dev/null); do
		echo "$c"
		descendants "$c"
	done
}

# kill_tree PID: TERM, then KILL, to PID and every descendant (collected first, by pid).
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

# run_limited SECONDS OUTFILE ERRFILE CMD...: runs CMD with stdin /dev/null; sets RC (124 after
# killing the whole process tree when it runs past SECONDS).
run_limited()
{
	local lim=$1 out=$2 err=$3 pid i=0
	shift 3
	"$@" >"$out" 2>"$err" </dev/null &
	pid=$!
	while kill -0 "$pid" 2>/dev/null; do
		i=$((i + 1))
		if [ "$i" -gt $((lim * 5)) ]; then
			kill_tree "$pid"
			wait "$pid" 2>/dev/null
			RC=124
			return 0
		fi
		sleep 0.2
	done
	wait "$pid"
	RC=$?
}

# rec NAME SECONDS CMD...: cuscope record -o $T/NAME.cap -- CMD; $T/NAME.out/.err; sets RC.
rec()
{
	local name=$1 lim
	lim=$(limit "$2")
	shift 2
	REC_LIMIT=$lim
	run_limited "$lim" "$T/$name.out" "$T/$name.err" "$CUSCOPE" record -o "$T/$name.cap" -- "$@"
}

# stats NAME: $T/NAME.cap -> $T/NAME.json; returns 1 (and records a FAIL for NAME) on error.
stats()
{
	local rc=0
	if [ ! -s "$T/$1.cap" ]; then
		result "$1" FAIL "no capture written (record exit $RC): $(tail_of "$T/$1.err")"
		return 1
	fi
	timeout -k 5 60 "$CUSCOPE" stats --format=json "$T/$1.cap" >"$T/$1.json" 2>"$T/$1.json.err" || rc=$?
	if [ "$rc" != 0 ]; then
		result "$1" FAIL "cuscope stats --format=json exited $rc: $(tail_of "$T/$1.json.err")"
		return 1
	fi
}

# verdict NAME CHECK ARGS...: runs check.py and records its PASS/FAIL/SKIP line.
verdict()
{
	local name=$1 line status rc=0
	shift
	# shellcheck disable=SC2086 # CHECK is "python check.py"
	timeout 60 $CHECK "$@" >"$T/$name.check" 2>&1 || rc=$?
	line=$(grep -v '^[[:space:]]*$' "$T/$name.check" | tail -n 1)
	status=${line%%$'\t'*}
	case $status in
	PASS | FAIL | SKIP) result "$name" "$status" "${line#*$'\t'}" ;;
	*) result "$name" FAIL "check.py gave no verdict (exit $rc$([ "$rc" = 124 ] && echo ", timed out after 60 s")): $(tail_of "$T/$name.check")" ;;
	esac
}

# record_ok NAME [WANT_RC]: records a FAIL and returns 1 when the record timed out or exited
# other than WANT_RC (default 0; "any" accepts every exit status).
record_ok()
{
	local want=${2:-0}
	if [ "$RC" = 124 ]; then
		result "$1" FAIL "cuscope record ran past ${REC_LIMIT}s (hang?): $(tail_of "$T/$1.err")"
		return 1
	fi
	if [ "$want" != any ] && [ "$RC" != "$want" ]; then
		result "$1" FAIL "cuscope record exited $RC, want $want: $(tail_of "$T/$1.err")"
		return 1
	fi
}

need_bin()
{
	if [ ! -x "$G/$2" ]; then
		result "$1" FAIL "$G/$2 not built (run tests/gpu/build.sh on the build machine)"
		return 1
	fi
}

# need_python NAME: records a SKIP and returns 1 when $PY is not there.
need_python()
{
	if ! command -v "$PY" >/dev/null 2>&1; then
		result "$1" SKIP "$PY not found (set PYTHON to an interpreter)"
		return 1
	fi
}

need_torch()
{
	need_python "$1" || return 1
	if ! "$PY" -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec("torch") is None)' 2>/dev/null; then
		result "$1" SKIP "$PY has no torch"
		return 1
	fi
}

# ---- checks ------------------------------------------------------------------------------------

check_counts()
{
	need_bin counts cuda_counts || return
	rec counts 60 "$G/cuda_counts"
	record_ok counts || return
	stats counts || return
	verdict counts counts "$T/counts.json" "$T/counts.out"
}

# CUPTI's records on the collector's clock: cuda_counts' calls and operations lie within the span
# the program measured on CLOCK_MONOTONIC, and none starts before its launching call
# (tests/gpu/clock_check.py). Reuses the counts capture when that check ran.
check_clock()
{
	local rc=0 name=counts
	if [ ! -f "$T/counts.cap" ]; then
		need_bin clock cuda_counts || return
		name=clock
		rec clock 60 "$G/cuda_counts"
		record_ok clock || return
	fi
	timeout -k 5 120 "$CUSCOPE" export -o "$T/clock.trace.json" "$T/$name.cap" 2>"$T/clock.export.err" || rc=$?
	if [ "$rc" != 0 ]; then
		result clock FAIL "cuscope export of the capture exited $rc: $(tail_of "$T/clock.export.err")"
		return
	fi
	local CHECK="$PY $ROOT/tests/gpu/clock_check.py"
	verdict clock "$T/clock.trace.json" "$T/$name.out"
	rm -f "$T/clock.trace.json"
}

check_graph()
{
	need_bin graph cuda_graph || return
	rec graph 60 "$G/cuda_graph"
	record_ok graph || return
	stats graph || return
	verdict graph graph "$T/graph.json" "$T/graph.out"
}

check_torch_nvtx()
{
	need_torch torch_nvtx || return
	rec torch_nvtx 90 "$PY" tests/gpu/torch_loop.py --steps 20
	record_ok torch_nvtx || return
	stats torch_nvtx || return
	verdict torch_nvtx torch_nvtx "$T/torch_nvtx.json" "$T/torch_nvtx.out"
}

# Steps without annotations: the MLP loop without NVTX (tests/gpu/torch_steps.py: a periodic eval, a
# logging sync): stats' nvtx section has one "step" row in domain "inferred" counting the loop's steps +- 1.
check_torch_steps()
{
	need_torch torch_steps || return
	rec torch_steps 90 "$PY" tests/gpu/torch_steps.py --steps 30
	record_ok torch_steps || return
	stats torch_steps || return
	verdict torch_steps torch_steps "$T/torch_steps.json" "$T/torch_steps.out" "$T/torch_steps.err" "$RC"
}

# --torch on the launch-bound MLP (tests/gpu/bench_torch.py): stats lists PyTorch's operators
# (aten::linear, aten::addmm: 8 a step, exact) and the backward ones, and kernels are linked to the
# operator whose launch call they came from (the JSON export's launch flows start inside an
# operator's range). The operator table goes to $T/torch_ops.table.txt (and to $OUT).
check_torch_ops()
{
	need_torch torch_ops || return
	local warmup=5 steps=50 lim rc=0
	lim=$(limit 150)
	REC_LIMIT=$lim
	run_limited "$lim" "$T/torch_ops.out" "$T/torch_ops.err" "$CUSCOPE" record --torch -o "$T/torch_ops.cap" -- \
		"$PY" "$ROOT/tests/gpu/bench_torch.py" --model mlp --steps "$steps" --warmup "$warmup"
	record_ok torch_ops || return
	stats torch_ops || return
	timeout -k 5 120 "$CUSCOPE" export -o "$T/torch_ops.trace.json" "$T/torch_ops.cap" 2>"$T/torch_ops.export.err" || rc=$?
	if [ "$rc" != 0 ]; then
		result torch_ops FAIL "cuscope export of the capture exited $rc: $(tail_of "$T/torch_ops.export.err")"
		return
	fi
	# The first step, the warm-up and the timed steps all run under the ranges.
	local CHECK="$PY $ROOT/tests/gpu/torch_ops_check.py"
	verdict torch_ops "$T/torch_ops.json" "$T/torch_ops.out" "$T/torch_ops.err" "$T/torch_ops.trace.json" \
		$((1 + warmup + steps)) "$T/torch_ops.table.txt"
	rm -f "$T/torch_ops.trace.json"
}

# Two ranks of a DDP job on one GPU (gloo: NCCL refuses two ranks on one GPU), started by torchrun
# under cuscope record: stats' ranks section has both ranks with their steps, and each rank's
# kernels (its pid's streams) equal what torch.profiler alone saw in a separate run of the same
# seeded script (tests/gpu/ddp_ranks.py, tests/gpu/ranks_check.py).
check_ranks_gloo()
{
	need_torch ranks_gloo || return
	local lim steps=10
	lim=$(limit 150)
	run_limited "$lim" "$T/ranks_prof.out" "$T/ranks_prof.err" "$PY" -m torch.distributed.run \
		--nproc-per-node 2 --master-port 29531 "$ROOT/tests/gpu/ddp_ranks.py" --backend gloo --steps "$steps" --profile
	if [ "$RC" != 0 ]; then
		result ranks_gloo FAIL "the torch.profiler run exited $RC: $(tail_of "$T/ranks_prof.err")"
		return
	fi
	rec ranks_gloo 180 "$PY" -m torch.distributed.run --nproc-per-node 2 --master-port 29532 \
		"$ROOT/tests/gpu/ddp_ranks.py" --backend gloo --steps "$steps"
	record_ok ranks_gloo || return
	stats ranks_gloo || return
	local CHECK="$PY $ROOT/tests/gpu/ranks_check.py"
	verdict ranks_gloo gloo "$T/ranks_gloo.json" "$T/ranks_gloo.out" "$T/ranks_prof.out"
}

# A world-size-1 NCCL process group under cuscope record: NCCL's NVTX ranges (domain NCCL) by
# name with their payload fields decoded (export args), and NCCL's kernels.
check_nccl_payload()
{
	need_torch nccl_payload || return
	local rc=0
	REC_LIMIT=$(limit 120)
	run_limited "$REC_LIMIT" "$T/nccl_payload.out" "$T/nccl_payload.err" env RANK=0 WORLD_SIZE=1 \
		MASTER_ADDR=127.0.0.1 MASTER_PORT=29533 NCCL_NVLS_ENABLE=0 "$CUSCOPE" record \
		-o "$T/nccl_payload.cap" -- "$PY" "$ROOT/tests/gpu/ddp_ranks.py" --backend nccl --steps 5
	record_ok nccl_payload || return
	stats nccl_payload || return
	timeout -k 5 120 "$CUSCOPE" export -o "$T/nccl_payload.trace.json" "$T/nccl_payload.cap" \
		2>"$T/nccl_payload.export.err" || rc=$?
	if [ "$rc" != 0 ]; then
		result nccl_payload FAIL "cuscope export exited $rc: $(tail_of "$T/nccl_payload.export.err")"
		return
	fi
	local CHECK="$PY $ROOT/tests/gpu/ranks_check.py"
	verdict nccl_payload nccl "$T/nccl_payload.json" "$T/nccl_payload.trace.json" "$T/nccl_payload.out"
	rm -f "$T/nccl_payload.trace.json"
}

# torch.profiler in a separate process afterwards (not under cuscope) still records CUDA kernels.
check_torch_profiler()
{
	need_torch torch_profiler || return
	run_limited "$(limit 90)" "$T/torch_profiler.out" "$T/torch_profiler.err" "$PY" tests/gpu/torch_profiler_check.py
	if [ "$RC" != 0 ]; then
		result torch_profiler FAIL "torch_profiler_check.py exited $RC: $(tail_of "$T/torch_profiler.err")"
		return
	fi
	verdict torch_profiler profiler "$T/torch_profiler.out"
}

check_dataloader()
{
	need_torch dataloader || return
	rec dataloader 120 "$PY" tests/gpu/torch_dataloader.py
	record_ok dataloader || return
	stats dataloader || return
	verdict dataloader dataloader "$T/dataloader.json" "$T/dataloader.out" "$T/dataloader.err" "$RC"
}

# Triggers on a real GPU: two planted idle stretches (the host sleeps 0.3 s after a synchronize);
# gpu-idle>100ms and gap-explained:sleep each fire within 2 ms of the instants the workload printed.
check_triggers()
{
	need_torch triggers || return
	local lim
	lim=$(limit 120)
	REC_LIMIT=$lim
	run_limited "$lim" "$T/triggers.out" "$T/triggers.err" "$CUSCOPE" record -o "$T/triggers.cap" --gap-ms 20 \
		--trigger 'gpu-idle>100ms' --trigger 'gap-explained:sleep' -- "$PY" tests/gpu/torch_trigger.py
	record_ok triggers || return
	stats triggers || return
	sed -n 's/^explained /crossing /p; /^pid /p' "$T/triggers.out" >"$T/triggers.explained"
	if ! "$PY" tests/runtime/trigger_check.py "$T/triggers.json" "$T/triggers.out" 'gpu-idle>100ms' \
		>"$T/triggers.check" 2>&1; then
		result triggers FAIL "gpu-idle>100ms: $(tail_of "$T/triggers.check")"
	elif ! "$PY" tests/runtime/trigger_check.py "$T/triggers.json" "$T/triggers.explained" \
		'gap-explained:sleep' >"$T/triggers.check" 2>&1; then
		result triggers FAIL "gap-explained:sleep: $(tail_of "$T/triggers.check")"
	else
		result triggers PASS "$(grep -c '"expr"' "$T/triggers.json") firings, each planted one within 2 ms"
	fi
}

# Another CUPTI client in the same process: any exit status is passed on to check.py, which wants
# the program's own.
rival()
{
	local name=$1
	shift
	rec "$name" 90 "$@"
	record_ok "$name" any || return
	stats "$name" || return
	verdict "$name" rival "$T/$name.json" "$T/$name.out" "$T/$name.err" "$RC"
}

check_rival_torch_pf()
{
	need_torch rival_torch_pf || return
	rival rival_torch_pf "$PY" tests/gpu/torch_rival.py --order profiler-first --exit 3
}

check_rival_torch_cf()
{
	need_torch rival_torch_cf || return
	rival rival_torch_cf "$PY" tests/gpu/torch_rival.py --order cuda-first --exit 4
}

check_rival_cupti()
{
	need_bin rival_cupti cupti_rival || return
	rival rival_cupti "$G/cupti_rival"
}

tm()
{
	tmux -L "$TMUX_SOCK" -f /dev/null "$@"
}

# Live UI under tmux: a GPU lane label is visible and the lane content changes within a second.
# GPU hardware metrics (CUPTI PM sampling) on a bf16 GEMM loop then a sleep loop
# (tests/gpu/pm_gemm.py): a tensor-pipe metric reads >= 20 % in the GEMM phase and >= 10x the
# sleep phase's value; refused, the check SKIPs with the collector's reason after checking the
# fallback it used (tests/gpu/pm_check.py). Its line lists every metric's two averages and the
# collector's cost for them. Then two processes on the one GPU: its metrics come from one of them.
check_gpu_metrics()
{
	need_torch gpu_metrics || return
	# PYTHONFAULTHANDLER: a crash of the program prints where its threads were.
	CUSCOPE_GPU_METRICS=on PYTHONFAULTHANDLER=1 rec gpu_metrics 90 "$PY" "$ROOT/tests/gpu/pm_gemm.py"
	record_ok gpu_metrics || return
	stats gpu_metrics || return
	local rc=0
	timeout -k 5 120 "$CUSCOPE" export -o "$T/gpu_metrics.trace.json" "$T/gpu_metrics.cap" 2>"$T/gpu_metrics.export.err" || rc=$?
	if [ "$rc" != 0 ]; then
		result gpu_metrics FAIL "cuscope export of the capture exited $rc: $(tail_of "$T/gpu_metrics.export.err")"
		return
	fi
	local CHECK="$PY $ROOT/tests/gpu/pm_check.py"
	verdict gpu_metrics "$T/gpu_metrics.trace.json" "$T/gpu_metrics.json" "$T/gpu_metrics.out" "$T/gpu_metrics.err"
	# A second rank on the same GPU: one sampler at a time (the first to take the GPU's lock; the
	# other takes over only once it ended).
	CUSCOPE_GPU_METRICS=on PYTHONFAULTHANDLER=1 rec gpu_metrics_one 90 bash -c "'$PY' '$ROOT/tests/gpu/pm_gemm.py' --seconds 1 & '$PY' '$ROOT/tests/gpu/pm_gemm.py' --seconds 1; wait"
	record_ok gpu_metrics_one || return
	rc=0
	timeout -k 5 120 "$CUSCOPE" export -o "$T/gpu_metrics_one.trace.json" "$T/gpu_metrics_one.cap" 2>"$T/gpu_metrics_one.export.err" || rc=$?
	if [ "$rc" != 0 ]; then
		result gpu_metrics_one FAIL "cuscope export exited $rc: $(tail_of "$T/gpu_metrics_one.export.err")"
		return
	fi
	local verdict
	verdict=$("$PY" -c 'import json,sys
t=json.load(open(sys.argv[1]))
span={}
for e in t["traceEvents"]:
    if e.get("ph")=="C" and e.get("name","").startswith("GPU0 "):
        a,b=span.get(e["pid"],(e["ts"],e["ts"]))
        span[e["pid"]]=(min(a,e["ts"]),max(b,e["ts"]))
s=sorted(span.items(),key=lambda x:x[1])
over=[(p,q) for (p,(a,b)),(q,(c,d)) in zip(s,s[1:]) if c<b]
print("none" if not s else ("overlap %r" % (span,)) if over else "ok "+" then ".join(str(p) for p,_ in s))' "$T/gpu_metrics_one.trace.json")
	case $verdict in
	none) result gpu_metrics_one SKIP "no GPU metric samples (see gpu_metrics): $(grep -m1 'GPU metrics' "$T/gpu_metrics_one.err")" ;;
	ok*) result gpu_metrics_one PASS "GPU0's metrics from one process at a time: pid ${verdict#ok }" ;;
	*) result gpu_metrics_one FAIL "two processes sampled GPU0 at once: $verdict" ;;
	esac
	rm -f "$T/gpu_metrics.trace.json" "$T/gpu_metrics_one.trace.json"
}

check_tui()
{
	local i found=0 pane lim a b latency
	if ! command -v tmux >/dev/null 2>&1; then
		result tui SKIP "no tmux"
		return
	fi
	need_torch tui || return
	lim=$(limit 60)
	TMUX_USED=1
	if ! tm new-session -d -s t -x 160 -y 50 \
		"cd '$ROOT' && CUSCOPE_LATENCY=1 '$CUSCOPE' -- $PY tests/gpu/torch_loop.py --seconds 8 2>'$T/tui.err'; echo EXIT=\$? >'$T/tui.exit'; sleep 120"; then
		result tui FAIL "tmux new-session failed"
		return
	fi
	for ((i = 0; i < lim * 4; i++)); do
		if tm capture-pane -p -t t 2>/dev/null | grep -qE -- "$LANE_RE"; then
			found=1
			break
		fi
		[ -s "$T/tui.exit" ] && break
		sleep 0.25
	done
	# The first GPU line is the model's upload; cuBLAS start-up (seconds) follows. Wait until the
	# status line reports GPU records arriving now, then compare two captures a second apart.
	# Kernels have started once a stream lane other than the upload-only "cpy" one exists.
	for ((i = 0; i < 120; i++)); do
		tm capture-pane -p -t t 2>/dev/null | grep -qE 'GPU0 (default|s[0-9]+) +│' && break
		sleep 0.25
	done
	sleep 0.5
	tm capture-pane -p -t t >"$T/tui_capture1.txt" 2>/dev/null
	sleep 1
	tm capture-pane -p -t t >"$T/tui_capture2.txt" 2>/dev/null
	# After the workload ends the picture stays until q; q then prints the latency report.
	for ((i = 0; i < 60; i++)); do
		tm capture-pane -p -t t 2>/dev/null | grep -q 'EXITED' && break
		sleep 0.5
	done
	tm send-keys -t t q 2>/dev/null
	for ((i = 0; i < 20; i++)); do
		[ -s "$T/tui.exit" ] && break
		sleep 0.25
	done
	latency=$(grep -o 'p50 .*' "$T/tui.err" 2>/dev/null | head -n 1)
	echo "tui: event-to-screen latency: ${latency:-not reported} ($(cat "$T/tui.exit" 2>/dev/null))"
	[ -n "${OUT:-}" ] && cp "$T"/tui_capture*.txt "$T/tui.err" "$OUT/" 2>/dev/null
	pane=$(tm display-message -p -t t '#{pane_pid}' 2>/dev/null)
	[ -n "$pane" ] && kill_tree "$pane"
	tm kill-server 2>/dev/null
	TMUX_USED=0
	echo "---- tui capture 1 ----"
	awk 'NF { for (; n > 0; n--) print ""; print; next } { n++ }' "$T/tui_capture1.txt"
	echo "---- tui capture 2 (1 s later) ----"
	awk 'NF { for (; n > 0; n--) print ""; print; next } { n++ }' "$T/tui_capture2.txt"
	echo "----"
	if [ "$found" != 1 ]; then
		result tui FAIL "no GPU lane label /$LANE_RE/ on screen within ${lim}s$([ -s "$T/tui.exit" ] && echo " (cuscope exited: $(cat "$T/tui.exit"))")"
		return
	fi
	# Stream lanes only: the device header's percentages can legitimately stay the same.
	a=$(grep -E -- "$LANE_RE" "$T/tui_capture1.txt" | grep '│' | grep -v '▾')
	b=$(grep -E -- "$LANE_RE" "$T/tui_capture2.txt" | grep '│' | grep -v '▾')
	if [ -z "$b" ]; then
		result tui FAIL "GPU lane label gone in the second capture"
	elif [ "$a" = "$b" ]; then
		result tui FAIL "GPU lane lines identical 1 s apart (not live?): $(echo "$a" | head -n 1 | tr -s ' ' | cut -c1-120)"
	else
		result tui PASS "gpu_lane_lines=$(echo "$b" | wc -l) changed_in_1s=yes latency=${latency:-n/a}"
	fi
}

# export_times NAME: exports $T/NAME.cap and prints "KERNELS FIRST_KERNEL FIRST LAST" (µs; -1
# when none); on failure prints the reason in words and returns 1.
export_times()
{
	local rc=0
	if [ ! -s "$T/$1.cap" ]; then
		echo "no capture $1.cap was written"
		return 1
	fi
	"$CUSCOPE" export -o "$T/$1.trace.json" "$T/$1.cap" 2>"$T/$1.export.err" || rc=$?
	if [ "$rc" != 0 ]; then
		echo "cuscope export of $1.cap exited $rc: $(tail_of "$T/$1.export.err")"
		return 1
	fi
	if ! "$PY" - "$T/$1.trace.json" 2>"$T/$1.times.err" <<'EOF'; then
import json, sys
ev = json.load(open(sys.argv[1]))
ev = ev["traceEvents"] if isinstance(ev, dict) else ev
ts = [e["ts"] for e in ev if "ts" in e and e.get("ph") in ("X", "B", "i")]
kern = [e["ts"] for e in ev if e.get("ph") == "X" and "grid" in str(e.get("args", {}))]
print(len(kern), min(kern) if kern else -1, min(ts) if ts else -1, max(ts) if ts else -1)
EOF
		echo "reading the export of $1.cap failed: $(tail_of "$T/$1.times.err")"
		return 1
	fi
}

# Attach to a PyTorch loop started without cuscope after CUDA is up: kernels within a second of
# the attach, the loop unharmed (same final loss as an unattached run), and a second attach works.
check_attach()
{
	need_torch attach || return
	local lim pid i k first_k first last loss0 loss1 ref_rc t1 t2 k2
	lim=$(limit 150)
	run_limited "$lim" "$T/attach_ref.out" "$T/attach_ref.err" "$PY" tests/gpu/torch_loop.py --steps 250 --sleep-ms 20
	ref_rc=$RC
	loss0=$(grep '^loss' "$T/attach_ref.out")
	"$PY" tests/gpu/torch_loop.py --steps 250 --sleep-ms 20 >"$T/attach_tgt.out" 2>"$T/attach_tgt.err" </dev/null &
	pid=$!
	for ((i = 0; i < 300; i++)); do
		grep -q '^cuda up' "$T/attach_tgt.out" 2>/dev/null && break
		sleep 0.1
	done
	run_limited 30 "$T/attach1.out" "$T/attach1.err" "$CUSCOPE" attach --record -o "$T/attach1.cap" --duration 2 "$pid"
	local rc1=$RC
	run_limited 30 "$T/attach2.out" "$T/attach2.err" "$CUSCOPE" attach --record -o "$T/attach2.cap" --duration 1 "$pid"
	local rc2=$RC
	wait "$pid"
	local tgt_rc=$?
	loss1=$(grep '^loss' "$T/attach_tgt.out")
	if [ -z "$loss0" ]; then
		result attach FAIL "the unattached reference run printed no loss line (exit $ref_rc): $(tail_of "$T/attach_ref.err")"
	elif [ "$rc1" != 0 ] || [ "$rc2" != 0 ]; then
		result attach FAIL "attach exited $rc1 / $rc2: $(tail_of "$T/attach1.err") $(tail_of "$T/attach2.err")"
	elif [ "$tgt_rc" != 0 ] || [ -z "$loss1" ]; then
		result attach FAIL "the attached loop exited $tgt_rc without its loss line: $(tail_of "$T/attach_tgt.err")"
	elif [ "$loss0" != "$loss1" ]; then
		result attach FAIL "the attached loop computed '$loss1', unattached '$loss0' (attach changed the result)"
	elif ! t1=$(export_times attach1); then
		result attach FAIL "first attach: $t1"
	elif ! t2=$(export_times attach2); then
		result attach FAIL "second attach: $t2"
	else
		read -r k first_k first last <<<"$t1"
		read -r k2 _ <<<"$t2"
		if [ "$k" -lt 1 ] || [ "$k2" -lt 1 ]; then
			result attach FAIL "no kernels recorded after attach: first attach $k, second $k2 (GPU tracing did not start?)"
		else
			local lag
			lag=$("$PY" -c "print('%.0f' % (($first_k - $first) / 1000.0))")
			if [ "$lag" -gt 1000 ]; then
				result attach FAIL "first kernel ${lag} ms after the attach began (want <= 1000)"
			else
				result attach PASS "kernels=$k (re-attach $k2) first_kernel_after=${lag}ms $loss1 (same as unattached)"
			fi
		fi
	fi
}

# An armed run (cuscope run --detached): an attach shows the seconds before it.
check_attach_armed()
{
	need_torch attach_armed || return
	local out pid k first_k first last span times
	out=$("$CUSCOPE" run --detached -- "$PY" tests/gpu/torch_loop.py --seconds 20 2>&1)
	pid=$(echo "$out" | sed -n 's/^pid \([0-9]*\) armed.*/\1/p')
	local log i
	log=$(echo "$out" | sed -n 's/.*output in \([^ ]*\).*/\1/p')
	if [ -z "$pid" ]; then
		result attach_armed FAIL "run --detached printed no 'pid N armed' line: $(echo "$out" | head -n 2 | tr '\n' '|')"
		return
	fi
	# CUDA and cuBLAS start-up take seconds: let the loop run 4 s unwatched, then attach.
	for ((i = 0; i < 600; i++)); do
		grep -q '^cuda up' "$log" 2>/dev/null && break
		sleep 0.1
	done
	sleep 4
	run_limited 30 "$T/armed.out" "$T/armed.err" "$CUSCOPE" attach --record -o "$T/armed.cap" --duration 2 "$pid"
	local rc=$RC
	kill_tree "$pid" >/dev/null 2>&1
	if [ "$rc" != 0 ]; then
		result attach_armed FAIL "attach exited $rc: $(tail_of "$T/armed.err")"
		return
	fi
	if ! times=$(export_times armed); then
		result attach_armed FAIL "$times"
		return
	fi
	read -r k first_k first last <<<"$times"
	if [ "${first%%.*}" -lt 0 ]; then
		result attach_armed FAIL "the attach capture holds no timed events"
		return
	fi
	span=$("$PY" -c "print('%.1f' % (($last - $first) / 1e6))")
	if "$PY" -c "import sys; sys.exit(0 if $span >= 5.0 else 1)"; then
		result attach_armed PASS "capture spans ${span}s for a 2 s attach (flight recorder), kernels=$k"
	else
		result attach_armed FAIL "capture spans only ${span}s: the seconds before the attach are missing"
	fi
}

# Python >= 3.12 with perf trampolines (--python-perf): samples name the Python function. The
# stacks are read by $BUILD/tests/stack_grep (built with `make tests-build`; it must run here).
check_python_perf()
{
	local grep_bin=$BUILD/tests/stack_grep version
	need_python python_perf || return
	if ! version=$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2]); sys.exit(0 if sys.version_info >= (3, 12) else 1)' 2>&1); then
		case $version in
		[0-9].[0-9]*) result python_perf SKIP "$PY is Python $version, older than 3.12 (no perf trampolines)" ;;
		*) result python_perf FAIL "$PY does not run: $(echo "$version" | tail -n 1 | cut -c1-200)" ;;
		esac
		return
	fi
	if [ ! -x "$grep_bin" ]; then
		result python_perf FAIL "helper $grep_bin not built (make tests-build), so the stacks cannot be read"
		return
	fi
	run_limited "$(limit 60)" "$T/pyperf.out" "$T/pyperf.err" "$CUSCOPE" record --python-perf -o "$T/pyperf.cap" -- \
		"$PY" "$ROOT/tests/gpu/py_hot.py" 2
	if [ "$RC" = 124 ]; then
		result python_perf FAIL "cuscope record of py_hot.py ran past its time limit: $(tail_of "$T/pyperf.err")"
		return
	fi
	if [ "$RC" != 0 ]; then
		result python_perf FAIL "cuscope record of py_hot.py exited $RC: $(tail_of "$T/pyperf.err")"
		return
	fi
	local hits total fn rc=0 extra
	# Stacks, not just leaves: the leaf of a Python sample is the interpreter loop.
	# Run by bash (not through timeout's execvp, which hands a foreign binary to /bin/sh), so a
	# helper this host cannot run ends 126 and one missing a library 127.
	run_limited 60 "$T/pyperf.grep" "$T/pyperf.grep.err" "$grep_bin" "$T/pyperf.cap" cuscope_py_hot
	rc=$RC
	if [ "$rc" != 0 ]; then
		local why
		case $rc in
		124) why="timed out after 60 s" ;;
		126) why="cannot be executed on this host (another architecture, or not a program)" ;;
		127) why="cannot start (a library it needs is missing here?)" ;;
		*) why="exited $rc" ;;
		esac
		result python_perf FAIL "helper $(basename "$grep_bin") $why: $(tail_of "$T/pyperf.grep.err")"
		return
	fi
	read -r hits total fn extra <"$T/pyperf.grep"
	if ! [[ $hits =~ ^[0-9]+$ && $total =~ ^[0-9]+$ && -n $fn && -z $extra ]]; then
		result python_perf FAIL "helper $(basename "$grep_bin") printed '$(head -c 200 "$T/pyperf.grep" | tr '\n' '|')', not 'MATCHING TOTAL FUNCTION'"
	elif [ "$total" = 0 ]; then
		result python_perf FAIL "the capture holds no CPU samples (sampling off or refused?): $(tail_of "$T/pyperf.err")"
	elif [ "$hits" -gt 0 ] && [ "$hits" -ge $((total / 2)) ]; then
		result python_perf PASS "samples with cuscope_py_hot on the stack: $hits of $total (frame $fn)"
	else
		result python_perf FAIL "cuscope_py_hot is on $hits of $total sampled stacks, want at least half: Python frames missing (perf trampolines not active?)"
	fi
}

# cuscope doctor on the GPU host: CUPTI and the GPU must be found.
check_doctor()
{
	local rc=0 line
	timeout 60 "$CUSCOPE" doctor --json >"$T/doctor.json" 2>"$T/doctor.err" || rc=$?
	if [ "$rc" != 0 ]; then
		result doctor FAIL "cuscope doctor exited $rc: $(tail_of "$T/doctor.err")"
		return
	fi
	need_python doctor || return
	line=$("$PY" - "$T/doctor.json" 2>&1 <<'EOF'
import json, sys
try:
    checks = {c["check"]: c for c in json.load(open(sys.argv[1]))["checks"]}
except Exception as e:
    print("FAIL\tcuscope doctor --json does not parse: %s" % e)
    sys.exit()
bad = ["%s is %s: %s" % (k, checks[k]["status"], checks[k]["detail"])
       for k in ("cupti", "gpu") if k not in checks or checks[k]["status"] != "ok"]
if bad:
    print("FAIL\t" + "; ".join(bad))
else:
    print("PASS\t" + "; ".join("%s: %s" % (k, checks[k]["detail"]) for k in ("cupti", "gpu")))
EOF
)
	case $line in
	PASS* | FAIL*) result doctor "${line%%$'\t'*}" "${line#*$'\t'}" ;;
	*) result doctor FAIL "reading cuscope doctor --json failed: $(echo "$line" | tail -n 1)" ;;
	esac
}

# gap_result NAME LINE RC: records the PASS/SKIP/FAIL line of a standalone gap test.
gap_result()
{
	case $2 in
	PASS*) result "$1" PASS "${2#PASS: }" ;;
	SKIP*) result "$1" SKIP "${2#SKIP: }" ;;
	FAIL*) result "$1" FAIL "${2#FAIL: }" ;;
	"") result "$1" FAIL "${1}_test printed nothing (exit $3)" ;;
	*) result "$1" FAIL "${1}_test ended without a verdict (exit $3): $2" ;;
	esac
}

check_tui_cpu_gap()
{
	local line rc
	# shellcheck source=tests/gpu/tui_cpu_gap.sh
	. "$ROOT/tests/gpu/tui_cpu_gap.sh"
	line=$(tui_cpu_gap_test 2>&1 | tail -n 1; exit "${PIPESTATUS[0]}")
	rc=$?
	gap_result tui_cpu_gap "$line" "$rc"
}

check_tui_gap()
{
	local line rc
	# shellcheck source=tests/gpu/tui_gap.sh
	. "$ROOT/tests/gpu/tui_gap.sh"
	line=$(tui_gap_test 2>&1 | tail -n 1; exit "${PIPESTATUS[0]}")
	rc=$?
	gap_result tui_gap "$line" "$rc"
}

# Sourced (tests/runtime/t161_gpu_check_reasons.sh): the functions only; the checks run when this
# file is executed.
if [ "${BASH_SOURCE[0]}" != "$0" ]; then
	return 0
fi

# ---- main --------------------------------------------------------------------------------------

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
	echo "SKIP: no GPU"
	exit 77
fi
gpu_init
cd "$ROOT" || exit 2
FILTERS=("$@")
T=$(mktemp -d "${TMPDIR:-/tmp}/cuscope-gpu.XXXXXX")
export LC_ALL=C.UTF-8 LANG=C.UTF-8
trap cleanup EXIT

echo "GPU: $(nvidia-smi -L | head -n 1)"
if [ ! -x "$CUSCOPE" ]; then
	result setup FAIL "$CUSCOPE not built (run make)"
else
	for c in doctor counts clock graph torch_nvtx torch_steps torch_ops torch_profiler dataloader rival_torch_pf rival_torch_cf rival_cupti tui tui_gap tui_cpu_gap attach attach_armed python_perf ranks_gloo nccl_payload triggers gpu_metrics; do
		selected "$c" || continue
		if [ "$(left)" -lt 25 ]; then
			result "$c" SKIP "time budget of ${BUDGET}s used up"
			continue
		fi
		"check_$c"
	done
	# Which ordering (if any) made cuscope the second CUPTI client and so exercised its warning.
	warned="" rivals=""
	for i in "${!RES_NAME[@]}"; do
		case ${RES_NAME[$i]} in rival_*) ;; *) continue ;; esac
		[ "${RES_STATUS[$i]}" = PASS ] || continue
		rivals="$rivals ${RES_NAME[$i]}"
		case ${RES_INFO[$i]} in winner=other*) warned="$warned ${RES_NAME[$i]}" ;; esac
	done
	if [ -n "$rivals" ]; then
		if [ -n "$warned" ]; then
			result rival_warning PASS "one clear warning line in:$warned"
		else
			result rival_warning SKIP "cuscope subscribed first in every ordering tried ($rivals ); warning path not reached"
		fi
	fi
fi

fails=0
echo
echo "==== cuscope GPU tests ($((SECONDS - START)) s) ===="
for i in "${!RES_NAME[@]}"; do
	printf '%-16s %-5s %s\n' "${RES_NAME[$i]}" "${RES_STATUS[$i]}" "${RES_INFO[$i]}"
	[ "${RES_STATUS[$i]}" = FAIL ] && fails=$((fails + 1))
done
[ "$fails" = 0 ] || exit 1
exit 0
