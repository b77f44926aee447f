"""Read what the plugin (or ``faildiag diagnose``/``run``) left on disk: the CI reporters' only input.

The reporters depend on files, not on live pytest objects, so ``faildiag report`` can re-render a run
long after it ended, on another machine. Three shapes are accepted:

* a session folder with ``session.json`` (``faildiag.session/1``) and one snapshot folder per test;
* a session folder whose ``session.json`` is missing (the session was killed): its snapshot folders;
* one snapshot folder (``report.json`` at its top).

Malformed files degrade to what can still be read; ``load`` raises ``ReportInputError`` (one line) only
when nothing usable is there. Everything read passes through redaction before it is returned. The files
themselves are read through ``store`` (bounded, confined), reports come back through
``Diagnosis.from_dict`` and failures group by ``store.cause_key``: the terminal, fix mode and every
reporter count the same causes.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..fsio import MAX_JSON_BYTES, iter_lines, loads_json
from ..model import Diagnosis
from ..redact import redact_obj
from ..store import (
    FAILURE_LOCK,
    LAST_GREEN_LOCK,
    MAX_SESSION_ENTRIES,
    REPORT,
    SESSION,
    TEST_FILE,
    cause_key,
    entry_snapshot,
    group_by_cause,
    read_json_or_none,
    read_last_green,
    session_entries,
)

SESSION_FILE = SESSION
REPORT_FILE = REPORT
TIMELINE_NAMES = ("timeline.jsonl", "artifacts/timeline.jsonl", "meta/timeline.jsonl")
LOCK_DIFF_NAMES = ("artifacts/lock-diff.json", "meta/lock-diff.json")
GREEN_LOCK = LAST_GREEN_LOCK
MAX_SNAPSHOTS = MAX_SESSION_ENTRIES
MAX_TIMELINE_SAMPLES = 20000


class ReportInputError(Exception):
    """The folder holds neither a session nor a snapshot: reported as one line."""


@dataclass
class Failure:
    """One failed test (or one failed run, for a lone snapshot), as the reporters need it."""

    nodeid: str
    summary: str
    category: str = "unknown"
    type: str = "unknown"
    confidence: float = 0.0
    cause_id: str | None = None
    cause_summary: str | None = None
    error: str | None = None  # the error an unrecognised cause explains (``RootCause.error``)
    file: str | None = None
    line: int | None = None
    fix_hints: list[str] = field(default_factory=list)
    when: str = "call"
    outcome: str = "failed"
    snapshot: Path | None = None
    report: dict[str, Any] | None = None

    @property
    def unrecognised(self) -> str | None:
        """For the engine's catch-all ``unknown.*`` cause: the error it raised, else None."""
        return self.error if (self.cause_id or "").startswith("unknown.") else None

    @property
    def group_key(self) -> str:
        """Failures with the same key share a cause (``store.cause_key``, the grouping every view uses)."""
        return cause_key(self.cause_id, self.error, self.type, self.summary)


@dataclass
class CauseGroup:
    """Failures that share one root cause, the unit the annotations and the HTML report are ranked by."""

    key: str
    failures: list[Failure]

    @property
    def head(self) -> Failure:
        return self.failures[0]

    @property
    def count(self) -> int:
        return len(self.failures)

    @property
    def confidence(self) -> float:
        return max((f.confidence for f in self.failures), default=0.0)

    @property
    def category(self) -> str:
        return self.head.category

    @property
    def title(self) -> str:
        return short_title(self.head)


@dataclass
class Session:
    """Everything under one output folder."""

    root: Path
    failures: list[Failure]
    notes: list[str] = field(default_factory=list)

    def groups(self) -> list[CauseGroup]:
        return group_failures(self.failures)


def _read_json(path: Path) -> Any:
    """A session's JSON within fsio's bounds (regular file, size, value count, depth), read through
    ``store``; None otherwise."""
    return read_json_or_none(path)


def _num(v: Any, default: float = 0.0) -> float:
    if isinstance(v, bool):
        return default
    try:
        return float(v)
    except (TypeError, ValueError, OverflowError):
        return default


def _int_or_none(v: Any) -> int | None:
    try:
        return int(v) if v is not None and not isinstance(v, bool) else None
    except (TypeError, ValueError, OverflowError):
        return None


