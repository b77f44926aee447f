import torch
import transformer_engine.pytorch as te

layer = te.Linear(16, 16)
