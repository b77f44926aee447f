"""Fixtures for the retort tests; the builders live in retort_helpers.py (importable by the test modules)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from retort_helpers import Experiment  # noqa: E402


@pytest.fixture
def experiment(tmp_path: Path) -> Experiment:
    return Experiment(tmp_path / "exp")
