"""One way to stop a child's process group (``capture.proc.stop_group``), on real processes and signals; and
the run wrapper's parts do not import the module that ties them together."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import time
from pathlib import Path

import psutil

import pytest_faildiag.capture as capture
from pytest_faildiag.capture.proc import stop_group
from pytest_faildiag.capture.supervise import stop_tree

IGNORES_TERM = (
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('ready', flush=True); time.sleep(60)"
)
SLEEPS = "import time; print('ready', flush=True); time.sleep(60)"


def _start(code: str) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, start_new_session=True)
    assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
    return proc


def test_a_child_that_exits_on_sigterm_is_not_killed():
    proc = _start(SLEEPS)
    assert stop_group(proc, 5.0) == "SIGTERM"
    assert proc.returncode == -15


def test_a_child_that_ignores_sigterm_is_killed_after_the_grace():
    proc = _start(IGNORES_TERM)
    t0 = time.monotonic()
    assert stop_group(proc, 0.5) == "SIGKILL"
    assert proc.returncode == -9 and time.monotonic() - t0 >= 0.5


def test_no_grace_kills_at_once_and_a_gone_group_is_fine():
    proc = _start(SLEEPS)
    assert stop_group(proc, None, kill_wait=5) == "SIGKILL" and proc.returncode == -9
    assert stop_group(proc, 1.0) == "SIGTERM"  # already reaped: nothing to signal, nothing raised


def test_stop_tree_also_stops_a_grandchild_that_left_the_group(tmp_path: Path):
    pidfile = tmp_path / "grandchild.pid"
    code = (
        "import subprocess, sys, time; "
        f"p = subprocess.Popen([sys.executable, '-c', {SLEEPS!r}], start_new_session=True, stdout=subprocess.PIPE); "
        f"p.stdout.readline(); open({str(pidfile)!r}, 'w').write(str(p.pid)); print('ready', flush=True); time.sleep(60)"
    )
    proc = _start(code)
    grandchild = psutil.Process(int(pidfile.read_text()))
    assert os.getpgid(grandchild.pid) != proc.pid  # outside the group: killpg alone would miss it
    assert stop_tree(proc, 5.0) == "SIGTERM"
    assert _gone(grandchild, within=10)


def _gone(p: psutil.Process, within: float) -> bool:
    """Dead or a zombie (a container's init may never reap an orphan, so ``wait`` could block on it)."""
    end = time.monotonic() + within
    while time.monotonic() < end:
        try:
            if p.status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.05)
    return False


def test_no_part_of_the_run_wrapper_imports_the_runner_back():
    folder = Path(capture.__file__).parent
    for path in folder.glob("*.py"):
        if path.name == "runner.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                assert node.module not in ("runner", "pytest_faildiag.capture.runner"), f"{path.name} imports runner"
