"""Every experiment of the public retort archive, when its path is given in RETORT_ARCHIVE (slow)."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import pytest
from retort_helpers import run_cli

ARCHIVE = os.environ.get("RETORT_ARCHIVE")


@pytest.mark.slow
@pytest.mark.skipif(not ARCHIVE, reason="set RETORT_ARCHIVE to a checkout of adrianco/retort (or its experiments/)")
def test_the_whole_archive_is_diagnosed_without_a_crash(tmp_path: Path) -> None:
    root = Path(ARCHIVE)
    if (root / "experiments").is_dir():
        root = root / "experiments"
    args = ["diagnose", "--experiment-dir", str(root), "--format", "json", "--out", str(tmp_path / "out"),
            "--jobs", "8", "--test-timeout", "60"]
    if os.environ.get("RETORT_ARCHIVE_NO_TESTS"):
        args.append("--no-run-tests")
    proc = run_cli(*args, timeout=3600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    runs = json.loads(proc.stdout)["runs"]
    assert len(runs) > 100
    assert not [r for r in runs if any("internal error" in c["text"] for c in r["claims"])]
    roll = json.loads((tmp_path / "out" / "retort-rollup.json").read_text())
    print("verdicts:", Counter(r["verdict"] for r in runs), roll["by_subtype"])
