"""Stage 2a: candidate root causes from findings, merged, checked and ranked.

Why noisy-or merging: two different signatures pointing at the same cause are more convincing than one,
but never certain. Downstream symptoms are discounted when anything else explains the failure, and a
cause supported only by inference never outranks one seen directly at equal prior.
"""

from __future__ import annotations

import re
import sys
from collections import defaultdict
from functools import partial
from pathlib import Path
from typing import Any

from ..factory import is_card_rule, support
from ..model import Evidence, RootCause, ValidationCheck
from ..parse.scan import Finding, Frame, ScanResult
from ..rules import CauseSpec, RuleSet
from .analyze import Analysis, primary_tracebacks
from .reason import (
    Facts,
    apply_context,
    calibrate,
    category_lifts,
    differential,
    diversify,
    frame_owner,
    kept_homes,
    pointed_at,
)
from .rerank import features, rerank
from .validate import CheckContext, run_checks

DOWNSTREAM_FACTOR = 0.35
MAX_EVIDENCE = 4
MAX_CAUSES = 8


class _Fmt(dict[str, str]):
    """A placeholder whose group did not take part in the match renders as nothing (docs/rules.md), so
    `{dev}{dev2}` names one of two alternatives and a pattern without the group leaves no stray `?`; in prose
    it renders as ``_EMPTY``, which ``_tidy`` then takes out with the words it leaves behind."""

    def __init__(self, values: dict[str, str], empty: str):
        super().__init__(values)
        self.empty = empty

    def __missing__(self, key: str) -> str:
        return self.empty


# where a placeholder rendered as nothing in a summary or a hint: the words it leaves behind are tidied
_EMPTY = "\x00"
# parentheses that held only empty placeholders, and at most one short word between them ("( vs )", "(rank )")
_EMPTY_PARENS = re.compile(r" ?\((?=[^()]*\x00)[^()\w]*(?:[A-Za-z.]{1,6}[^()\w]*)?\)")
# an empty placeholder with the spaces around it, and the punctuation that may follow it
_SPACES_AT_EMPTY = re.compile(r" *\x00(?: *\x00)* *(?=([,:;.)]?))")


def _tidy(text: str) -> str:
    """Prose whose placeholders rendered as nothing, without the empty parentheses and doubled spaces they
    leave ("the operator  has no kernel", "a collective () did not complete")."""
    text = _EMPTY_PARENS.sub("", text)
    return _SPACES_AT_EMPTY.sub(lambda m: "" if m[1] or m.start() == 0 or " " not in m[0] else " ", text)


def _format(template: str, finding: Finding, prose: bool = True) -> str:
    """A summary's or a hint's template (``prose``) or a fix's value, filled from the finding's groups."""
    empty = _EMPTY if prose else ""
    values = _Fmt({k: v.strip() or empty for k, v in finding.groups.items()}, empty)
    values["line"] = finding.text[:160]
    try:
        text = template.format_map(values)
    except (
        ValueError,
        IndexError,
        AttributeError,
        KeyError,
        TypeError,
    ):  # literal braces, {0}, {x.y}: show it as written
        return template
    return (_tidy(text) if _EMPTY in text else text).rstrip(" :")


def _finding_dict(f: Finding) -> dict[str, Any]:
    return {"rule": f.rule.id, "text": f.text, "groups": dict(f.groups), "source": f.source, "line": f.line}


def _evidence_for(f: Finding, spec: CauseSpec) -> list[Evidence]:
    ev = [Evidence("direct", f.source, f.text[:500], f.line or None)]
    if spec.kind == "hypothesis":
        ev.append(Evidence("hypothesis", f"rule {f.rule.id}", spec.reason or spec.summary))
    return ev


