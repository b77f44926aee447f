"""The data model every stage speaks: plain dataclasses that serialise to the contract's JSON.

Vocabularies are fixed by the contract (``faildiag.report/1``); constructors do not validate them so that
a third-party rule pack with a typo degrades one diagnosis instead of crashing the run. ``schemas/`` holds
the JSON Schema that tests validate every emitted report against.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

SCHEMA_ID = "faildiag.report/1"

STAGES = ("startup", "compile", "runtime", "data", "checkpoint", "evaluation", "collection", "unknown")
TYPES = ("crash", "runtime_error", "hang", "oom", "communication", "backend", "unsupported_op", "unknown")
STACKS = ("pytorch", "pta", "mindspore", "jax", "tensorflow", "python", "pytest", "other")
CATEGORIES = (
    "environment",
    "library",
    "config",
    "dataset",
    "model",
    "checkpoint",
    "backend",
    "operator",
    "communication",
    "resource",
    "hardware",
    "test_code",
    "harness",
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

    @classmethod
    def from_dict(cls, d: Any) -> Evidence:
        """From ``report.json`` (see ``Diagnosis.from_dict``): an unknown kind reads as ``direct``."""
        d = d if isinstance(d, dict) else {}
        kind: EvidenceKind = d["kind"] if d.get("kind") in EVIDENCE_KINDS else "direct"
        return cls(kind, _text(d.get("source")), _text(d.get("excerpt")), _line(d.get("line")))


@dataclass
class ValidationCheck:
    """A check that was actually executed (or says why it could not run)."""

    name: str
    status: CheckStatus
    detail: str
    # a failed check that refutes the cause's premise (not merely fails to support it) moves it further; how
    # far is the validator's business, so this stays out of report.json (the contract's three fields)
    refutes: bool = field(default=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "status": self.status, "detail": self.detail}

    @classmethod
    def from_dict(cls, d: Any) -> ValidationCheck:
        d = d if isinstance(d, dict) else {}
        status: CheckStatus = d["status"] if d.get("status") in CHECK_STATUSES else "skipped"
        return cls(_text(d.get("name")), status, _text(d.get("detail")))


@dataclass
class FailurePoint:
    source: str
    line: int | None
    excerpt: str
    rank: str | None = None  # the rank (or the host, pod, worker) whose line it is, in a run of several processes

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"source": self.source, "line": self.line, "excerpt": self.excerpt}
        if self.rank is not None:
            d["rank"] = self.rank
        return d

    @classmethod
    def from_dict(cls, d: Any) -> FailurePoint | None:
        if not isinstance(d, dict):
            return None
        return cls(_text(d.get("source")), _line(d.get("line")), _text(d.get("excerpt")), _opt_text(d.get("rank")))


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
            "stage": self.stage,
            "type": self.type,
            "stack": self.stack,
            "backend": self.backend,
            "domains": list(self.domains),
            "confidence": round(self.confidence, 3),
            "command": self.command,
            "exit_code": self.exit_code,
            "signal": self.signal,
            "first_failure": self.first_failure.to_dict() if self.first_failure else None,
        }
        if self.ranks:
            d["ranks"] = self.ranks
        return d

    @classmethod
    def from_dict(cls, d: Any) -> FailureProfile:
        d = d if isinstance(d, dict) else {}
        return cls(
            stage=_text(d.get("stage")) or "unknown",
            type=_text(d.get("type")) or "unknown",
            stack=_text(d.get("stack")) or "other",
            backend=_opt_text(d.get("backend")),
            domains=_texts(d.get("domains")),
            confidence=_confidence(d.get("confidence")),
            command=_opt_text(d.get("command")),
            exit_code=_int(d.get("exit_code")),
            signal=_opt_text(d.get("signal")),
            first_failure=FailurePoint.from_dict(d.get("first_failure")),
            ranks=_ranks(d.get("ranks")),
        )


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
    # the error a cause explains when no rule recognised it (``unknown.*``, differential hypotheses): what
    # tells two such failures apart when they are grouped by cause, kept as data rather than re-read from prose
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "id": self.id,
            "category": self.category,
            "confidence": round(self.confidence, 3),
            "summary": self.summary,
            "evidence": [e.to_dict() for e in self.evidence],
            "validation_checks": [c.to_dict() for c in self.validation_checks],
            "fix_hints": list(self.fix_hints),
        }
        if self.rule:
            d["rule"] = self.rule
        if self.fix:
            d["fix_template"] = self.fix
        if self.error:
            d["error"] = self.error
        return d

    @classmethod
    def from_dict(cls, d: Any) -> RootCause:
        d = d if isinstance(d, dict) else {}
        cid = _text(d.get("id"))
        evidence = [Evidence.from_dict(e) for e in _dicts(d.get("evidence"))]
        error = _opt_text(d.get("error"))
        if error is None and cid.startswith("unknown."):  # written before the field: the engine's first evidence
            error = next((e.excerpt for e in evidence if e.kind == "direct"), None)
        return cls(
            id=cid,
            category=_text(d.get("category")) or "unknown",
            confidence=_confidence(d.get("confidence")),
            summary=_text(d.get("summary")),
            evidence=evidence,
            validation_checks=[ValidationCheck.from_dict(v) for v in _dicts(d.get("validation_checks"))],
            fix_hints=_texts(d.get("fix_hints")),
            rule=_opt_text(d.get("rule")),
            fix=d["fix_template"] if isinstance(d.get("fix_template"), dict) else None,
            error=error,
        )


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
                "report_md": "report.md",
                "failure_profile": "meta/failure-profile.json",
                "root_causes": "meta/root-causes.json",
                "lock": "artifacts/failure.lock.json",
            },
        }
        if self.notes:
            d["notes"] = list(self.notes)
        if self.sources:
            d["sources"] = list(self.sources)
        d.update(self.extra)
        return d

    @classmethod
    def from_dict(cls, d: Any) -> Diagnosis:
        """The one way back from a ``report.json`` (``store.load_diagnosis``, the CI reporters, ``faildiag
        report``, fix mode). The file may come from another version, be edited by hand or half-written, so
        every field is coerced to its type (blanks for what is missing or wrong), never trusted; keys this
        model does not know are kept in ``extra`` so that ``to_dict`` gives them back."""
        d = d if isinstance(d, dict) else {}
        known = {"schema", "summary", "profile", "root_causes", "next_actions", "notes", "sources", "artifacts"}
        return cls(
            summary=_text(d.get("summary")) or "no summary",
            profile=FailureProfile.from_dict(d.get("profile")),
            root_causes=[RootCause.from_dict(c) for c in _dicts(d.get("root_causes"))],
            next_actions=_texts(d.get("next_actions")),
            notes=_texts(d.get("notes")),
            sources=_texts(d.get("sources")),
            extra={k: v for k, v in d.items() if k not in known},
        )


# ---------------------------------------------------------------------------- coercion, for from_dict only


def _text(v: Any) -> str:
    return v if isinstance(v, str) else ("" if v is None or isinstance(v, dict | list) else str(v))


def _opt_text(v: Any) -> str | None:
    return v if isinstance(v, str) else None


def _texts(v: Any) -> list[str]:
    return [_text(x) for x in v if x is not None] if isinstance(v, list) else []


def _dicts(v: Any) -> list[dict[str, Any]]:
    return [x for x in v if isinstance(x, dict)] if isinstance(v, list) else []


def _int(v: Any) -> int | None:
    if isinstance(v, bool) or not isinstance(v, int | float | str):
        return None
    try:
        return int(v)
    except (ValueError, OverflowError):
        return None


def _line(v: Any) -> int | None:
    n = _int(v)
    return n if n is not None and n > 0 else None


def _confidence(v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float | str):
        return 0.0
    try:
        x = float(v)
    except (ValueError, OverflowError):
        return 0.0
    return min(1.0, max(0.0, x)) if x == x else 0.0  # NaN reads as 0; infinities are clamped


def _ranks(v: Any) -> dict[str, Any]:
    """``profile.ranks`` as the engine writes it (first failing rank, its first error, ranks with errors)."""
    if not isinstance(v, dict) or not v:
        return {}
    raw_fe, raw_ranks = v.get("first_error"), v.get("ranks_with_errors")
    fe: dict[str, Any] = raw_fe if isinstance(raw_fe, dict) else {}
    ranks: list[Any] = raw_ranks if isinstance(raw_ranks, list) else []
    return {
        "first_failing": _text(v.get("first_failing")) or None,
        "first_error": {
            "source": _text(fe.get("source")),
            "line": _line(fe.get("line")),
            "excerpt": _text(fe.get("excerpt")),
            "time": _text(fe.get("time")) or None,
        },
        "ranks_with_errors": [_text(r) for r in ranks if isinstance(r, str | int) and not isinstance(r, bool)],
    }
