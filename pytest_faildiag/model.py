"""The data model every stage speaks: plain dataclasses that serialise to the contract's JSON.

Vocabularies are fixed by the contract (``faildiag.report/1``); constructors do not validate them so that
a third-party rule pack with a typo degrades one diagnosis instead of crashing the run. ``schemas/`` holds
the JSON Schema that tests validate every emitted report against.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

SCHEMA_ID = "faildiag.report/1"

STAGES = ("startup", "compile", "runtime", "data", "checkpoint", "evaluation", "collection", "unknown")
TYPES = ("crash", "runtime_error", "hang", "oom", "communication", "backend", "unsupported_op", "unknown")
STACKS = ("pytorch", "pta", "mindspore", "jax", "tensorflow", "python", "pytest", "other")
CATEGORIES = (
    "environment", "library", "config", "dataset", "model", "checkpoint", "backend", "operator",
    "communication", "resource", "hardware", "test_code", "harness",
)
EVIDENCE_KINDS = ("direct", "hypothesis")
CHECK_STATUSES = ("passed", "failed", "skipped")

EvidenceKind = Literal["direct", "hypothesis"]
CheckStatus = Literal["passed", "failed", "skipped"]


@dataclass
class Evidence:
    """One observation. ``direct`` = seen in a log/file/command output/executed check;
    ``hypothesis`` = inferred and not yet tested. ``line`` is 1-based in ``source`` when known."""

    kind: EvidenceKind
    source: str
    excerpt: str
    line: int | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"kind": self.kind, "source": self.source, "excerpt": self.excerpt}
        if self.line is not None:
            d["line"] = self.line
        return d


@dataclass
class ValidationCheck:
    """A check that was actually executed (or says why it could not run)."""

    name: str
    status: CheckStatus
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class FailurePoint:
    source: str
    line: int | None
    excerpt: str

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "line": self.line, "excerpt": self.excerpt}


@dataclass
class FailureProfile:
    stage: str = "unknown"
    type: str = "unknown"
    stack: str = "other"
    backend: str | None = None
    domains: list[str] = field(default_factory=list)
    confidence: float = 0.0
    command: str | None = None
    exit_code: int | None = None
    signal: str | None = None
    first_failure: FailurePoint | None = None
    ranks: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "stage": self.stage, "type": self.type, "stack": self.stack, "backend": self.backend,
            "domains": list(self.domains), "confidence": round(self.confidence, 3),
            "command": self.command, "exit_code": self.exit_code, "signal": self.signal,
            "first_failure": self.first_failure.to_dict() if self.first_failure else None,
        }
        if self.ranks:
            d["ranks"] = self.ranks
        return d


@dataclass
class RootCause:
    id: str
    category: str
    confidence: float
    summary: str
    evidence: list[Evidence] = field(default_factory=list)
    validation_checks: list[ValidationCheck] = field(default_factory=list)
    fix_hints: list[str] = field(default_factory=list)
    rule: str | None = None
    fix: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "id": self.id, "category": self.category, "confidence": round(self.confidence, 3),
            "summary": self.summary,
            "evidence": [e.to_dict() for e in self.evidence],
            "validation_checks": [c.to_dict() for c in self.validation_checks],
            "fix_hints": list(self.fix_hints),
        }
        if self.rule:
            d["rule"] = self.rule
        if self.fix:
            d["fix_template"] = self.fix
        return d


@dataclass
class Diagnosis:
    summary: str
    profile: FailureProfile
    root_causes: list[RootCause] = field(default_factory=list)
    next_actions: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def top(self) -> RootCause | None:
        return self.root_causes[0] if self.root_causes else None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "schema": SCHEMA_ID,
            "summary": self.summary,
            "profile": self.profile.to_dict(),
            "root_causes": [c.to_dict() for c in self.root_causes],
            "next_actions": list(self.next_actions),
            "artifacts": {
                "report_md": "report.md", "failure_profile": "meta/failure-profile.json",
                "root_causes": "meta/root-causes.json", "lock": "artifacts/failure.lock.json",
            },
        }
        if self.notes:
            d["notes"] = list(self.notes)
        if self.sources:
            d["sources"] = list(self.sources)
        d.update(self.extra)
        return d
