"""GPU workload for the triggers check (tests/gpu/run.sh triggers): a PyTorch loop of NVTX "step"
ranges doing matmuls, with two planted GPU idle stretches: the host synchronizes, then sleeps
0.3 s before the next step's work. Prints "pid P", then per stall the CLOCK_MONOTONIC instants its
triggers' conditions become true: "crossing T" for gpu-idle>100ms (the GPU's last kernel ended
at the synchronize's return, within microseconds) and "explained T" for gap-explained:sleep with
--gap-ms 20."""
import os
import sys
import time

import torch

if not torch.cuda.is_available():
    print("SKIP: no CUDA device")
    sys.exit(77)
print("pid %d" % os.getpid(), flush=True)
dev = torch.device("cuda")
a = torch.randn(2048, 2048, device=dev)
b = torch.randn(2048, 2048, device=dev)
for i in range(40):
    torch.cuda.nvtx.range_push("step")
    if i in (15, 30):
        torch.cuda.synchronize()
        idle_from = time.monotonic_ns()
        time.sleep(0.3)
        print("crossing %d" % (idle_from + 100_000_000), flush=True)
        print("explained %d" % (idle_from + 20_000_000), flush=True)
    for _ in range(10):
        c = a @ b
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()
time.sleep(0.5)
