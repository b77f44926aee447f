"""Starting the command: its own process group, signals forwarded to it, the terminal handed over.

The child leads its own process group so that a hung tree can be stopped as one; signals a user sends to
``faildiag run`` are forwarded to that group, and when stdin is our terminal the group becomes its
foreground job (as a shell does), so ``input()``/``pdb`` work and Ctrl-C reaches the child directly.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from .oomkill import read_oom_kills
from .options import RunOptions, RunResult
from .supervise import supervise
from .tee import BoundedLog


class _Forwarder:
    """Forward the signals a user sends to `faildiag run` to the child's process group."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)

    def __init__(self) -> None:
        self.pgid: int | None = None  # set once the child started; signals before that wait for it
        self.old: dict[int, Any] = {}
        self.received: list[int] = []

    def attach(self, pgid: int) -> None:
        self.pgid = pgid
        for signum in self.received:
            self._send(signum)

    def __enter__(self) -> _Forwarder:
        if threading.current_thread() is threading.main_thread():
            for s in self.SIGNALS:
                try:
                    self.old[s] = signal.signal(s, self._forward)
                except (OSError, ValueError):
                    pass
        return self

    def _forward(self, signum: int, frame: Any) -> None:
        self.received.append(signum)
        if self.pgid is not None:
            self._send(signum)

    def _send(self, signum: int) -> None:
        try:
            os.killpg(self.pgid, signum)  # type: ignore[arg-type]
        except OSError:
            pass

    def __exit__(self, *exc: object) -> None:
        for s, h in self.old.items():
            try:
                signal.signal(s, h)
            except (OSError, ValueError):
                pass


def run_child(
    opts: RunOptions, env: dict[str, str], result: RunResult, logs: tuple[BoundedLog, BoundedLog]
) -> RunResult:
    oom_before = read_oom_kills()
    start_wall = time.time()
    t0 = time.monotonic()
    with _Forwarder() as forwarder:
        try:
            proc = subprocess.Popen(
                opts.command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, process_group=0, bufsize=0
            )
        except FileNotFoundError:
            result.exit_status, result.start_error = 127, f"command not found: {opts.command[0]}"
            return result
        except PermissionError:
            result.exit_status, result.start_error = 126, f"permission denied: {opts.command[0]}"
            return result
        except OSError as exc:
            result.exit_status, result.start_error = 126, f"cannot run {opts.command[0]}: {exc.strerror or exc}"
            return result
        forwarder.attach(proc.pid)
        restore_terminal = _hand_terminal_to(proc.pid)
        try:
            return supervise(proc, opts, result, start_wall, t0, oom_before, logs)
        finally:
            if restore_terminal:
                restore_terminal()


def _hand_terminal_to(pgid: int) -> Callable[[], None] | None:
    """Make the child's group the terminal's foreground group, as a shell does for a job.

    Why: the child runs in its own process group (so a hung tree can be stopped as one); a background
    group that reads the terminal (``input()``, ``pdb``) would be stopped by SIGTTIN. With the terminal
    handed over, Ctrl-C reaches the child directly, as without `faildiag run`. Returns the function that
    gives the terminal back, or None when stdin is not our terminal in the foreground.
    """
    if threading.current_thread() is not threading.main_thread():
        return None
    try:
        fd = sys.stdin.fileno()
        if not os.isatty(fd) or os.tcgetpgrp(fd) != os.getpgrp():
            return None
    except (OSError, ValueError, AttributeError):
        return None

    def set_foreground(group: int) -> bool:
        old = signal.signal(signal.SIGTTOU, signal.SIG_IGN)  # a background group may not call tcsetpgrp otherwise
        try:
            os.tcsetpgrp(fd, group)
            return True
        except OSError:
            return False
        finally:
            signal.signal(signal.SIGTTOU, old)

    if not set_foreground(pgid):
        return None
    try:
        os.killpg(pgid, signal.SIGCONT)  # in case it touched the terminal before it owned it
    except OSError:
        pass
    ours = os.getpgrp()
    return lambda: set_foreground(ours)