def build_causes(
    scan: ScanResult, analysis: Analysis, ruleset: RuleSet, ctx: CheckContext, facts: Facts
) -> list[RootCause]:
    findings = [f for f in analysis.findings if not is_card_rule(f.rule)]
    card_hits = [f for f in analysis.findings if is_card_rule(f.rule)]  # supporting evidence, applied last
    has_primary = any(not f.rule.downstream and f.rule.causes for f in findings)
    # only symptoms matched, but an exception of its own was raised somewhere (the first failing rank's)
    unexplained = not has_primary and bool(primary_tracebacks(scan))
    has_primary = has_primary or unexplained
    causes: dict[str, RootCause] = {}
    checks_of: dict[str, tuple[list[str], dict[str, Any]]] = {}
    seen_rule_for_cause: dict[str, set[str]] = defaultdict(set)
    for f in findings:
        factor = DOWNSTREAM_FACTOR if (f.rule.downstream and has_primary) else 1.0
        for spec in f.rule.causes:
            conf = spec.confidence * factor
            c = causes.get(spec.id)
            if c is None:
                c = RootCause(
                    spec.id,
                    spec.category,
                    conf,
                    _format(spec.summary, f),
                    _evidence_for(f, spec),
                    fix_hints=[_format(h, f) for h in spec.fix_hints],
                    rule=f.rule.id,
                    fix=_fix_template(spec, f),
                )
                causes[spec.id] = c
                checks_of[spec.id] = (list(spec.checks), _finding_dict(f))
            elif f.rule.id not in seen_rule_for_cause[spec.id]:
                c.confidence = 1 - (1 - c.confidence) * (1 - 0.4 * conf)  # corroborated by another signature
                c.evidence.extend(_evidence_for(f, spec)[:1])
                for name in spec.checks:
                    if name not in checks_of[spec.id][0]:
                        checks_of[spec.id][0].append(name)
            elif len(c.evidence) < MAX_EVIDENCE and not any(e.excerpt == f.text[:500] for e in c.evidence):
                c.evidence.append(Evidence("direct", f.source, f.text[:500], f.line or None))
            seen_rule_for_cause[spec.id].add(f.rule.id)
    for stuck in ctx.context.get("stuck") or []:
        _add_stuck_cause(causes, checks_of, stuck)
    for cid, c in causes.items():
        names, fdict = checks_of.get(cid, ([], {}))
        run_checks(ctx, c, names, fdict)
    primary = not causes or unexplained
    apply_context(list(causes.values()), facts, analysis, ruleset)
    present: dict[str, float] = {}
    for c in causes.values():
        present[c.category] = max(present.get(c.category, 0.0), c.confidence)
    alternatives = differential(facts, analysis, ruleset, present, primary)
    if not causes and not alternatives:
        alternatives = [(c, []) for c in fallback_causes(scan, analysis, ruleset)]
    for c, names in alternatives:
        if c.id not in causes:
            causes[c.id] = c
            run_checks(ctx, c, names, {})
    if ruleset.reasoning.ranking:  # a pack's fitted weights ([ranking.weights]; the built-in packs carry none)
        on_table = list(causes.values())
        prof = analysis.profile
        lifted = category_lifts(facts, [c.category for c in on_table])
        pointed = partial(pointed_at, lifts=lifted)
        table = features(on_table, facts.active, prof.type, prof.stack, facts.exc_type, pointed)
        rerank(on_table, table, ruleset.reasoning.ranking)
    if card_hits:
        ctx.context["factory"] = support(causes, card_hits)
    for c in causes.values():
        c.evidence = c.evidence[: MAX_EVIDENCE + 2]
    ranked = sorted(causes.values(), key=lambda c: (-round(c.confidence, 3), _kind_rank(c)))
    keep = kept_homes(facts, ruleset)  # in place of a differential guess only: a rule's homes keep their places
    lifts = category_lifts(facts, [c.category for c in ranked]) if keep else None
    out = _thin_evidence_penalty(diversify(ranked, keep=keep, lifts=lifts)[:MAX_CAUSES])
    for c in out:
        c.confidence = round(calibrate(c.confidence, ruleset.reasoning.calibration), 4)
    return out


