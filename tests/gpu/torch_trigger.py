"""GPU workload for the triggers check (tests/gpu/run.sh triggers): a PyTorch loop of NVTX "step"
ranges doing matmuls, with two planted GPU idle stretches: the host synchronizes, then sleeps
0.3 s before the next step's work. The steps run for 2.5 s before each stall: the start (CUDA and
cuBLAS set-up) leaves the GPU idle too, and a firing there must have re-armed (--post, 2 s) before
the first planted one. Prints "pid P", then per stall the CLOCK_MONOTONIC instants its
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
BUSY_S = 2.5


def steps(seconds, stall_first):
    end = time.monotonic() + seconds
    first = True
    while first or time.monotonic() < end:
        torch.cuda.nvtx.range_push("step")
        if first and stall_first:
            torch.cuda.synchronize()
            idle_from = time.monotonic_ns()
            time.sleep(0.3)
            print("crossing %d" % (idle_from + 100_000_000), flush=True)
            print("explained %d" % (idle_from + 20_000_000), flush=True)
        first = False
        for _ in range(10):
            c = a @ b
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()


steps(BUSY_S, False)
steps(BUSY_S, True)
steps(0.5, True)
time.sleep(0.5)
