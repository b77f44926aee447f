"""A required environment variable is not set: os.environ[...] and torch's env:// rendezvous."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.torch
pytest.importorskip("torch")

TRAIN = """
import os

import torch

data_dir = os.environ["DATA_DIR"]
x, y = torch.load(os.path.join(data_dir, "train.pt"))
model = torch.nn.Linear(4, 2)
loss = torch.nn.functional.cross_entropy(model(x), y)
print("loss", float(loss))
"""

PREP = "python -c \"import torch; torch.save((torch.randn(8, 4), torch.randint(0, 2, (8,))), 'data/train.pt')\""


def test_it_sets_the_missing_data_dir_for_the_rerun_and_verifies(project):
    project.write("train.py", TRAIN)
    (project.root / "data").mkdir()
    assert project.sh(PREP).returncode == 0
    report = project.fail_and_diagnose()
    assert report["root_causes"][0]["id"] == "environment.missing_variable"

    proposal = project.proposal_changes_nothing()
    (change,) = proposal["changes"]
    assert (change["kind"], change["key"], change["new"]) == ("env", "DATA_DIR", str((project.root / "data").resolve()))

    before = project.user_hashes()
    fix = project.confirm_expect_verified(proposal)
    assert project.user_hashes() == before  # an env fix never edits the project
    env_file = (project.snapshot / "fix" / "fix.env").read_text()
    assert f'DATA_DIR="{project.root.resolve() / "data"}"' in env_file
    assert fix["changes"][0]["key"] == "DATA_DIR"


def test_yes_is_enough_confirmation_for_an_environment_change(project):
    project.write("train.py", TRAIN)
    (project.root / "data").mkdir()
    assert project.sh(PREP).returncode == 0
    project.fail_and_diagnose()
    res = project.fix("--yes")
    assert res.returncode == 0, res.stdout + res.stderr
    assert project.report()["fix"]["verification"] == "passed"


DIST = """
import torch.distributed as dist

dist.init_process_group("gloo", init_method="env://", rank=0, world_size=1)
dist.barrier()
dist.destroy_process_group()
print("ok")
"""


def test_it_rolls_back_master_addr_when_the_rendezvous_still_fails_for_a_missing_port(project):
    project.write("train.py", DIST)
    report = project.fail_and_diagnose()
    assert "MASTER_ADDR" in report["root_causes"][0]["summary"]
    proposal = project.proposal_changes_nothing()
    assert (proposal["changes"][0]["key"], proposal["changes"][0]["new"]) == ("MASTER_ADDR", "127.0.0.1")

    fix = project.confirm_expect_rollback(proposal)
    assert fix["outcome"] == "still fails at the same place"
    assert "MASTER_PORT" in fix["after"]["first_failure"]["excerpt"]
    assert not (project.snapshot / "fix" / "fix.env").exists()


def test_it_gives_manual_steps_when_no_value_for_the_variable_can_be_found(project):
    project.write("train.py", TRAIN)  # no data/ folder, no .env.example: nothing to take a value from
    project.fail_and_diagnose()
    proposal = project.proposal_changes_nothing()
    assert proposal["automatic"] is False and proposal["changes"] == []
    assert any("DATA_DIR" in s for s in proposal["manual_steps"])
    res = project.fix("--confirm", proposal["id"])
    assert res.returncode == 2 and "manual steps" in res.stderr
