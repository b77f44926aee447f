"""Every experiment of the public retort archive, when its path is given in RETORT_ARCHIVE (slow)."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import time
from collections import Counter
from pathlib import Path

import pytest
from retort_helpers import run_cli

ARCHIVE = os.environ.get("RETORT_ARCHIVE")


def _expected_attempts(root: Path) -> set[str]:
    """Every ``repN-failed`` folder of the archive (each is a failed attempt that must get an entry)."""
    out = set()
    for dirpath, dirnames, _ in os.walk(root):
        for d in list(dirnames):
            if re.fullmatch(r"rep\d+(-failed)?", d):
                dirnames.remove(d)
                if d.endswith("-failed"):
                    out.add((Path(dirpath) / d).relative_to(root).as_posix())
    return out


def _failed_rows(root: Path) -> int:
    n = 0
    for db in root.rglob("retort.db"):
        try:
            con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
            n += con.execute("SELECT count(*) FROM experiment_runs WHERE status != 'completed'").fetchone()[0]
            con.close()
        except sqlite3.Error:
            continue
    return n


@pytest.mark.slow
@pytest.mark.skipif(not ARCHIVE, reason="set RETORT_ARCHIVE to a checkout of adrianco/retort (or its experiments/)")
def test_the_whole_archive_gets_an_entry_per_failed_attempt_in_time_and_reuses_reruns(tmp_path: Path) -> None:
    root = Path(ARCHIVE)
    if (root / "experiments").is_dir():
        root = root / "experiments"
    args = [
        "diagnose",
        "--experiment-dir",
        str(root),
        "--format",
        "json",
        "--out",
        str(tmp_path / "out"),
        "--jobs",
        "2",
        "--test-timeout",
        "60",
    ]
    if os.environ.get("RETORT_ARCHIVE_NO_TESTS"):
        args.append("--no-run-tests")
    start = time.monotonic()
    proc = run_cli(*args, timeout=3600)
    first = time.monotonic() - start
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    runs = json.loads(proc.stdout)["runs"]
    assert not [r for r in runs if any("internal error" in c["text"] for c in r["claims"])]
    names = {r["run"] for r in runs}
    assert _expected_attempts(root) <= names  # every superseded or crashed attempt folder has an entry
    assert len(runs) >= _failed_rows(root)
    assert first < 600, f"the whole archive took {first:.0f}s"
    roll = json.loads((tmp_path / "out" / "retort-rollup.json").read_text())
    assert roll["failed_runs"] <= roll["total_runs"]
    assert all(
        e["recorded_failures"] == e["harness"] + e["environment"] + e["genuine"] + e["unknown"]
        for e in roll["experiments"].values()
    )
    start = time.monotonic()
    again = run_cli(*args, timeout=3600)
    second = time.monotonic() - start
    assert again.returncode == 0
    if not os.environ.get("RETORT_ARCHIVE_NO_TESTS"):
        assert "rerun reused from an earlier pass" in again.stdout and second < first
    print(f"first pass {first:.0f}s, second {second:.0f}s;", "verdicts:", Counter(r["verdict"] for r in runs))
