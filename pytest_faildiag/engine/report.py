"""Stage 4: the report builder. One line a person can act on, next actions, text and Markdown.

Everything rendered passes through redaction: excerpts come from logs, and logs carry tokens. And through
``sanitize``: excerpts, file names and fields of dumps come from the failed run, which may print terminal
escape sequences or Markdown links; the text form shows control characters as ``\\x1b``, the Markdown form
escapes every field and puts excerpts in fenced blocks they cannot close.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..model import Diagnosis, RootCause
from ..parse.scan import ScanResult
from ..redact import redact_text
from ..rules import RuleSet
from ..sanitize import display, md_code, md_fence, md_text
from .analyze import Analysis
from .reason import frame_owner


def finish(
    analysis: Analysis,
    causes: list[RootCause],
    scan: ScanResult,
    rs: RuleSet,
    ctx: dict[str, Any],
    facts: list[str] | tuple[str, ...] = (),
) -> Diagnosis:
    prof = analysis.profile
    top = causes[0] if causes else None
    if top is not None:
        direct = sum(1 for e in top.evidence if e.kind == "direct")
        prof.confidence = min(0.99, 0.5 * top.confidence + 0.1 * min(direct, 3) + (0.2 if analysis.findings else 0.0))
    else:
        prof.confidence = 0.1 if scan.sources else 0.0
    for c in causes:
        if c.category not in prof.domains and len(prof.domains) < 6:
            prof.domains.append(c.category)
    held = _held_dump(scan, rs.reasoning.libraries)
    asks = rs.reasoning.patterns.get("asks_for_stack_dump") if held else None
    if held and asks is not None:
        for c in causes:
            c.fix_hints = _point_at_dump(c.fix_hints, asks, held)
    diag = Diagnosis(summary=_summary(analysis, top), profile=prof, root_causes=causes)
    acts = _next_actions(analysis, causes, rs, [*facts, f"stack:{prof.stack}"])
    diag.next_actions = _point_at_dump(acts, asks, held) if held and asks is not None else acts
    if ctx.get("flight_recorder"):
        diag.extra["flight_recorder"] = ctx["flight_recorder"]
    if ctx.get("stuck"):
        diag.extra["stuck"] = [{k: v for k, v in s.items() if k != "fix_hints"} for s in ctx["stuck"]]
    return diag


def _held_dump(scan: ScanResult, libraries: frozenset[str]) -> str | None:
    """Where the evidence already shows a process's Python stacks (faulthandler, py-spy, pystack, gdb), with the
    innermost frame of the first and the program's own call below it: what a "rerun with faulthandler" step
    would have produced."""
    d = scan.framed_dump()
    if d is None:
        return None
    fr = d.innermost[0]
    tool = f"{d.kind}'s dump" if d.kind else "the faulthandler dump"
    where = f"{tool} at {d.source}:{d.line}: innermost frame {fr.func} ({Path(fr.file).name}:{fr.line})"
    own = next((f for f in d.innermost if frame_owner(f, libraries)[0] in ("user", "test")), None)
    if own is None or own is fr:
        return where
    return f"{where}, called from {own.func} ({Path(own.file).name}:{own.line})"


def _point_at_dump(steps: list[str], asks: re.Pattern[str], held: str) -> list[str]:
    """The steps with each one that asks for a stack dump the evidence holds replaced by where that dump is (a
    run under `faildiag run` or `-X faulthandler` already printed it; asking again reads as a tool that missed it)."""
    out: list[str] = []
    for step in steps:
        new = f"read {held}: the Python call that was running there" if asks.search(step) else step
        if new not in out:
            out.append(new)
    return out


def _who(rank: object) -> str:
    """A rank by its number ("rank 3"), a host, a pod or a worker by its name."""
    return f"rank {rank}" if str(rank).isdigit() else str(rank)


def _summary(analysis: Analysis, top: RootCause | None) -> str:
    prof = analysis.profile
    where = ""
    first = prof.ranks.get("first_failing")
    if first is not None:
        on = prof.first_failure.rank if prof.first_failure is not None else None
        where = f" ({_who(first)} failed first)"
        if on is not None and on != str(first):  # the error shown is another process's than the first to fail
            where = f" (on {_who(on)}; {_who(first)} failed first)"
    if top is None:
        if prof.exit_code not in (None, 0):
            return f"the run exited with status {prof.exit_code}{' (' + prof.signal + ')' if prof.signal else ''} and left no recognisable error; collect stderr and rerun with faulthandler"
        if prof.exit_code == 0:
            return "the run exited with status 0 and its evidence shows no error: nothing failed to diagnose"
        return "no failure found in the evidence"
    kind = prof.type.replace("_", " ")
    return redact_text(f"{kind} at {prof.stage}: {top.summary}{where} [{top.category}, {top.confidence:.0%}]")


def _category_actions(rs: RuleSet, category: str, facts: list[str]) -> list[str]:
    """The category's next actions; those of the first fact of the run with its own (``[next_actions_when]``:
    a single-process run has no ranks to collect from; plain Python has no layers, only the code under test)."""
    for fact in facts:
        if f"{fact}|{category}" in rs.next_actions:
            return rs.next_actions[f"{fact}|{category}"]
    return rs.next_actions.get(category, [])


def _next_actions(
    analysis: Analysis, causes: list[RootCause], rs: RuleSet, facts: list[str] | None = None
) -> list[str]:
    facts = facts or []
    single = "run:single_process" in facts  # gather_facts saw no ranks, no collective backend
    acts: list[str] = []
    if causes:
        top = causes[0]
        if _guessed_hang(analysis, top):
            acts.append(
                "no error and no exit status in the evidence: the hang is a guess from a log that just ends; "
                "if the run ended on its own, pass its status (--exit-code N)"
            )
        if top.fix_hints:
            acts.append(f"try: {top.fix_hints[0]}")
        acts.extend(_category_actions(rs, top.category, facts))
        if top.fix:
            acts.append("hand off to fix mode: `faildiag fix <snapshot>` proposes this change and verifies it")
        if top.category == "operator" or analysis.profile.type == "unsupported_op":
            acts.append(
                "hand off to operator work: a kernel/operator implementation is missing or faulty for this device/dtype"
            )
        if top.confidence < 0.5:
            acts.append(
                f"evidence is thin: collect a smaller repro and the full stderr of {'the run' if single else 'every rank'}"
            )
    elif analysis.profile.exit_code == 0:
        acts.append(
            "nothing to diagnose: if the run did fail, hand over the output that shows it (stderr, every rank's)"
        )
    else:
        acts.append(
            f"collect the full stdout/stderr of {'the run' if single else 'every process'}, the exit status, and rerun with PYTHONFAULTHANDLER=1"
        )
    if analysis.profile.type == "hang":
        acts.append("for hangs: `faildiag run --hang-timeout N -- CMD` dumps every process's stacks before stopping it")
    out = []
    for a in acts:
        if a not in out:
            out.append(a)
    return out[:6]


def _guessed_hang(analysis: Analysis, top: RootCause) -> bool:
    """A hang read from nothing but a log that ends: no exit status, and no line of the evidence shows it."""
    prof = analysis.profile
    return prof.type == "hang" and prof.exit_code is None and not any(e.kind == "direct" for e in top.evidence)


# How a check's status reads beside its cause (report.json keeps the contract's passed/failed/skipped): "failed"
# printed under a cause beside a true statement ("an assert in the test failed") read as if the check were wrong.
CHECK_READS = {"passed": "supports this cause", "failed": "against this cause", "skipped": "not run"}


def render_text(diag: Diagnosis, *, max_causes: int = 3) -> str:
    """The report for a terminal. Excerpts are cut after redaction (a cut token would no longer match)."""
    p = diag.profile
    lines = [
        f"faildiag: {diag.summary}",
        f"  profile: stage={p.stage} type={p.type} stack={p.stack} backend={p.backend or '-'} "
        f"confidence={p.confidence:.2f} exit={p.exit_code if p.exit_code is not None else '-'}",
    ]
    if p.first_failure:
        ff = p.first_failure
        on = f" ({_who(ff.rank)})" if ff.rank is not None else ""
        lines.append(f"  first failure: {ff.source}:{ff.line or '?'}{on}: {display(ff.excerpt, limit=200)}")
    for i, c in enumerate(diag.root_causes[:max_causes], 1):
        lines.append(f"  {i}. [{c.category}] {c.summary} ({c.confidence:.0%}, {c.id})")
        for e in c.evidence[:3]:
            loc = f"{e.source}:{e.line}" if e.line else e.source
            lines.append(f"       {e.kind:10} {loc}: {display(e.excerpt, limit=160)}")
        for v in c.validation_checks[:3]:
            lines.append(
                f"       check {v.name}: {CHECK_READS.get(v.status, v.status)} — {display(v.detail, limit=160)}"
            )
        for h in c.fix_hints[:2]:
            lines.append(f"       fix: {h}")
    for a in diag.next_actions[:3]:
        lines.append(f"  next: {a}")
    return "\n".join(display(line) for line in lines)


def render_markdown(diag: Diagnosis) -> str:
    """The report as Markdown. Every field is escaped (``md_text``) or a code span/fenced block, since a
    report read back by ``faildiag report`` may come from anywhere: a summary holding ``![x](https://...)``
    or ``<img>`` must render as those characters, not as a picture fetched from that address."""
    p = diag.profile
    ec = p.exit_code if p.exit_code is not None else "-"
    out = [
        "# faildiag report",
        "",
        f"**{md_text(diag.summary)}**",
        "",
        "| stage | type | stack | backend | confidence | exit |",
        "|---|---|---|---|---|---|",
        f"| {md_text(p.stage)} | {md_text(p.type)} | {md_text(p.stack)} | {md_text(p.backend or '-')} "
        f"| {p.confidence:.2f} | {md_text(ec)} |",
        "",
    ]
    if p.command:
        out += [f"Command: {md_code(p.command)}", ""]
    if p.first_failure:
        ff = p.first_failure
        out += [
            f"First failure: {md_code(f'{ff.source}:{ff.line or chr(63)}')}",
            "",
            *md_fence(display(ff.excerpt, limit=800)),
            "",
        ]
    out.append("## Root causes")
    if not diag.root_causes:
        out.append("No known cause.")
    for i, c in enumerate(diag.root_causes, 1):
        out += [
            "",
            f"### {i}. {md_text(c.summary)}",
            "",
            f"{md_code(c.id)} · category **{md_text(c.category)}** · confidence {c.confidence:.0%}",
            "",
        ]
        for e in c.evidence:
            loc = f"{e.source}:{e.line}" if e.line else e.source
            out.append(f"- {md_text(e.kind)} — {md_code(loc)}: {md_text(e.excerpt, limit=300)}")
        for v in c.validation_checks:
            out.append(f"- check {md_code(v.name)}: **{CHECK_READS.get(v.status, v.status)}** — {md_text(v.detail)}")
        for h in c.fix_hints:
            out.append(f"- fix: {md_text(h)}")
    if diag.next_actions:
        out += ["", "## Next actions", ""] + [f"- {md_text(a)}" for a in diag.next_actions]
    if diag.notes:
        out += ["", "## Notes", ""] + [f"- {md_text(n)}" for n in diag.notes]
    return "\n".join(out) + "\n"
