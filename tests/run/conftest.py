"""Helpers for the `faildiag run` tests: every test drives the real command line in a real subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass
class Finished:
    returncode: int
    stdout: str
    stderr: str
    out: Path

    def report(self) -> dict:
        return json.loads((self.out / "report.json").read_text())

    def run_json(self) -> dict:
        return json.loads((self.out / "run.json").read_text())


def faildiag_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "pytest_faildiag.cli", "run", *args]


@pytest.fixture
def script(tmp_path: Path):
    """Write a Python script into the test's folder and return its path."""

    def make(name: str, body: str) -> Path:
        p = tmp_path / name
        p.write_text(textwrap.dedent(body))
        return p

    return make


@pytest.fixture
def faildiag_run(tmp_path: Path):
    """Run `faildiag run [options] -- CMD` to completion; returns what it printed and its folder."""

    def run(cmd: list[str], *options: str, timeout: float = 120, env: dict[str, str] | None = None) -> Finished:
        out = tmp_path / "out"
        cp = subprocess.run(
            faildiag_cmd("--out", str(out), *options, "--", *cmd),
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=tmp_path,
            env=None if env is None else {**os.environ, **env},
        )
        return Finished(cp.returncode, cp.stdout, cp.stderr, out)

    return run
