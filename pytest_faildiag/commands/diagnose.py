"""`faildiag diagnose [PATH ...] [--exit-code N] [--command CMD] [--out DIR] [--format text|json|md]`."""

from __future__ import annotations

import argparse
import json
import os
import sys


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="*", metavar="PATH", help="log files or folders; '-' reads stdin")
    p.add_argument("--exit-code", type=int, default=None, help="the run's exit status (137 = SIGKILL, -11 = SIGSEGV)")
    p.add_argument("--command", default=None, help="the command that failed")
    p.add_argument("--out", default="faildiag-out", help="snapshot folder (default ./faildiag-out)")
    p.add_argument("--format", choices=("text", "json", "md"), default="text")
    p.add_argument("--rules", action="append", default=[], metavar="TOML", help="an extra rule pack")
    p.add_argument("--lock", default=None, help="an env.lock.json to use as evidence")
    p.add_argument("--cwd", default=None, help="the folder the command ran in (recorded for `faildiag fix`)")
    p.add_argument("--factory-root", default=None, metavar="DIR", help="the team's known-issue cards (docs/factory.md)")
    p.add_argument(
        "--max-chars",
        type=_positive,
        default=None,
        metavar="N",
        help="print at most N characters: the first failure, the ranked causes and their direct "
        "evidence are kept, the rest is dropped first (the snapshot stays whole)",
    )


def run(args: argparse.Namespace) -> int:
    from ..cli import UsageError
    from ..engine import diagnose, render_markdown, render_text, report_dict, write_snapshot
    from ..parse.logread import InputError
    from ..rules import load_ruleset, read_pack_file

    paths = [p for p in args.paths if p != "-"]
    use_stdin = "-" in args.paths
    if not args.paths:
        if sys.stdin is None or sys.stdin.isatty():
            raise UsageError("give log files or folders, or '-' to read stdin")
        use_stdin = True
    job = _merge_job(paths[0]) if len(paths) == 1 and not use_stdin and _is_job_dir(paths[0]) else None
    try:
        packs = [read_pack_file(r) for r in args.rules]
        ruleset = load_ruleset(packs) if packs else None
        lock = _read_lock(args.lock) if args.lock else None
        diag = job or diagnose(
            paths,
            exit_code=args.exit_code,
            command=args.command,
            ruleset=ruleset,
            lock=lock,
            stream=sys.stdin.buffer if use_stdin else None,
            cwd=args.cwd,
            factory_root=_factory_root(args.factory_root),
            out_dir=args.out,
        )
    except InputError as exc:
        raise UsageError(str(exc)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read input: {exc}") from None
    written = True
    try:
        write_snapshot(diag, args.out)
    except OSError as exc:
        written = False
        print(f"faildiag: warning: snapshot not written to {args.out}: {exc.strerror or exc}", file=sys.stderr)
    if args.format == "json":
        from ..sanitize import json_safe

        text = json_safe(json.dumps(report_dict(diag), indent=2, ensure_ascii=False, default=str)) + "\n"
    elif args.format == "md":
        text = render_markdown(diag)
    else:  # where the snapshot went: the next steps hand it to `faildiag fix <snapshot>`
        text = render_text(diag) + (f"\n  snapshot: {args.out}" if written else "") + "\n"
    if args.max_chars is not None and len(text) > args.max_chars:  # the rest goes first: agents/budget.py
        from ..agents.budget import render_report

        text = render_report(report_dict(diag), args.format, args.max_chars)
    sys.stdout.write(text)
    return 0


def _positive(value: str) -> int:
    from ..cli import UsageError

    try:
        n = int(value)
    except ValueError:
        n = 0
    if n < 1:
        raise UsageError(f"--max-chars {value}: give a positive number of characters")
    return n


def _factory_root(value: str | None) -> str | None:
    from ..cli import UsageError

    if value is not None and not os.path.isdir(value):
        raise UsageError(f"--factory-root {value}: not a folder")
    return value


def _is_job_dir(path: str) -> bool:
    """A multi-node job folder (``DIR/nodes/<NAME>/``, written by ``faildiag run --job-dir``): merged, not searched.

    A log file is never one: it is answered without importing the job merger (and its imports)."""
    if not os.path.isdir(path):
        return False
    from ..job.merge import is_job_dir

    return is_job_dir(path)


def _merge_job(path: str):
    from ..cli import UsageError
    from ..job.merge import merge

    try:
        return merge(path)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _read_lock(path: str) -> dict:
    """``--lock FILE`` within fsio's bounds (a regular file, size, value count, depth): one line otherwise."""
    from ..cli import UsageError
    from ..fsio import ReadRefused, load_json

    try:
        data = load_json(path)
    except ReadRefused as exc:
        raise UsageError(f"not a readable environment lock: {exc}") from None
    except (OSError, ValueError) as exc:
        raise UsageError(
            f"{path}: not a readable environment lock ({exc.strerror if isinstance(exc, OSError) else exc})"
        ) from None
    if not isinstance(data, dict):
        raise UsageError(f"{path}: not an environment lock")
    return data
