"""`pytest --faildiag --faildiag-fix` prints a proposal for each failed test and applies nothing."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


def _hashes(root):
    return {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*.py"))}


def test_the_plugin_prints_a_proposal_per_failed_test_and_changes_no_file(pytester: pytest.Pytester, monkeypatch):
    monkeypatch.delenv("DATA_DIR", raising=False)
    pytester.mkdir("data")
    pytester.makepyfile(
        test_train="""
        import os

        def test_reads_the_data_folder():
            assert os.listdir(os.environ["DATA_DIR"]) == []
    """
    )
    before = _hashes(pytester.path)
    result = pytester.runpytest_subprocess("--faildiag", "--faildiag-fix", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "test_reads_the_data_folder" in out
    result.stdout.fnmatch_lines(["*faildiag fix: env-*", "*set the environment variable DATA_DIR=*data*"])
    assert _hashes(pytester.path) == before


def test_a_failed_tests_snapshot_is_fixed_by_rerunning_the_test(pytester: pytest.Pytester, monkeypatch):
    monkeypatch.delenv("DATA_DIR", raising=False)
    pytester.mkdir("data")
    pytester.makepyfile(
        test_train="""
        import os

        def test_reads_the_data_folder():
            assert os.listdir(os.environ["DATA_DIR"]) == []
    """
    )
    pytester.runpytest_subprocess("--faildiag", "-p", "no:cacheprovider").assert_outcomes(failed=1)
    session = json.loads((pytester.path / "faildiag-out" / "session.json").read_text())
    snap = pytester.path / "faildiag-out" / session["tests"][0]["slug"]
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    res = subprocess.run(
        [sys.executable, "-m", "pytest_faildiag.cli", "fix", str(snap), "--yes"],
        cwd=pytester.path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    fix = json.loads((snap / "report.json").read_text())["fix"]
    assert fix["command"].startswith("pytest ") and fix["verification"] == "passed"
