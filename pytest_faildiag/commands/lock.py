"""``faildiag lock``: write the environment lock, or say what changed between two.

    faildiag lock [--out FILE|-] [--include torch,...] [--timeout S]
    faildiag lock --diff OLD NEW [--format text|json]

Exit status: 0 on success (a diff with changes is still a success), 2 on bad usage or an unreadable lock,
with one line on stderr.
"""

from __future__ import annotations

import argparse
import json
import sys


def configure(parser: argparse.ArgumentParser) -> None:
    """Options only: nothing is imported here so ``faildiag --help`` stays fast."""
    parser.add_argument(
        "--out",
        default="env.lock.json",
        metavar="FILE",
        help="where to write the lock (default: env.lock.json; '-' prints it)",
    )
    parser.add_argument("--diff", nargs=2, metavar=("OLD", "NEW"), help="compare two lock files")
    parser.add_argument("--format", choices=("text", "json"), default="text", help="output format of --diff")
    parser.add_argument(
        "--include",
        default="",
        metavar="PKGS",
        help="comma-separated ML packages to import for build facts (e.g. torch; '*' = all)",
    )
    parser.add_argument("--timeout", type=float, default=2.0, metavar="S", help="bound of each probe (seconds)")
    parser.add_argument("--cwd", default=None, help="working tree to describe (default: current directory)")


def run(args: argparse.Namespace) -> int:
    from ..capture import envlock

    if args.diff:
        try:
            old, new = (envlock.load_lock(p) for p in args.diff)
        except envlock.LockError as exc:
            print(f"faildiag lock: {exc}", file=sys.stderr)
            return 2
        changes = envlock.diff_locks(old, new)
        if args.format == "json":
            print(json.dumps({"changes": changes}, indent=2, default=str))
        elif changes:
            print("\n".join(envlock.format_diff(changes)))
        else:
            print("no changes")
        return 0
    include = [x.strip() for x in args.include.split(",") if x.strip()] or None
    lock = envlock.build_lock(cwd=args.cwd, timeout=max(0.1, args.timeout), include=include)
    if args.out == "-":
        print(json.dumps(envlock.redact_lock(lock), indent=2, default=str))
        return 0
    try:
        path = envlock.save_lock(lock, args.out)
    except OSError as exc:
        print(f"faildiag lock: cannot write {args.out}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    print(f"wrote {path} ({len(lock.get('packages', {}))} packages, {lock.get('duration_s')} s)", file=sys.stderr)
    return 0
