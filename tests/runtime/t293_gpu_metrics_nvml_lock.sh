#!/usr/bin/env bash
# GPU metrics end to end without a GPU, through the last fallback: the stand-in libcupti (one
# fake GH100, PM sampling refused) and a stand-in NVML (tests/support/fake_nvml.c: utilisation
# 40 %, no GPM). One program: one warning says why it is NVML utilisation, and its samples reach
# the capture (stats gpu_metrics: nvml:gpu_util, source nvml, 40 %, every 200 ms). Two programs on
# the same GPU under one record: one sampler (the GPU's lock file): only one process has samples
# in its gpu_metrics cost.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/runtime/fake_cupti.sh
. "$(dirname "$0")/fake_cupti.sh"
need_fake_cupti
NVML_DIR=$BUILD/tests/support/nvml
[ -f "$NVML_DIR/libnvidia-ml.so.1" ] || fail "$NVML_DIR/libnvidia-ml.so.1 not built (make tests-build)"
if nvidia-smi -L >/dev/null 2>&1; then
	skip "a GPU is present: its NVML would answer instead of the stand-in"
fi

# rec NAME COMMAND...: records COMMAND with one fake GPU whose first launch lasts 1.5 s.
rec()
{
	local name=$1
	shift
	FAKE_CUPTI_FIRST_CALL_MS=1500 FAKE_CUDA_DEVICES=1 CUSCOPE_CUDA_API=callback CUSCOPE_CUPTI_PATH=$FAKE_CUPTI \
		LD_LIBRARY_PATH=$NVML_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
		"$CUSCOPE" record -o "$T/$name.cap" --gpu-metrics on -- "$@" >"$T/$name.out" 2>"$T/$name.err" </dev/null
	local rc=$?
	[ "$rc" = 0 ] || fail "$name: record exited $rc: $(tail -c 300 "$T/$name.err")"
}

rec one "$PROGS/fake_cuda_app" 2000 8 0
[ "$(grep -c 'GPU metrics' "$T/one.err")" = 1 ] || fail "one: want one GPU metrics line: $(grep 'GPU metrics' "$T/one.err" | tr '\n' '|')"
grep -q 'GPU metrics from NVML utilisation only on GPU0: PM sampling on GH100: .*; NVML GPM unsupported' "$T/one.err" ||
	fail "one: the line does not say why: $(grep 'GPU metrics' "$T/one.err")"
cs_stats "$T/one.cap" "$T/one.json"
"$PYTHON" - "$T/one.json" <<'PY' || exit 1
import json, sys
S = json.load(open(sys.argv[1]))
g = S["gpu_metrics"]
if len(g) != 1:
    print("gpu_metrics rows: %r" % g); sys.exit(1)
r = g[0]
if not (r["gpu"].startswith("GPU-f0f1f2f3-") and r["metric"] == "nvml:gpu_util" and r["source"] == "nvml"
        and r["samples"] >= 4 and r["min"] == 40 and r["max"] == 40 and r["unit"] == "percent"):
    print("gpu_metrics row: %r" % r); sys.exit(1)
cost = [c for c in S["cost"] if c["source"] == "gpu_metrics"]
if len(cost) != 1 or cost[0]["events"] < r["samples"] or cost[0]["cpu_ns"] <= 0:
    print("gpu_metrics cost: %r (samples %d)" % (cost, r["samples"])); sys.exit(1)
PY

# Two programs on the one GPU: the second leaves it to the first.
rec two bash -c "'$PROGS/fake_cuda_app' 2000 8 0 & '$PROGS/fake_cuda_app' 2000 8 0; wait"
# Which processes sampled: their gpu_metrics cost rows (the notices of both would read alike).
cs_stats "$T/two.cap" "$T/two.stats.json"
"$PYTHON" - "$T/two.stats.json" <<'PY' || exit 1
import json, sys
S = json.load(open(sys.argv[1]))
apps = [p["pid"] for p in S["processes"] if p["cmdline"].split(" ")[0].endswith("/fake_cuda_app")]
sampled = [c["pid"] for c in S["cost"] if c["source"] == "gpu_metrics" and c["events"] > 0]
if len(apps) != 2 or len(sampled) != 1 or sampled[0] not in apps:
    print("programs %r, processes that sampled the GPU %r (want one)" % (apps, sampled)); sys.exit(1)
if len(S["gpu_metrics"]) != 1 or S["gpu_metrics"][0]["samples"] < 4:
    print("gpu_metrics rows: %r" % S["gpu_metrics"]); sys.exit(1)
PY
exit 0
