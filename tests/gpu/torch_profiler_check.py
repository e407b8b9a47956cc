"""Runs a short torch.profiler capture (CPU + CUDA activities) of a few matmul steps and prints
"profiler_cuda_events N" (kernel/memcpy events recorded on the GPU) and "profiler_cpu_events N".
Used after a cuscope run (not under cuscope) to show torch.profiler still works, and inside
cuscope by torch_rival.py's logic. Exit 0 even when N is 0 (the checker decides)."""
import os
import sys

import torch
from torch.autograd import DeviceType


def cuda_events(prof):
    n = 0
    for e in prof.events():
        if e.device_type == DeviceType.CUDA:
            n += 1
    return n


def main():
    if not torch.cuda.is_available():
        print("torch_profiler_check: CUDA not available", file=sys.stderr)
        return 2
    a = torch.randn(256, 256, device="cuda")
    torch.cuda.synchronize()
    acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=acts) as prof:
        for _ in range(10):
            a = torch.tanh(a @ a)
        torch.cuda.synchronize()
    print("pid %d" % os.getpid())
    print("profiler_cuda_events %d" % cuda_events(prof))
    print("profiler_cpu_events %d" % sum(1 for e in prof.events() if e.device_type == DeviceType.CPU))
    return 0


if __name__ == "__main__":
    sys.exit(main())
