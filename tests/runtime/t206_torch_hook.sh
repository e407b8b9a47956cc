#!/usr/bin/env bash
# --torch's Python hook, on a stand-in `torch` package (tests/runtime/torch_standin) put on
# PYTHONPATH: no download (t207 runs the real one where installed). The stand-in keeps torch's
# names and rules: the
# profiler's enable/disable functions live in torch._C._autograd and are bound by name into
# torch.autograd and torch.autograd.profiler; one profiler per thread ("Profiler is already enabled
# on this thread."); under the NVTX state each operator pushes "OP, seq = N, op_id = M" through
# NVTX3 (a small C library); emit_nvtx calls torch.cuda.synchronize() first. Checked:
# - the hook never imports torch itself, turns the ranges on once the program has imported it, on
#   the importing thread only (another thread's operators are not ranges), without a CUDA sync;
#   ranges are named by the operator, counts exact;
# - (a) the program's own profiler (torch.autograd.profiler.profile, the legacy one, its own
#   emit_nvtx) runs to the same result as without cuscope; ours pauses meanwhile, one notice;
# - (c) one notice says which thread is covered (the main thread, or the thread that imported
#   torch), in the same words in every process, so a recording says it once;
# - a torch that cannot emit NVTX (a CPU build) gets one notice and the program runs unchanged;
# - without --torch, and in a process --follow leaves out, nothing is turned on;
# - (d) attach --torch: one line saying it is unavailable, exit 2;
# - the program's exit code passes through every time.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
LIB=$PROGS/lib/nvtx_calls.so
[ -f "$LIB" ] || fail "$LIB not built (make tests-build)"

FAKE=$ROOT/tests/runtime/torch_standin
export PYTHONDONTWRITEBYTECODE=1 # the stand-in lives in the source tree
# The interpreter itself: a wrapper script such as pyenv's shim forks shells that are no part of
# what is tested here.
PY=$("$PYTHON" -c 'import sys; print(sys.executable)') || fail "$PYTHON does not run"

cat >"$T/app.py" <<'PYEOF'
import os, sys, threading
print("pid", os.getpid())
print("torch_before_import", int("torch" in sys.modules))
import torch
print("ranges_on_at_import", int(torch.autograd._profiler_enabled()))
print("flag_at_import", int(torch.autograd.profiler._is_profiler_enabled))
for _ in range(5):
    torch.op("aten::mm")
with torch.autograd.profiler.profile() as p:
    for _ in range(3):
        torch.op("aten::addmm")
print("theirs", len(p.events))
import torch.autograd.profiler_legacy
with torch.autograd.profiler_legacy.profile() as q:
    torch.op("aten::relu")
print("theirs_legacy", len(q.events))
try:
    torch.autograd.profiler.profile().__enter__()
    torch.autograd.profiler.profile().__enter__()
except RuntimeError as e:
    print("nested_error", e)  # their own mistake still fails as it would without cuscope
torch.autograd._disable_profiler()
try:
    with torch.autograd.profiler.emit_nvtx():
        torch.op("aten::sub")
        torch.op("aten::sub")
except RuntimeError as e:
    print("own_emit_nvtx_error", e)
for _ in range(4):
    torch.op("aten::add")
t = threading.Thread(target=lambda: [torch.op("aten::div") for _ in range(6)])
t.start()
t.join()
print("sync_calls", torch.cuda.sync_calls)
print("after_on", int(torch.autograd._profiler_enabled()))
sys.exit(4)
PYEOF

run_app()
{
	local name=$1
	shift
	RC=0
	FAKE_TORCH_NVTX_LIB=$LIB PYTHONPATH=$FAKE timeout 60 "$CUSCOPE" record "$@" -o "$T/$name.cap" -- \
		"$PY" "$T/app.py" >"$T/$name.out" 2>"$T/$name.err" </dev/null || RC=$?
	[ "$RC" = 4 ] || fail "$name: record exited $RC, want the program's 4: $(head -c 400 "$T/$name.err")"
	grep -q '^after_on' "$T/$name.out" || fail "$name: the program did not finish: $(tail -c 300 "$T/$name.out")"
}

