"""Forking DataLoader (num_workers=2, fork context) over a small dataset, GPU work in the parent.
Each worker wraps __getitem__ in an NVTX range "load". Prints "pid P", "worker_pids A B ...",
"batches N", "loads N" and a TRUTH line."""
import json
import os
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset

ITEMS = 64
EPOCHS = 2
BATCH = 8


class Items(Dataset):
    def __len__(self):
        return ITEMS

    def __getitem__(self, i):
        torch.cuda.nvtx.range_push("load")
        x = torch.full((128,), float(i))
        time.sleep(0.002)
        torch.cuda.nvtx.range_pop()
        return x, os.getpid()


def main():
    if not torch.cuda.is_available():
        print("torch_dataloader: CUDA not available", file=sys.stderr)
        return 2
    dev = torch.device("cuda", 0)
    w = torch.randn(128, 128, device=dev)  # CUDA initialised in the parent before the fork
    torch.cuda.synchronize()
    workers = set()
    batches = 0
    acc = torch.zeros((), device=dev)
    for _ in range(EPOCHS):
        dl = DataLoader(Items(), batch_size=BATCH, num_workers=2, multiprocessing_context="fork",
                        persistent_workers=False)
        for x, pids in dl:
            torch.cuda.nvtx.range_push("train")
            x = x.to(dev, non_blocking=True)
            acc += torch.relu(x @ w).sum()
            torch.cuda.nvtx.range_pop()
            workers.update(int(p) for p in pids)
            batches += 1
        del dl
    torch.cuda.synchronize()
    print("pid %d" % os.getpid())
    print("worker_pids " + " ".join(str(p) for p in sorted(workers)))
    print("batches %d" % batches)
    print("acc %.1f" % acc.item())
    print("TRUTH " + json.dumps({"workers": sorted(workers), "batches": batches,
                                 "nvtx": {"train": batches, "load": ITEMS * EPOCHS}}))
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
