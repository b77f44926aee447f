import sys

import torch
import torch.distributed.checkpoint as dcp
import torch.nn as nn

model = nn.Linear(8, 8)
ckpt_dir = sys.argv[1]
torch.save(model.state_dict(), f"{ckpt_dir}/model.pt")
state = {"model": model.state_dict()}
dcp.load(state, checkpoint_id=ckpt_dir)
