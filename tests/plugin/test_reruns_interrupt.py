"""A Ctrl-C (SIGINT, as a CI cancel sends) during a hang leaves its trace: a snapshot and a session entry
saying the test was interrupted while hung, with every thread's stack. A real pytest subprocess, a real
signal."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import entry_for, session_index

pytestmark = pytest.mark.usefixtures("isolated")
ROOT = Path(__file__).resolve().parents[2]
NODEID = "test_consumer.py::test_waits_for_a_batch"


def _started(journal: Path) -> bool:
    try:
        lines = journal.read_text(encoding="utf-8").splitlines()
    except OSError:
        return False
    return any(json.loads(ln).get("e") == "start" and json.loads(ln).get("nodeid") == NODEID for ln in lines)


def test_sigint_during_a_hang_leaves_its_stacks_and_diagnosis(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_consumer="""
        import queue
        import threading

        def producer(q):
            q.put(1)
            raise ConnectionError("lost the connection to the feature store")

        def test_waits_for_a_batch():
            q = queue.Queue()
            threading.Thread(target=producer, args=(q,), name="producer", daemon=True).start()
            batches = [q.get() for _ in range(2)]
            assert batches
    """
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    env.pop("FAILDIAG_RERUN", None)
    out = pytester.path / "stdout.txt"
    with open(out, "wb") as f:
        proc = subprocess.Popen(
            [sys.executable, "-m", "pytest", "--faildiag", "-p", "no:cacheprovider", "-p", "no:timeout"],
            cwd=pytester.path,
            env=env,
            stdout=f,
            stderr=subprocess.STDOUT,
            # a shell without job control starts background jobs with SIGINT ignored: undo that for the child
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        try:
            deadline = time.monotonic() + 60
            while not _started(pytester.path / "faildiag-out" / "journal.jsonl"):
                assert time.monotonic() < deadline and proc.poll() is None, out.read_text()
                time.sleep(0.1)
            time.sleep(2.5)  # hung for longer than INTERRUPT_HANG_AFTER
            proc.send_signal(signal.SIGINT)
            rc = proc.wait(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
    text = out.read_text()
    assert rc == 2, text  # pytest's "interrupted" status, unchanged
    assert f"faildiag: interrupted (SIGINT) while {NODEID} was in its call for " in text
    assert "at test_consumer.py:11: hang: the thread producer died with ConnectionError" in text, text[:3000]
    entry = entry_for(session_index(pytester.path), "test_waits_for_a_batch")
    assert (entry["when"], entry["hang"], entry["file"], entry["line"]) == ("interrupted", True, "test_consumer.py", 11)
    assert "ConnectionError: lost the connection to the feature store" in entry["summary"]
    evidence = pytester.path / "faildiag-out" / entry["slug"] / "evidence"
    stacks = (evidence / "hang-stacks.txt").read_text()
    assert stacks.startswith("Current thread 0x")
    assert f'File "{pytester.path / "test_consumer.py"}", line 11 in test_waits_for_a_batch' in stacks
    assert "faildiag: hang detected: interrupted (SIGINT)" in (evidence / "interrupted.txt").read_text()
    assert "KeyboardInterrupt" in (evidence / "interrupted.txt").read_text()
