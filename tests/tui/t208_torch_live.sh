#!/usr/bin/env bash
# --torch in live mode, on the stand-in torch (tests/runtime/torch_standin): the message line says
# which thread carries the operator ranges, and the operators show as named ranges on the lane of
# the thread that imported torch. The program's exit code comes back through q.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cuscope
LIB=$PROGS/lib/nvtx_calls.so
[ -f "$LIB" ] || fail "$LIB not built (make tests-build)"
cat >"$T/app.py" <<'PYEOF'
import sys, time
import torch
deadline = time.monotonic() + 6
while time.monotonic() < deadline:
    torch.op("aten::addmm", 0.3)
    time.sleep(0.05)
sys.exit(6)
PYEOF
# The interpreter itself, not a wrapper script (pyenv's shims start slowly and show as lanes).
PY=$("$PYTHON" -c 'import sys; print(sys.executable)') || fail "$PYTHON does not run"
TMUX_USED=1
tm new-session -d -s t -x 160 -y 40 "cd $T && env PYTHONDONTWRITEBYTECODE=1 PYTHONPATH=$ROOT/tests/runtime/torch_standin FAKE_TORCH_NVTX_LIB=$LIB $CUSCOPE --torch --window 2 --overhead-budget off -- $PY $T/app.py; echo EXIT=\$? >$T/exit; exec sleep 3600" ||
	fail "tmux new-session failed"
tm set-option -t t remain-on-exit on >/dev/null 2>&1
tm_wait '--torch: operator ranges are recorded on the main thread' 30 "the message line names the covered thread (the budget's notes, which could take its place, are off)"
tm_wait 'aten::addmm' 10 "an aten::addmm range on the main thread's lane"
tm_screen >"$T/screen.txt"
grep -E 'MainThread [0-9]+|python3? [0-9]+' "$T/screen.txt" >/dev/null || fail "no main thread lane: $(head -n 8 "$T/screen.txt" | tr -s ' ' | tr '\n' '|')"
grep -q 'seq = ' "$T/screen.txt" && fail "a range shows torch's raw per-call message: $(grep -m1 'seq = ' "$T/screen.txt")"
tm_wait 'EXITED \(code 6\)' 20 "status after the program's exit(6)"
tm_keys q
tm_wait_exit 6 15
exit 0
