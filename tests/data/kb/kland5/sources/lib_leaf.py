import torch
from besselib import BesselBasis

rbf = BesselBasis(num_radial=6)
print(rbf(torch.rand(10)).shape)
