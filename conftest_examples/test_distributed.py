"""A distributed test: torchrun, 2 ranks, gloo on the CPU, launched with full capture by ``faildiag_run``.

When the run fails, what torchrun and the ranks printed is the evidence of the test's diagnosis.
"""

from __future__ import annotations

import shutil
import sys

import pytest

pytest.importorskip("torch")
pytestmark = pytest.mark.torch


def torchrun(scripts, *args: str) -> list[str]:
    launcher = shutil.which("torchrun") or ""
    base = [launcher] if launcher else [sys.executable, "-m", "torch.distributed.run"]
    return [*base, "--nproc-per-node", "2", "--standalone", "--max-restarts", "0", str(scripts / "ddp_step.py"), *args]


def test_one_rank_raises_while_loading_its_shard(faildiag_run, scripts) -> None:
    run = faildiag_run(torchrun(scripts, "--fail", "raise"), timeout=90, env={"OMP_NUM_THREADS": "1"})
    assert run.ok, run.describe()


def test_one_rank_never_joins_the_all_reduce(faildiag_run, scripts) -> None:
    run = faildiag_run(
        torchrun(scripts, "--fail", "skip-collective", "--timeout", "3"), timeout=90, env={"OMP_NUM_THREADS": "1"}
    )
    assert run.ok, run.describe()
