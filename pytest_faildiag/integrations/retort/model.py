"""The data the retort diagnosis passes between its stages, and the layout facts they share.

No I/O here: records, verdicts and options are plain dataclasses so every stage can be tested on its own.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pytest_faildiag.redact import redact_obj

VERDICTS = ("infra_false_fail", "genuine", "environment", "unknown")


# Regenerable or vendored trees: skipped when inventorying and when copying for a test run.
_NOISE_DIRS = {
    "node_modules",
    "_build",
    "deps",
    "target",
    "build",
    "dist",
    "vendor",
    "__pycache__",
    ".gradle",
    ".cpcache",
    ".rebar3",
    ".elixir_ls",
    ".pytest_cache",
    ".mypy_cache",
    ".git",
    "venv",
    ".venv",
    ".build",
    ".faildiag",
    ".swarm",
    ".claude-flow",
    ".hive-mind",
}


_GATE_ERROR = "tests did not run"


class RetortInputError(Exception):
    """The experiment folder is missing or holds nothing retort wrote: the CLI exits 2 with this message."""


@dataclass
class Claim:
    """One statement in a diagnosis; ``kind`` is ``direct`` (observed) or ``hypothesis`` (inferred)."""

    text: str
    kind: str
    source: str


@dataclass
class RunRecord:
    """Everything a failed run left behind, gathered before any judgement is made."""

    experiment: Path
    rel: str
    rep_dir: Path | None
    cell: str = ""
    replicate: int | None = None
    db_id: int | None = None
    db_status: str | None = None
    db_error: str | None = None
    run_config: dict[str, str] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
    scores: dict[str, float] = field(default_factory=dict)
    stack: dict[str, Any] = field(default_factory=dict)
    eval_status: str = ""
    eval_text: str = ""
    findings: list[dict[str, Any]] = field(default_factory=list)
    capture: dict[str, Any] = field(default_factory=dict)
    superseded_by: str | None = None  # the later attempt that replaced this one (run path), when known
    retry_completed: bool = False  # ... and that later attempt completed
    attempt_order_unknown: bool = False  # repN and repN-failed both exist and nothing records which came first
    later_status: str | None = None  # DB status of the row that superseded this folder's attempt
    finished_at: str | None = None  # DB time the attempt was recorded
    limits: dict[str, float] = field(default_factory=dict)  # the experiment's configured limits, in seconds
    cluster: str | None = None  # other no-work failures of the experiment close in time (an outage)
    cohort: str | None = None
    # other runs of the same language in this experiment whose tests retort's scorer did measure (test_coverage>0):
    # the harness can run that language's tests, so a zero here is the run's own (see ``discover.scorer_peers``)
    scorer_peers: str | None = None
    notes: list[Claim] = field(default_factory=list)

    @property
    def language(self) -> str:
        return str(self.run_config.get("language") or self.stack.get("language") or "").lower()


@dataclass
class Inventory:
    """What code the run produced and where (package subfolders count)."""

    sources: list[str] = field(default_factory=list)
    tests: list[str] = field(default_factory=list)
    languages: Counter = field(default_factory=Counter)
    roots: list[str] = field(default_factory=list)


@dataclass
class TestRun:
    """Outcome of running a run's own tests in a clean copy.

    ``status``: passed, failed, compile_error, no_tests, undeclared_deps, deps_unavailable, toolchain_missing,
    data_missing (task support data the archive does not keep),
    timeout, not_run, error. Only passed/failed/compile_error/no_tests/undeclared_deps are ground truth.
    ``sandbox_held`` names the protections that held for every command of the run (see
    ``pytest_faildiag.sandbox``); ``sandbox_not_held`` says ``"name: why"`` for the others. Both stay empty when
    nothing was run.
    """

    status: str
    command: str = ""
    root: str = "."
    passed: int = 0
    failed: int = 0
    coverage: float | None = None
    missing_module: str | None = None
    excerpt: str = ""
    duration_s: float = 0.0
    sandbox_held: list[str] = field(default_factory=list)
    sandbox_not_held: list[str] = field(default_factory=list)
    timeout_s: float | None = None  # the bound this rerun ran under
    cached: bool = False  # reused from an earlier pass (``--out``'s rerun cache), not run again now

    @property
    def conclusive(self) -> bool:
        return self.status in {"passed", "failed", "compile_error", "no_tests", "undeclared_deps"}


@dataclass
class Signature:
    """One row of ``rules/retort.toml``."""

    id: str
    verdict: str
    subtype: str
    kind: str
    regex: re.Pattern[str]
    action: str
    blocks_work: bool = False
    tool_scope: bool = False


@dataclass
class SignatureHit:
    signature: Signature
    source: str
    excerpt: str


@dataclass
class RunDiagnosis:
    """The verdict for one run; ``to_contract`` is exactly the contract's per-run entry."""

    run: str
    verdict: str
    subtype: str
    claims: list[Claim]
    action: str
    experiment: str = ""
    db_id: int | None = None
    test_run: TestRun | None = None
    recorded_test_coverage: float | None = None
    superseded: bool = False
    superseded_by: str | None = None
    retry_completed: bool = False

    def to_contract(self) -> dict[str, Any]:
        return redact_obj(
            {
                "run": self.run,
                "verdict": self.verdict,
                "subtype": self.subtype,
                "claims": [asdict(c) for c in self.claims],
                "action": self.action,
            }
        )

    def to_detail(self) -> dict[str, Any]:
        out = self.to_contract()
        out["experiment"] = self.experiment
        out["db_run_id"] = self.db_id
        out["recorded_test_coverage"] = self.recorded_test_coverage
        out["superseded"] = self.superseded
        out["superseded_by"] = self.superseded_by
        out["retry_completed"] = self.retry_completed
        out["test_run"] = redact_obj(asdict(self.test_run)) if self.test_run else None
        return out


@dataclass
class Options:
    """Knobs of one diagnosis pass (CLI flags map 1:1)."""

    run_tests: bool = True
    test_timeout: float = 120.0
    install_deps: bool = False
    work_dir: Path | None = None
    extra_env: dict[str, str | None] = field(default_factory=dict)
    jobs: int = 1
    cache_dir: Path | None = None  # reruns keyed by the run folder's content: a second pass reuses them


@dataclass
class ExperimentResult:
    root: Path
    diagnoses: list[RunDiagnosis]
    total_runs: int
    problems: list[str]
