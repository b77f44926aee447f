"""A native backtrace pasted alone (no signal line, no exception, no exit status): where its innermost frame stopped
tells a fault from a stall. A thread waiting sits in a blocking call (a futex, a condition variable, poll, a sleep);
a signal stops a faulting thread in the code that was computing. Real backtraces, printed here by gdb: one of a
process that segfaulted, one of a process attached while it waited; the user pastes the frames, as in a thread.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
import warnings

import pytest

from pytest_faildiag.engine.api import diagnose

pytestmark = pytest.mark.skipif(shutil.which("gdb") is None or sys.platform != "linux", reason="needs gdb on Linux")


def _frames(gdb_output: str) -> str:
    """The backtrace's frames, as a user pastes them (gdb's ``#N`` lines, without its session chatter)."""
    lines = [line for line in gdb_output.splitlines() if line.startswith("#")]
    assert lines and lines[0].startswith("#0"), gdb_output[-2000:]
    return "\n".join(lines) + "\n"


def _diagnose(text: str):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return diagnose(texts={"log": text})


def test_the_backtrace_of_a_fault_is_a_crash(tmp_path):
    out = subprocess.run(
        [
            "gdb",
            "-q",
            "-batch",
            "-ex",
            "run",
            "-ex",
            "bt",
            "--args",
            sys.executable,
            "-c",
            "import ctypes; ctypes.string_at(0)",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    ).stdout
    assert "SIGSEGV" in out
    diag = _diagnose(_frames(out))
    assert diag.profile.type == "crash"


def test_the_backtrace_of_a_waiting_process_is_a_hang(tmp_path):
    # an event nobody sets: the frames' arguments hold ``timeout=…`` (words of a frame, not a message)
    waiting = subprocess.Popen([sys.executable, "-c", "import threading; threading.Event().wait()"], cwd=tmp_path)
    try:
        time.sleep(1.0)
        out = subprocess.run(
            ["gdb", "-q", "-batch", "-p", str(waiting.pid), "-ex", "bt"],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=300,
        ).stdout
    finally:
        waiting.kill()
        waiting.wait()
    if "#0" not in out:
        pytest.skip("gdb could not attach here (ptrace not permitted)")
    assert "timeout=" in out
    diag = _diagnose(_frames(out))
    assert diag.profile.type == "hang"
