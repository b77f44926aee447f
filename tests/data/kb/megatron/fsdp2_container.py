import os

import torch.distributed as dist
import torch.nn as nn
from torch.distributed.fsdp import fully_shard

os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
os.environ.setdefault("MASTER_PORT", "29534")
dist.init_process_group("gloo", rank=0, world_size=1)
blocks = nn.ModuleList([nn.Linear(8, 8) for _ in range(2)])
fully_shard(blocks)
