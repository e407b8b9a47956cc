#!/usr/bin/env bash
# PyTorch's emit_nvtx (what --torch turns on) names every range "OP, seq = N, op_id = M", new on
# every call: the collector names each range by its operator (aten::addmm), so that a long run
# neither fills the string table (held to 256 strings here) nor shows one row per call. Pushes on
# two threads, start/end ranges and marks; record_shapes' sizes and input_op_ids; a program's own
# name with commas keeps them. Counts are exact and nothing is lost.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
need_prog nvtx_torch_ops

STEPS=3000
CUSCOPE_MAX_STRINGS=256 cs_record "$T/cap" app -- "$PROGS/nvtx_torch_ops" "$STEPS"
[ "$RC" = 0 ] || fail "record exited $RC: $(head -c 300 "$T/app.err")"
cs_stats "$T/cap" "$T/stats.json"
py_check "$T/stats.json" "$T/app.out" <<'PY'
n = app("steps")
if n != 3000:
    fail("the program ran %d steps, want 3000" % n)
raw = [r["name"] for r in J["nvtx"] if "op_id =" in r["name"] or ", seq = " in r["name"]]
if raw:
    fail("%d rows named by the raw per-call message, e.g. %r" % (len(raw), raw[:3]))
spec = [(op, "", "PushPop", n) for op in ("aten::linear", "aten::t", "aten::addmm", "aten::relu",
                                          "aten::cat", "aten::mm", "load, batch",
                                          "autograd::engine::evaluate_function: AddmmBackward0")]
spec += [("aten::copy_", "", "StartEnd", n), ("aten::zero_", "", "Mark", n)]
spec += [("plain", "", "PushPop", 1), ("epoch 3, seq 4", "", "PushPop", 1)]
expect_nvtx(spec)
no_losses()
PY
exit 0