def _str_list(v: Any) -> list[str]:
    return [x if isinstance(x, str) else _s(x) for x in v] if isinstance(v, list) else []


def _s(v: Any) -> str:
    return v if isinstance(v, str) else ("" if v is None else json.dumps(v, default=str)[:500])


def _dicts(v: Any) -> list[dict[str, Any]]:
    return [x for x in v if isinstance(x, dict)] if isinstance(v, list) else []


def _conf(v: Any) -> float:
    x = _num(v)
    return min(1.0, max(0.0, x)) if x == x and x not in (float("inf"), float("-inf")) else 0.0


def normalise_report(rep: dict[str, Any]) -> dict[str, Any]:
    """A report.json with every field the renderers read in the type the contract gives it, so a file
    from another version, edited by hand or partly written degrades to blanks instead of a crash: the
    model's own way back (``Diagnosis.from_dict``), plus the hang's ``stuck`` list the HTML report shows."""
    out = Diagnosis.from_dict(rep).to_dict()
    if "notes" in rep:
        out["notes"] = [_s(a) for a in rep["notes"]] if isinstance(rep.get("notes"), list) else []
    if "stuck" in rep:
        out["stuck"] = [
            {
                "category": _s(x.get("category")),
                "summary": _s(x.get("summary")),
                "detail": _s(x.get("detail")),
                "source": _s(x.get("source")),
                "line": _line(x.get("line")),
                "rank": _s(x.get("rank")) if x.get("rank") is not None else None,
            }
            for x in _dicts(rep.get("stuck"))
        ]
    return out


def _line(v: Any) -> int | None:
    n = _int_or_none(v) if not isinstance(v, bool) else None
    return n if n is not None and n > 0 else None


def top_cause(report: dict[str, Any] | None) -> dict[str, Any] | None:
    if not isinstance(report, dict):
        return None
    causes = report.get("root_causes")
    if isinstance(causes, list) and causes and isinstance(causes[0], dict):
        return causes[0]
    return None


def _location_from_report(report: dict[str, Any]) -> tuple[str | None, int | None]:
    """A file:line in user code when the report has one (a ``user-frame`` check or first failure)."""
    for cause in report.get("root_causes") or []:
        if not isinstance(cause, dict):
            continue
        for ev in cause.get("evidence") or []:
            excerpt = str(ev.get("excerpt", "")) if isinstance(ev, dict) else ""
            if excerpt.startswith("raised from "):
                loc = excerpt[len("raised from ") :].split(" ", 1)[0]
                path, _, line = loc.rpartition(":")
                if path and line.isdigit():
                    return path, int(line)
    return None, None


def failure_from_report(report: dict[str, Any], nodeid: str, snapshot: Path | None) -> Failure:
    """Build a Failure from a (normalised) report.json alone, when there is no session entry."""
    prof = report.get("profile") or {}
    top = top_cause(report) or {}
    file, line = _location_from_report(report)
    test = _read_json(snapshot / TEST_FILE) if snapshot is not None else None
    when = "call"
    if isinstance(test, dict):  # the plugin's note of which test this snapshot belongs to
        nodeid = _s(test.get("nodeid")) or nodeid
        when = _s(test.get("when")) or when
        if test.get("file"):
            file, line = _s(test["file"]), _line(test.get("line"))
    return Failure(
        nodeid=nodeid,
        when=when,
        summary=report.get("summary") or "no summary",
        category=top.get("category") or "unknown",
        type=prof.get("type") or "unknown",
        confidence=_conf(top["confidence"]) if "confidence" in top else _conf(prof.get("confidence")),
        cause_id=top.get("id") or None,
        cause_summary=top.get("summary") or None,
        error=top.get("error") or None,
        file=file,
        line=line,
        fix_hints=list(top.get("fix_hints") or []),
        snapshot=snapshot,
        report=report,
    )


