"""A training smoke test on real PyTorch (CPU), and the ways such tests really fail.

One test passes (a few steps reduce the loss); the others each break one thing a real training job breaks.
"""

from __future__ import annotations

import os
import signal

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402
from torch.utils.data import DataLoader, Dataset, TensorDataset  # noqa: E402

pytestmark = pytest.mark.torch
IN_FEATURES, HIDDEN = 16, 32


def make_model(hidden: int = HIDDEN) -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(IN_FEATURES, hidden), nn.ReLU(), nn.Linear(hidden, 1))


def make_data(n: int = 64, features: int = IN_FEATURES, dtype: torch.dtype = torch.float32) -> TensorDataset:
    g = torch.Generator().manual_seed(1)
    x = torch.randn(n, features, generator=g, dtype=dtype)
    return TensorDataset(x, x.sum(dim=1, keepdim=True))


def train(model: nn.Module, data: Dataset, *, lr: float = 0.05, steps: int = 20, workers: int = 0) -> list[float]:
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    losses: list[float] = []
    loader = DataLoader(data, batch_size=16, num_workers=workers)
    for step in range(steps):
        for x, y in loader:
            loss = nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        losses.append(loss.item())
        print(f"step {step} loss={losses[-1]:.4f}")
        if not torch.isfinite(loss):
            raise FloatingPointError(f"loss is {loss.item()} at step {step}: training diverged")
    return losses


def test_training_reduces_the_loss() -> None:
    losses = train(make_model(), make_data(), steps=5)
    assert losses[-1] < losses[0]


def test_the_data_has_more_features_than_the_model_expects() -> None:
    train(make_model(), make_data(features=20), steps=1)


def test_float64_data_reaches_a_float32_model() -> None:
    train(make_model(), make_data(dtype=torch.float64), steps=1)


def test_a_learning_rate_that_diverges() -> None:
    train(make_model(), make_data(), lr=1e6, steps=20)


def test_resuming_from_a_checkpoint_of_another_model_size(tmp_path) -> None:
    torch.save(make_model(hidden=64).state_dict(), tmp_path / "last.pt")
    model = make_model()
    model.load_state_dict(torch.load(tmp_path / "last.pt"))


def test_resuming_from_a_checkpoint_cut_short_by_a_full_disk(tmp_path) -> None:
    path = tmp_path / "last.pt"
    torch.save(make_model().state_dict(), path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 3])  # what a full disk or a killed writer leaves
    make_model().load_state_dict(torch.load(path))


class _KilledDataset(Dataset):
    """A dataset whose worker dies the way the OOM killer ends one: SIGKILL, no Python traceback."""

    def __len__(self) -> int:
        return 8

    def __getitem__(self, i: int):
        if i == 5:
            os.kill(os.getpid(), signal.SIGKILL)
        return torch.zeros(IN_FEATURES), torch.zeros(1)


def test_a_dataloader_worker_is_killed() -> None:
    train(make_model(), _KilledDataset(), steps=1, workers=1)