# What the program prints must not depend on cuscope or --torch (the notices go to cuscope's stderr).
program_lines()
{
	grep -v -e '^pid ' -e '^ranges_on_at_import ' -e '^flag_at_import ' -e '^after_on ' "$1"
}

# --torch: the ranges, the program's own profilers, the notices.
run_app torch --torch
grep -q '^torch_before_import 0$' "$T/torch.out" || fail "torch was imported before the program imported it"
grep -q '^ranges_on_at_import 1$' "$T/torch.out" || fail "--torch did not turn the ranges on at import: $(cat "$T/torch.out")"
grep -q '^flag_at_import 1$' "$T/torch.out" || fail "--torch did not set torch's profiler-on flag as emit_nvtx does"
grep -q '^after_on 1$' "$T/torch.out" || fail "ours did not resume after the program's profilers: $(cat "$T/torch.out")"
PID=$(awk '$1 == "pid" {print $2}' "$T/torch.out")
n=$(grep -c -- '--torch' "$T/torch.err")
[ "$n" = 2 ] || fail "want 2 --torch notices, got $n: $(cat "$T/torch.err")"
grep -q "^cuscope: warning: pid $PID: --torch: operator ranges are recorded on the main thread (which imported torch) and the autograd threads its backward passes run on; operators other threads run are not\$" "$T/torch.err" ||
	fail "no notice saying which thread is covered: $(cat "$T/torch.err")"
grep -q "^cuscope: warning: pid $PID: --torch: the program started its own torch profiler: operator ranges pause while it runs\$" "$T/torch.err" ||
	fail "no notice that ours paused for the program's profiler: $(cat "$T/torch.err")"
cs_stats "$T/torch.cap" "$T/torch.json"
py_check "$T/torch.json" "$T/torch.out" <<'PY'
# mm before, add after the program's profilers; sub from its own emit_nvtx; addmm and relu ran
# under its profilers (not ours); div on another thread.
expect_nvtx([("aten::mm", "", "PushPop", 5), ("aten::add", "", "PushPop", 4),
             ("aten::sub", "", "PushPop", 2)])
no_losses()
PY

# The same program without cuscope and under cuscope without --torch: same output, nothing on.
RC=0
FAKE_TORCH_NVTX_LIB=$LIB PYTHONPATH=$FAKE timeout 60 "$PY" "$T/app.py" >"$T/plain.out" 2>"$T/plain.err" || RC=$?
[ "$RC" = 4 ] || fail "the program alone exited $RC: $(head -c 300 "$T/plain.err")"
grep -q '^theirs 3$' "$T/plain.out" || fail "test setup: the stand-in's profiler counts $(grep theirs "$T/plain.out")"
grep -q '^sync_calls 2$' "$T/plain.out" || fail "test setup: sync_calls $(grep sync "$T/plain.out")"
diff <(program_lines "$T/plain.out") <(program_lines "$T/torch.out") >"$T/diff.txt" ||
	fail "the program's output differs under --torch: $(tr '\n' '|' <"$T/diff.txt")"
run_app off
grep -q '^ranges_on_at_import 0$' "$T/off.out" || fail "ranges on without --torch"
! grep -q -- '--torch' "$T/off.err" || fail "a --torch notice without --torch: $(cat "$T/off.err")"
diff <(program_lines "$T/plain.out") <(program_lines "$T/off.out") >/dev/null || fail "output differs without --torch"

