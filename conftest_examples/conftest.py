"""Shared pieces of the examples. Tests that need PyTorch are skipped cleanly when it is not installed.

Copy what you need: the ``tiny_model`` fixture is what a training smoke test usually starts from, and the
``faildiag_run`` fixture (from pytest-faildiag) runs a training script or ``torchrun`` with full capture.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

HAVE_TORCH = importlib.util.find_spec("torch") is not None
SCRIPTS = Path(__file__).parent / "scripts"

# regression_project/ is a separate project (its own git repository in the main job: scripts/regression_demo.sh)
collect_ignore = ["regression_project"]
if not HAVE_TORCH:
    collect_ignore += ["test_training_smoke.py", "test_distributed.py"]


def pytest_report_header(config: pytest.Config) -> str:
    return "conftest_examples: every failure below is deliberate; read the 'faildiag' sections" + (
        "" if HAVE_TORCH else " (PyTorch not installed: its examples are skipped)"
    )


@pytest.fixture
def scripts() -> Path:
    return SCRIPTS
