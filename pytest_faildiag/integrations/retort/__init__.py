"""Post-hoc diagnosis of failed retort runs (``faildiag retort diagnose``).

retort (adrianco/retort) runs AI coding agents on tasks, scores the workspace, and gates a run as ``failed``
when ``test_coverage == 0``; its DB then says "tests did not run" for *any* gate failure. Most recorded
failures turned out to be harness artefacts, so this module never concludes from the gate verdict alone:

1. *find* every failed attempt — ``retort.db`` rows with status failed/crashed, every ``rep<N>``/``rep<N>-failed``
   folder a later attempt superseded, runs whose ``scores.json`` is all zero or has ``test_coverage == 0``;
2. *gather* every signal the run left (DB status/error/metrics, ``_meta.json``, scores, ``evaluation.md``,
   ``findings.jsonl``, agent logs in their JSON formats, our own ``.faildiag/.capture.json``);
3. *ground-truth*: inventory the code (subfolders count) and run the run's own tests in a clean copy, bounded
   by a timeout; when the toolchain or dependencies are missing, say so and downgrade to ``hypothesis``;
4. *classify* into the contract's verdict/subtype, every claim labelled ``direct`` or ``hypothesis``.

Bad input never raises out of :func:`diagnose_experiments` except :class:`RetortInputError` (missing folder,
nothing retort-like in it), which the CLI turns into one line and exit 2. A locked or corrupt ``retort.db``
degrades to a folder-only diagnosis with a claim saying so.

The package follows those stages, one module each: ``discover`` (experiments, ``retort.db`` rows, every archived
attempt and which later one superseded it), ``environment`` (configured limits, runs that did no model work,
failures clustered in time),
``signals`` (``_meta.json``, scores, ``evaluation.md``, ``findings.jsonl``, agent logs, ``rules/retort.toml``
signatures), ``groundtruth`` (the run's own tests in a clean copy, toolchain detection), ``verdicts`` (verdicts,
subtypes, claims), ``pipeline`` (:func:`diagnose_experiments`), ``report`` (roll-up, text/JSON output),
``rescoring`` and ``ab`` (the ``--rescore`` and ``faildiag retort ab`` helpers); ``model`` holds the dataclasses
they pass along. This facade re-exports the public names, so ``from pytest_faildiag.integrations import retort``
keeps working. (No module is named after a function it holds, so ``retort.<module>`` never resolves to a
function re-exported here.)
"""

from __future__ import annotations

from pytest_faildiag.integrations.retort.ab import ABArm, ab_test
from pytest_faildiag.integrations.retort.discover import DbRows, cell_name, collect_runs, find_experiments, read_db
from pytest_faildiag.integrations.retort.groundtruth import ground_truth, inventory, project_root
from pytest_faildiag.integrations.retort.model import (
    VERDICTS,
    Claim,
    ExperimentResult,
    Inventory,
    Options,
    RetortInputError,
    RunDiagnosis,
    RunRecord,
    Signature,
    SignatureHit,
    TestRun,
)
from pytest_faildiag.integrations.retort.pipeline import diagnose_experiments
from pytest_faildiag.integrations.retort.report import render_text, rollup, write_outputs
from pytest_faildiag.integrations.retort.rescoring import rescore
from pytest_faildiag.integrations.retort.signals import LogSignals, load_signatures, match_signatures, read_agent_logs
from pytest_faildiag.integrations.retort.verdicts import classify, recorded_test_coverage

__all__ = [
    "ABArm",
    "Claim",
    "DbRows",
    "ExperimentResult",
    "Inventory",
    "LogSignals",
    "Options",
    "RetortInputError",
    "RunDiagnosis",
    "RunRecord",
    "Signature",
    "SignatureHit",
    "TestRun",
    "VERDICTS",
    "ab_test",
    "cell_name",
    "classify",
    "collect_runs",
    "diagnose_experiments",
    "find_experiments",
    "ground_truth",
    "inventory",
    "load_signatures",
    "match_signatures",
    "project_root",
    "read_agent_logs",
    "read_db",
    "recorded_test_coverage",
    "render_text",
    "rescore",
    "rollup",
    "write_outputs",
]
