"""The kland3 block (engine/reason.py ``interactive_import_crash``; docs/engine.md): a process that dies of a signal
while an echoed import statement runs (``>>> import torch``, ``$ python -c "import torch"``) crashed at start-up.

Shown on the train logs that print such a transcript and on a real child interpreter killed by a signal while it
imports a module, under a real shell that prints the signal's line.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose
from tests.kb.kb_helpers import train_log_path


@pytest.mark.parametrize(
    "name",
    [
        "environment/jetson_nano_numpy_illegal_instruction_import_torch",
        "jax/jax_import_illegal_instruction_no_avx",
    ],
)
def test_train_logs_crash_at_import_is_startup(name: str) -> None:
    diag = diagnose([str(train_log_path(name))])
    assert (diag.profile.type, diag.profile.stage) == ("crash", "startup")
    assert diag.root_causes[0].category == "environment"


def _shell_transcript(tmp_path: Path, statement: str) -> tuple[str, int]:
    """A real bash running ``python -c <statement>`` where the imported module kills its interpreter with SIGILL
    (what a wheel built for another CPU does): bash prints the signal's line, the transcript echoes the command."""
    (tmp_path / "crashmod.py").write_text("import os, signal\nos.kill(os.getpid(), signal.SIGILL)\n")
    cmd = f"{sys.executable} -c '{statement}'"
    p = subprocess.run(["bash", "-c", f"{cmd}; exit $?"], capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert p.returncode == 128 + signal.SIGILL, (p.returncode, p.stderr)
    assert "Illegal instruction" in p.stderr, p.stderr
    return f"user@host:~$ python -c '{statement}'\n{p.stderr}", p.returncode


@pytest.mark.skipif(sys.platform != "linux", reason="bash's signal report on Linux")
def test_real_shell_crash_while_importing(tmp_path: Path) -> None:
    log, rc = _shell_transcript(tmp_path, "import crashmod")
    diag = diagnose(texts={"stderr": log}, exit_code=rc)
    assert (diag.profile.type, diag.profile.stage) == ("crash", "startup")


@pytest.mark.skipif(sys.platform != "linux", reason="bash's signal report on Linux")
def test_real_shell_crash_after_a_call_is_not_read(tmp_path: Path) -> None:
    # a statement that calls something after its import: the call, not the import, may be what died
    log, rc = _shell_transcript(tmp_path, "import os; import crashmod; print(os.name)")
    diag = diagnose(texts={"stderr": log}, exit_code=rc)
    assert diag.profile.type == "crash"
    assert diag.profile.stage != "startup"


def test_later_prompt_means_the_import_returned() -> None:
    log = ">>> import torch\n>>> torch.zeros(3).cuda()\nIllegal instruction (core dumped)\n"
    diag = diagnose(texts={"stderr": log})
    assert diag.profile.type == "crash"
    assert diag.profile.stage != "startup"
