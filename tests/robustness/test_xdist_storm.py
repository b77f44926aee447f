"""Eight pytest-xdist workers failing at once: every failure gets a whole, schema-valid report, and the
controller's ``session.json`` lists each failed test exactly once (no lost, duplicated or torn entries)."""

from __future__ import annotations

import collections
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(importlib.util.find_spec("xdist") is None, reason="needs pytest-xdist")

SCHEMA = Path(__file__).resolve().parents[2] / "pytest_faildiag" / "schemas" / "report.schema.json"

# One function per kind: pytest's long traceback lists the whole failing function's source, and a message
# in a branch that did not run would be read as evidence too (reported: the scanner reads source listings).
STORM = """
import json
import pytest

N = pytest.mark.parametrize("n", range(8))


@N
def test_oom(n):
    raise RuntimeError("CUDA out of memory. Tried to allocate 20.00 GiB (GPU 0; 15.78 GiB total capacity)")


@N
def test_shape(n):
    raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({n + 2}x3 and 4x5)")


@N
def test_key(n):
    raise KeyError(f"missing column label_{n}")


@N
def test_assert(n):
    assert n == -1


@N
def test_big_output(n):
    print(f"[rank{n}] step output line\\n" * 60000)  # ~1.5 MB of captured output per test
    raise RuntimeError("NCCL error: unhandled system error, NCCL version 2.21.5")


@N
def test_artifact(n, tmp_path):
    (tmp_path / "train.log").write_text("noise\\n" * 20000 + "torch.OutOfMemoryError: CUDA out of memory.\\n")
    raise SystemExit(1)


@N
def test_json(n):
    json.loads("{'lr': 0.1}")


@N
def test_chained(n):
    try:
        {}["x"]
    except KeyError as e:
        raise ValueError(f"config {n} is incomplete") from e


@N
def test_fine(n):
    assert n >= 0
"""


def test_eight_workers_failing_at_once_write_every_report_whole(tmp_path: Path) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(SCHEMA.read_text())
    (tmp_path / "test_storm.py").write_text(STORM)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "PYTEST_"))}
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-q",
            "-n",
            "8",
            "--faildiag",
            "--junitxml=junit.xml",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=240,
    )
    assert p.returncode == 1, p.stdout[-3000:] + p.stderr[-3000:]
    assert "64 failed, 8 passed" in p.stdout, p.stdout[-3000:]
    assert "INTERNALERROR" not in p.stdout + p.stderr
    out = tmp_path / "faildiag-out"
    index = json.loads((out / "session.json").read_text())
    counts = collections.Counter(t["nodeid"] for t in index["tests"])
    kinds = ("oom", "shape", "key", "assert", "big_output", "artifact", "json", "chained")
    expected = {f"test_storm.py::test_{k}[{n}]" for k in kinds for n in range(8)}
    assert set(counts) == expected and set(counts.values()) == {1}
    workers = {t.get("worker") for t in index["tests"]}
    assert len(workers) >= 4, workers  # really spread over workers, not run by one
    validator = (
        jsonschema.Draft202012Validator(schema)
        if "2020" in schema.get("$schema", "")
        else jsonschema.Draft7Validator(schema)
    )
    types = collections.Counter()
    for t in index["tests"]:
        snap = out / t["slug"]
        report = json.loads((snap / "report.json").read_text())
        errors = sorted(str(e.message) for e in validator.iter_errors(report))
        assert errors == [], (t["slug"], errors[:3])
        assert report["summary"] == t["summary"]
        for name in ("report.md", "meta/failure-profile.json", "meta/root-causes.json", "artifacts/failure.lock.json"):
            assert (snap / name).is_file(), (t["slug"], name)
        json.loads((snap / "meta" / "root-causes.json").read_text())
        types[report["profile"]["type"]] += 1
    assert types["oom"] >= 8 and types["communication"] >= 8 and types["oom"] < 32, (
        types
    )  # the diagnoses are per test, not shared
    assert not list(out.rglob("*.tmp")), list(out.rglob("*.tmp"))[:5]  # no temp file left behind
    junit = (tmp_path / "junit.xml").read_text()
    assert junit.count('name="faildiag.category"') >= 64
