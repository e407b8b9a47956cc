"""A dispatch-bound PyTorch training step on the CPU, for tests/bench/torch_cpu_step.sh: the same
shape of work as the GPU benchmark's tiny MLP (tests/gpu/bench_torch.py), with layers so small
that the step is the framework's per-operator overhead, not arithmetic.

  python3 torch_cpu_step.py [STEPS]

8 x Linear(16) + ReLU, batch 4, Adam, one intra-op thread; 100 warm-up steps, then prints
"ms_per_step X" for STEPS (1500) steps."""
import sys
import time

import torch


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 1500
    torch.manual_seed(0)
    torch.set_num_threads(1)
    layers = []
    for _ in range(8):
        layers += [torch.nn.Linear(16, 16), torch.nn.ReLU()]
    m = torch.nn.Sequential(*layers)
    x = torch.randn(4, 16)
    opt = torch.optim.Adam(m.parameters(), lr=1e-3)

    def step():
        opt.zero_grad(set_to_none=True)
        m(x).square().mean().backward()
        opt.step()

    for _ in range(100):
        step()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    dt = time.perf_counter() - t0
    print("ms_per_step %.4f" % (dt * 1000.0 / steps), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