def _kind_rank(c: RootCause) -> int:
    return 0 if any(e.kind == "direct" for e in c.evidence) else 1


def _thin_evidence_penalty(causes: list[RootCause]) -> list[RootCause]:
    """Conflicting candidates of similar weight lower the leader's confidence: never pretend certainty."""
    if (
        len(causes) >= 2
        and causes[0].category != causes[1].category
        and causes[1].confidence > 0.8 * causes[0].confidence
    ):
        causes[0].confidence = max(causes[0].confidence * 0.9, causes[1].confidence)  # lowered, never reordered
    return causes


def _fix_template(spec: CauseSpec, f: Finding) -> dict[str, Any] | None:
    if not spec.fix:
        return None
    out = {}
    for k, v in spec.fix.items():
        out[k] = _format(v, f, prose=False) if isinstance(v, str) and k not in {"find", "replace"} else v
    return out


def _add_stuck_cause(
    causes: dict[str, RootCause], checks_of: dict[str, tuple[list[str], dict[str, Any]]], stuck: dict[str, Any]
) -> None:
    cid = f"hang.{stuck['category']}"
    ev = Evidence("direct", stuck["source"], stuck["detail"], stuck.get("line"))
    if cid in causes:
        causes[cid].evidence.append(ev)
        return
    conf = 0.6 if stuck["category"] != "test_code" else 0.4
    evidence = [ev]
    generic = causes.pop("hang.stuck", None)  # the timeout line joins the cause that says where it waited
    if generic is not None:
        evidence += generic.evidence
    causes[cid] = RootCause(
        cid,
        stuck["category"],
        conf,
        stuck["summary"],
        evidence,
        fix_hints=list(stuck.get("fix_hints", [])),
        rule="stuck_frame",
    )
    checks_of[cid] = checks_of.pop("hang.stuck", ([], {})) if generic is not None else ([], {})


def stuck_points(scan: ScanResult, ruleset: RuleSet) -> list[dict[str, Any]]:
    """Classify where each dumped thread waits, using the ``[[stuck_frame]]`` table of the rule packs."""
    out = []
    seen = set()
    for d in scan.dumps:
        inner = d.innermost
        if not inner:
            continue
        libraries = ruleset.reasoning.libraries
        for entry in ruleset.stuck_frames:
            fr = _match_stuck(entry, inner, libraries)
            if fr is None:
                continue
            user = next((x for x in inner if _dump_owner(x, libraries) in ("user", "test")), None)
            where = f"{Path(fr.file).name}:{fr.line}"
            if user is not None and user is not fr:
                where += f", called from {user.file}:{user.line}" + (f" ({user.code})" if user.code else "")
            summary = entry.get("summary", "").replace("{func}", fr.func).replace("{where}", where)
            key = (entry.get("category"), fr.func, d.rank)
            if key in seen:
                break
            seen.add(key)
            rank = f"rank {d.rank} " if d.rank is not None else ""
            out.append(
                {
                    "category": entry.get("category", "test_code"),
                    "summary": summary,
                    "detail": f"{rank}{d.thread}: stuck in {fr.func} ({where})",
                    "source": d.source,
                    "line": d.line,
                    "fix_hints": entry.get("fix_hints", []),
                    "rank": d.rank,
                }
            )
            break
    # main threads first: they are the ones the user waits on
    out.sort(key=lambda s: 0 if "MainThread" in s["detail"] or "Current thread" in s["detail"] else 1)
    return out


def _dump_owner(frame: Frame, libraries: frozenset[str]) -> str:
    """``frame_owner`` for a stack dumper's frame. py-spy prints a module's path relative to the ``sys.path``
    entry it was found on (``selectors.py``, ``multiprocessing/connection.py``, ``torch/utils/data/...``); a
    relative path whose top-level module Python's own list of its standard library names
    (``sys.stdlib_module_names``) is that library's, not the program's (a script of the program shadowing a
    standard module is misread: it breaks the program's imports anyway)."""
    owner = frame_owner(frame, libraries)[0]
    path = frame.file.replace("\\", "/")
    if owner == "user" and not path.startswith(("/", "~", ".", "<")) and ":" not in path[:3]:
        if path.split("/", 1)[0].removesuffix(".py") in sys.stdlib_module_names:
            return "stdlib"
    return owner


