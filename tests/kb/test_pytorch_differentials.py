"""The competing homes of PyTorch/distributed symptom families, each shown on a real train log of the thread corpus.

A symptom's message says what went wrong, not where the cause lives; these tests check that the homes a
catalogue fact gives a family are offered together (dev logs are never fixtures).
"""

from __future__ import annotations

import json
from pathlib import Path

from pytest_faildiag.engine.api import diagnose

THREADS = Path(__file__).resolve().parents[1] / "data/corpus/threads"


def _train_log(name: str):
    """Diagnose a train log of the thread corpus (asserting it is one)."""
    assert json.loads((THREADS / "split.json").read_text())["split"][name] == "train"
    return diagnose([str(THREADS / f"{name}.log")])


def _top3(diag) -> list[str]:
    seen: list[str] = []
    for cause in diag.root_causes:
        if cause.category not in seen:
            seen.append(cause.category)
    return seen[:3]


def test_two_ranks_on_one_gpu_offer_the_launch_and_the_programs_own_device_choice():
    """NCCL's 'Duplicate GPU detected': the rank-to-device map is made by the launch (config) or by a device
    fixed in the program (model); both homes are offered by the rule itself."""
    diag = _train_log("distributed/dfine_duplicate_gpu_hardcoded_device")
    homes = {c.category for c in diag.root_causes if c.rule == "nccl.duplicate_gpu"}
    assert {"config", "model"} <= homes
    assert "model" in _top3(diag)
