"""The README's main job (scripts/examples.sh, run by scripts/main.sh) prints each #21 case: the changed line
of a real regression in a real git repository, the intermittent test, the order-dependent pair and the hang
whose producer thread died. Real git, real pytest processes, the repository's own example files."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import git

ROOT = Path(__file__).resolve().parents[2]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY", "PYTEST_ADDOPTS")}
    env.pop("FAILDIAG_RERUN", None)  # the examples' own ini applies, as in the main job
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return {**env, **extra}


def test_the_git_example_names_the_changed_line_the_failing_test_ran(tmp_path: Path) -> None:
    demo = tmp_path / "out" / "regression-demo"
    proc = subprocess.run(
        ["bash", str(ROOT / "scripts" / "regression_demo.sh"), str(demo)],
        env=_env(FAILDIAG_PYTHON=sys.executable),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    green = git(demo, "rev-parse", "HEAD~1")  # the first commit: the run on it was green
    assert (
        git(demo, "log", "--format=%s") == "batching: skip the empty tail batch\ninventory: shipping batches and labels"
    )
    assert "5 passed" in out
    assert "1 failed, 4 passed" in out  # the second run's outcome is pytest's own
    assert (
        "  deterministic: tests/test_batching.py::test_the_last_batch_may_be_short (failed 2 of 2 reruns alone)" in out
    )
    line = f"the failing test ran inventory/batching.py:15, changed since the last green run at {green[:12]}"
    assert f"      {line}" in out
    assert f"  [model] {line} (model.changed_since_green): 1 test(s)" in out
    assert "labels.py" not in out.split("$ pytest --faildiag\n")[-1]  # changed too, but no failing test ran it
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # nothing written beside the chosen folder
    assert not git(demo, "status", "--porcelain")  # the runs' output stays in the project's ignored folder


@pytest.fixture
def examples_run(tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """The main job's pytest command on the examples that need no PyTorch, as scripts/examples.sh runs it."""
    state = tmp_path / "out" / "example-state"
    state.mkdir(parents=True)
    files = ["test_cache_warmup.py", "test_order_dependent.py", "test_hang.py"]
    return subprocess.run(
        [sys.executable, "-m", "pytest", "--faildiag", "-p", "no:cacheprovider", f"--faildiag-out={tmp_path / 'out'}"]
        + [f"conftest_examples/{f}" for f in files],
        cwd=ROOT,
        env=_env(FAILDIAG_EXAMPLE_STATE=str(state)),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_the_example_suite_prints_intermittent_order_dependent_and_the_dead_producer(
    examples_run: subprocess.CompletedProcess[str],
) -> None:
    out = examples_run.stdout
    assert examples_run.returncode == 1, out + examples_run.stderr
    assert "3 failed, 3 passed" in out.splitlines()[-1]  # the last line is still pytest's summary
    assert (
        "  intermittent: test_cache_warmup.py::test_the_cache_warms_up "
        "(passed 1 of 1 reruns alone; failed only in the session)" in out
    )
    assert (
        "  order_dependent: test_order_dependent.py::test_invoice_uses_the_default_currency (passed 1 of 1 reruns "
        "alone, failed when run after test_order_dependent.py::test_a_eur_customer_sees_prices_in_eur, "
        "polluted by test_order_dependent.py::test_a_eur_customer_sees_prices_in_eur)" in out
    )
    assert (
        "  [test_code] hang: the thread producer died with ConnectionError: lost the connection to the feature "
        "store; the test waited for it (hang.test_code): 1 test(s)" in out
    )
