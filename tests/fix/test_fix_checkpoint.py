"""A checkpoint that pickles a config object, loaded under torch's weights_only=True default."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.torch
pytest.importorskip("torch")

CONFIG_TYPES = """
from dataclasses import dataclass


@dataclass
class TrainConfig:
    lr: float
    epochs: int
"""

MAKE_CKPT = """
import torch
from torch import nn

from {module} import TrainConfig

model = nn.Linear(4, 2)
torch.save({{"model": model.state_dict(), "config": TrainConfig(lr=0.1, epochs=3)}}, "ckpt.pt")
"""

TRAIN = """
import torch
from torch import nn

ckpt = torch.load("ckpt.pt")
model = nn.Linear(4, 2)
model.load_state_dict(ckpt["model"])
print("resumed after epoch", ckpt["config"].epochs)
"""


def test_it_passes_weights_only_false_to_the_failing_torch_load_and_verifies(project):
    project.write("train_config.py", CONFIG_TYPES)
    project.write("make_ckpt.py", MAKE_CKPT.format(module="train_config"))
    project.write("train.py", "from train_config import TrainConfig  # noqa: F401\n" + TRAIN)
    assert project.sh("python make_ckpt.py").returncode == 0
    report = project.fail_and_diagnose()
    assert report["root_causes"][0]["id"] == "environment.weights_only_default"

    proposal = project.proposal_changes_nothing()
    (change,) = proposal["changes"]
    assert change["kind"] == "source" and change["path"] == "train.py"
    assert change["new"] == 'ckpt = torch.load("ckpt.pt", weights_only=False)'
    assert "only for checkpoints you trust" in proposal["summary"]

    project.confirm_expect_verified(proposal)
    assert 'torch.load("ckpt.pt", weights_only=False)' in (project.root / "train.py").read_text()


def test_it_rolls_back_weights_only_false_when_the_pickled_class_no_longer_exists(project):
    project.write("legacy_config.py", CONFIG_TYPES)
    project.write("make_ckpt.py", MAKE_CKPT.format(module="legacy_config"))
    project.write("train.py", TRAIN)
    assert project.sh("python make_ckpt.py").returncode == 0
    (project.root / "legacy_config.py").unlink()  # the class the checkpoint pickled is gone
    project.fail_and_diagnose()
    proposal = project.proposal_changes_nothing()
    assert proposal["changes"][0]["kind"] == "source"

    fix = project.confirm_expect_rollback(proposal)
    assert fix["outcome"] == "fails differently now"
    assert "legacy_config" in fix["after"]["first_failure"]["excerpt"]
    assert 'torch.load("ckpt.pt")\n' in (project.root / "train.py").read_text()
