"""A PyTorch training loop WITHOUT NVTX, for tests/gpu/run.sh check "torch_steps": cuscope must find its
steps in the kernel stream (steps inferred, stats' nvtx row "step" in domain "inferred").

  python3 torch_steps.py [--steps N]

The MLP of torch_loop.py with SGD (foreach kernels), a no-grad eval pass every 5 steps, a loss.item() every
10 (a logging sync), a synchronize and a short sleep (a data loader) each step; nothing annotated.
Prints "pid P" and "steps N" (the truth the check compares with).
"""
import argparse
import os
import sys
import time

import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--hidden", type=int, default=512)
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print("torch_steps: CUDA not available", file=sys.stderr)
        return 2
    dev = torch.device("cuda", 0)
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(a.hidden, a.hidden), torch.nn.ReLU(),
        torch.nn.Linear(a.hidden, a.hidden), torch.nn.ReLU(),
        torch.nn.Linear(a.hidden, 10)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(64, a.hidden, device=dev)
    y = torch.randint(0, 10, (64,), device=dev)
    for step in range(a.steps):
        time.sleep(0.002)  # the data loader
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if step % 5 == 4:
            with torch.no_grad():
                model(x).argmax(dim=1)
        if step % 10 == 9:
            print("loss %.4f" % loss.item())
        torch.cuda.synchronize()
    print("pid %d" % os.getpid())
    print("steps %d" % a.steps)
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
