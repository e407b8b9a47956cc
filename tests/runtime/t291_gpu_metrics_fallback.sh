#!/usr/bin/env bash
# GPU hardware metrics where they are refused, without a GPU (the stand-in libcupti, fake devices
# "GH100"): PM sampling refused for privileges, then with the config refused after the real
# libcupti's profiler host API built it, each falls back (NVML GPM, NVML utilisation: absent or not
# initialising here) and says why in exactly one warning line (three GPUs alike: one line naming
# them); the program's exit code comes
# through; the cost row has the gpu_metrics source; --gpu-metrics off asks nothing of CUPTI and
# says nothing; bad --gpu-metrics and --gpu-metrics-hz values are one-line errors (exit 2).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/runtime/fake_cupti.sh
. "$(dirname "$0")/fake_cupti.sh"
need_fake_cupti
if nvidia-smi -L >/dev/null 2>&1; then
	skip "a GPU is present: NVML may answer for it, so the fallback is not the one checked here"
fi

# run NAME EXPECTED_ENABLES [CUSCOPE OPTIONS...]: records fake_cuda_app with FAKE_CUDA_DEVICES
# fake devices (default 1).
run()
{
	local name=$1 enables=$2
	shift 2
	# CUDA's first call lasts 300 ms (as a context creation does), then 20000 launches: the sender
	# sees GPU tracing running and starts the GPU metrics long before the program ends.
	FAKE_CUPTI_FIRST_CALL_MS=300 FAKE_CUDA_DEVICES=${FAKE_CUDA_DEVICES:-1} CUSCOPE_CUDA_API=callback CUSCOPE_CUPTI_PATH=$FAKE_CUPTI CUSCOPE_LAZY_START_MS=0 \
		"$CUSCOPE" record -o "$T/$name.cap" "$@" -- "$PROGS/fake_cuda_app" 20000 8 0 >"$T/$name.out" 2>"$T/$name.err" </dev/null
	local rc=$?
	[ "$rc" = 0 ] || fail "$name: record exited $rc, want the program's 0: $(tail -c 300 "$T/$name.err")"
	local n
	n=$(grep -c 'fake_cupti pm_enable device' "$T/$name.err")
	[ "$n" = "$enables" ] || fail "$name: PM sampling enabled $n times, want $enables: $(grep fake_cupti "$T/$name.err" | tr '\n' '|')"
}

metric_lines() { grep -c 'GPU metrics' "$T/$1.err"; }

# Refused for privileges: one warning naming the chip, the refusal and the fallbacks' reasons.
run refused 1 --gpu-metrics on
[ "$(metric_lines refused)" = 1 ] || fail "refused: want one GPU metrics line: $(grep 'GPU metrics' "$T/refused.err" | tr '\n' '|')"
line=$(grep 'GPU metrics' "$T/refused.err")
case $line in
*"GPU metrics unavailable on GPU0: PM sampling on GH100: fake CUPTI error (profiling is for admins: NVreg_RestrictProfilingToAdminUsers=1); "*) ;;
*) fail "refused: warning does not say why: $line" ;;
esac
case $line in
*libnvidia-ml.so.1*|*NVML*) ;;
*) fail "refused: warning does not say why NVML did not serve: $line" ;;
esac
cs_stats "$T/refused.cap" "$T/refused.json"
"$PYTHON" - "$T/refused.json" <<'PY' || exit 1
import json, sys
S = json.load(open(sys.argv[1]))
rows = [c for c in S["cost"] if c["source"] == "gpu_metrics"]
if len(rows) != 1 or rows[0]["events"] != 0:
    print("cost rows of gpu_metrics: %r" % rows); sys.exit(1)
if S["gpu_metrics"]:
    print("samples from a refused sampler: %r" % S["gpu_metrics"]); sys.exit(1)
PY

# Enabled, but the config (built by the real libcupti's host API for GH100) refused: said once.
FAKE_CUPTI_PM_ENABLE=0 run config 1 --gpu-metrics on
[ "$(metric_lines config)" = 1 ] || fail "config: want one GPU metrics line: $(grep 'GPU metrics' "$T/config.err" | tr '\n' '|')"
grep -q 'GPU metrics unavailable on GPU0: PM sampling config: fake CUPTI error' "$T/config.err" ||
	[ ! -e "${CUDA_HOME:-/usr/local/cuda}/lib64/libcupti.so" ] ||
	fail "config: warning does not name the config step: $(grep 'GPU metrics' "$T/config.err")"

# Three GPUs refused alike: each asked once, said in one line naming all three.
FAKE_CUDA_DEVICES=3 run three 3 --gpu-metrics on
[ "$(metric_lines three)" = 1 ] || fail "three: want one GPU metrics line: $(grep 'GPU metrics' "$T/three.err" | tr '\n' '|')"
grep -q 'GPU metrics unavailable on GPU0,1,2: PM sampling on GH100: ' "$T/three.err" ||
	fail "three: the line does not name the three GPUs: $(grep 'GPU metrics' "$T/three.err")"

# Off: CUPTI is never asked and nothing is said; so by default (until measured on a GPU host).
run off 0 --gpu-metrics off
[ "$(metric_lines off)" = 0 ] || fail "off: $(grep 'GPU metrics' "$T/off.err")"
run default 0
[ "$(metric_lines default)" = 0 ] || fail "default: $(grep 'GPU metrics' "$T/default.err")"

for bad in "--gpu-metrics=" "--gpu-metrics=sm__cycles_active.avg,,x" "--gpu-metrics=a;rm" "--gpu-metrics-hz=0" "--gpu-metrics-hz=5000" "--gpu-metrics-hz=ten"; do
	"$CUSCOPE" record -o "$T/bad.cap" "$bad" -- true >"$T/bad.out" 2>"$T/bad.err"
	rc=$?
	[ "$rc" = 2 ] || fail "$bad: exit $rc, want 2"
	one_line_error "$T/bad.err" "$bad"
	[ ! -e "$T/bad.cap" ] || fail "$bad: a capture was written"
done
exit 0
