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


def test_a_collective_timeout_offers_the_frameworks_own_collectives_beside_the_users():
    """A watchdog timeout's collective may be a training framework's own (checkpoint consolidation, evaluation,
    state-dict gathering on the default group): library is among the homes shown, beside the ranks' data."""
    diag = _train_log("distributed/dist_pr6_allgather_watchdog_timeout_checkpoint_consolidation_barrier_automodel")
    assert diag.profile.type == "hang"
    assert any(c.rule == "nccl.watchdog_timeout" and c.category == "library" for c in diag.root_causes)
    assert "library" in _top3(diag)
    uneven = _train_log("distributed/pt_iterabledataset_unequal_len_nccl_timeout")
    assert "dataset" in _top3(uneven)
