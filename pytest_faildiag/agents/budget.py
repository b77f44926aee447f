"""Fit a diagnosis into an agent's context: ``max_chars`` (tools) / ``--max-chars`` (CLI).

An agent pays for every character it reads, and a report of a long run can hold dozens of causes, each
with evidence, checks and hints. What it needs to act is the first failure, the ranked causes and the
``direct`` evidence behind them, so everything else goes first: keys outside the contract's core, then
``hypothesis`` evidence, checks, hints and next actions of the lesser causes, then those of the top cause.
Only then is the core itself shortened: long excerpts cut, evidence per cause limited, the lowest-ranked
causes dropped, the top cause last. The result is still a valid ``report.json`` object (the schema's
required keys are never removed) with a ``budget`` key that says what was dropped; when even the core does
not fit, it is returned as small as it gets with ``"fits": false``. Text output that still does not fit is
cut at the limit with a last line that says so.

Strings are cut after redaction (the input is a redacted report), so a cut never leaves half a token unmasked.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

from ..sanitize import json_safe

CORE_KEYS = ("schema", "summary", "profile", "root_causes", "next_actions", "artifacts")
PROFILE_KEYS = (
    "stage",
    "type",
    "stack",
    "backend",
    "domains",
    "confidence",
    "command",
    "exit_code",
    "signal",
    "first_failure",
)
CAUSE_KEYS = ("id", "category", "confidence", "summary", "evidence", "validation_checks", "fix_hints")
ELLIPSIS = "…"

Report = dict[str, Any]
Measure = Callable[[Report], int]


def compact_size(report: Report) -> int:
    """Characters of the report as a tool returns it (compact JSON)."""
    return len(json.dumps(report, ensure_ascii=False, default=str))


def _printed(report: Report) -> str:
    """The report as ``faildiag diagnose --format json --max-chars`` prints it: compact, every character of
    the budget spent on content."""
    return json_safe(json.dumps(report, ensure_ascii=False, default=str)) + "\n"


def _cut(text: Any, limit: int) -> Any:
    if not isinstance(text, str) or len(text) <= limit:
        return text
    return text[: max(0, limit - 1)] + ELLIPSIS


def _causes(r: Report) -> list[dict[str, Any]]:
    causes = r.get("root_causes")
    return [c for c in causes if isinstance(c, dict)] if isinstance(causes, list) else []


def _evidence(cause: dict[str, Any]) -> list[dict[str, Any]]:
    ev = cause.get("evidence")
    return [e for e in ev if isinstance(e, dict)] if isinstance(ev, list) else []


# Each step removes one kind of content and counts what it removed into ``dropped`` (the ``budget`` key:
# short counters, so that saying what went costs little of the budget). Listed in the order they run: the
# rest first, the core last.

Dropped = dict[str, Any]


def _count(dropped: Dropped, key: str, n: int) -> None:
    if n:
        dropped[key] = dropped.get(key, 0) + n


def _drop_extra_keys(r: Report, dropped: Dropped) -> None:
    extra = [k for k in r if k not in CORE_KEYS and k != "budget"]
    for k in extra:
        del r[k]
    if extra:
        dropped["keys"] = extra


def _drop_profile_extras(r: Report, dropped: Dropped) -> None:
    prof = r.get("profile")
    extra = [k for k in prof if k not in PROFILE_KEYS] if isinstance(prof, dict) else []
    for k in extra:
        del prof[k]
    if extra:
        dropped["profile_keys"] = extra


def _drop_cause_extras(r: Report, dropped: Dropped) -> None:
    for c in _causes(r):
        for k in [k for k in c if k not in CAUSE_KEYS]:
            del c[k]
            _count(dropped, "cause_fields", 1)


def _drop_hypotheses(r: Report, dropped: Dropped) -> None:
    for c in _causes(r):
        kept = [e for e in _evidence(c) if e.get("kind") == "direct"]
        _count(dropped, "hypotheses", len(_evidence(c)) - len(kept))
        c["evidence"] = kept


def _drop_checks_and_hints(first: int, hints_kept: int) -> Callable[[Report, Dropped], None]:
    """Checks and fix hints of the causes from rank ``first`` on (0: all), keeping ``hints_kept`` hints."""

    def step(r: Report, dropped: Dropped) -> None:
        for c in _causes(r)[first:]:
            _count(dropped, "checks", len(c.get("validation_checks") or []))
            hints = c.get("fix_hints") or []
            _count(dropped, "fix_hints", max(0, len(hints) - hints_kept))
            c["validation_checks"], c["fix_hints"] = [], list(hints[:hints_kept])

    return step


def _keep_next_actions(count: int) -> Callable[[Report, Dropped], None]:
    def step(r: Report, dropped: Dropped) -> None:
        actions = r.get("next_actions")
        if isinstance(actions, list) and len(actions) > count:
            r["next_actions"] = actions[:count]
            _count(dropped, "next_actions", len(actions) - count)

    return step


def _cutter(evidence_chars: int, failure_chars: int) -> Callable[[Report, Dropped], None]:
    def step(r: Report, dropped: Dropped) -> None:
        for c in _causes(r):
            for e in _evidence(c):
                if isinstance(e.get("excerpt"), str) and len(e["excerpt"]) > evidence_chars:
                    e["excerpt"] = _cut(e["excerpt"], evidence_chars)
                    _count(dropped, "excerpts_cut", 1)
            c["summary"] = _cut(c.get("summary"), max(evidence_chars, 120))
        ff = (r.get("profile") or {}).get("first_failure")
        if isinstance(ff, dict) and isinstance(ff.get("excerpt"), str) and len(ff["excerpt"]) > failure_chars:
            ff["excerpt"] = _cut(ff["excerpt"], failure_chars)
            _count(dropped, "excerpts_cut", 1)

    return step


def _evidence_per_cause(top: int, others: int) -> Callable[[Report, Dropped], None]:
    def step(r: Report, dropped: Dropped) -> None:
        for i, c in enumerate(_causes(r)):
            keep = top if i == 0 else others
            ev = _evidence(c)
            if len(ev) > keep:
                c["evidence"] = ev[:keep]
                _count(dropped, "evidence", len(ev) - keep)

    return step


def _keep_causes(count: int) -> Callable[[Report, Dropped], None]:
    def step(r: Report, dropped: Dropped) -> None:
        causes = r.get("root_causes")
        if isinstance(causes, list) and len(causes) > count:
            r["root_causes"] = causes[:count]
            _count(dropped, "causes", len(causes) - count)

    return step


def _last_cuts(r: Report, dropped: Dropped) -> None:
    r["summary"] = _cut(r.get("summary"), 160)
    for c in _causes(r):
        c["summary"] = _cut(c.get("summary"), 100)
    prof = r.get("profile")
    if isinstance(prof, dict):
        prof["command"] = _cut(prof.get("command"), 160)
    _drop_checks_and_hints(0, 0)(r, dropped)
    dropped["summaries_cut"] = True


STEPS: tuple[Callable[[Report, Dropped], None], ...] = (
    # the rest: keys outside the core, hypotheses, checks, hints and next actions (the lesser causes' first)
    _drop_extra_keys,
    _drop_profile_extras,
    _drop_cause_extras,
    _drop_hypotheses,
    _drop_checks_and_hints(1, 0),
    _keep_next_actions(1),
    _drop_checks_and_hints(0, 1),
    _keep_next_actions(0),
    # the core: long excerpts cut, direct evidence limited, lesser causes dropped, the top cause last
    _cutter(400, 1000),
    _evidence_per_cause(3, 2),
    _keep_causes(5),
    _cutter(160, 600),
    _evidence_per_cause(2, 1),
    _keep_causes(3),
    _cutter(100, 300),
    _evidence_per_cause(1, 1),
    _keep_causes(1),
    _last_cuts,
)


def fit_report(report: Report, max_chars: int, measure: Measure = compact_size) -> Report:
    """A copy of ``report`` that measures at most ``max_chars`` (``measure``), cut in the order above; the
    report itself when it already fits. Never raises on a malformed report (missing keys are skipped)."""
    if measure(report) <= max_chars:
        return report
    r = copy.deepcopy(report)
    dropped: Dropped = {}
    r["budget"] = {"max_chars": max_chars, "dropped": dropped, "fits": False}
    for step in STEPS:
        step(r, dropped)
        r["budget"]["fits"] = measure(r) <= max_chars
        if r["budget"]["fits"]:
            break
    return r


def cut_text(text: str, max_chars: int) -> str:
    """``text`` within ``max_chars``, cut at a line end where one is near, with a last line saying so."""
    if len(text) <= max_chars:
        return text
    note = f"\n… cut to {max_chars} characters\n"
    room = max(0, max_chars - len(note))
    head = text[:room]
    if "\n" in head[room // 2 :]:
        head = head[: head.rindex("\n")]
    elif len(note) > max_chars:
        return text[:max_chars]
    return (head + note)[:max_chars]


def fit_rendered(report: Report, max_chars: int, render: Callable[[Report], str]) -> str:
    """``render(report)`` within ``max_chars``: the report is fitted (so what is dropped is the rest, not
    the causes), then the text is cut if it still does not fit."""
    text = render(report)
    if len(text) <= max_chars:
        return text
    fitted = fit_report(report, max_chars, lambda r: len(render(r)))
    return cut_text(render(fitted), max_chars)


def render_report(report: Report, fmt: str, max_chars: int) -> str:
    """``faildiag diagnose --max-chars``: the redacted report in ``fmt`` (json, md, text) within the budget,
    as printed (the trailing newline counts)."""
    from ..engine.report import render_markdown, render_text
    from ..model import Diagnosis  # the renderers take the model; rebuild it from the report

    if fmt == "json":
        return _printed(fit_report(report, max_chars, lambda r: len(_printed(r))))
    if fmt == "md":
        return fit_rendered(report, max_chars, lambda r: render_markdown(Diagnosis.from_dict(r)))
    return fit_rendered(report, max_chars, lambda r: render_text(Diagnosis.from_dict(r)) + "\n")
