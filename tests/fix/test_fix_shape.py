"""A shape typo in a small model file: nn.Linear in_features does not match its input."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.torch
pytest.importorskip("torch")

MODEL = """
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 256)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))
"""

MODEL_TWO_TYPOS = """
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 256)
        self.fc2 = nn.Linear(128, 64)
        self.head = nn.Linear(32, 10)

    def forward(self, x):
        h = torch.relu(self.fc2(torch.relu(self.fc1(x))))
        return self.head(h)
"""

TRAIN = """
import torch

from model import Net

torch.manual_seed(0)
model = Net()
out = model(torch.randn(64, 16))
loss = out.logsumexp(dim=1).mean()
loss.backward()
print("out", tuple(out.shape))
"""


def test_it_fixes_in_features_from_the_shapes_in_the_error_and_verifies(project):
    project.write("model.py", MODEL)
    project.write("train.py", TRAIN)
    report = project.fail_and_diagnose()
    assert "(64x256 and 128x10)" in report["profile"]["first_failure"]["excerpt"]

    proposal = project.proposal_changes_nothing()
    (change,) = proposal["changes"]
    assert (change["kind"], change["path"], change["old"], change["new"]) == ("source", "model.py", "128", "256")
    assert "-        self.fc2 = nn.Linear(128, 10)" in change["diff"]
    assert "+        self.fc2 = nn.Linear(256, 10)" in change["diff"]

    project.confirm_expect_verified(proposal)
    assert (project.root / "model.py").read_text() == MODEL.lstrip("\n").replace("Linear(128, 10)", "Linear(256, 10)")


def test_it_refuses_yes_alone_and_a_wrong_id_for_a_source_change(project):
    project.write("model.py", MODEL)
    project.write("train.py", TRAIN)
    project.fail_and_diagnose()
    proposal = project.propose()
    before = project.hashes()
    res = project.fix("--yes")
    assert res.returncode == 2 and f"--confirm {proposal['id']}" in res.stderr
    res = project.fix("--confirm", "source-0000000000")
    assert res.returncode == 2 and proposal["id"] in res.stderr
    assert "Traceback" not in res.stderr
    assert project.hashes() == before


def test_a_proposal_id_no_longer_applies_after_the_file_changed(project):
    project.write("model.py", MODEL)
    project.write("train.py", TRAIN)
    project.fail_and_diagnose()
    proposal = project.propose()
    project.write("model.py", MODEL + "\n# edited after the proposal\n")
    res = project.fix("--confirm", proposal["id"])
    assert res.returncode == 2
    assert "# edited after the proposal" in (project.root / "model.py").read_text()
    assert "fix" not in project.report()


def test_it_rolls_the_model_file_back_when_the_next_layer_is_also_wrong(project):
    project.write("model.py", MODEL_TWO_TYPOS)
    project.write("train.py", TRAIN)
    project.fail_and_diagnose()
    proposal = project.proposal_changes_nothing()
    assert proposal["changes"][0]["new"] == "256"

    fix = project.confirm_expect_rollback(proposal)
    assert fix["outcome"] == "still fails at the same place"
    assert "(64x64 and 32x10)" in fix["after"]["first_failure"]["excerpt"]
    assert (project.root / "model.py").read_text() == MODEL_TWO_TYPOS.lstrip("\n")
