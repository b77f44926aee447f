"""Process primitives shared by the two capture paths: exit status, signal names, group signalling, file tails.

``capture/subproc.py`` (the ``faildiag_run`` fixture) and ``capture/runner.py`` (``faildiag run``) both start the
child in its own session, stop its process group and name the signal that ended it; this module is the one copy
of those pieces. Stdlib only (no psutil), so importing it keeps the fixture's start-up cheap.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

TAIL_BYTES = 1 << 20


def shell_status(returncode: int) -> int:
    """Popen's returncode → the status a shell reports: -9 → 137."""
    return 128 - returncode if returncode < 0 else returncode


def signal_name(returncode: int | None) -> str | None:
    """``SIGKILL`` for -9 (killed by a signal) and for 137 (a shell's 128+9); None otherwise."""
    if returncode is None:
        return None
    num = -returncode if returncode < 0 else returncode - 128 if 128 < returncode < 128 + 65 else 0
    if not num:
        return None
    try:
        return signal.Signals(num).name
    except ValueError:
        return None


def signal_group(pgid: int, sig: int) -> bool:
    """``os.killpg`` that tolerates a group already gone (or not ours): stopping a finished run is not an error.
    Returns whether the signal was delivered."""
    try:
        os.killpg(pgid, sig)
    except OSError:
        return False
    return True


def stop_group(
    proc: subprocess.Popen[Any],
    grace: float | None,
    *,
    kill_wait: float = 5.0,
    also: Callable[[int], None] | None = None,
) -> str:
    """Stop a child that leads its own process group (``start_new_session`` / ``process_group=0``): SIGTERM
    to the group, up to ``grace`` seconds for the child to exit, then SIGKILL and up to ``kill_wait`` seconds.
    ``grace=None`` sends SIGKILL at once. ``also(sig)`` signals the run's processes outside the group (a
    ``setsid`` grandchild); it is called first, while they can still be found from the child's tree.
    Returns the signal that ended the child ("SIGTERM" or "SIGKILL"). The one copy of this sequence: the
    run wrapper, the ``faildiag_run`` fixture, reruns and fix mode's verification all stop a child this way.
    """
    steps = ([] if grace is None else [(signal.SIGTERM, grace)]) + [(signal.SIGKILL, kill_wait)]
    for sig, wait in steps:
        if also is not None:
            also(sig)
        if not signal_group(proc.pid, sig) and sig == signal.SIGKILL:
            try:
                proc.kill()  # not a group leader after all: the child itself
            except OSError:
                pass
        try:
            proc.wait(timeout=wait)
            return signal.Signals(sig).name
        except subprocess.TimeoutExpired:
            continue
    return "SIGKILL"


def read_tail(path: Path, limit: int = TAIL_BYTES) -> str:
    """The last ``limit`` bytes of a text file, decoded leniently; '' when it cannot be read."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - limit))
            data = f.read()
    except OSError:
        return ""
    return data.decode("utf-8", errors="replace")
