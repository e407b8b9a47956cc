"""Small MLP training loop with torch.cuda.nvtx ranges "step" > "forward", "backward", for
tests/gpu/run.sh (check "torch_nvtx") and the live-UI check.

  python3 torch_loop.py [--steps N] [--seconds S]

--steps N: exactly N steps (default 20); --seconds S: run steps until S seconds passed (with a
short sleep per step so the timeline has gaps). Prints "pid P", "steps N" and a TRUTH line.
"""
import argparse
import json
import os
import sys
import time

import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--seconds", type=float, default=0.0)
    ap.add_argument("--hidden", type=int, default=512)
    ap.add_argument("--sleep-ms", type=float, default=0.0,
                    help="sleep per step (with --steps: a fixed run that lasts long enough to attach to)")
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print("torch_loop: CUDA not available", file=sys.stderr)
        return 2
    dev = torch.device("cuda", 0)
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(a.hidden, a.hidden), torch.nn.ReLU(),
        torch.nn.Linear(a.hidden, a.hidden), torch.nn.ReLU(),
        torch.nn.Linear(a.hidden, 10)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(64, a.hidden, device=dev)
    y = torch.randint(0, 10, (64,), device=dev)
    steps = 0
    t_end = time.monotonic() + a.seconds
    while (steps < a.steps) if a.seconds <= 0 else (time.monotonic() < t_end):
        torch.cuda.nvtx.range_push("step")
        torch.cuda.nvtx.range_push("forward")
        loss = torch.nn.functional.cross_entropy(model(x), y)
        torch.cuda.nvtx.range_pop()
        torch.cuda.nvtx.range_push("backward")
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        torch.cuda.nvtx.range_pop()
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()
        steps += 1
        if steps == 1:
            print("cuda up pid %d" % os.getpid())
            sys.stdout.flush()
        if a.seconds > 0:
            time.sleep(0.01)
        elif a.sleep_ms > 0:
            time.sleep(a.sleep_ms / 1000.0)
    torch.cuda.synchronize()
    print("pid %d" % os.getpid())
    print("steps %d" % steps)
    print("loss %.4f" % loss.item())
    print("TRUTH " + json.dumps({"nvtx": {"step": steps, "forward": steps, "backward": steps}}))
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