def _failure_from_entry(root: Path, entry: dict[str, Any]) -> Failure:
    snap_name = entry.get("snapshot") or entry.get("slug")
    snap = entry_snapshot(root, entry)  # inside the session folder, or not read at all
    report: dict[str, Any] | None = None
    if snap is not None:
        data = _read_json(snap / REPORT_FILE)
        report = normalise_report(data) if isinstance(data, dict) else None
    top = top_cause(report) or {}
    cause = entry.get("cause_id")
    # the report's own cause when the entry names none or the same one: its error tells unrecognised ones apart
    same = not cause or cause == top.get("id")
    f = Failure(
        nodeid=_s(entry.get("nodeid")) or _s(snap_name) or "unknown test",
        summary=_s(entry.get("summary")) or (report or {}).get("summary") or "no summary",
        category=_s(entry.get("category")) or top.get("category") or "unknown",
        type=_s(entry.get("type")) or (report or {}).get("profile", {}).get("type") or "unknown",
        # the cause's own confidence (what the summary's "[resource, 47%]" says) over the session entry's
        confidence=_conf(top["confidence"]) if "confidence" in top else _conf(entry.get("confidence")),
        cause_id=_s(cause) if cause else (top.get("id") or None),
        cause_summary=top.get("summary") or None,
        error=_s(entry.get("error")) or (top.get("error") if same else None) or None,
        file=_s(entry.get("file")) or None,
        line=_line(entry.get("line")),
        fix_hints=_str_list(entry.get("fix_hints")) or list(top.get("fix_hints") or []),
        when=_s(entry.get("when")) or "call",
        outcome=_s(entry.get("outcome")) or "failed",
        snapshot=snap,
        report=report,
    )
    if f.file is None and report is not None:
        f.file, f.line = _location_from_report(report)
    return f


def load(path: str | os.PathLike[str]) -> Session:
    """Read a session folder or one snapshot folder. Raises ReportInputError when neither is there."""
    root = Path(path)
    if not root.exists():
        raise ReportInputError(f"{root}: no such file or directory")
    if root.is_file():
        if root.name in (SESSION_FILE, REPORT_FILE):
            root = root.parent
        else:
            raise ReportInputError(f"{root}: not a snapshot folder or a session folder")
    notes: list[str] = []
    session = _read_json(root / SESSION_FILE)
    if (root / SESSION_FILE).exists() and not isinstance(session, dict):
        notes.append(f"{SESSION_FILE}: unreadable or malformed; read the snapshot folders instead")
    if isinstance(session, dict) and isinstance(session.get("tests"), list):
        # "recovered": tests a killed previous session was running, diagnosed from its journal
        failures = [_failure_from_entry(root, t) for t in session_entries(session)]
        return Session(root, [_redacted(f) for f in failures], notes)
    report = _read_json(root / REPORT_FILE)
    if isinstance(report, dict):
        return Session(root, [_redacted(failure_from_report(normalise_report(report), root.name, root))], notes)
    failures = []
    try:
        subdirs = sorted(p for p in root.iterdir() if p.is_dir())
    except OSError as exc:
        raise ReportInputError(f"{root}: unreadable ({exc.strerror or exc})") from None
    for sub in subdirs[:MAX_SNAPSHOTS]:
        rep = _read_json(sub / REPORT_FILE)
        if isinstance(rep, dict):
            failures.append(_redacted(failure_from_report(normalise_report(rep), sub.name, sub)))
        elif (sub / REPORT_FILE).exists():
            notes.append(f"{sub.name}/{REPORT_FILE}: unreadable or malformed, skipped")
    if not failures:
        if (root / SESSION_FILE).exists():
            raise ReportInputError(f"{root}: {SESSION_FILE} is malformed and no snapshot folders were found")
        raise ReportInputError(f"{root}: no {SESSION_FILE} or {REPORT_FILE} found (not a faildiag output folder)")
    if not isinstance(session, dict):
        notes.append(f"no {SESSION_FILE}: read {len(failures)} snapshot folder(s) directly")
    return Session(root, failures, notes)


def _redacted(f: Failure) -> Failure:
    f.summary = redact_obj(f.summary)
    f.cause_summary = redact_obj(f.cause_summary)
    f.nodeid = redact_obj(f.nodeid)
    f.fix_hints = redact_obj(f.fix_hints)
    if f.report is not None:
        f.report = redact_obj(f.report)
    return f


