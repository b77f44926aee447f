"""One DDP training step on CPU with gloo, launched by torchrun. ``--fail raise``: rank 1 raises while
loading its shard; ``--fail skip-collective``: rank 1 never joins the all_reduce, so rank 0 times out."""

import argparse
import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist
from torch import nn


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--fail", choices=("none", "raise", "skip-collective"), default="none")
    ap.add_argument("--timeout", type=float, default=3.0)
    args = ap.parse_args()
    dist.init_process_group("gloo", timeout=timedelta(seconds=args.timeout))
    rank = dist.get_rank()
    torch.manual_seed(rank)
    model = nn.parallel.DistributedDataParallel(nn.Linear(8, 1))
    if args.fail == "raise" and rank == 1:
        raise FileNotFoundError(2, "No such file or directory", f"/data/shards/train-{rank:05d}.bin")
    if args.fail == "skip-collective" and rank == 1:
        time.sleep(args.timeout + 3)  # a rank stuck elsewhere (slow storage, a deadlock): it never all-reduces
        return
    x = torch.randn(4, 8)
    loss = model(x).sum()
    loss.backward()
    t = torch.ones(1)
    dist.all_reduce(t)
    print(f"rank {rank}: step done, world={int(t.item())}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
    os._exit(0)
