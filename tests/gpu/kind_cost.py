"""What each CUPTI activity kind costs a launch-bound PyTorch step, inside one process.

  CUDA_INJECTION64_PATH=build/tests/gpu/libfloor_injector.so python3 tests/gpu/kind_cost.py [--rounds N]

A diagnostic for tests/gpu/bench.sh's breakdown (report only): starting a process per configuration
costs ~10 s of PyTorch and CUDA start-up on the GPU host, so the kinds are switched inside one
process instead, through the floor injector's floor_injector_set_kinds. Each round times the tiny
MLP step of bench_torch.py (8 x Linear(256), Adam) under every kind set, in a rotated order, after
a few warm-up steps; per round, overhead = (set - off) / off, where "off" has every kind disabled
(CUPTI stays loaded). Prints the median and interquartile range over rounds. The first phase, the
injector's start set (kernels only), is also printed alone: if it differs from the later "kernel"
phases, disabling a kind did not undo what enabling it did, and the toggled figures are suspect."""
import argparse
import ctypes
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_torch  # noqa: E402 (beside this file)

# "cb": a callback on each runtime launch (the floor injector's pseudo-kind), as cuscope records
# launches by default.
SETS = [
    "off",
    "kernel",
    "kernel,cb",
    "kernel,cb,overhead",
    "kernel,cb,sync",
    "kernel,cb,memcpy,memset",
    "kernel,cb,device,context,stream",
    "kernel,cb,memcpy,memset,sync,device,context,stream",
    "kernel,cb,memcpy,memset,sync,overhead,device,context,stream",
]


def quartiles(values):
    v = sorted(values)
    if len(v) < 2:
        return v[0], v[0]
    q = statistics.quantiles(v, n=4, method="inclusive")
    return q[0], q[2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--warmup", type=int, default=10)
    a = ap.parse_args()
    path = os.environ.get("CUDA_INJECTION64_PATH", "")
    if not path or not torch.cuda.is_available():
        print("kind_cost: needs CUDA and CUDA_INJECTION64_PATH=<libfloor_injector.so>", file=sys.stderr)
        return 2
    dev = torch.device("cuda", 0)
    torch.manual_seed(0)
    step = bench_torch.build("mlp", dev)  # the very step bench.sh times

    def timed():
        for _ in range(a.warmup):
            step()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(a.steps):
            step()
        torch.cuda.synchronize()
        return (time.perf_counter() - t0) * 1000.0 / a.steps

    injector = ctypes.CDLL(path)  # the copy the driver loaded (same path, same handle)
    injector.floor_injector_set_kinds.argtypes = [ctypes.c_char_p]
    step()
    torch.cuda.synchronize()
    first = timed()  # the start set, before any kind was switched
    ms = {s: [] for s in SETS}
    for r in range(a.rounds):
        order = SETS[r % len(SETS):] + SETS[:r % len(SETS)]
        for s in order:
            refused = injector.floor_injector_set_kinds(b"" if s == "off" else s.encode())
            if refused:
                print("kind_cost: CUPTI refused %d switch(es) for %s" % (refused, s), file=sys.stderr)
            ms[s].append(timed())
    print("kind_cost: tiny MLP step, %d rounds x %d steps per set, rotated order" % (a.rounds, a.steps))
    print("  %-58s %9s %24s %24s" % ("kinds", "ms/step", "overhead vs off [IQR]", "vs kernel [IQR]"))
    print("  %-58s %9.4f %24s" % ("kernel (start set, before any switch)", first, ""))
    for s in SETS:
        over = [(t - o) / o * 100.0 for t, o in zip(ms[s], ms["off"])]
        lo, hi = quartiles(over)
        vk = [(t - k) / k * 100.0 for t, k in zip(ms[s], ms["kernel"])]
        klo, khi = quartiles(vk)
        print("  %-58s %9.4f %+8.1f%% [%+.1f, %+.1f] %+8.1f%% [%+.1f, %+.1f]" % (
            s, statistics.median(ms[s]), statistics.median(over), lo, hi,
            statistics.median(vk), klo, khi))
    return 0


if __name__ == "__main__":
    sys.exit(main())
