"""Helpers for the fix-mode tests: real failing runs, real `faildiag diagnose` snapshots, real `faildiag fix`.

Every project is a small folder under tmp_path whose command really fails; the snapshot is made by the
real CLI from the real output, and `faildiag fix` runs as a subprocess, so the tests see exactly what a
user sees (exit status, stdout, files on disk).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

BIN = Path(sys.executable).parent
FAILDIAG = [str(BIN / "faildiag")] if (BIN / "faildiag").exists() else [sys.executable, "-m", "pytest_faildiag.cli"]


def run_env(**extra: str) -> dict[str, str]:
    """The environment of every subprocess: this interpreter's `python` first on PATH, no stray vars."""
    env = dict(os.environ)
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.setdefault("OMP_NUM_THREADS", "1")  # tiny models: threads only fight the other test processes
    for name in ("DATA_DIR", "MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE", "LOCAL_RANK"):
        env.pop(name, None)
    env.update(extra)
    return env


@dataclass
class Project:
    root: Path
    command: str = "python train.py"

    @property
    def snapshot(self) -> Path:
        return self.root / "faildiag-out"

    def write(self, name: str, text: str) -> Path:
        p = self.root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
        return p

    def sh(self, command: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            command, shell=True, cwd=self.root, env=run_env(), capture_output=True, text=True, timeout=600
        )

    def fail_and_diagnose(self) -> dict[str, Any]:
        """Run the command for real (it must fail), then snapshot its output with `faildiag diagnose`."""
        res = subprocess.run(
            self.command,
            shell=True,
            cwd=self.root,
            env=run_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=600,
        )
        assert res.returncode != 0, res.stdout
        (self.root / "out.log").write_text(res.stdout, encoding="utf-8")
        diag = subprocess.run(
            [
                *FAILDIAG,
                "diagnose",
                "out.log",
                "--exit-code",
                str(res.returncode),
                "--command",
                self.command,
                "--out",
                "faildiag-out",
                "--format",
                "json",
            ],
            cwd=self.root,
            env=run_env(),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert diag.returncode == 0, diag.stderr
        return json.loads(diag.stdout)

    def fix(self, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*FAILDIAG, "fix", "faildiag-out", *args],
            cwd=self.root,
            env=run_env(**env),
            capture_output=True,
            text=True,
            timeout=600,
            stdin=subprocess.DEVNULL,
        )

    def fix_argv(self, *args: str) -> list[str]:
        return [*FAILDIAG, "fix", "faildiag-out", *args]

    def env(self) -> dict[str, str]:
        return run_env()

    def propose(self) -> dict[str, Any]:
        res = self.fix("--format", "json")
        assert res.returncode == 0, res.stderr
        return json.loads(res.stdout)

    def hashes(self) -> dict[str, str]:
        """sha256 of every file in the project, the snapshot included (proves nothing changed)."""
        return {
            str(p.relative_to(self.root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(self.root.rglob("*"))
            if p.is_file() and "__pycache__" not in p.parts
        }

    def user_hashes(self) -> dict[str, str]:
        """sha256 of the project's own files (the snapshot folder left out: fix mode records into it)."""
        return {k: v for k, v in self.hashes().items() if not k.startswith("faildiag-out")}

    def proposal_changes_nothing(self) -> dict[str, Any]:
        """Ask for the proposal in both formats; prove with hashes that no file changed."""
        before = self.hashes()
        proposal = self.propose()
        text = self.fix()
        assert text.returncode == 0, text.stderr
        assert proposal["id"] in text.stdout and proposal["summary"] in text.stdout
        assert (f"--confirm {proposal['id']}" in text.stdout) == proposal["automatic"]
        assert self.hashes() == before
        return proposal

    def confirm_expect_verified(self, proposal: dict[str, Any]) -> dict[str, Any]:
        res = self.fix("--confirm", proposal["id"])
        assert res.returncode == 0, res.stdout + res.stderr
        assert "the original failure no longer reproduces" in res.stdout
        fix = self.report()["fix"]
        assert (fix["id"], fix["applied"], fix["verification"], fix["rolled_back"]) == (
            proposal["id"],
            True,
            "passed",
            False,
        )
        assert fix["before"]["first_failure"] and fix["after"]["exit_code"] == 0
        md = (self.snapshot / "report.md").read_text()
        assert md.count("## Fix mode") == 1 and "verification: **passed**" in md
        return fix

    def confirm_expect_rollback(self, proposal: dict[str, Any]) -> dict[str, Any]:
        before = self.user_hashes()
        res = self.fix("--confirm", proposal["id"])
        assert res.returncode == 1, res.stdout + res.stderr
        assert "rolled back" in res.stdout
        assert self.user_hashes() == before  # byte-identical
        fix = self.report()["fix"]
        assert (fix["applied"], fix["verification"], fix["rolled_back"]) == (True, "failed", True)
        assert fix["after"]["exit_code"] not in (0, None)
        assert "verification: **failed**" in (self.snapshot / "report.md").read_text()
        return fix

    def report(self) -> dict[str, Any]:
        return json.loads((self.snapshot / "report.json").read_text(encoding="utf-8"))


@pytest.fixture(autouse=True)
def _own_seal_key(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test gets its own per-user key for command seals (never the developer's own state folder):
    snapshots it writes are "recorded on this machine", anything else is foreign."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("state")))


@pytest.fixture
def project(tmp_path: Path) -> Project:
    root = tmp_path / "proj"
    root.mkdir()
    return Project(root)
