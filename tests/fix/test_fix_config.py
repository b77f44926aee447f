"""A wrong config value makes a real PyTorch run fail: `num_classes` smaller than the labels."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.torch
pytest.importorskip("torch")

TRAIN_JSON = """
import json

import torch
from torch import nn

cfg = json.load(open("config.json"))
torch.manual_seed(0)
x = torch.randn(32, 8)
y = torch.tensor([7, 3, 0, 5] * 8)
model = nn.Sequential(nn.Linear(8, cfg["hidden_size"]), nn.ReLU(), nn.Linear(cfg["hidden_size"], cfg["num_classes"]))
opt = torch.optim.SGD(model.parameters(), lr=cfg["lr"])
for step in range(3):
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("final loss", float(loss))
"""

CONFIG_JSON = """
{
  "hidden_size": 16,
  "num_classes": 5,
  "lr": 0.1
}
"""


def test_it_raises_a_too_small_num_classes_in_a_json_config_and_verifies_the_run_passes(project):
    project.write("train.py", TRAIN_JSON)
    project.write("config.json", CONFIG_JSON)
    report = project.fail_and_diagnose()
    assert "Target 7 is out of bounds" in report["profile"]["first_failure"]["excerpt"]

    proposal = project.proposal_changes_nothing()
    assert proposal["automatic"] is True
    (change,) = proposal["changes"]
    assert (change["kind"], change["path"], change["key"], change["old"], change["new"]) == (
        "config",
        "config.json",
        "num_classes",
        "5",
        "8",
    )
    assert '-  "num_classes": 5,' in change["diff"] and '+  "num_classes": 8,' in change["diff"]

    project.confirm_expect_verified(proposal)
    assert (project.root / "config.json").read_text() == CONFIG_JSON.lstrip("\n").replace(
        '"num_classes": 5', '"num_classes": 8'
    )
    assert project.sh("python train.py").returncode == 0


TRAIN_TOML = """
import tomllib

import torch
from torch import nn

with open("config.toml", "rb") as f:
    cfg = tomllib.load(f)
x = torch.randn(40, 8)
y = torch.arange(40) % 10
model = nn.Linear(8, cfg["model"]["num_classes"])
loss = nn.functional.cross_entropy(model(x), y)
print("loss", float(loss))
"""

CONFIG_TOML = """
# model settings
[model]
hidden_size = 16
num_classes = 5   # one per class

[train]
lr = 0.1
"""


def test_it_rolls_a_toml_config_back_byte_identical_when_the_raised_class_count_still_fails(project):
    # labels run 0..9: the first one out of range is 5, so the proposed num_classes = 6 cannot help
    project.write("train.py", TRAIN_TOML)
    project.write("config.toml", CONFIG_TOML)
    project.fail_and_diagnose()
    proposal = project.proposal_changes_nothing()
    assert proposal["changes"][0]["new"] == "6"

    fix = project.confirm_expect_rollback(proposal)
    assert fix["outcome"] == "still fails at the same place"
    assert "Target 6 is out of bounds" in fix["after"]["first_failure"]["excerpt"]
    assert (project.snapshot / "fix" / "backup").is_dir()


def test_it_keeps_a_change_that_did_not_verify_when_told_to(project):
    project.write("train.py", TRAIN_TOML)
    project.write("config.toml", CONFIG_TOML)
    project.fail_and_diagnose()
    proposal = project.propose()
    res = project.fix("--confirm", proposal["id"], "--keep")
    assert res.returncode == 1
    fix = project.report()["fix"]
    assert (fix["verification"], fix["rolled_back"], fix["kept"]) == ("failed", False, True)
    assert "num_classes = 6   # one per class" in (project.root / "config.toml").read_text()


MAKE_CKPT = """
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 64), nn.ReLU(), nn.Linear(64, 3))  # trained with hidden_size 64
torch.save(model.state_dict(), "model.pt")
"""

EVAL_INI = """
import configparser

import torch
from torch import nn

cfg = configparser.ConfigParser()
cfg.read("eval.ini")
hidden = cfg.getint("model", "hidden_size")
batch = cfg.getint("data", "batch_size")
model = nn.Sequential(nn.Linear(8, hidden), nn.ReLU(), nn.Linear(hidden, 3))
model.load_state_dict(torch.load("model.pt"))
print("eval", model(torch.randn(batch, 8)).argmax(1).tolist())
"""

CONFIG_INI = """
[model]
; must match the checkpoint
hidden_size = 32

[data]
batch_size = 32
"""


def test_it_sets_the_hidden_size_of_an_ini_config_to_the_checkpoints_and_verifies(project):
    project.write("make_ckpt.py", MAKE_CKPT)
    project.write("train.py", EVAL_INI)
    project.write("eval.ini", CONFIG_INI)
    assert project.sh("python make_ckpt.py").returncode == 0
    report = project.fail_and_diagnose()
    assert report["root_causes"][0]["id"] == "checkpoint.architecture_mismatch"

    proposal = project.proposal_changes_nothing()
    (change,) = proposal["changes"]
    # batch_size also holds 32, but it is not a model size: only hidden_size changes
    assert (change["path"], change["key"], change["old"], change["new"]) == ("eval.ini", "hidden_size", "32", "64")
    assert (
        "config.model_config_mismatch" in " ".join(proposal["notes"])
        or proposal["cause"] == "config.model_config_mismatch"
    )

    project.confirm_expect_verified(proposal)
    assert (project.root / "eval.ini").read_text() == CONFIG_INI.lstrip("\n").replace(
        "hidden_size = 32", "hidden_size = 64"
    )