# A torch that cannot emit NVTX: one line says so; the program runs as without cuscope.
RC=0
FAKE_TORCH_CPU_BUILD=1 FAKE_TORCH_NVTX_LIB=$LIB PYTHONPATH=$FAKE timeout 60 "$PY" "$T/app.py" >"$T/plain_cpu.out" 2>&1 || RC=$?
[ "$RC" = 4 ] || fail "cpu build: the program alone exited $RC: $(head -c 300 "$T/plain_cpu.out")"
FAKE_TORCH_CPU_BUILD=1 run_app cpu --torch
grep -q '^ranges_on_at_import 0$' "$T/cpu.out" || fail "cpu build: ranges on?"
grep -q '^flag_at_import 0$' "$T/cpu.out" || fail "cpu build: torch's profiler-on flag left set"
n=$(grep -c -- '--torch' "$T/cpu.err")
[ "$n" = 1 ] || fail "cpu build: want one --torch line, got $n: $(cat "$T/cpu.err")"
grep -q -- "--torch: PyTorch 0.0+standin cannot emit operator ranges: Can't use NVTX profiler - PyTorch was compiled without CUDA\$" "$T/cpu.err" ||
	fail "cpu build: the line does not say why: $(cat "$T/cpu.err")"
diff <(program_lines "$T/plain_cpu.out") <(program_lines "$T/cpu.out") >/dev/null || fail "cpu build: output differs"

# torch imported by another thread: that thread's operators are ranges, the main thread's not,
# and the notice names the thread. Two child Pythons importing torch too: the same words, said
# once.
cat >"$T/thread.py" <<'PYEOF'
import subprocess, sys, threading
def importer():
    import torch
    for _ in range(3):
        torch.op("aten::mm")
    print("tid", threading.get_native_id())
t = threading.Thread(target=importer, name="importer")
t.start()
t.join()
import torch
torch.op("aten::add")
for _ in range(2):
    subprocess.run([sys.executable, "-c", "import torch; torch.op('aten::relu')"], check=True)
sys.exit(8)
PYEOF
RC=0
FAKE_TORCH_NVTX_LIB=$LIB PYTHONPATH=$FAKE timeout 60 "$CUSCOPE" record --torch -o "$T/thread.cap" -- \
	"$PY" "$T/thread.py" >"$T/thread.out" 2>"$T/thread.err" </dev/null || RC=$?
[ "$RC" = 8 ] || fail "thread: record exited $RC: $(head -c 300 "$T/thread.err")"
TID=$(awk '$1 == "tid" {print $2}' "$T/thread.out")
grep -q -- "--torch: operator ranges are recorded on thread importer (tid $TID) (which imported torch)" "$T/thread.err" ||
	fail "thread: the notice does not name the importing thread: $(cat "$T/thread.err")"
n=$(grep -c -- '--torch: operator ranges are recorded on the main thread' "$T/thread.err")
[ "$n" = 1 ] || fail "thread: the children's notice said $n times, want once: $(cat "$T/thread.err")"
cs_stats "$T/thread.cap" "$T/thread.json"
py_check "$T/thread.json" "$T/thread.out" <<'PY'
expect_nvtx([("aten::mm", "", "PushPop", 3), ("aten::relu", "", "PushPop", 2)])
PY

# --follow none: a child Python that imports torch is not traced, so nothing is turned on there.
cat >"$T/parent.py" <<'PYEOF'
import subprocess, sys
r = subprocess.run([sys.executable, "-c", "import torch; print('child_on', int(torch.autograd._profiler_enabled()))"])
sys.exit(r.returncode + 6)
PYEOF
RC=0
FAKE_TORCH_NVTX_LIB=$LIB PYTHONPATH=$FAKE timeout 60 "$CUSCOPE" record --torch --follow none -o "$T/follow.cap" -- \
	"$PY" "$T/parent.py" >"$T/follow.out" 2>"$T/follow.err" </dev/null || RC=$?
[ "$RC" = 6 ] || fail "--follow none: record exited $RC: $(head -c 300 "$T/follow.err")"
grep -q '^child_on 0$' "$T/follow.out" || fail "--follow none: an untraced child turned the ranges on: $(cat "$T/follow.out")"

# attach: unavailable, said in one line.
one_line attach 2 'attach: --torch is unavailable after attach' "$CUSCOPE" attach --torch "$$"
exit 0
