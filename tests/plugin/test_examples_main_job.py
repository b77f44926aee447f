"""The README's main job (scripts/examples.sh, run by scripts/main.sh after the setup) prints each #21 case:
the changed line of a real regression in a real git repository, the intermittent test, the order-dependent
pair and the hang whose producer thread died. The real script, real git, real pytest processes, the
repository's own example files (the PyTorch examples deselected with ``-k``: they are slow, not #21's)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from .conftest import git

ROOT = Path(__file__).resolve().parents[2]
END_OF_GIT_EXAMPLE = "=== end of the git example"


@pytest.fixture(scope="module")
def main_job(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    base = tmp_path_factory.mktemp("main-job")
    env = {k: v for k, v in os.environ.items() if k not in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY", "PYTEST_ADDOPTS")}
    env.pop("FAILDIAG_RERUN", None)  # the examples' own ini applies, as in the main job
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env["FAILDIAG_PYTHON"] = sys.executable
    proc = subprocess.run(
        ["bash", str(ROOT / "scripts" / "examples.sh"), f"--faildiag-out={base / 'out'}"]
        + ["-k", "test_cache_warmup or test_order_dependent or test_hang"],
        cwd=base,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    return base, proc


def test_the_git_example_names_the_changed_line_the_failing_test_ran(main_job: tuple[Path, Any]) -> None:
    base, proc = main_job
    out = proc.stdout.split(END_OF_GIT_EXAMPLE)[0]
    demo = base / "out" / "regression-demo"
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
    second = out.split("$ pytest --faildiag\n")[-1]
    suspected = [ln for ln in second.splitlines() if "the failing test ran" in ln]
    assert suspected and not any("labels.py" in ln for ln in suspected)  # changed too, but no failing test ran it
    # the per-test diagnosis, before any rerun: the test is unchanged since the green run, the code is not
    assert "check code-changed-since-green: supports this cause" in second
    assert "faildiag: runtime error at runtime: the code under test computes a wrong result" in second
    assert sorted(p.name for p in base.iterdir()) == ["out"]  # nothing written beside the chosen folder
    assert not git(demo, "status", "--porcelain")  # the runs' output stays in the project's ignored folder


def test_the_example_suite_prints_intermittent_order_dependent_and_the_dead_producer(
    main_job: tuple[Path, Any],
) -> None:
    _, proc = main_job
    assert END_OF_GIT_EXAMPLE in proc.stdout, proc.stdout + proc.stderr
    out = proc.stdout.split(END_OF_GIT_EXAMPLE)[1]
    assert proc.returncode == 1, out + proc.stderr  # pytest's status on the examples
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
    assert "  deterministic: test_hang.py::test_the_consumer_waits_for_a_batch_that_never_comes" in out
