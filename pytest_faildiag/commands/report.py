"""`faildiag report SNAPSHOT_OR_OUT_DIR [--format text|md|html|github|gitlab|json] [--output FILE]`.

Re-renders what is on disk: one snapshot folder (``report.json`` at its top) or a session output folder
(``session.json`` plus one snapshot per failed test). Nothing is re-diagnosed, so the output matches what
the run saw. Bad input is one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

FORMATS = ("text", "md", "html", "github", "gitlab", "json")


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("path", metavar="SNAPSHOT_OR_OUT_DIR", help="a snapshot folder or a session output folder")
    p.add_argument(
        "--format",
        choices=FORMATS,
        default="text",
        help="text, md, html (one self-contained file), github (workflow commands), gitlab (Code Quality JSON), json",
    )
    p.add_argument("--html", dest="format", action="store_const", const="html", help="same as --format html")
    p.add_argument("--output", "-o", default=None, metavar="FILE", help="write to FILE instead of stdout")


def _demote(md: str) -> str:
    """Every Markdown heading one level down, leaving fenced code (``#0 all_reduce from …``) alone. A fence
    closes only on a backtick-only line at least as long as it opened with (CommonMark), so a shorter one
    quoted inside (``md_fence`` outgrows them) does not end it."""
    out, fence = [], ""
    for ln in md.split("\n"):
        run = len(ln) - len(ln.lstrip("`"))
        if not fence and run >= 3:
            fence = "`" * run
        elif fence and run >= len(fence) and not ln.strip("`").strip():
            fence = ""
        out.append("#" + ln if ln.startswith("#") and not fence else ln)
    return "\n".join(out)


def _text(session, markdown: bool) -> str:
    from ..engine.report import render_markdown, render_text
    from ..model import Diagnosis
    from ..sanitize import display, md_text

    lone = len(session.failures) == 1 and session.failures[0].snapshot == session.root
    out: list[str] = []
    if not lone:
        groups = session.groups()
        if markdown:
            from ..ci.github import summary_markdown

            out.append(summary_markdown(session))
        else:
            out.append(f"faildiag: {len(session.failures)} failed test(s), {len(groups)} cause(s)")
            for i, g in enumerate(groups, 1):
                out.append(f"  {i}. {g.count} × {g.title} [{g.category}, {g.confidence:.0%}]")
                for f in g.failures[:10]:
                    loc = f" ({f.file}:{f.line})" if f.file and f.line else ""
                    out.append(f"       {f.nodeid}{loc}")
                if g.count > 10:
                    out.append(f"       … {g.count - 10} more")
            out.append("")
    for f in [f for g in session.groups() for f in g.failures]:
        if f.report is None:
            if not lone:
                out.append(
                    f"## {md_text(f.nodeid)}: {md_text(f.summary)}\n" if markdown else f"{f.nodeid}: {f.summary}\n"
                )
            continue
        diag = Diagnosis.from_dict(f.report)
        if markdown:
            md = render_markdown(diag)
            if not lone:  # one level down under the session's heading, titled by the test
                md = md.replace("# faildiag report", f"# {md_text(f.nodeid)}", 1)
                md = _demote(md)
            out.append(md)
        else:
            out.append((f"{f.nodeid}\n" if not lone else "") + render_text(diag) + "\n")
    out += [f"note: {md_text(n) if markdown else n}" for n in session.notes]
    return display("\n".join(out).rstrip("\n") + "\n")  # redacted; control characters shown, not obeyed


def _json(session) -> str:
    from ..redact import redact_obj
    from ..sanitize import json_safe
    from ..store import SESSION_SCHEMA, read_report

    lone = len(session.failures) == 1 and session.failures[0].snapshot == session.root
    raw = read_report(session.root) if lone else None  # the file as written, within store's bounds
    if isinstance(raw, dict):
        data: Any = raw  # the file as written, not the normalised copy the renderers use
    else:
        tests = [
            {
                "nodeid": f.nodeid,
                "when": f.when,
                "outcome": f.outcome,
                "category": f.category,
                "type": f.type,
                "summary": f.summary,
                "confidence": f.confidence,
                "cause_id": f.cause_id,
                "file": f.file,
                "line": f.line,
                "fix_hints": f.fix_hints,
                "snapshot": f.snapshot.name if f.snapshot is not None else None,
            }
            for f in session.failures
        ]
        groups = [
            {
                "cause": g.key,
                "title": g.title,
                "category": g.category,
                "confidence": g.confidence,
                "tests": [f.nodeid for f in g.failures],
            }
            for g in session.groups()
        ]
        data = {"schema": SESSION_SCHEMA, "tests": tests, "groups": groups}
    return json_safe(json.dumps(redact_obj(data), indent=2, ensure_ascii=False, default=str)) + "\n"


def run(args: argparse.Namespace) -> int:
    from ..ci._load import ReportInputError, load
    from ..cli import UsageError

    try:
        session = load(args.path)
    except ReportInputError as exc:
        raise UsageError(str(exc)) from None
    if args.format == "html":
        from ..ci.html import render_session

        text = render_session(session)
    elif args.format == "github":
        from ..ci.github import append_summary, render

        text = "\n".join(render(session)) + "\n"
        if os.environ.get("GITHUB_STEP_SUMMARY") and not args.output:
            try:
                append_summary(session, os.environ["GITHUB_STEP_SUMMARY"])
            except OSError as exc:
                print(f"faildiag report: warning: job summary not written: {exc.strerror or exc}", file=sys.stderr)
    elif args.format == "gitlab":
        from ..ci.gitlab import codequality

        text = json.dumps(codequality(session), indent=2, ensure_ascii=False) + "\n"
    elif args.format == "json":
        text = _json(session)
    else:
        text = _text(session, markdown=args.format == "md")
    if args.output:
        from pathlib import Path

        from ..engine.snapshot import atomic_write

        try:
            atomic_write(Path(args.output), text)
        except OSError as exc:
            raise UsageError(f"cannot write {args.output}: {exc.strerror or exc}") from None
        print(f"wrote {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0
