"""Shared fixtures: paths to the project's labelled data and a way to run the real CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "data" / "corpus" / "gpu"


def corpus_cases() -> list[Path]:
    return sorted(p for p in CORPUS.iterdir() if (p / "label.json").is_file())


@pytest.fixture(autouse=True, scope="session")
def _suite_environment(tmp_path_factory: pytest.TempPathFactory):
    """The inner pytest sessions of this suite fail on purpose; rerunning each of them twice (the plugin's
    default) would only slow the suite (tests/plugin/test_rerun.py turns the default back on). The key that
    seals recorded commands (fix mode) lives in a throw-away state folder, and the compiled scan database in a
    throw-away cache folder, not in the real home."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("FAILDIAG_RERUN", "0")
        mp.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("state")))
        mp.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))  # the scan engine's database cache
        yield


@pytest.fixture
def run_cli():
    """Run the real `faildiag` CLI in a subprocess (as users and CI do)."""

    def _run(*args: str, stdin: bytes | None = None, cwd: Path | None = None, timeout: float = 120):
        return subprocess.run(
            [sys.executable, "-m", "pytest_faildiag.cli", *args],
            input=stdin,
            capture_output=True,
            cwd=cwd,
            timeout=timeout,
        )

    return _run


@pytest.fixture
def report_schema() -> dict:
    return json.loads((ROOT / "pytest_faildiag" / "schemas" / "report.schema.json").read_text())
