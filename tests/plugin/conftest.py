"""Helpers for the plugin tests: every test drives a real pytest session through ``pytester``."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest


def session_index(root: Path, out: str = "faildiag-out") -> dict[str, Any]:
    """The ``session.json`` a run wrote (fails the test when it is missing)."""
    path = root / out / "session.json"
    assert path.is_file(), f"no session.json under {root / out}: {sorted(p.name for p in (root / out).glob('*'))}"
    return json.loads(path.read_text(encoding="utf-8"))


def entry_for(index: dict[str, Any], test_name: str) -> dict[str, Any]:
    matches = [t for t in index["tests"] if t["nodeid"].endswith(test_name)]
    assert matches, f"{test_name} not in session.json: {[t['nodeid'] for t in index['tests']]}"
    return matches[0]


def recover_killed(out: Path, *extra: str) -> list[dict[str, Any]]:
    """``faildiag recover --out OUT --format json`` in a fresh interpreter: the tests a killed session left."""
    import sys

    proc = subprocess.run(
        [sys.executable, "-m", "pytest_faildiag.cli", "recover", "--out", str(out), "--format", "json", *extra],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["killed"]


@pytest.fixture
def isolated(monkeypatch: pytest.MonkeyPatch) -> None:
    """Inner sessions must not see CI variables of the outer one (GitHub annotations would change output)."""
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)


def git(root: Path, *args: str) -> str:
    """Run git in ``root`` with a throw-away identity (real repositories in the rerun/changed-lines tests)."""
    return subprocess.run(
        ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
        cwd=root,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
