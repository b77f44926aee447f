"""Run one command with full capture: stdout and stderr to files, exit status, signal by name.

Small on purpose: it backs the ``faildiag_run`` pytest fixture, whose output becomes evidence when the
test fails. The ``faildiag run`` wrapper (``capture/runner.py``) does the same job with more around it
(tee to the terminal, watchdog, stack dumps); the pieces both need (signal names, stopping a process
group, reading a tail) live in ``capture/proc.py``.

Output goes to files, never to pipes held in memory, so a test killed mid-run still leaves what the
child wrote on disk (the journal records where).
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..fsio import ensure_output_root, open_output_file
from .proc import TAIL_BYTES, read_tail, signal_name, stop_group

__all__ = ["TAIL_BYTES", "CapturedRun", "read_tail", "run_captured", "signal_name"]


@dataclass
class CapturedRun:
    """What one command did. ``timed_out`` means it was stopped after ``timeout`` seconds."""

    argv: list[str]
    returncode: int | None
    stdout_path: Path
    stderr_path: Path
    duration_s: float
    timed_out: bool = False
    env: dict[str, str] = field(default_factory=dict)

    @property
    def signal(self) -> str | None:
        return signal_name(self.returncode)

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out

    @property
    def stdout(self) -> str:
        return read_tail(self.stdout_path)

    @property
    def stderr(self) -> str:
        return read_tail(self.stderr_path)

    @property
    def command(self) -> str:
        return " ".join(self.argv)

    def describe(self) -> str:
        """One line for assertion messages: command, status, signal."""
        status = "timed out" if self.timed_out else f"exit {self.returncode}"
        sig = f" ({self.signal})" if self.signal else ""
        return f"`{self.command}`: {status}{sig} after {self.duration_s:.1f}s"


def run_captured(
    argv: Sequence[str] | str,
    out_dir: Path,
    *,
    name: str = "run",
    timeout: float | None = None,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    kill_grace: float = 3.0,
) -> CapturedRun:
    """Run ``argv`` with stdout/stderr in ``out_dir/<name>.stdout`` / ``.stderr``; never raises on a failing
    command (the caller asserts). A ``timeout`` stops the whole process group: SIGTERM, then SIGKILL after
    ``kill_grace`` seconds. Raises OSError only when the command cannot be started at all, or when
    ``out_dir`` is refused (a symlink, or a folder others can write: ``fsio.OutputFolderRefused``). The two
    files are created new, never through a symlink planted at their names."""
    args = [argv] if isinstance(argv, str) else [str(a) for a in argv]
    shell = isinstance(argv, str)
    ensure_output_root(out_dir)
    stdout_path, stderr_path = out_dir / f"{name}.stdout", out_dir / f"{name}.stderr"
    full_env = dict(os.environ)
    full_env.setdefault("PYTHONFAULTHANDLER", "1")  # a native crash in the child leaves its stack in stderr
    full_env.setdefault("PYTHONUNBUFFERED", "1")
    if env:
        full_env.update(env)
    start = time.monotonic()
    with open_output_file(stdout_path, "wb") as out, open_output_file(stderr_path, "wb") as err:
        proc = subprocess.Popen(
            args[0] if shell else args,
            shell=shell,
            stdout=out,
            stderr=err,
            env=full_env,
            cwd=cwd,
            start_new_session=True,
        )
        timed_out = False
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            _stop_group(proc, kill_grace)
        except BaseException:
            _stop_group(proc, kill_grace)
            raise
    return CapturedRun(
        argv=args,
        returncode=proc.returncode,
        stdout_path=stdout_path,
        stderr_path=stderr_path,
        duration_s=time.monotonic() - start,
        timed_out=timed_out,
        env=dict(env or {}),
    )


def _stop_group(proc: subprocess.Popen[bytes], grace: float) -> None:
    """SIGTERM the child's process group, SIGKILL it if it lingers; a gone group is fine."""
    stop_group(proc, grace)
