"""The entry point that chains discovery, signal gathering, ground truth and classification."""

from __future__ import annotations

from pathlib import Path

from pytest_faildiag.integrations.retort.discover import collect_runs, find_experiments
from pytest_faildiag.integrations.retort.model import ExperimentResult, Options, RunDiagnosis, RunRecord
from pytest_faildiag.integrations.retort.signals import load_signatures
from pytest_faildiag.integrations.retort.verdicts import _classify_safely


def diagnose_experiments(root: Path, opts: Options | None = None) -> ExperimentResult:
    """Diagnose every failed run of every experiment under ``root`` (see module docstring)."""
    opts = opts or Options()
    signatures = load_signatures()
    diagnoses: list[RunDiagnosis] = []
    total = 0
    problems: list[str] = []
    records: list[RunRecord] = []
    for exp in find_experiments(root):
        found, n, problem = collect_runs(exp, root)
        records += found
        total += n
        if problem:
            problems.append(f"{exp}: {problem}")
    if opts.jobs > 1:  # test runs dominate and are subprocesses: threads are enough, order is kept by map
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=opts.jobs) as pool:
            diagnoses = list(pool.map(lambda r: _classify_safely(r, signatures, opts), records))
    else:
        diagnoses = [_classify_safely(r, signatures, opts) for r in records]
    return ExperimentResult(root, diagnoses, total, problems)
