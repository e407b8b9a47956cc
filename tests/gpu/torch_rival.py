"""torch.profiler (Kineto, a CUPTI client) inside a process traced by cuscope.

  python3 torch_rival.py --order profiler-first|cuda-first [--exit N]

profiler-first: the profiler starts before the first CUDA call, so Kineto may subscribe to CUPTI
before cuscope's injection does; cuda-first: CUDA is initialised (cuscope subscribes) before the
profiler starts. Runs 10 steps with NVTX ranges "rival" and exits with --exit (default 3). Prints
"pid P", "profiler_cuda_events N" and a TRUTH line."""
import argparse
import json
import os
import sys

import torch
from torch.autograd import DeviceType


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--order", choices=["profiler-first", "cuda-first"], required=True)
    ap.add_argument("--exit", type=int, default=3)
    a = ap.parse_args()
    acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    prof = torch.profiler.profile(activities=acts)
    if a.order == "profiler-first":
        prof.__enter__()
    x = torch.randn(256, 256, device="cuda")
    torch.cuda.synchronize()
    if a.order == "cuda-first":
        prof.__enter__()
    ranges = 10
    for _ in range(ranges):
        torch.cuda.nvtx.range_push("rival")
        x = torch.tanh(x @ x)
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()
    prof.__exit__(None, None, None)
    n = sum(1 for e in prof.events() if e.device_type == DeviceType.CUDA)
    print("pid %d" % os.getpid())
    print("profiler_cuda_events %d" % n)
    print("TRUTH " + json.dumps({"nvtx": {"rival": ranges}, "exit": a.exit, "order": a.order}))
    sys.stdout.flush()
    return a.exit


if __name__ == "__main__":
    sys.exit(main())
