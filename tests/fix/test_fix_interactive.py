"""On a terminal, `faildiag fix` asks yes/no; anything but yes changes nothing."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")

TRAIN = "import os\n\nprint(sorted(os.listdir(os.environ['DATA_DIR'])))\n"


def _run_in_tty(project, answer: str) -> tuple[int, str]:
    """Run `faildiag fix` with a real pseudo-terminal as stdin/stdout and answer its question."""
    import pty

    master, slave = pty.openpty()
    proc = subprocess.Popen(
        project.fix_argv(), cwd=project.root, env=project.env(), stdin=slave, stdout=slave, stderr=slave
    )
    os.close(slave)
    out = b""
    answered = False
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(master, 4096)
                except OSError:  # EIO: the child closed the terminal
                    break
                if not chunk:
                    break
                out += chunk
                if not answered and b"[y/N]" in out:
                    os.write(master, answer.encode() + b"\n")
                    answered = True
            elif proc.poll() is not None:
                break
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        os.close(master)
    assert answered, out.decode(errors="replace")
    return proc.returncode, out.decode(errors="replace")


def _failing_project(project):
    project.write("train.py", TRAIN)
    (project.root / "data").mkdir()
    (project.root / "data" / "a.txt").write_text("x")
    project.fail_and_diagnose()


def test_answering_no_on_a_terminal_changes_nothing(project):
    _failing_project(project)
    before = project.hashes()
    rc, out = _run_in_tty(project, "n")
    assert rc == 0 and "nothing changed" in out
    assert project.hashes() == before


def test_answering_yes_on_a_terminal_applies_and_verifies(project):
    _failing_project(project)
    proposal = project.propose()
    rc, out = _run_in_tty(project, "y")
    assert rc == 0, out
    assert f"apply fix {proposal['id']}?" in out and "the original failure no longer reproduces" in out
    fix = project.report()["fix"]
    assert (fix["id"], fix["verification"], fix["rolled_back"]) == (proposal["id"], "passed", False)
