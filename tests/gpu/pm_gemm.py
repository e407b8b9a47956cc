"""A bf16 GEMM loop, then a sleep loop, for the GPU hardware metrics check (tests/gpu/run.sh
"gpu_metrics"): prints each phase's CLOCK_MONOTONIC span so the check can average the metric
samples inside it.

  python3 pm_gemm.py [--seconds S] [--size N]

Prints "pid P", "phase gemm START_NS END_NS" and "phase sleep START_NS END_NS".
"""
import argparse
import os
import sys
import time

import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=2.0, help="length of each phase")
    ap.add_argument("--size", type=int, default=8192)
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print("pm_gemm: CUDA not available", file=sys.stderr)
        return 2
    print("pid %d" % os.getpid(), flush=True)
    dev = torch.device("cuda", 0)
    x = torch.randn(a.size, a.size, device=dev, dtype=torch.bfloat16)
    y = torch.randn(a.size, a.size, device=dev, dtype=torch.bfloat16)
    for _ in range(3):  # cuBLAS picks its kernel (wgmma on Hopper) before the timed phase
        torch.matmul(x, y)
    torch.cuda.synchronize()
    # The collector decodes every 100 ms: a short idle lead keeps the phases apart.
    time.sleep(0.3)
    start = time.monotonic_ns()
    while time.monotonic_ns() - start < a.seconds * 1e9:
        for _ in range(8):
            torch.matmul(x, y)
        torch.cuda.synchronize()
    end = time.monotonic_ns()
    print("phase gemm %d %d" % (start, end), flush=True)
    start = time.monotonic_ns()
    while time.monotonic_ns() - start < a.seconds * 1e9:
        time.sleep(0.01)
    end = time.monotonic_ns()
    print("phase sleep %d %d" % (start, end), flush=True)
    time.sleep(0.3)  # the last decode
    return 0


if __name__ == "__main__":
    sys.exit(main())