def _waiting_window(frames: list[Frame], libraries: frozenset[str]) -> list[Frame]:
    """The innermost frames that say *how* a thread waits (the standard library's selectors, sockets, locks,
    queues, connections) and the first frame outward, which says *what for*: a DataLoader main thread blocks in
    ``selectors.select`` under ``multiprocessing``'s queue, called by the DataLoader's ``_try_get_data``."""
    for i, fr in enumerate(frames):
        if _dump_owner(fr, libraries) != "stdlib":
            return frames[: i + 1]
    return frames


def _match_stuck(entry: dict[str, Any], frames: list[Frame], libraries: frozenset[str]) -> Frame | None:
    """The frame of the waiting window (``_waiting_window``) that fits the entry — its function, its file and
    its owner (``owner``: who owns the file by ``frame_owner``, the reading every traceback gets, so that a
    dumper's paths relative to ``sys.path`` are a library's as an installed path is) — the caller first, so
    that the frame named is the one saying what the thread waits for."""
    func_re = re.compile(entry.get("func", ".*"))
    file_re = re.compile(entry["file"]) if entry.get("file") else None
    for fr in reversed(_waiting_window(frames, libraries)):
        if not func_re.search(fr.func) or (file_re is not None and not file_re.search(fr.file)):
            continue
        if entry.get("owner") and _dump_owner(fr, libraries) != entry["owner"]:
            continue
        return fr
    return None


def fallback_causes(scan: ScanResult, analysis: Analysis, ruleset: RuleSet) -> list[RootCause]:
    """No signature matched: say what is known, offer the likely places by stack, as hypotheses."""
    point = None
    for tb in [*reversed(primary_tracebacks(scan)), *reversed(scan.tracebacks)]:
        if tb.exc_type:
            point = Evidence("direct", tb.source, tb.headline[:500], tb.exc_line)
            break
    if point is None and scan.pytest_errors:
        src, line, text = scan.pytest_errors[0]
        point = Evidence("direct", src, text, line)
    clean_exit = analysis.profile.exit_code == 0
    if point is None:
        for info in scan.sources.values() if not clean_exit else ():  # a clean run's last stderr line is no error
            if info.name.startswith("stderr") and info.tail:
                point = Evidence("direct", info.name, info.tail[-1][:500], info.lines)
        if point is None and scan.error_lines:
            src, line, text = scan.error_lines[-1]
            point = Evidence("direct", src, text, line)
    if point is None and (analysis.profile.exit_code is None or clean_exit):
        return []  # no error in the evidence and no failing exit status: nothing failed that it shows
    cats = ruleset.fallback.get(analysis.profile.stack) or ruleset.fallback.get("other") or ["model"]
    priors = [0.35, 0.2, 0.12]
    what = point.excerpt if point else f"exit status {analysis.profile.exit_code}"
    out = []
    for cat, prior in zip(cats, priors, strict=False):
        ev = [point] if point else [Evidence("direct", "exit status", what)]
        ev = list(ev) + [
            Evidence(
                "hypothesis",
                "fallback",
                f"no known signature matched; for a {analysis.profile.stack} run the {cat} layer is a likely place to look",
            )
        ]
        out.append(
            RootCause(
                f"unknown.{cat}",
                cat,
                prior,
                f"unrecognised failure ({what[:120]}); look in the {cat.replace('_', ' ')} first",
                ev,
                fix_hints=["read the error message and the user frame of the traceback; reduce to a small repro"],
                rule="fallback",
                error=what,
            )
        )
    if out:
        out[0].validation_checks.append(
            ValidationCheck("rule-match", "failed", "no rule of the knowledge base matched this failure")
        )
    return out
