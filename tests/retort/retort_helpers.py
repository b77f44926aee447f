"""Builders for retort experiments with the real on-disk layout.

The layout follows retort's archive: ``<exp>/retort.db`` (schema taken from a real archived DB under
tests/data/retort/exp19), ``<exp>/runs/<sorted k=v cell>/rep<N>[-failed]/`` holding the workspace plus
``_meta.json``, ``scores.json``, ``stack.json``. Nothing here imitates our own code's logic.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REAL_EXP = ROOT / "tests" / "data" / "retort" / "exp19"


def real_schema() -> list[str]:
    con = sqlite3.connect(REAL_EXP / "retort.db")
    try:
        return [r[0] for r in con.execute("SELECT sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY rowid")]
    finally:
        con.close()


def cell_of(config: dict[str, str]) -> str:
    return "_".join(f"{k}={v}" for k, v in sorted(config.items()))


@dataclass
class Experiment:
    """A retort experiment folder under construction."""

    root: Path
    _next_id: int = 1
    rows: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        (self.root / "runs").mkdir(parents=True, exist_ok=True)
        con = sqlite3.connect(self.db)
        for sql in real_schema():
            con.execute(sql)
        con.commit()
        con.close()

    @property
    def db(self) -> Path:
        return self.root / "retort.db"

    def add_run(
        self,
        config: dict[str, str],
        rep: int = 1,
        *,
        status: str = "failed",
        error: str | None = "tests did not run (test_coverage=0)",
        metrics: dict[str, float] | None = None,
        files: dict[str, str] | None = None,
        succeeded: bool | None = None,
        folder: bool = True,
        failed_suffix: bool | None = None,
    ) -> Path:
        """Insert a DB row and (optionally) write its archived run folder; returns the folder path."""
        metrics = {
            "test_coverage": 0.0,
            "code_quality": 0.0,
            "_duration_seconds": 300.0,
            "_tokens": 120000.0,
            **(metrics or {}),
        }
        con = sqlite3.connect(self.db)
        run_id = self._next_id
        self._next_id += 1
        con.execute(
            "INSERT INTO experiment_runs (id, design_row_id, replicate, status, started_at, finished_at, "
            "error_message, created_at, run_config_json) VALUES (?, NULL, ?, ?, '2026-01-01', '2026-01-01', ?, "
            "'2026-01-01', ?)",
            (run_id, rep, status, error, json.dumps(config)),
        )
        for name, value in metrics.items():
            con.execute("INSERT INTO run_results (run_id, metric_name, value) VALUES (?, ?, ?)", (run_id, name, value))
        con.commit()
        con.close()
        self.rows.append(run_id)
        if succeeded is None:
            succeeded = status != "crashed"
        suffix = (not succeeded) if failed_suffix is None else failed_suffix
        d = self.root / "runs" / cell_of(config) / f"rep{rep}{'-failed' if suffix else ''}"
        if not folder:
            return d
        d.mkdir(parents=True)
        (d / "TASK.md").write_text("Build a small library.\n")
        (d / "stack.json").write_text(json.dumps({**config, "framework": "unknown"}))
        (d / "_meta.json").write_text(
            json.dumps({"replicate": rep, "run_config": config, "succeeded": succeeded, "visibility": "public"})
        )
        (d / "scores.json").write_text(json.dumps({k: v for k, v in metrics.items() if not k.startswith("_")}))
        for rel, text in (files or {}).items():
            p = d / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text)
        return d


PASSING_PY = {
    "calc.py": "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n",
    "tests/test_calc.py": "from calc import add, sub\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
    "def test_sub():\n    assert sub(5, 3) == 2\n",
}


def run_cli(*args: str, cwd: Path | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """The real CLI, as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "pytest_faildiag.cli", "retort", *args],
        capture_output=True,
        text=True,
        cwd=cwd or ROOT,
        timeout=timeout,
    )
