"""`faildiag fix SNAPSHOT_DIR [--format text|json] [--confirm FIX_ID] [--confirm-command CMD_ID] [--keep] [--yes]
[--cwd DIR] [--command CMD]`.

Without a confirmation it only proposes (and on a terminal asks yes/no). The proposal shows everything
the fix will do: each file (resolved path, sha256 before and after, the diff) and the verification
rerun's exact command and folder; its id covers all of it. ``--confirm FIX_ID`` applies exactly the
proposal with that id; ``--yes`` confirms environment and config changes but never a change to source
files. After applying, the original command is rerun to verify; the change is rolled back unless
verification passed or ``--keep`` was given.

A rerun command that faildiag on this machine did not record for this snapshot (see
``pytest_faildiag.seal``) is run only with its own confirmation: ``--confirm-command CMD_ID`` or a second
yes on a terminal; never by ``--yes`` or the fix id alone. Without it the fix is applied only with
``--keep`` (verification "not_run"). Everything printed goes through ``sanitize.visible``.
Exit: 0 proposal made / fix verified, 1 verification failed or not run, 2 bad usage.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "snapshot",
        metavar="SNAPSHOT_DIR",
        nargs="?",
        default="faildiag-out",
        help="a snapshot folder (holds report.json; default ./faildiag-out); a pytest session folder "
        "lists one proposal per failed test",
    )
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.add_argument("--confirm", default=None, metavar="FIX_ID", help="apply the proposal with this id and verify it")
    p.add_argument(
        "--confirm-command",
        default=None,
        metavar="CMD_ID",
        help="allow the verification rerun of a command faildiag on this machine did not record "
        "(the id the proposal shows next to it)",
    )
    p.add_argument("--keep", action="store_true", help="keep the change even when verification failed")
    p.add_argument(
        "--yes",
        action="store_true",
        help="confirm an environment or config change without its id (never enough for source files)",
    )
    p.add_argument("--cwd", default=None, help="the folder the run started in (default: the report's, else .)")
    p.add_argument("--command", default=None, help="the command to rerun (default: the report's)")
    p.add_argument("--timeout", type=float, default=900.0, help="seconds the verification rerun may take (900)")


def run(args: argparse.Namespace) -> int:
    from ..cli import UsageError
    from ..fix.context import SnapshotError, load_context
    from ..fix.propose import propose
    from ..redact import redact_obj, redact_text
    from ..sanitize import json_safe, visible

    if not args.timeout > 0:
        raise UsageError("--timeout must be a positive number of seconds")
    folder = Path(args.snapshot)
    if (folder / "session.json").is_file() and not (folder / "report.json").exists():
        if args.confirm or args.yes or args.confirm_command:
            raise UsageError(
                f"{visible(folder, one_line=True)} is a pytest session folder: confirm a fix for one test's snapshot "
                f"({visible(folder, one_line=True)}/<test-slug>)"
            )
        if args.format == "json":
            results = propose_for_session(folder, write=lambda line: None, cwd=args.cwd)
            sys.stdout.write(json_safe(json.dumps({"tests": results}, indent=2, ensure_ascii=False)) + "\n")
        else:
            propose_for_session(folder, cwd=args.cwd)
        return 0
    try:
        ctx = load_context(folder, cwd=args.cwd, command=args.command)
    except SnapshotError as exc:
        raise UsageError(visible(str(exc), one_line=True)) from None
    proposal = propose(ctx)
    run_ok = not proposal.needs_command_confirmation
    if args.confirm is None and not args.yes:
        if args.format == "json":
            out = redact_obj(proposal.to_dict())
            sys.stdout.write(json_safe(json.dumps(out, indent=2, ensure_ascii=False)) + "\n")
            return 0
        sys.stdout.write(redact_text(render_proposal(proposal, args.snapshot)) + "\n")
        if not (proposal.automatic and _interactive()):
            return 0
        if not _ask(f"apply fix {proposal.id}? [y/N] "):
            sys.stdout.write("nothing changed\n")
            return 0
        if not run_ok and proposal.rerun is not None and args.confirm_command != proposal.rerun.id:
            run_ok = _ask(
                redact_text(
                    f"the verification reruns `{visible(proposal.rerun.command, one_line=True)}` in "
                    f"{visible(proposal.rerun.cwd, one_line=True)}, a command faildiag on this machine did not "
                    "record: run it? [y/N] "
                )
            )
    elif args.confirm is not None and args.confirm != proposal.id:
        raise UsageError(
            f"no proposal {visible(args.confirm, one_line=True)} for this snapshot (the current one is {proposal.id}; "
            "the files, the command or its folder may have changed since it was shown)"
        )
    elif args.confirm is None and proposal.touches_source:
        raise UsageError(f"--yes alone is not enough for a change to source files: pass --confirm {proposal.id}")
    if not proposal.automatic:
        raise UsageError(f"fix {proposal.id} has no automatic change: follow its manual steps")
    if not ctx.command:
        raise UsageError("the snapshot records no command to rerun for verification: pass --command")
    run_ok = run_ok or _command_confirmed(proposal, args.confirm_command)
    if not run_ok and not args.keep:
        raise UsageError(
            redact_text(
                f"the verification command `{visible(ctx.command, one_line=True)}` (in {visible(proposal.rerun.cwd, one_line=True)}) was not "
                f"recorded by faildiag on this machine: read it, then confirm it with --confirm-command "
                f"{proposal.rerun.id}, or pass --keep to apply fix {proposal.id} without running it"
            )
        )
    return _apply_and_verify(ctx, proposal, args, run_ok)


def _command_confirmed(proposal: Any, given: str | None) -> bool:
    """``--confirm-command`` names exactly the rerun the proposal shows (else: bad usage, nothing done)."""
    from ..cli import UsageError
    from ..sanitize import visible

    if given is None or proposal.rerun is None:
        return False
    if given != proposal.rerun.id:
        raise UsageError(
            f"no command {visible(given, one_line=True)} for this snapshot (the verification command's id is "
            f"{proposal.rerun.id}; the command or its folder may have changed since it was shown)"
        )
    return True


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


def _apply_and_verify(ctx: Any, proposal: Any, args: argparse.Namespace, run_ok: bool = True) -> int:
    """Apply, verify (when the command may run), roll back unless verified (or --keep), record. One fix at
    a time per snapshot; an interrupted verification (Ctrl-C) rolls back before it exits."""
    from filelock import FileLock, Timeout

    from ..cli import UsageError
    from ..fix.paths import PathRefused, not_a_link, private_dir
    from ..sanitize import visible

    try:
        lock = not_a_link(private_dir(ctx.snapshot / "fix") / ".fix.lock")
    except PathRefused as exc:
        raise UsageError(visible(str(exc), one_line=True)) from None
    try:
        with FileLock(str(lock), timeout=0):
            return _apply_locked(ctx, proposal, args, run_ok)
    except Timeout:
        raise UsageError(
            f"another `faildiag fix` is applying a fix to {visible(ctx.snapshot, one_line=True)}"
        ) from None


def _apply_locked(ctx: Any, proposal: Any, args: argparse.Namespace, run_ok: bool) -> int:
    from ..cli import UsageError
    from ..fix.apply import FixError, apply_proposal, env_overrides, rollback
    from ..fix.verify import OUTCOME_TEXT, Verification, before_evidence, record_fix, rerun_and_compare
    from ..redact import redact_obj, redact_text
    from ..sanitize import json_safe, visible

    try:
        applied = apply_proposal(proposal, ctx)
    except FixError as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        raise UsageError(f"cannot apply the fix: {visible(exc.strerror or exc, one_line=True)}") from None
    interrupted: BaseException | None = None
    try:
        if run_ok:
            verification = rerun_and_compare(ctx, env_overrides(proposal), timeout=args.timeout)
        else:
            verification = Verification(
                "not_run", "not_confirmed", None, 0.0, {"reason": OUTCOME_TEXT["not_confirmed"]}
            )
    except BaseException as exc:  # Ctrl-C or an unexpected error: never leave an unverified change behind
        interrupted = exc
        verification = Verification("not_run", "not_run", None, 0.0, {"reason": f"interrupted: {type(exc).__name__}"})
    rolled_back = False
    problems: list[str] = []
    if verification.status != "passed" and (not args.keep or interrupted is not None):
        problems = rollback(applied)
        rolled_back = True
    record = {
        "id": proposal.id,
        "summary": proposal.summary,
        "applied": True,
        "verification": verification.status,
        "rolled_back": rolled_back,
        "outcome": verification.message,
        "cause": proposal.cause,
        "impact": proposal.impact,
        "changes": [c.to_dict() for c in proposal.changes],
        "applied_changes": [a.to_dict(ctx) for a in applied],
        "kept": bool(args.keep and not rolled_back),
        "cwd": str(ctx.cwd),
        "command": ctx.command,
        "rerun": proposal.rerun.to_dict() if proposal.rerun else None,
        "before": before_evidence(ctx),
        "after": verification.after,
    }
    if problems:
        record["rollback_problems"] = problems
    record_fix(ctx, record)
    if interrupted is not None:
        raise interrupted
    if args.format == "json":
        sys.stdout.write(json_safe(json.dumps(redact_obj(record), indent=2, ensure_ascii=False, default=str)) + "\n")
    else:
        sys.stdout.write(redact_text(render_result(record)) + "\n")
    return 0 if verification.status == "passed" else 1


def render_proposal(proposal: Any, snapshot: str) -> str:
    """The proposal for a person: id, summary, impact, every file (resolved path, sha256 before -> after)
    with its diff, the verification rerun's command and folder, or the manual steps. Every value goes
    through ``visible``: what is on the screen is what will be written and run."""
    from ..sanitize import visible

    lines = [
        f"faildiag fix: {proposal.id}",
        f"  summary: {visible(proposal.summary, one_line=True)}",
        f"  impact:  {visible(proposal.impact, one_line=True)}",
    ]
    for c in proposal.changes:
        lines.append(f"  change ({c.kind}): {visible(c.description, one_line=True)}")
        if c.resolved_path:
            lines.append(f"    file:   {visible(c.resolved_path, one_line=True)}")
            lines.append(f"    sha256: {c.before_sha256 or '(new file)'} -> {c.after_sha256}")
        if c.diff:
            lines += ["    " + visible(d.removesuffix("\r")) for d in c.diff.rstrip("\n").split("\n")]
    if proposal.manual_steps:
        lines.append("  no automatic change; manual steps:" if not proposal.automatic else "  also:")
        lines += [f"    - {visible(s, one_line=True)}" for s in proposal.manual_steps]
    rerun = proposal.rerun
    if proposal.automatic and rerun is not None and rerun.command:
        lines.append(f"  verification rerun: {visible(rerun.command, one_line=True)}")
        lines.append(f"    in:   {visible(rerun.cwd, one_line=True)}")
        lines.append(
            f"    command {rerun.trust}" + (f" (id {rerun.id})" if proposal.needs_command_confirmation else "")
        )
    lines += [f"  note: {visible(n, one_line=True)}" for n in proposal.notes]
    if proposal.automatic:
        extra = f" --confirm-command {rerun.id}" if proposal.needs_command_confirmation and rerun else ""
        lines.append(
            f"  to apply and verify: faildiag fix {visible(snapshot, one_line=True)} --confirm {proposal.id}{extra}"
        )
    return "\n".join(lines)


def render_result(record: dict[str, Any]) -> str:
    from ..sanitize import visible

    verdict = {"passed": "verified", "failed": "NOT verified", "not_run": "not verified"}.get(
        record["verification"], ""
    )
    lines = [f"faildiag fix: {record['id']} applied, {verdict}: {visible(record['outcome'], one_line=True)}"]
    after = record.get("after") or {}
    if after.get("reason"):
        lines.append(f"  why: {visible(after['reason'], one_line=True)}")
    if after.get("first_failure"):
        lines.append(f"  now fails at: {visible(after['first_failure'].get('excerpt', ''), one_line=True)}")
    if record["rolled_back"]:
        lines.append("  rolled back: every touched file is restored (use --keep to keep a fix that did not verify)")
    elif record["verification"] != "passed":
        lines.append("  kept (--keep): the change stays although it did not verify")
    for p in record.get("rollback_problems") or []:
        lines.append(f"  rollback problem: {visible(p, one_line=True)}")
    if after.get("log"):
        lines.append(f"  rerun output: {after['log']} in the snapshot")
    return "\n".join(lines)


def propose_for_session(out_dir: Path, *, write: Any = None, cwd: str | None = None) -> list[dict[str, Any]]:
    """Propose one fix per failed test of a pytest session folder (``<out>/session.json``), printing each
    proposal line by line through ``write`` (default: stdout); never applies anything. Tests come in the
    order of their causes (``store.group_by_cause``, the grouping the terminal and the reporters show), each
    cause announced once. Unreadable entries are skipped; returns ``[{"nodeid", "snapshot", "cause",
    "proposal"}]``."""
    from ..fix.context import SnapshotError, load_context
    from ..fix.propose import propose
    from ..redact import redact_obj, redact_text
    from ..sanitize import visible
    from ..store import REPORT, entry_key, entry_snapshot, group_entries, read_session, session_entries

    emit = write or (lambda line: sys.stdout.write(line + "\n"))
    root = Path(out_dir)
    session = read_session(root)
    if session is not None and isinstance(session.get("tests"), list):
        listed = session_entries(session)
    else:  # no index (a killed session): every snapshot folder, each its own entry
        folders = sorted(p for p in root.iterdir() if (p / REPORT).is_file()) if root.is_dir() else []
        listed = [{"nodeid": p.name, "snapshot": p.name} for p in folders]
    cwd = cwd or (session.get("cwd") if session is not None and isinstance(session.get("cwd"), str) else None)
    groups = group_entries(listed)
    out: list[dict[str, Any]] = []
    for i, group in enumerate(groups, 1):
        members = [e for e in listed if entry_key(e) == group["key"]]
        if len(groups) > 1:
            emit(
                redact_text(
                    f"cause {i} of {len(groups)} ({group['count']} test(s)): "
                    f"{visible(group['summary'] or group['cause_id'] or 'unknown', one_line=True)}"
                )
            )
        for entry in members:
            snap = entry_snapshot(root, entry)
            if snap is None:
                continue
            nodeid = str(entry.get("nodeid") or snap.name)
            try:
                ctx = load_context(snap, cwd=cwd if cwd and Path(cwd).is_dir() else None)
            except SnapshotError:
                continue
            proposal = propose(ctx)
            for line in redact_text(
                f"{visible(nodeid, one_line=True)}:\n" + render_proposal(proposal, str(snap))
            ).split("\n"):
                emit(line)
            out.append(
                {
                    "nodeid": nodeid,
                    "snapshot": str(snap),
                    "cause": group["key"],
                    "proposal": redact_obj(proposal.to_dict()),
                }
            )
    return out
