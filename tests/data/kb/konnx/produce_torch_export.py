import torch
class M(torch.nn.Module):
    def forward(self, x):
        return torch.linalg.eigvals(x).real
torch.onnx.export(M(), (torch.randn(3, 3),), "tx.onnx", dynamo=True, report=False)