def group_failures(failures: list[Failure]) -> list[CauseGroup]:
    """Group by cause and rank (``store.group_by_cause``: most tests first, then higher confidence)."""
    return [
        CauseGroup(g[0].group_key, g) for g in group_by_cause(failures, lambda f: f.group_key, lambda f: f.confidence)
    ]


def short_title(f: Failure, limit: int = 80) -> str:
    """The cause in a few words: the top cause's summary without its parenthesised detail."""
    what = f.unrecognised
    text = f"unrecognised: {what}" if what else (f.cause_summary or f.summary or "test failed")
    cut = text.find(" (")
    if cut > 15:
        text = text[:cut]
    text = " ".join(text.split())
    if len(text) > limit:
        text = text[: limit - 1].rsplit(" ", 1)[0] + "…"
    return text


def read_timeline(snapshot: Path | None) -> list[dict[str, float]]:
    """Resource samples ({"t", "rss_gib", "gpu_gib", "cpu"}) recorded next to a snapshot; bad lines skipped."""
    if snapshot is None:
        return []
    for name in TIMELINE_NAMES:
        p = snapshot / name
        if not p.is_file():
            continue
        out: list[dict[str, float]] = []
        try:
            with contextlib.closing(iter_lines(p, max_line=64 * 1024, max_bytes=MAX_JSON_BYTES)) as f:
                for raw in f:
                    try:
                        d = loads_json(raw, max_depth=8)
                    except ValueError:
                        continue
                    if isinstance(d, dict) and "t" in d:
                        sample = {k: _num(d.get(k), float("nan")) for k in ("t", "rss_gib", "gpu_gib", "cpu")}
                        if sample["t"] == sample["t"]:  # not NaN
                            out.append(sample)
                    if len(out) >= MAX_TIMELINE_SAMPLES:
                        break
        except OSError:
            continue
        return out
    return []


def read_lock_diff(snapshot: Path | None, report: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The environment lock diff (``diff_locks`` output): a diff stored with the snapshot or in the report,
    else computed from the last green lock of the output folder and the snapshot's failure lock."""
    candidates: list[Any] = []
    if snapshot is not None:
        candidates += [_read_json(snapshot / n) for n in LOCK_DIFF_NAMES]
    if isinstance(report, dict):
        candidates += [report.get("lock_diff"), report.get("environment_diff")]
    for c in candidates:
        if isinstance(c, dict):
            c = c.get("changes")
        if isinstance(c, list) and c:
            return redact_obj([x for x in c if isinstance(x, dict)])
    return _diff_with_green(snapshot)


def _diff_with_green(snapshot: Path | None) -> list[dict[str, Any]]:
    if snapshot is None:
        return []
    failure = _read_json(snapshot / FAILURE_LOCK)
    if not isinstance(failure, dict) or "packages" not in failure:
        return []
    for folder in (snapshot, snapshot.parent):
        green = read_last_green(folder)
        if isinstance(green, dict) and "packages" in green:
            from ..capture.envlock import diff_locks

            return redact_obj([c for c in diff_locks(green, failure) if c.get("kind") != "git"])
    return []


def workspace_relative(file: str | None, workspace: str | None = None) -> str | None:
    """``file`` relative to the CI workspace, with forward slashes; None when it lies outside it."""
    if not file:
        return None
    base = Path(workspace or os.environ.get("GITHUB_WORKSPACE") or os.environ.get("CI_PROJECT_DIR") or os.getcwd())
    p = Path(file)
    if not p.is_absolute() and _exists(Path.cwd() / p) and Path.cwd().resolve() != base.resolve():
        p = Path.cwd() / p  # relative to where pytest ran (a subfolder of the checkout, say)
    if not p.is_absolute():
        rel = p
    else:
        try:
            rel = p.resolve().relative_to(base.resolve())
        except (ValueError, OSError):
            try:
                rel = p.relative_to(base)
            except ValueError:
                return None
    parts = rel.parts
    if not parts or ".." in parts:
        return None
    return "/".join(parts)


def _exists(p: Path) -> bool:
    """``Path.exists`` that answers False for names the OS refuses (too long, NUL bytes) instead of raising."""
    try:
        return p.exists()
    except (OSError, ValueError):
        return False
