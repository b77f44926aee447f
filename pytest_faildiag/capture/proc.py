"""Process primitives shared by the two capture paths: exit status, signal names, group signalling, file tails.

``capture/subproc.py`` (the ``faildiag_run`` fixture) and ``capture/runner.py`` (``faildiag run``) both start the
child in its own session, stop its process group and name the signal that ended it; this module is the one copy
of those pieces. Stdlib only (no psutil), so importing it keeps the fixture's start-up cheap.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

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


def signal_group(pgid: int, sig: int) -> None:
    """``os.killpg`` that tolerates a group already gone (or not ours): stopping a finished run is not an error."""
    try:
        os.killpg(pgid, sig)
    except OSError:
        pass


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
