"""GPU workload for tests/gpu/tui_cpu_gap.sh: a PyTorch training-like loop whose data loading runs on
the main thread and stalls at known steps: every 5th step load_batch() calls time.sleep(0.3)
(CPython: clock_nanosleep on Linux) before the step's GPU work, so the GPU idles ~300 ms while the
launching thread is blocked in the sleep. NVTX "step" and "load" ranges mark the phases.
Prints "stalls N steps M" at the end."""
import sys
import time

import torch

if not torch.cuda.is_available():
    print("SKIP: no CUDA device")
    sys.exit(77)
dev = torch.device("cuda")
w = torch.randn(2048, 2048, device=dev)
steps = int(sys.argv[1]) if len(sys.argv) > 1 else 20
stalls = 0


def load_batch(i):
    """The data loader: a fresh batch, slow at every 5th step."""
    global stalls
    if i % 5 == 4:
        time.sleep(0.3)  # the stall: the GPU has nothing to do meanwhile
        stalls += 1
    return torch.randn(2048, 2048)


# Warm up (cuBLAS handle, allocator) so the only long gaps are the planted ones.
for _ in range(3):
    (w @ w).sum().item()
torch.cuda.synchronize()
for i in range(steps):
    torch.cuda.nvtx.range_push("step")
    torch.cuda.nvtx.range_push("load")
    x = load_batch(i).to(dev, non_blocking=False)
    torch.cuda.nvtx.range_pop()
    for _ in range(20):
        x = torch.tanh(x @ w)
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()
print("stalls %d steps %d" % (stalls, steps))
