"""Write a large multi-rank training log: mostly noise, the real error near the end.

Shared by the throughput benchmarks. The noise mixes what real multi-rank logs are made of: NCCL INFO
chatter, per-step metrics lines, progress bars redrawn with \\r, ANSI-coloured logger lines and
harmless warnings, interleaved across ranks.
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

NOISE = [
    "[rank{r}]:vm:{pid}:{pid} [{r}] NCCL INFO Channel {c:02d}/64 : {r}[{r}] -> {n}[{n}] via P2P/IPC",
    "[rank{r}]:vm:{pid}:{pid} [{r}] NCCL INFO comm 0x{h:x} rank {r} nRanks 8 nNodes 1 localRanks 8 localRank {r} MNNVL 0",
    "[rank{r}]:2026-11-30 01:{m:02d}:{s:02d},{ms:03d} INFO trainer.py:212 step {step} loss {loss:.4f} lr 3.0e-04 grad_norm {g:.3f} tokens/s {tps}",
    "[rank{r}]:\x1b[32m2026-11-30 01:{m:02d}:{s:02d}\x1b[0m | INFO | dataloader: fetched batch {step} in {ms} ms",
    "[rank{r}]:Epoch 1:  {pct}%|{bar}| {step}/20000 [01:{m:02d}<02:{s:02d}, 3.{ms}it/s]\r",
    "[rank{r}]:/usr/lib/python3/site-packages/torch/utils/checkpoint.py:90: UserWarning: None of the inputs have requires_grad=True. Gradients will be None",
    "[rank{r}]:[W1130 01:{m:02d}:{s:02d}.{ms:03d}000 {pid} ProcessGroupNCCL.cpp:4561] [PG ID 0 PG GUID 0 Rank {r}] using GPU {r} to perform barrier",
]
TAIL = """[rank3]:Traceback (most recent call last):
[rank3]:  File "/home/user/project/train.py", line 88, in <module>
[rank3]:    loss = model(batch).loss
[rank3]:  File "/opt/venv/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1779, in _wrapped_call_impl
[rank3]:    return self._call_impl(*args, **kwargs)
[rank3]:torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total capacity of 79.15 GiB of which 1.21 GiB is free. Including non-PyTorch memory, this process has 77.90 GiB memory in use. Of the allocated memory 74.10 GiB is allocated by PyTorch, and 2.31 GiB is reserved by PyTorch but unallocated.
[rank0]:[E1130 01:59:58.123000000 ProcessGroupNCCL.cpp:1895] [PG ID 0 PG GUID 0(default_pg) Rank 0] Process group watchdog thread terminated with exception: NCCL error: remote process exited or there was a network error
"""


def write(path: Path, size_mb: int, seed: int = 7) -> Path:
    rng = random.Random(seed)
    target = size_mb * 1024 * 1024
    written = 0
    with open(path, "w", encoding="utf-8") as f:
        block = []
        step = 0
        while written < target:
            step += 1
            r = rng.randrange(8)
            line = rng.choice(NOISE).format(
                r=r,
                n=(r + 1) % 8,
                pid=1000 + r,
                c=rng.randrange(64),
                h=rng.randrange(1 << 40),
                m=step // 3600 % 60,
                s=step % 60,
                ms=rng.randrange(1000),
                step=step,
                loss=rng.random() * 3,
                g=rng.random(),
                tps=rng.randrange(90000),
                pct=step % 100,
                bar="#" * (step % 10) + " " * (10 - step % 10),
            )
            block.append(line)
            if len(block) >= 2000:
                chunk = "\n".join(block) + "\n"
                f.write(chunk)
                written += len(chunk)
                block = []
        f.write(TAIL)
    return path


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("path")
    ap.add_argument("--mb", type=int, default=1024)
    a = ap.parse_args()
    print(write(Path(a.path), a.mb))
