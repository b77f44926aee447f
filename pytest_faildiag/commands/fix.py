"""`faildiag fix SNAPSHOT_DIR [--format text|json] [--confirm FIX_ID] [--keep] [--yes] [--cwd DIR] [--command CMD]`.

Without a confirmation it only proposes (and on a terminal asks yes/no). ``--confirm FIX_ID`` applies
exactly the proposal with that id; ``--yes`` confirms environment and config changes but never a change
to source files. After applying, the original command is rerun to verify; the change is rolled back
unless verification passed or ``--keep`` was given. Exit: 0 proposal made / fix verified, 1 verification
failed, 2 bad usage.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("snapshot", metavar="SNAPSHOT_DIR", nargs="?", default="faildiag-out",
                   help="a snapshot folder (holds report.json; default ./faildiag-out); a pytest session folder "
                        "lists one proposal per failed test")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.add_argument("--confirm", default=None, metavar="FIX_ID", help="apply the proposal with this id and verify it")
    p.add_argument("--keep", action="store_true", help="keep the change even when verification failed")
    p.add_argument("--yes", action="store_true",
                   help="confirm an environment or config change without its id (never enough for source files)")
    p.add_argument("--cwd", default=None, help="the folder the run started in (default: the report's, else .)")
    p.add_argument("--command", default=None, help="the command to rerun (default: the report's)")
    p.add_argument("--timeout", type=float, default=900.0, help="seconds the verification rerun may take (900)")


def run(args: argparse.Namespace) -> int:
    from ..cli import UsageError
    from ..fix.context import SnapshotError, load_context
    from ..fix.propose import propose
    from ..redact import redact_obj, redact_text

    if not args.timeout > 0:
        raise UsageError("--timeout must be a positive number of seconds")
    folder = Path(args.snapshot)
    if (folder / "session.json").is_file() and not (folder / "report.json").exists():
        if args.confirm or args.yes:
            raise UsageError(f"{folder} is a pytest session folder: confirm a fix for one test's snapshot "
                             f"({folder}/<test-slug>)")
        if args.format == "json":
            results = propose_for_session(folder, write=lambda line: None, cwd=args.cwd)
            sys.stdout.write(json.dumps({"tests": results}, indent=2, ensure_ascii=False) + "\n")
        else:
            propose_for_session(folder, cwd=args.cwd)
        return 0
    try:
        ctx = load_context(folder, cwd=args.cwd, command=args.command)
    except SnapshotError as exc:
        raise UsageError(str(exc)) from None
    proposal = propose(ctx)
    if args.confirm is None and not args.yes:
        if args.format == "json":
            out = redact_obj(proposal.to_dict())
            sys.stdout.write(json.dumps(out, indent=2, ensure_ascii=False) + "\n")
            return 0
        sys.stdout.write(redact_text(render_proposal(proposal, args.snapshot)) + "\n")
        if not (proposal.automatic and _interactive()):
            return 0
        if not _ask(f"apply fix {proposal.id}? [y/N] "):
            sys.stdout.write("nothing changed\n")
            return 0
    elif args.confirm is not None and args.confirm != proposal.id:
        raise UsageError(f"no proposal {args.confirm} for this snapshot (the current one is {proposal.id}; "
                         "the files may have changed since it was shown)")
    elif args.confirm is None and proposal.touches_source:
        raise UsageError(f"--yes alone is not enough for a change to source files: pass --confirm {proposal.id}")
    if not proposal.automatic:
        raise UsageError(f"fix {proposal.id} has no automatic change: follow its manual steps")
    if not ctx.command:
        raise UsageError("the snapshot records no command to rerun for verification: pass --command")
    return _apply_and_verify(ctx, proposal, args)


def _interactive() -> bool:
    try:
        return sys.stdin.isatty() and sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


def _ask(prompt: str) -> bool:
    try:
        answer = input(prompt)
    except EOFError:
        return False
    return answer.strip().lower() in {"y", "yes"}


def _apply_and_verify(ctx: Any, proposal: Any, args: argparse.Namespace) -> int:
    """Apply, verify, roll back unless verified (or --keep), record. One fix at a time per snapshot; an
    interrupted verification (Ctrl-C) rolls back before it exits."""
    from filelock import FileLock, Timeout

    from ..cli import UsageError

    (ctx.snapshot / "fix").mkdir(parents=True, exist_ok=True)
    try:
        with FileLock(str(ctx.snapshot / "fix" / ".fix.lock"), timeout=0):
            return _apply_locked(ctx, proposal, args)
    except Timeout:
        raise UsageError(f"another `faildiag fix` is applying a fix to {ctx.snapshot}") from None


def _apply_locked(ctx: Any, proposal: Any, args: argparse.Namespace) -> int:
    from ..cli import UsageError
    from ..fix.apply import FixError, apply_proposal, env_overrides, rollback
    from ..fix.verify import Verification, before_evidence, record_fix, rerun_and_compare
    from ..redact import redact_obj, redact_text

    try:
        applied = apply_proposal(proposal, ctx)
    except FixError as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        raise UsageError(f"cannot apply the fix: {exc.strerror or exc}") from None
    interrupted: BaseException | None = None
    try:
        verification = rerun_and_compare(ctx, env_overrides(proposal), timeout=args.timeout)
    except BaseException as exc:  # Ctrl-C or an unexpected error: never leave an unverified change behind
        interrupted = exc
        verification = Verification("not_run", "not_run", None, 0.0, {"reason": f"interrupted: {type(exc).__name__}"})
    rolled_back = False
    problems: list[str] = []
    if verification.status != "passed" and (not args.keep or interrupted is not None):
        problems = rollback(applied)
        rolled_back = True
    record = {
        "id": proposal.id, "summary": proposal.summary, "applied": True, "verification": verification.status,
        "rolled_back": rolled_back, "outcome": verification.message, "cause": proposal.cause,
        "impact": proposal.impact, "changes": [c.to_dict() for c in proposal.changes],
        "applied_changes": [a.to_dict(ctx) for a in applied], "kept": bool(args.keep and not rolled_back),
        "cwd": str(ctx.cwd), "command": ctx.command,
        "before": before_evidence(ctx), "after": verification.after,
    }
    if problems:
        record["rollback_problems"] = problems
    record_fix(ctx, record)
    if interrupted is not None:
        raise interrupted
    if args.format == "json":
        sys.stdout.write(json.dumps(redact_obj(record), indent=2, ensure_ascii=False, default=str) + "\n")
    else:
        sys.stdout.write(redact_text(render_result(record)) + "\n")
    return 0 if verification.status == "passed" else 1


def render_proposal(proposal: Any, snapshot: str) -> str:
    """The proposal for a person: id, summary, impact, the exact change (diffs) or the manual steps."""
    lines = [f"faildiag fix: {proposal.id}", f"  summary: {proposal.summary}", f"  impact:  {proposal.impact}"]
    for c in proposal.changes:
        lines.append(f"  change ({c.kind}): {c.description}")
        if c.diff:
            lines += ["    " + d for d in c.diff.rstrip("\n").splitlines()]
    if proposal.manual_steps:
        lines.append("  no automatic change; manual steps:" if not proposal.automatic else "  also:")
        lines += [f"    - {s}" for s in proposal.manual_steps]
    lines += [f"  note: {n}" for n in proposal.notes]
    if proposal.automatic:
        lines.append(f"  to apply and verify: faildiag fix {snapshot} --confirm {proposal.id}")
    return "\n".join(lines)


def render_result(record: dict[str, Any]) -> str:
    verdict = {"passed": "verified", "failed": "NOT verified", "not_run": "not verified"}.get(record["verification"], "")
    lines = [f"faildiag fix: {record['id']} applied, {verdict}: {record['outcome']}"]
    after = record.get("after") or {}
    if after.get("first_failure"):
        lines.append(f"  now fails at: {after['first_failure'].get('excerpt', '')}")
    if record["rolled_back"]:
        lines.append("  rolled back: every touched file is restored (use --keep to keep a fix that did not verify)")
    elif record["verification"] != "passed":
        lines.append("  kept (--keep): the change stays although it did not verify")
    for p in record.get("rollback_problems") or []:
        lines.append(f"  rollback problem: {p}")
    if after.get("log"):
        lines.append(f"  rerun output: {after['log']} in the snapshot")
    return "\n".join(lines)


def propose_for_session(out_dir: Path, *, write: Any = None, cwd: str | None = None) -> list[dict[str, Any]]:
    """Propose one fix per failed test of a pytest session folder (``<out>/session.json``), printing each
    proposal line by line through ``write`` (default: stdout); never applies anything. Unreadable entries are skipped; returns
    ``[{"nodeid", "snapshot", "proposal"}]``."""
    from ..fix.context import SnapshotError, load_context
    from ..fix.propose import propose
    from ..redact import redact_obj, redact_text

    emit = write or (lambda line: sys.stdout.write(line + "\n"))
    root = Path(out_dir)
    try:
        session = json.loads((root / "session.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        session = {}
    tests = session.get("tests") if isinstance(session, dict) else None
    entries: list[tuple[str, Path]] = []
    if isinstance(tests, list):
        for t in tests:
            if not isinstance(t, dict):
                continue
            name = t.get("snapshot") or t.get("slug")
            if isinstance(name, str) and name and ".." not in Path(name).parts and not Path(name).is_absolute():
                entries.append((str(t.get("nodeid") or name), root / name))
    else:
        entries = [(p.name, p) for p in sorted(root.iterdir()) if (p / "report.json").is_file()] if root.is_dir() else []
    cwd = cwd or (session.get("cwd") if isinstance(session, dict) else None)
    out: list[dict[str, Any]] = []
    for nodeid, snap in entries:
        try:
            ctx = load_context(snap, cwd=cwd if cwd and Path(str(cwd)).is_dir() else None)
        except SnapshotError:
            continue
        proposal = propose(ctx)
        for line in redact_text(f"{nodeid}:\n" + render_proposal(proposal, str(snap))).splitlines():
            emit(line)
        out.append({"nodeid": nodeid, "snapshot": str(snap), "proposal": redact_obj(proposal.to_dict())})
    return out
