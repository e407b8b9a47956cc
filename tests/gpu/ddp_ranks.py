"""A small seeded DDP training job for the ranks checks of tests/gpu/run.sh (issue 14).

  torchrun --nproc-per-node 2 ddp_ranks.py --backend gloo [--steps N] [--profile]
  RANK=0 WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=P ddp_ranks.py --backend nccl

Every rank uses GPU 0 (gloo lets several ranks share one GPU; NCCL does not), runs N steps of an
MLP under DistributedDataParallel, each step an NVTX range "step", and prints "rank R pid P
steps N loss L". With --profile the whole run, from before the first CUDA call, is inside
torch.profiler (CUDA activity) and each rank also prints "rank R profiler_kernels K": the number
of GPU kernels torch.profiler saw, to compare with a cuscope capture of a run without --profile.
"""
import argparse
import os
import sys

import torch
import torch.distributed as dist


def train(a, rank):
    dev = torch.device("cuda", 0)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10)).to(dev)
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    g = torch.Generator(device="cpu").manual_seed(1 + rank)
    loss = None
    for _ in range(a.steps):
        torch.cuda.nvtx.range_push("step")
        x = torch.randn(32, 256, generator=g).to(dev)
        y = torch.randint(0, 10, (32,), generator=g).to(dev)
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(ddp(x), y)
        loss.backward()
        opt.step()
        if a.backend == "nccl" and dist.get_world_size() == 1:
            # One rank: NCCL turns DDP's in-place sum into nothing and a copy into a cudaMemcpy;
            # an average launches its one-rank reduction kernel and an all-to-all its send/recv
            # kernel, so NCCL's kernels run.
            t = torch.ones(1 << 16, device=dev)
            dist.all_reduce(t, op=dist.ReduceOp.AVG)
            out = torch.empty_like(t)
            dist.all_to_all_single(out, t)
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()
    return loss.item()


def say(line):
    """One line in one write: the ranks share the run's stdout, and print(..., flush=True) can
    write the text and its newline in two system calls (strace shows it), so another rank's line
    could land between them (seen on the GPU host: "...loss 2.298721rank 1 pid ...\n\n")."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", choices=("gloo", "nccl"), required=True)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--profile", action="store_true")
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print("ddp_ranks: CUDA not available", file=sys.stderr)
        return 2
    rank = int(os.environ.get("RANK", "0"))
    dist.init_process_group(backend=a.backend, rank=rank, world_size=int(os.environ.get("WORLD_SIZE", "1")))
    if a.profile:
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            loss = train(a, rank)
            torch.cuda.synchronize()
        # The kernels of Kineto's trace (category "kernel"): prof.events()'s CUDA device events also
        # hold GPU user annotations (record_function spans mirrored on the GPU), which are not kernels.
        import json
        import tempfile
        with tempfile.NamedTemporaryFile(suffix=".json") as f:
            prof.export_chrome_trace(f.name)
            trace = json.load(open(f.name))
        events = trace["traceEvents"] if isinstance(trace, dict) else trace
        kernels = sum(1 for e in events if e.get("ph") == "X" and e.get("cat") == "kernel")
        say("rank %d profiler_kernels %d" % (rank, kernels))
    else:
        loss = train(a, rank)
    say("rank %d pid %d steps %d loss %.6f" % (rank, os.getpid(), a.steps, loss))
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
