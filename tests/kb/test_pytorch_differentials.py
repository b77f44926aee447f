"""The competing homes of PyTorch/distributed symptom families, each shown on a real train log of the thread corpus.

A symptom's message says what went wrong, not where the cause lives; these tests check that the homes a
catalogue fact gives a family are offered together (dev logs are never fixtures).
"""

from __future__ import annotations

from pytest_faildiag.engine.api import diagnose
from tests.kb.kb_helpers import top3, train_log_path


def test_two_ranks_on_one_gpu_offer_the_launch_and_the_programs_own_device_choice():
    """NCCL's 'Duplicate GPU detected': the rank-to-device map is made by the launch (config) or by a device
    fixed in the program (model); both homes are offered by the rule itself."""
    diag = diagnose([str(train_log_path("distributed/dfine_duplicate_gpu_hardcoded_device"))])
    homes = {c.category for c in diag.root_causes if c.rule == "nccl.duplicate_gpu"}
    assert {"config", "model"} <= homes
    assert "model" in top3(diag)


def test_a_collective_timeout_offers_the_frameworks_own_collectives_beside_the_users():
    """A watchdog timeout's collective may be a training framework's own (checkpoint consolidation, evaluation,
    state-dict gathering on the default group): library is among the homes shown, beside the ranks' data."""
    diag = diagnose(
        [
            str(
                train_log_path(
                    "distributed/dist_pr6_allgather_watchdog_timeout_checkpoint_consolidation_barrier_automodel"
                )
            )
        ]
    )
    assert diag.profile.type == "hang"
    assert any(c.rule == "nccl.watchdog_timeout" and c.category == "library" for c in diag.root_causes)
    assert "library" in top3(diag)
    uneven = diagnose([str(train_log_path("distributed/pt_iterabledataset_unequal_len_nccl_timeout"))])
    assert "dataset" in top3(uneven)
