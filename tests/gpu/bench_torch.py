"""PyTorch step-time benchmark for tests/gpu/bench.sh.

  python3 bench_torch.py --model mlp|transformer [--steps N] [--warmup W]

mlp: launch-bound tiny MLP training step (8 x Linear(256) + ReLU, batch 32, Adam).
transformer: GPU-bound 12-layer transformer encoder training step, bf16, batch 16 x 512 tokens,
d_model 1024, 16 heads, FFN 4096, AdamW. The timed loop excludes warm-up and ends with a
synchronize; prints "ms_per_step X". Also prints, for what a tracer adds: "first_step_s X" (from
BENCH_T0_NS, the launcher's CLOCK_REALTIME at exec, to the end of the first step), "rss_mb X"
(peak resident set of this process, where an injected collector lives too) and "gpu_used_mb X"
(device memory in use at the end, all processes: the benchmark runs alone on its GPU)."""
import argparse
import os
import resource
import sys
import time

import torch


def build(model, dev):
    if model == "mlp":
        layers = []
        for _ in range(8):
            layers += [torch.nn.Linear(256, 256), torch.nn.ReLU()]
        m = torch.nn.Sequential(*layers).to(dev)
        x = torch.randn(32, 256, device=dev)
        opt = torch.optim.Adam(m.parameters(), lr=1e-3)

        def step():
            opt.zero_grad(set_to_none=True)
            m(x).square().mean().backward()
            opt.step()
        return step
    layer = torch.nn.TransformerEncoderLayer(d_model=1024, nhead=16, dim_feedforward=4096,
                                             dropout=0.0, batch_first=True, norm_first=True)
    m = torch.nn.TransformerEncoder(layer, num_layers=12, enable_nested_tensor=False)
    m = m.to(device=dev, dtype=torch.bfloat16)
    x = torch.randn(16, 512, 1024, device=dev, dtype=torch.bfloat16)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-4)

    def step():
        opt.zero_grad(set_to_none=True)
        m(x).float().square().mean().backward()
        opt.step()
    return step


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", choices=["mlp", "transformer"], required=True)
    ap.add_argument("--steps", type=int, default=0)
    ap.add_argument("--warmup", type=int, default=0)
    a = ap.parse_args()
    steps = a.steps or (300 if a.model == "mlp" else 30)
    warmup = a.warmup or (50 if a.model == "mlp" else 5)
    if not torch.cuda.is_available():
        print("bench_torch: CUDA not available", file=sys.stderr)
        return 2
    dev = torch.device("cuda", 0)
    torch.manual_seed(0)
    step = build(a.model, dev)
    step()
    torch.cuda.synchronize()
    t0_ns = int(os.environ.get("BENCH_T0_NS", "0"))
    if t0_ns:
        print("first_step_s %.3f" % ((time.time_ns() - t0_ns) / 1e9), flush=True)
    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    print("steps %d seconds %.6f" % (steps, dt))
    print("ms_per_step %.4f" % (dt * 1000.0 / steps))
    free, total = torch.cuda.mem_get_info()
    print("gpu_used_mb %.0f" % ((total - free) / 2**20))
    # Flushed here, not at exit: a run killed (or crashing) in CUDA's teardown keeps its result.
    print("rss_mb %.0f" % (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
