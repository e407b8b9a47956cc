#!/usr/bin/env bash
# --torch with a real PyTorch (TORCH_PYTHON=/path/to/python, else $PYTHON when it imports torch;
# a visible SKIP otherwise, as on a machine without torch). A small training loop on the CPU:
# - with a CUDA build of torch (which emits NVTX without a GPU), every operator is a range named
#   by the operator, counts per step exact (aten::linear, aten::addmm, ...), backward operators
#   too, nothing lost and no raw "seq = " names;
# - the program's own torch.profiler counts the same operators as without cuscope, and ours
#   resumes after it;
# - with a CPU-only build, one notice says the ranges are unavailable and why;
# - the program's output and exit code are untouched (CUDA is not started by turning the ranges
#   on); torch does not warn of a leaked profiler
#   callback at exit.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
PY=${TORCH_PYTHON:-$PYTHON}
"$PY" -c 'import torch' >/dev/null 2>&1 || skip "SKIP: $PY has no torch (set TORCH_PYTHON to a Python with torch)"
# The interpreter itself, not a wrapper script (pyenv's shim forks shells that are no part of this test).
PY=$("$PY" -c 'import sys; print(sys.executable)')
CUDA_BUILD=$("$PY" -c 'import torch; print(int(torch.version.cuda is not None))' 2>/dev/null)

cat >"$T/train.py" <<'PYEOF'
import os, sys
import torch
print("cuda_initialized_at_import", int(torch.cuda.is_initialized()))
torch.manual_seed(0)
m = torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
opt = torch.optim.SGD(m.parameters(), lr=0.01)
x = torch.randn(8, 32)
STEPS = 25
def step():
    opt.zero_grad(set_to_none=True)
    loss = m(x).square().mean()
    loss.backward()
    opt.step()
    return loss
for _ in range(STEPS):
    loss = step()
with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as p:
    for _ in range(2):
        step()
counts = {e.key: e.count for e in p.key_averages()}
print("theirs_linear", counts.get("aten::linear", 0))
print("loss %.6f" % float(loss))
for _ in range(STEPS):
    step()
print("pid", os.getpid())
sys.exit(9)
PYEOF

RC=0
timeout 110 "$PY" "$T/train.py" >"$T/plain.out" 2>"$T/plain.err" || RC=$?
[ "$RC" = 9 ] || fail "the program alone exited $RC: $(tail -c 300 "$T/plain.err")"
grep -q '^cuda_initialized_at_import 0$' "$T/plain.out" || fail "test setup: importing torch started CUDA"
grep -q '^theirs_linear 4$' "$T/plain.out" || fail "test setup: torch.profiler counted $(grep theirs "$T/plain.out") aten::linear, want 4"
RC=0
timeout 110 "$CUSCOPE" record --torch -o "$T/cap" -- "$PY" "$T/train.py" >"$T/app.out" 2>"$T/app.err" </dev/null || RC=$?
[ "$RC" = 9 ] || fail "record --torch exited $RC, want the program's 9: $(tail -c 300 "$T/app.err")"
diff <(grep -v '^pid ' "$T/plain.out") <(grep -v '^pid ' "$T/app.out") >"$T/diff.txt" ||
	fail "the program's output differs under --torch: $(tr '\n' '|' <"$T/diff.txt")"
PID=$(awk '$1 == "pid" {print $2}' "$T/app.out")
# Ours is turned off at exit, as a `with emit_nvtx()` would be: torch complains otherwise.
! grep -q 'Leaked callback handle' "$T/app.err" || fail "torch warned at exit: $(grep -m1 Leaked "$T/app.err")"

if [ "$CUDA_BUILD" != 1 ]; then
	n=$(grep -c -- '--torch' "$T/app.err")
	[ "$n" = 1 ] || fail "CPU-only torch: want one --torch line, got $n: $(cat "$T/app.err")"
	grep -q -- "--torch: PyTorch .* cannot emit operator ranges: .*without CUDA" "$T/app.err" ||
		fail "CPU-only torch: the line does not say why: $(cat "$T/app.err")"
	echo "note: CPU-only torch: the unavailable notice checked, not the ranges" >&2
	exit 0
fi
grep -q "^cuscope: warning: pid $PID: --torch: operator ranges are recorded on the main thread (which imported torch)" "$T/app.err" ||
	fail "no notice saying which thread is covered: $(cat "$T/app.err")"
grep -q "^cuscope: warning: pid $PID: --torch: the program started its own torch profiler: operator ranges pause while it runs\$" "$T/app.err" ||
	fail "no notice that ours paused for the program's profiler: $(cat "$T/app.err")"
cs_stats "$T/cap" "$T/stats.json"
py_check "$T/stats.json" "$T/app.out" <<'PY'
raw = [r["name"] for r in J["nvtx"] if " = " in r["name"]]
if raw:
    fail("%d rows named by the raw per-call message, e.g. %r" % (len(raw), raw[:3]))
steps = 50  # 25 + 25 around the program's own profiler, whose 2 steps are not ours
# per step: two Linear layers forward, each one aten::linear over aten::addmm
for name, per_step in (("aten::linear", 2), ("aten::addmm", 2), ("aten::relu", 1),
                       ("autograd::engine::evaluate_function: AddmmBackward0", 2)):
    r = row(name)
    if r["count"] != steps * per_step:
        fail("%s: %d ranges, want %d" % (name, r["count"], steps * per_step))
if not any(r["name"].startswith("Optimizer.") or r["name"].startswith("aten::add_") for r in J["nvtx"]):
    fail("no optimizer step operators among %r" % sorted(r["name"] for r in J["nvtx"])[:20])
no_losses()
PY
exit 0
