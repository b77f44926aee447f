import torch
import ckptlib

model = torch.nn.Linear(4, 2)
ckptlib.save(model, "model.ckpt")
print(ckptlib.load(model, "model.ckpt"))
