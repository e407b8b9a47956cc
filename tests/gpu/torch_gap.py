"""GPU workload for tests/gpu/tui_gap.sh: a PyTorch loop with NVTX "step" ranges doing matmuls, and a
planted idle gap: every 8th step the host sleeps 0.5 s inside the step before its GPU work, so the
GPU idles ~500 ms and that step is slow. Prints "gaps N steps M" at the end."""
import sys
import time

import torch

if not torch.cuda.is_available():
    print("SKIP: no CUDA device")
    sys.exit(77)
dev = torch.device("cuda")
a = torch.randn(2048, 2048, device=dev)
b = torch.randn(2048, 2048, device=dev)
steps = int(sys.argv[1]) if len(sys.argv) > 1 else 24
gaps = 0
for i in range(steps):
    torch.cuda.nvtx.range_push("step")
    if i % 8 == 7:
        torch.cuda.synchronize()
        time.sleep(0.5)  # the planted stall: the GPU has nothing to do
        gaps += 1
    torch.cuda.nvtx.range_push("forward")
    for _ in range(20):
        c = a @ b
    torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()
print("gaps %d steps %d" % (gaps, steps))
