import os
import sys

import torch
import torch.distributed as dist
from megatron.core import dist_checkpointing

os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
os.environ.setdefault("MASTER_PORT", "29532")
dist.init_process_group("gloo", rank=0, world_size=1)
ckpt_dir = sys.argv[1]
os.makedirs(ckpt_dir, exist_ok=True)
torch.save({"model": {"weight": torch.zeros(4)}}, os.path.join(ckpt_dir, "model_optim_rng.pt"))
state = dist_checkpointing.load({}, ckpt_dir)
