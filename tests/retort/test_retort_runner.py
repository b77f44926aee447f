"""retort's real runner, offline, with stub agents through its hermes adapter and our capture scorer enabled.

Needs a Python environment with retort and pytest-faildiag installed (retort is not a dependency of this
project): point RETORT_PYTHON at its interpreter, e.g. a venv made with ``pip install <retort checkout>
<this checkout>``. The stub "hermes" binaries write a small Python project; one of them writes no tests, so
retort's test gate fails it and its default second chance runs — seeded with the first attempt's folder,
``.faildiag/`` included — and crashes. That is the case where a copied capture used to be kept.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from retort_helpers import ROOT, run_cli

RETORT_PYTHON = os.environ.get("RETORT_PYTHON")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not RETORT_PYTHON, reason="set RETORT_PYTHON to a Python with retort installed"),
]

STUB = """#!{python}
import json, sys
from pathlib import Path
usage = sys.argv[sys.argv.index("--usage-file") + 1]
Path(usage).write_text(json.dumps({{"input_tokens": 1000, "output_tokens": 200, "estimated_cost_usd": None}}))
Path("calc.py").write_text("def add(a, b):\\n    return a + b\\n")
if Path(sys.argv[0]).name == "stub-good":
    Path("test_calc.py").write_text("from calc import add\\n\\n\\ndef test_add():\\n    assert add(2, 3) == 5\\n")
    sys.exit(0)
if Path("FEEDBACK.md").exists():  # the second chance: crash
    print("second chance: giving up", file=sys.stderr)
    sys.exit(3)
print("first attempt, no tests")
"""


def _retort(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    assert RETORT_PYTHON is not None
    exe = Path(RETORT_PYTHON).parent / "retort"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # this checkout's plugin code, whatever version is installed
    return subprocess.run([str(exe), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    probe = subprocess.run(
        [
            RETORT_PYTHON or sys.executable,
            "-c",
            "import retort, importlib.metadata as m; print([e.name for e in m.entry_points(group='retort')])",
        ],
        capture_output=True,
        text=True,
    )
    assert probe.returncode == 0 and "faildiag" in probe.stdout, probe.stderr or probe.stdout
    ws = tmp_path / "ws"
    ws.mkdir()
    task = ws / "task"
    task.mkdir()
    (task / "task.yaml").write_text(
        "name: calc\ndescription: add two numbers\nprompt: |\n  Write add(a, b) in calc.py with a pytest test.\n"
    )
    for name in ("stub-good", "stub-retry"):
        p = ws / name
        p.write_text(STUB.format(python=sys.executable))
        p.chmod(0o755)
    (ws / "workspace.yaml").write_text(f"""experiment: {{name: e2e, visibility: public}}
factors:
  language: {{ levels: [python, javascript] }}
  agent: {{ levels: [stub-good, stub-retry] }}
responses: [test_coverage, faildiag_capture]
tasks:
  - source: local://{task}
playpen:
  runner: local
  replicates: 1
  timeout_minutes: 2
  auto_install_toolchains: false
  local_agents:
    stub-good: {{ harness: hermes, model: none, bin: {ws / "stub-good"} }}
    stub-retry: {{ harness: hermes, model: none, bin: {ws / "stub-retry"} }}
evaluation: {{ enabled: false }}
""")
    (ws / "design.csv").write_text("run,language,agent\n0,python,stub-good\n1,python,stub-retry\n")
    return ws


def test_each_capture_matches_its_attempt_through_a_retry_and_a_rescore(workspace: Path, tmp_path: Path) -> None:
    run = _retort("run", "--phase", "screening", "--config", "workspace.yaml", "--design", "design.csv", cwd=workspace)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    con = sqlite3.connect(workspace / "retort.db")
    rows = dict(con.execute("SELECT run_config_json, status FROM experiment_runs").fetchall())
    con.close()
    assert sorted(rows.values()) == ["completed", "crashed"]
    retry_cell = workspace / "runs" / "agent=stub-retry_language=python"
    crashed = json.loads((retry_cell / "rep1-failed" / ".faildiag" / ".capture.json").read_text())
    assert (crashed["exit_code"], crashed["origin"]) == (3, "run")
    assert "second chance: giving up" in crashed["stderr_tail"]
    first = json.loads((retry_cell / "rep1-failed" / ".faildiag" / crashed["prior_captures"][0]).read_text())
    assert first["exit_code"] == 0 and "first attempt" in first["stdout_tail"]
    assert json.loads((retry_cell / "rep1" / ".faildiag" / ".capture.json").read_text())["exit_code"] == 0

    # a re-score: never replaces a capture; where none exists, it writes one marked as a re-score
    good = workspace / "runs" / "agent=stub-good_language=python" / "rep1"
    shutil.rmtree(good / ".faildiag")
    rescored = _retort("rescore", "--experiment-dir", ".", cwd=workspace)
    assert rescored.returncode == 0, rescored.stdout[-2000:] + rescored.stderr[-2000:]
    assert json.loads((good / ".faildiag" / ".capture.json").read_text())["origin"] == "rescore"
    assert json.loads((retry_cell / "rep1-failed" / ".faildiag" / ".capture.json").read_text())["exit_code"] == 3

    # the diagnosis walks both attempts of the retried replicate, in the right order
    proc = run_cli("diagnose", "--experiment-dir", str(workspace), "--format", "json", "--no-run-tests")
    assert proc.returncode == 0, proc.stderr
    runs = {r["run"]: r for r in json.loads(proc.stdout)["runs"]}
    older = runs["runs/agent=stub-retry_language=python/rep1"]
    assert any("superseded by runs/agent=stub-retry_language=python/rep1-failed" in c["text"] for c in older["claims"])
    assert "runs/agent=stub-retry_language=python/rep1-failed" in runs
