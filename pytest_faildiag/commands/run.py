"""`faildiag run [--out DIR] [--hang-timeout S] [--watch DIR] [--nccl-debug] [--collect DIR] [--no-diagnose]
[--quiet] -- CMD ...`: run a command, pass its output through, diagnose it when it fails or hangs.

Exits with the command's own status (128+N when a signal ended it, as a shell reports it; 124 when
`--hang-timeout` stopped it; 127/126 when it could not start).
"""

from __future__ import annotations

import argparse
import sys


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--out", default="faildiag-out", help="folder for logs, timeline and the snapshot (default ./faildiag-out)"
    )
    p.add_argument(
        "--hang-timeout",
        type=float,
        default=None,
        metavar="S",
        help="no output, CPU or watched-file progress for S seconds = a hang: dump stacks, stop, diagnose",
    )
    p.add_argument("--watch", action="append", default=[], metavar="DIR", help="a growing file here counts as progress")
    p.add_argument(
        "--nccl-debug",
        action="store_true",
        help="set TORCH_NCCL_DUMP_ON_TIMEOUT/TRACE_BUFFER_SIZE so a timeout leaves a flight-recorder dump",
    )
    p.add_argument(
        "--collect",
        action="append",
        default=[],
        metavar="DIR",
        help="a folder of per-rank logs or artifacts to read after the run",
    )
    p.add_argument(
        "--grace",
        type=float,
        default=5.0,
        metavar="S",
        help="seconds between SIGTERM and SIGKILL when stopping a hung run",
    )
    p.add_argument("--interval", type=float, default=1.0, metavar="S", help="resource sampling period (default 1 s)")
    p.add_argument("--no-diagnose", action="store_true", help="keep logs and timeline, skip the diagnosis")
    p.add_argument("--factory-root", default=None, metavar="DIR", help="the team's known-issue cards (docs/factory.md)")
    p.add_argument(
        "--quiet",
        action="store_true",
        help="print nothing of faildiag's own (the command's output still passes through)",
    )
    p.add_argument(
        "--job-dir",
        default=None,
        metavar="DIR",
        help="a folder shared by every node of a multi-node job: this node writes DIR/nodes/NAME/ "
        "(its snapshot and node.json) instead of --out; `faildiag diagnose DIR` merges them",
    )
    p.add_argument(
        "--node", default=None, metavar="NAME", help="this node's name in --job-dir (default: the host name)"
    )
    p.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- CMD ...", help="the command to run")


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ..capture.runner import LockBuilder, RunOptions, finish_run, run_command, warm_imports
    from ..cli import UsageError
    from ..fsio import OutputFolderRefused, ensure_output_root

    cmd = list(args.cmd)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    if not cmd:
        raise UsageError("give the command to run after --, e.g. faildiag run -- python train.py")
    if args.hang_timeout is not None and args.hang_timeout <= 0:
        raise UsageError("--hang-timeout must be a positive number of seconds")
    if args.interval <= 0:
        raise UsageError("--interval must be positive")
    out = Path(args.out)
    node = None
    if args.job_dir:
        from ..job.node import NodeRecorder

        try:
            node = NodeRecorder.begin(Path(args.job_dir), args.node, cmd)
        except OSError as exc:
            raise UsageError(f"cannot use --job-dir {args.job_dir}: {exc.strerror or exc}") from None
        out = node.folder
    elif args.node:
        raise UsageError("--node names this node inside --job-dir; give --job-dir too")
    try:  # a symlink, or a folder someone else can write into, is refused before the command starts
        ensure_output_root(out)
    except OutputFolderRefused as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        raise UsageError(f"cannot create {out}: {exc.strerror or exc}") from None
    if args.factory_root is not None and not Path(args.factory_root).is_dir():
        raise UsageError(f"--factory-root {args.factory_root}: not a folder")
    for w in args.watch:
        if not Path(w).is_dir():
            raise UsageError(f"--watch {w}: not a folder")
    opts = RunOptions(
        command=cmd,
        out=out,
        hang_timeout=args.hang_timeout,
        watch=[Path(w) for w in args.watch],
        nccl_debug=args.nccl_debug,
        collect=[Path(c) for c in args.collect],
        interval=args.interval,
        grace=max(0.0, args.grace),
        factory_root=Path(args.factory_root).resolve() if args.factory_root is not None else None,
    )
    say = (lambda msg: None) if args.quiet else (lambda msg: print(msg, file=sys.stderr, flush=True))
    locker = LockBuilder(out)
    locker.begin()
    warm_imports()
    try:
        result = run_command(opts)
    except OutputFolderRefused as exc:  # a subfolder someone else controls: raised before the command started
        locker.cancel()
        raise UsageError(str(exc)) from None
    if result.start_error:
        locker.cancel()
        say(f"faildiag: {result.start_error}")
    lock = diag = None
    try:
        lock = None if result.start_error else locker.result(1.0)
        if locker.note:
            result.notes.append(locker.note)
        if node is not None:
            result.collected += node.after_run(result)
        diag = finish_run(
            result,
            opts,
            lock if not locker.reused or result.failed else None,
            diagnose_failure=not args.no_diagnose,
            redacted_lock=None if locker.reused else locker.redacted,
        )
        if not result.failed and lock:
            locker.save_fingerprint()
    except Exception as exc:  # the wrapper's own failure never replaces the command's status
        say(f"faildiag: warning: no diagnosis written: {type(exc).__name__}: {exc}")
        if node is None:
            return result.exit_status
    if node is not None:
        try:
            node.write(result, diag, lock if lock is not None else locker.redacted)
        except Exception as exc:  # a node record that could not be written is itself evidence for the merge
            say(f"faildiag: warning: node record not written: {type(exc).__name__}: {exc}")
    if diag is not None:
        from ..engine import render_text

        say(render_text(diag))
        say(f"faildiag: snapshot in {out}/report.json")
    return result.exit_status
