"""GitHub Actions: error annotations and a job summary from a faildiag output folder.

Why it reads files and not pytest objects: the same output is produced by ``faildiag report --format
github`` long after the session, and the plugin only has to call ``emit`` at session end.

GitHub's rules this module follows (docs: "Workflow commands for GitHub Actions"):

* ``::error file=F,line=L,title=T::MESSAGE`` — in the message ``%``, CR and LF are escaped as ``%25``,
  ``%0D``, ``%0A``; in property values ``:`` and ``,`` are escaped too (``%3A``, ``%2C``).
* At most 10 error annotations per step are shown. Failures are grouped by cause and ranked (most tests,
  then confidence) so that when there are more than 10 failures the top causes still surface, as one
  annotation per cause ("12 tests: CUDA out of memory").
* Echoed log excerpts are wrapped in ``::stop-commands::TOKEN`` … ``::TOKEN::`` with a fresh random token,
  so a log line such as ``::error::pwned`` or ``::add-mask::`` is shown, not executed.
* The job summary (``$GITHUB_STEP_SUMMARY``) is limited to 1 MiB per step: rows are dropped, with a note,
  to stay under it, counting what other tools already wrote to the file.

Everything written passes through ``sanitize``: redacted, control characters shown as ``\\x1b`` (the log
viewer renders ANSI sequences, a terminal obeys them); in the job summary, text from the run is escaped
Markdown or a code span, so a test's ``[click](https://...)``, ``![](...)`` or ``<img>`` renders as text.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable
from pathlib import Path

from ..sanitize import display, md_code, md_text
from ._load import CauseGroup, Failure, ReportInputError, Session, load, short_title, top_cause, workspace_relative

MAX_ANNOTATIONS = 10
SUMMARY_LIMIT = 1024 * 1024
MAX_ECHO_FAILURES = 20
MAX_ECHO_LINES = 12
MAX_MESSAGE = 4000


def escape_data(text: str) -> str:
    """Escape a workflow command's message (GitHub's ``escapeData``)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """Escape a workflow command's property value (GitHub's ``escapeProperty``)."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(name: str, message: str, **props: str | int | None) -> str:
    """One workflow command line (no newline), properties in the given order, empty ones left out."""
    parts = [f"{k}={escape_property(str(v))}" for k, v in props.items() if v not in (None, "")]
    head = f"::{name} {','.join(parts)}" if parts else f"::{name}"
    return f"{head}::{escape_data(message)}"


def _clip(text: str, limit: int = MAX_MESSAGE) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _where(f: Failure, workspace: str | None) -> tuple[str | None, int | None]:
    rel = workspace_relative(f.file, workspace)
    return rel, (f.line if rel and f.line and f.line > 0 else None)


def _snapshot_ref(f: Failure, session: Session) -> str | None:
    if f.snapshot is None:
        return None
    try:
        rel = os.path.relpath(f.snapshot, os.environ.get("GITHUB_WORKSPACE") or os.getcwd())
    except ValueError:
        return str(f.snapshot)
    return str(f.snapshot) if rel.startswith("..") else rel.replace(os.sep, "/")


def _message(lines: list[str]) -> str:
    return _clip(display("\n".join(lines)))


def _title(text: str) -> str:
    return display(text, one_line=True, limit=200)


def _file_prop(file: str | None) -> str | None:
    return display(file, one_line=True) if file else file


def annotation_for_test(f: Failure, session: Session, workspace: str | None = None) -> str:
    """The ``::error`` line for one failed test."""
    file, line = _where(f, workspace)
    phase = f" (in {f.when})" if f.when not in ("call", "") else ""
    lines = [f"{f.nodeid}{phase}: {f.summary}"]
    if f.fix_hints:
        lines.append(f"fix: {f.fix_hints[0]}")
    ref = _snapshot_ref(f, session)
    if ref:
        lines.append(f"faildiag snapshot: {ref}")
    title = f"faildiag: {short_title(f)}"
    return command("error", _message(lines), file=_file_prop(file), line=line, title=_title(title))


def annotation_for_group(g: CauseGroup, session: Session, workspace: str | None = None) -> str:
    """One ``::error`` line that stands for every test of a cause (used when there are more than 10)."""
    if g.count == 1:
        return annotation_for_test(g.head, session, workspace)
    file, line = _where(g.head, workspace)
    names = [f.nodeid for f in g.failures[:8]]
    more = f" (+{g.count - len(names)} more)" if g.count > len(names) else ""
    lines = [f"{g.count} tests: {g.head.cause_summary or g.head.summary}", "tests: " + ", ".join(names) + more]
    if g.head.fix_hints:
        lines.append(f"fix: {g.head.fix_hints[0]}")
    title = f"{g.count} tests: {g.title}"
    return command("error", _message(lines), file=_file_prop(file), line=line, title=_title(title))


def annotations(session: Session, workspace: str | None = None, budget: int = MAX_ANNOTATIONS) -> list[str]:
    """The error annotations, at most ``budget``: one per test when they fit, else one per cause (ranked),
    the last slot summarising the causes that did not fit."""
    groups = session.groups()
    ordered = [f for g in groups for f in g.failures]
    if len(ordered) <= budget:
        return [annotation_for_test(f, session, workspace) for f in ordered]
    if len(groups) <= budget:
        return [annotation_for_group(g, session, workspace) for g in groups]
    shown = [annotation_for_group(g, session, workspace) for g in groups[: budget - 1]]
    rest = groups[budget - 1 :]
    n_tests = sum(g.count for g in rest)
    lines = [f"{n_tests} more failed tests with {len(rest)} other causes (see the job summary):"]
    lines += [f"- {g.count} × {g.title}" for g in rest[:20]]
    shown.append(command("error", _message(lines), title=f"faildiag: {len(rest)} more causes, {n_tests} tests"))
    return shown


def _stop_token(text: str) -> str:
    while True:
        token = f"faildiag-{secrets.token_hex(16)}"
        if token not in text:
            return token


def echo_block(title: str, lines: list[str]) -> list[str]:
    """A collapsed log group whose content cannot run workflow commands (stop-commands wrapped) nor steer
    the log viewer (control characters shown, not obeyed)."""
    body = [display(x) for x in lines]
    flat = "\n".join(body)
    token = _stop_token(flat)
    out = [command("group", display(title, one_line=True)), f"::stop-commands::{token}"]
    for chunk in body:
        out.extend(chunk.split("\n"))
    out += [f"::{token}::", "::endgroup::"]
    return out


def _evidence_lines(f: Failure) -> list[str]:
    top = top_cause(f.report) or {}
    lines = [f"{f.nodeid}: {f.summary}"]
    for ev in (top.get("evidence") or [])[:MAX_ECHO_LINES]:
        if isinstance(ev, dict):
            loc = f"{ev.get('source')}:{ev.get('line')}" if ev.get("line") else str(ev.get("source"))
            lines.append(f"  {ev.get('kind', '?')} {loc}: {str(ev.get('excerpt', ''))[:500]}")
    for chk in (top.get("validation_checks") or [])[:6]:
        if isinstance(chk, dict):
            # "name -> status", not "name: status": "known-signature: skipped" reads as a secret assignment
            lines.append(f"  check {chk.get('name')} -> {chk.get('status')}: {str(chk.get('detail', ''))[:300]}")
    for h in f.fix_hints[:3]:
        lines.append(f"  fix: {h}")
    return lines


def _md_cell(text: object, limit: int = 300) -> str:
    """A Markdown table cell of text from the run: one line, every Markdown and HTML character escaped."""
    return md_text(text, limit=limit)


def _md_code_cell(text: object) -> str:
    """A path in a table cell, as a code span (nothing inside a code span is rendered)."""
    return md_code(text, table=True, limit=300)


def _run_url() -> str | None:
    server, repo, run_id = (os.environ.get(k) for k in ("GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_RUN_ID"))
    if server and repo and run_id:
        return f"{server}/{repo}/actions/runs/{run_id}"
    return None


def summary_markdown(session: Session, limit: int = SUMMARY_LIMIT, workspace: str | None = None) -> str:
    """The job summary: a table of causes, then a table of failed tests; trimmed to ``limit`` bytes."""
    groups = session.groups()
    n = len(session.failures)
    head = [
        f"## faildiag: {n} failed test{'s' if n != 1 else ''}, {len(groups)} cause{'s' if len(groups) != 1 else ''}",
        "",
    ]
    url = _run_url()
    out_ref = os.path.relpath(session.root, workspace or os.environ.get("GITHUB_WORKSPACE") or os.getcwd())
    where = f"Snapshots: {md_code(out_ref.replace(os.sep, '/') + '/')}"
    if url:
        where += f" (upload it as an artifact; [this run]({url}))"
    head += [where, ""]
    causes_head = [
        "| # | cause | tests | category | confidence | fix hints | snapshot |",
        "|---|---|---|---|---|---|---|",
    ]
    causes: list[str] = []
    for i, g in enumerate(groups, 1):
        hints = "<br>".join(_md_cell(h, 160) for h in g.head.fix_hints[:3]) or "-"
        snap = _snapshot_ref(g.head, session)
        causes.append(
            f"| {i} | {_md_cell(g.head.cause_summary or g.head.summary)} | {g.count} | {_md_cell(g.category)} "
            f"| {g.confidence:.0%} | {hints} | {_md_code_cell(snap) if snap else '-'} |"
        )
    tests_head = ["", "### Failed tests", "", "| test | cause # | where | summary |", "|---|---|---|---|"]
    tests: list[str] = []
    index = {g.key: i for i, g in enumerate(groups, 1)}
    for g in groups:
        for f in g.failures:
            file, line = _where(f, workspace)
            loc = _md_code_cell(f"{file}:{line}" if line else file) if file else "-"
            tests.append(f"| {_md_cell(f.nodeid, 200)} | {index[g.key]} | {loc} | {_md_cell(f.summary)} |")
    return _fit(head, [(causes_head, causes), (tests_head, tests)], limit)


def _fit(head: list[str], blocks: list[tuple[list[str], list[str]]], limit: int) -> str:
    """Keep whole rows while the text stays within ``limit`` bytes; say how many were left out."""

    def size(lines: list[str]) -> int:
        return sum(len(x.encode("utf-8")) + 1 for x in lines)

    note_room = 200
    out = list(head)
    used = size(out)
    dropped = 0
    for header, rows in blocks:
        if used + size(header) + note_room > limit:
            dropped += len(rows)
            continue
        out += header
        used += size(header)
        for row in rows:
            cost = len(row.encode("utf-8")) + 1
            if used + cost + note_room > limit:
                dropped += 1
                continue
            out.append(row)
            used += cost
    if dropped:
        out += ["", f"_{dropped} row(s) left out to stay within GitHub's step summary size limit._"]
    text = "\n".join(out) + "\n"
    if len(text.encode("utf-8")) > limit:  # a tiny limit: even the heading does not fit
        text = text.encode("utf-8")[: max(0, limit)].decode("utf-8", "ignore")
    return text


def append_summary(session: Session, path: str | os.PathLike[str], workspace: str | None = None) -> int:
    """Append the summary to ``path`` within what is left of the 1 MiB per-step budget. Returns bytes written."""
    p = Path(path)
    try:
        existing = p.stat().st_size
    except OSError:
        existing = 0
    room = SUMMARY_LIMIT - existing
    if room < 512:
        return 0
    text = summary_markdown(session, room, workspace)
    data = ("\n" if existing else "") + text
    if len(data.encode("utf-8")) > room:
        data = text
    with open(p, "a", encoding="utf-8") as f:
        f.write(data)
    return len(data.encode("utf-8"))


def render(session: Session, workspace: str | None = None) -> list[str]:
    """All lines ``emit`` prints: annotations first (they are what GitHub shows), then the echoed evidence."""
    lines = annotations(session, workspace)
    for f in [f for g in session.groups() for f in g.failures][:MAX_ECHO_FAILURES]:
        lines += echo_block(f"faildiag: {f.nodeid}", _evidence_lines(f))
    return lines


def emit(out_dir: Path, write: Callable[[str], None], *, workspace: str | None = None) -> int:
    """Print annotations for the failures under ``out_dir`` through ``write`` and append the job summary
    to ``$GITHUB_STEP_SUMMARY`` when it is set. Returns the number of annotations.

    ``write`` receives one line per call, without its newline (a terminal reporter's ``write_line``,
    ``print``). A folder without failures (a green session) emits nothing; the plugin guards the call
    and turns any other error into a warning."""
    try:
        session = load(out_dir)
    except ReportInputError:
        return 0  # a green session leaves no snapshot: nothing to annotate, nothing to warn about
    if not session.failures:
        return 0
    lines = render(session, workspace)
    for line in lines:
        write(line)
    summary_path = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary_path:
        try:
            append_summary(session, summary_path, workspace)
        except OSError as exc:
            write(command("warning", f"faildiag: could not write the job summary: {exc.strerror or exc}"))
    return sum(1 for x in lines if x.startswith("::error"))
