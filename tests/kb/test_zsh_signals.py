"""zsh's own names for fatal signals, in both of its report forms (real zsh 5.9 runs, tests/data/kb/zsh/).

zsh does not print strsignal(3)'s text ("Illegal instruction", "Segmentation fault") as bash does: a
foreground job reads "zsh: illegal hardware instruction  CMD", a background job (MONITOR) its job-table line
"[1]  + illegal hardware instruction  CMD", with the PID under LONG_LIST_JOBS. Both are the process dying of
the signal (the contract's crash), and SIGILL under any name is the CPU lacking an instruction the binary uses.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose

from .kb_helpers import fired

DATA = Path(__file__).resolve().parents[1] / "data" / "kb" / "zsh"


@pytest.mark.parametrize("name", ["fg_sigill.log", "job_sigill.log"])
def test_zsh_s_illegal_hardware_instruction_is_the_cpu_instruction_set(name):
    diag = diagnose([str(DATA / name)])
    assert diag.profile.type == "crash"
    assert fired(diag, "proc.illegal_instruction")
    assert diag.root_causes[0].id == "environment.cpu_instruction_set"


@pytest.mark.parametrize("name", ["job_sigill.log", "job_sigsegv_pid.log", "fg_sigsegv.log"])
def test_both_report_forms_are_read_as_the_job_dying_of_the_signal(name):
    diag = diagnose([str(DATA / name)])
    assert diag.profile.type == "crash"
    assert fired(diag, "shell.zsh_fatal_signal")


def test_a_job_table_line_must_name_a_signal():
    # zsh's job table also reports jobs that ended normally ("[1]  + 2977 done  CMD", "exit 1"): not a signal
    diag = diagnose(texts={"stderr": "[1]  + 2977 done       python3 train.py\n"})
    assert not fired(diag, "shell.zsh_fatal_signal")
